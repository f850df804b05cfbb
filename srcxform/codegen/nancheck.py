"""debug_nans's checks, generated into a kernel: ad/nan_checks.py's rule, as compiled code.

A loop nest pays for a cheap probe only: one flag, set without a branch where a value it
makes or reads is not finite (`v - v` is NaN exactly then). Only where the probe is set
does a second, cold copy of the nest run the rule's per-element tests (made a NaN, made
an inf, lost one). After it, each value's verdict is set unless an input is tainted; a
value's taint is a bool local, carried from value to value (ops that only move elements
pass their input's on). Outside loop nests (matmul, a call) an op is tested whole, blamed
only where its inputs are all finite. The verdicts raise, naming the line, at the end (or
before a loop or branch) in program order, as eagerly: not in the schedule's. Knows no
primitive by name.
"""

import ast
import itertools

import astor
import numpy as np

from srcxform.core.errors import nan_message, user_line
from srcxform.core.ir import Lit, Var
from srcxform.core import syntax


def _src(node):
    return astor.to_source(node).rstrip("\n")


def _statement(text):
    return syntax.parse(text).body[0]


def may_hold_nan(arg_name, atom):
    """Whether an input (named arg_name) of an equation may hold a NaN or inf: a float
    operand, not a condition, and not a finite literal."""
    if arg_name == "c" or atom.aval.dtype.kind != "f":
        return False
    return not (isinstance(atom, Lit) and isinstance(atom.value, (int, float, np.number))
                and np.isfinite(atom.value))


def taint_of(low, atom):
    """Source of whether `atom` is tainted, or None where it cannot be (a literal, an
    argument): its own flag, else its producer's inputs' (an op that only moves elements,
    a loop's result)."""
    if isinstance(atom, Lit) or atom not in low.producers:
        return None
    if atom not in low.taints:
        names = list(dict.fromkeys(t for a in low.producers[atom].ins
                                   if (t := taint_of(low, a)) is not None))
        low.taints[atom] = " or ".join(names) if len(names) < 2 else f"({' or '.join(names)})"
    return low.taints[atom] or None


def _inputs_taint(low, eqn):
    names = list(dict.fromkeys(t for a in eqn.ins if (t := taint_of(low, a)) is not None))
    return " or ".join(names) or None


def _raising(test, eqn, what):
    """`if test: raise FloatingPointError(...)`, naming eqn's op and line."""
    # user_line has made the user's text safe to quote (errors.source_text).
    line = user_line(eqn.origin) if eqn.origin else "an unknown line"
    message = nan_message(eqn.prim.name, what, None, line, forward_op=eqn.of) if eqn.adjoint \
        else nan_message(eqn.prim.name, what, line)
    # On one line: astor would indent a literal's later lines, changing it.
    raised = ast.Raise(ast.Call(ast.Name("FloatingPointError", ast.Load()),
                                [ast.Constant(message.replace("\n  ", " "))], []), None)
    return ast.If(syntax.parse(test, mode="eval").body, [raised], [])


def _verdicts(low, eqn, made_nan, made_inf, lost, indent):
    """The tests raising where eqn made a NaN or inf (its inputs untainted), then its taint:
    its inputs' or the `lost` flag."""
    inputs = _inputs_taint(low, eqn)
    guard = f" and not ({inputs})" if inputs else ""
    for flag, what in ((made_nan, "a NaN"), (made_inf, "an inf")):
        if flag:
            low.nan_raises.append((eqn, f"{flag}{guard}", what))
    if lost and inputs:
        low.taints[eqn.out] = low.namer.fresh("tainted")
        low.line(indent, f"{low.taints[eqn.out]} = {inputs} or {lost}")
    else:
        low.taints[eqn.out] = lost or inputs or ""


def raise_in_order(low):
    """The raises of the verdicts emitted since the last call, in program order (the
    eager order: forward before adjoint), not the schedule's: an adjoint nest scheduled
    before a forward op must not be the one named. Each verdict is a flag set once, so
    testing it later tests the same thing."""
    position = {e.out: k for k, e in enumerate(low.program.eqns)}
    for eqn, test, what in sorted(low.nan_raises, key=lambda r: position.get(r[0].out, -1)):
        low.stmt(1, _raising(test, eqn, what))
    low.nan_raises = []


# ----- outside loop nests: an op tested whole -----


def whole(low, eqn, out, ins):
    """After an op outside loop nests made `out` (source) from `ins` ((atom, source)
    pairs): its tests, each input and the result tested whole (runtime/arrays.py's
    one-pass helpers on arrays), past one pass over each where all are finite."""
    if eqn.prim.algebra.moves_only:
        return
    low.modules.add("arrays")  # written as text (low.line), which imports nothing itself
    floats = [(a, x) for n, (a, x) in zip(eqn.prim.arg_names, ins) if may_hold_nan(n, a)]
    finite = " and ".join(_holds("isfinite", a, x) for a, x in floats) or "True"
    float_out = eqn.out.aval.dtype.kind == "f"
    flags = [low.namer.fresh(k) for k in ("made_nan", "made_inf", "lost")[2 - 2 * float_out:]]
    low.line(1, " = ".join(flags) + " = False")
    gate = f"{_holds('isfinite', eqn.out, out)} and {finite}" if float_out else finite
    low.line(1, f"if not ({gate}):")
    if not float_out:
        held_nan = " or ".join(_holds("isnan", a, x) for a, x in floats) or "False"
        low.line(2, f"{flags[0]} = {held_nan}")
        _verdicts(low, eqn, None, None, flags[0], 1)
        return
    made_nan, made_inf, lost = flags
    low.line(2, f"{made_nan} = {_holds('isnan', eqn.out, out)} and {finite}")
    low.line(2, f"{made_inf} = {_holds('isinf', eqn.out, out)} and {finite}")
    low.line(2, f"{lost} = not ({finite}) and {_holds('any_finite', eqn.out, out)}")
    _verdicts(low, eqn, made_nan, made_inf, lost, 1)


# Each test of a scalar, and of an array by runtime/arrays.py's one-pass helpers.
_TESTS = {"isnan": ("np.isnan", "arrays.any_nan"), "isinf": ("np.isinf", "arrays.any_inf"),
          "isfinite": ("np.isfinite", "arrays.all_finite"),
          "any_finite": ("np.isfinite", "arrays.any_finite")}


def _holds(test, atom, text):
    """Whether `text`, atom's value, holds a NaN (isnan), an inf (isinf), only finite
    elements (isfinite), or a finite one (any_finite)."""
    return f"{_TESTS[test][bool(atom.aval.shape)]}({text})"


# ----- a loop nest: the probe, the cold scan, the verdicts -----


class Scan:
    """One loop nest's checks: `element` and `reduction` are told each member as the nest
    is built; `probe` is the statement ending the hot body; `finish` emits the rest after
    the nest."""

    def __init__(self, low, domain, index):
        self.low, self.domain, self.index = low, domain, index
        self.probe_flag = low.namer.fresh("nonfinite")
        self.edges = []  # (eqn, its element's source, [(arg position, atom, source)])
        self.probed = []  # the sources of the values the probe tests (probe())
        self.flag_inits = []  # before the hot nest (inits())
        self.cold_inits = []  # before the cold nest
        self.body = []  # the cold copy of the nest: (None, statement)
        self.pending = []  # tests waiting for the statements computing what they read
        self.after = []  # statements after the cold nest (reductions' verdict flags)
        self.results = []  # reductions' results: the probe tests them after the nest
        self.members = []  # (eqn, made_nan, made_inf, lost) in program order

    def _flags(self, *kinds):
        names = [self.low.namer.fresh(k) for k in kinds]
        self.flag_inits += [f"{n} = False" for n in names]
        return names

    def copy(self, statements):
        """Statements of the hot body that the cold one repeats (values computed), then
        the tests of the members told of before them."""
        self.body += [(None, node) for _, node in statements] + self.pending
        self.pending = []

    def element(self, eqn, local, ins):
        """An elementwise member, its element `local`, its inputs' elements `ins` ((arg
        name, atom, source) triples, each read as the template reads it)."""
        if eqn.prim.algebra.moves_only:
            self.members.append((eqn, None, None, None))
            return
        floats = [x for n, a, x in ins if may_hold_nan(n, a)]
        self.edges.append((eqn, local, [(k, a, x) for k, (n, a, x) in enumerate(ins)
                                         if may_hold_nan(n, a)]))
        if eqn.out.aval.dtype.kind != "f":
            if floats:
                lost = self._flags("lost")[0]
                self.pending.append((None, _statement(
                    f"{lost} |= {' | '.join(f'np.isnan({x})' for x in floats)}")))
            self.members.append((eqn, None, None, lost if floats else None))
            return
        made_nan, made_inf = self._flags("made_nan", "made_inf")
        lost = self._flags("lost")[0] if floats else None
        held_nan = " | ".join(f"np.isnan({x})" for x in floats)
        finite = " & ".join(f"np.isfinite({x})" for x in floats)
        # A literal is copied too (where(c, 1, x) copies 1 at an inf: it loses nothing),
        # as eagerly, where it is a float array whatever its Python type.
        copies = "".join(f" & ({local} != {x})" for n, a, x in ins
                         if n != "c" and (a.aval.dtype.kind == "f" or isinstance(a, Lit)))
        self.pending += [(None, _statement(text)) for text in (
            f"{made_nan} |= np.isnan({local})" + (f" > ({held_nan})" if floats else ""),
            f"{made_inf} |= np.isinf({local})" + (f" & {finite}" if floats else ""))]
        if floats:
            self.pending.append((None, _statement(
                f"{lost} |= np.isfinite({local}){copies} > ({finite})")))
        self.members.append((eqn, made_nan, made_inf, lost))

    def reduction(self, eqn, result, term, acc):
        """A reduction member: its result's name, the source of each term, and of the
        result's element the term goes into (`acc`: a name, or a subscript of the result
        array)."""
        if eqn.out.aval.dtype.kind != "f":
            self.members.append((eqn, None, None, None))
            return
        self.results.append((eqn, result))
        self.edges.append((eqn, None, [(0, eqn.ins[0], term)]))
        made_nan, made_inf, lost = self._flags("made_nan", "made_inf", "lost")
        if not eqn.out.aval.shape:
            held_nan, finite, copied = (self.low.namer.fresh(k) for k in
                                        ("held_nan", "terms_finite", "copied"))
            self.cold_inits += [f"{held_nan} = False", f"{finite} = True", f"{copied} = False"]
            self.body += [(None, _statement(t)) for t in (
                f"{held_nan} |= np.isnan({term})", f"{finite} &= np.isfinite({term})",
                f"{copied} |= {term} == {acc}")]
            self.after += [f"{made_nan} = np.isnan({result}) and not {held_nan}",
                           f"{made_inf} = np.isinf({result}) and {finite}",
                           f"{lost} = np.isfinite({result}) and not {finite} and not {copied}"]
        else:
            held_nan, finite, copied = (self.low.namer.fresh(f"{result}_{k}") for k in
                                        ("held_nan", "terms_finite", "copied"))
            shape = _src(self.low.sizes.tuple(eqn.out.aval.shape))
            for name, start in ((held_nan, False), (finite, True), (copied, False)):
                self.cold_inits += [f"{name} = arrays.empty({shape}, np.bool_)",
                                    f"{name}[:] = {start}"]
            at = acc[len(result):]  # the subscript: "[i0, 0]"
            self.body += [(None, _statement(t)) for t in (
                f"{held_nan}{at} |= np.isnan({term})",
                f"{finite}{at} &= np.isfinite({term})",
                f"{copied}{at} |= {term} == {acc}")]
            self.after.append(f"{made_nan}, {made_inf}, {lost} = arrays.reduced_verdicts("
                              f"{result}, {held_nan}, {finite}, {copied})")
        self.members.append((eqn, made_nan, made_inf, lost))

    @property
    def members_made(self):
        return {eqn.out for eqn, _, _ in self.edges}

    def inits(self):
        """The statements before the hot nest: its flags, False."""
        return ([f"{self.probe_flag} = False"] if self.probed else []) + self.flag_inits

    def probe(self):
        """The hot body's last statement: the flag set where a value it tests is not
        finite (v - v is NaN exactly where v is a NaN or an inf). A value is tested only
        where no member reading it shows it: one whose NaN or inf gives a NaN or inf that
        is tested (or a reduction's result, tested after the nest)."""
        shown = set()  # members whose NaN or inf some tested value shows
        for eqn, local, ins in reversed(self.edges):
            float_out = eqn.out.aval.dtype.kind == "f"
            if float_out and eqn.prim.kind != "reduction" and eqn.out not in shown:
                self.probed.append(local)
            for k, atom, source in ins:
                if float_out and _propagates(eqn, k):
                    shown.add(atom)
                elif not (isinstance(atom, Var) and atom in self.members_made):
                    self.probed.append(source)
                # A member read without showing it is tested where it is made, above.
        if not self.probed:
            return []
        terms = " + ".join(f"({x} - {x})" for x in dict.fromkeys(self.probed))
        return [(None, _statement(f"{self.probe_flag} |= np.isnan({terms})"))]

    def finish(self):
        """After the hot nest: the cold nest where the probe (or a reduction's result) says
        something is not finite, then each member's verdict, in program order."""
        low = self.low
        tests = [self.probe_flag] * bool(self.probed) + [
            f"not {_holds('isfinite', e.out, name)}" for e, name in self.results]
        if self.body and tests:  # no test: nothing the nest makes can be NaN or inf
            low.modules.add("arrays")
            low.line(1, f"if {' or '.join(tests)}:")
            for text in self.cold_inits:
                low.line(2, text)
            low.last_origin = None
            low._nest(self.domain, self.index, -1, 2, self.body)
            for text in self.after:
                low.line(2, text)
        for eqn, made_nan, made_inf, lost in self.members:
            _verdicts(low, eqn, made_nan, made_inf, lost, 1)



# ----- which inputs' NaN or inf an op always shows -----

# Values an op's other inputs take while one is a NaN or an inf (float64: no overflow of
# the samples themselves).
_SAMPLES = (0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, 1e-300, 1e300, -1e300, 710.0, -746.0)
_PROPAGATES: dict = {}


def _propagates(eqn, k):
    """Whether a NaN or an inf in eqn's input k always makes a NaN or an inf of its result
    (of the element it goes into), whatever its other inputs (a literal keeps its value),
    as its NumPy impl answers on samples: where it does, testing the result shows the
    input too, and the probe tests one value, not two."""
    prim = eqn.prim
    fixed = tuple(a.value if isinstance(a, Lit) and np.ndim(a.value) == 0 else None
                  for a in eqn.ins)
    key = (prim.name, repr(eqn.params), fixed, k)
    if key not in _PROPAGATES:
        try:
            _PROPAGATES[key] = _always_nonfinite(prim, eqn, fixed, k)
        except Exception:  # noqa: BLE001 - an impl that will not run on samples: no
            _PROPAGATES[key] = False
    return _PROPAGATES[key]


def _always_nonfinite(prim, eqn, fixed, k):
    if prim.kind == "reduction":
        x = np.array([[s, bad] for s in _SAMPLES for bad in (np.nan, np.inf, -np.inf)])
        with np.errstate(all="ignore"):
            out = np.asarray(prim.impl(x, axis=(1,), keepdims=False))
        return out.dtype.kind == "f" and not np.isfinite(out).any()
    columns = []
    for j, (name, atom) in enumerate(zip(prim.arg_names, eqn.ins)):
        if j == k:
            columns.append((np.nan, np.inf, -np.inf))
        elif fixed[j] is not None:
            columns.append((fixed[j],))
        elif name == "c" or atom.aval.dtype.kind == "b":
            columns.append((True, False))
        else:
            columns.append(_SAMPLES if atom.aval.dtype.kind == "f" else (0, 1, -1, 3))
    rows = list(itertools.product(*columns))
    arrays = [np.array([r[j] for r in rows], dtype=np.float64 if a.aval.dtype.kind == "f"
                       else a.aval.dtype) for j, a in enumerate(eqn.ins)]
    with np.errstate(all="ignore"):
        out = np.asarray(prim.impl(*arrays, **eqn.kwargs))
    return out.dtype.kind == "f" and not np.isfinite(out).any()
