"""tape.explain: why d target / d source is what it is, named with the user's lines.

Reads what a GradientTape kept (its records, each with its op and line, and its Cuts: the
ops that took a watched value and carry no gradient). Knows no primitive by name: a cut's
kind is what recording.py decided from the primitive's fields. It runs no forward op; to
tell a zero gradient, a where() trap and a custom_gradient that returns None it runs the
recorded VJPs, quietly (no tape records them, no NaN check raises).
"""

import contextlib
import os
from dataclasses import dataclass

import numpy as np

from srcxform import ops
from srcxform.ad.backprop import backprop, cotangent_value
from srcxform.core import recording
from srcxform.core.errors import source_line
from srcxform.core.tensor import Variable, as_value, eager_tensor
from srcxform.core.tree import tree_flatten, tree_unflatten

# The kinds of a gradient that flows (the others say why it is None).
_FLOWS = ("connected", "zero", "cancelled")
# Each kind of explanation, with what to do about it.
ADVICE = {
    "connected": "",
    "zero": "these ops have a zero derivative at these values (relu below 0, a where() "
            "selecting the other value, a product with 0, a clip at its bound): the "
            "gradient flows, and is 0 here",
    "cancelled": "the gradient flows by several paths whose contributions cancel (the "
                 "sum of a softmax is constant, x * 3 - x * 3 is 0): it is 0 here",
    "unwatched": "the tape never watched it: call tape.watch() on it inside the tape, or "
                 "make it a trainable Variable read inside the tape",
    "integer dtype": "an integer value carries no gradient: keep the computation in a float "
                     "dtype",
    "bool dtype": "a bool value carries no gradient: select between float values with "
                  "tf.where(c, a, b) instead of computing with the condition",
    "stop_gradient": "stop_gradient blocks the gradient by design: remove it where the "
                     "gradient should flow",
    "numpy conversion": "a NumPy array or Python number is a constant to the tape: compute "
                        "with srcxform ops, or NumPy functions on the tensor itself (they "
                        "dispatch to srcxform's ops)",
    "no gradient": "this op has no gradient (as in TensorFlow): the values it makes are "
                   "constants to the tape",
    "custom_gradient returned None": "the custom_gradient's gradient function returned None "
                                     "for this input: return its gradient (zeros where "
                                     "it has none)",
    "assign": "assign is not differentiated: the Variable's new value is a constant to the "
              "tape; use the value itself where it should carry a gradient",
    "branch not taken": "the branch that uses it did not run (its condition went the other "
                        "way): its gradient is None for this run only",
    "not connected": "the target does not depend on the source: nothing computed from the "
                     "source reaches it",
    "not recorded": "the target was computed outside the tape's `with` block, which the "
                    "tape does not record: compute it inside the block",
}
_MAX_PATHS = 3
_DOUBLE_WHERE = ("make the input safe first, the double-where pattern: "
                 "where(c, f(where(c, x, safe_x)), y)")


@dataclass(frozen=True)
class Step:
    """One op at one line of the user's code (several ops where a line holds them)."""

    op: str
    file: str | None  # the file's base name
    line: int | None
    text: str  # the line's source, stripped

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "<unknown>"


@dataclass(frozen=True)
class Cut:
    """An op that took a value computed from the source and carries no gradient.
    `reaches_target`: whether what it made reaches a target as a float value (None where
    srcxform cannot follow it: a NumPy array, a branch not run); `as_operand`: it reaches
    one only as an operand that carries no gradient (where()'s condition, an index)."""

    kind: str  # a key of ADVICE
    step: Step
    detail: str  # "cast to int32", "conversion to a NumPy array"
    reaches_target: bool | None
    as_operand: bool = False


@dataclass(frozen=True)
class Explanation:
    """What tape.explain found. `kind` is "connected", "zero" (connected, but every element
    of the gradient is 0 at these values), "cancelled" (0 too, though no op on the way has
    a zero derivative: the paths' contributions cancel), or the kind of the cut that makes
    the gradient None; `file`, `line` and `op` are that cut's, or for "zero" the first op
    with a zero derivative (None otherwise); `cuts` are every cut met on the way (the first the
    reason, when the gradient is None); `paths` the ways from source to target, each a
    tuple of Steps; `where_traps` the where()s on the way whose unselected side has a NaN
    or inf gradient (which the where turns into NaN); `zeros` the ops with a zero
    derivative that make a "zero" gradient."""

    kind: str
    source: str
    target: str
    cuts: tuple
    paths: tuple
    path_count: int
    where_traps: tuple = ()
    zeros: tuple = ()

    @property
    def cut(self) -> Cut | None:
        return self.cuts[0] if self.cuts and self.kind not in _FLOWS else None

    @property
    def _site(self) -> Step | None:
        if self.kind == "zero":
            return self.zeros[0] if self.zeros else None
        return self.cut.step if self.cut else None

    @property
    def file(self) -> str | None:
        return self._site.file if self._site else None

    @property
    def line(self) -> int | None:
        return self._site.line if self._site else None

    @property
    def op(self) -> str | None:
        return self._site.op if self._site else None

    def __str__(self):
        head = f"gradient of {self.target} wrt {self.source}: "
        by = _count(self.path_count, "path")
        if self.kind == "connected":
            return "\n".join([head + f"connected, by {by}", *self._paths_text(),
                              *self._lost_text()])
        if self.kind == "cancelled":
            return "\n".join([head + f"zero (connected by {by}, whose contributions cancel)",
                              f"  {ADVICE['cancelled']}", *self._paths_text(),
                              *self._lost_text()])
        if self.kind == "zero":
            return "\n".join([head + f"zero (connected by {by}, and 0 at these values)",
                              "  a zero derivative at these values:",
                              *(f"    {_step_text(step)}" for step in self.zeros),
                              f"      {ADVICE['zero']}", *self._paths_text(),
                              *self._lost_text()])
        lines = [head + f"None ({self.kind})"]
        if self.cut is not None:
            lines += _cut_text(self.cut)
        else:
            lines.append(f"  {ADVICE[self.kind]}")
        others = self.cuts[1:] if self.cut is not None else self.cuts
        if others:
            lines.append("  also cut:")
            lines += [line for c in others for line in _cut_text(c)]
        return "\n".join(lines)

    def _paths_text(self):
        for k, path in enumerate(self.paths, 1):
            yield f"  path {k}: from {self.source}"
            yield from (f"    {_step_text(step)}" for step in path)
        if self.path_count > len(self.paths):
            yield f"  ... and {self.path_count - len(self.paths)} more"

    def _lost_text(self):
        """What a connected gradient loses on the way: cuts, and where() traps."""
        lost = [c for c in self.cuts if c.reaches_target is not False]
        if lost:
            yield "  cut on the way (that part of the gradient is lost):"
            yield from (line for c in lost for line in _cut_text(c))
        for step in self.where_traps:
            yield (f"  where trap at {step.where}: {step.op} selects away values whose "
                   f"gradient is NaN or inf, and makes it NaN (0 times an infinite "
                   f"derivative)")
            yield f"        {step.text}"
            yield f"      {_DOUBLE_WHERE}"


def explain_tape(tape, target, source):
    """tape.explain's report (see GradientTape.explain): an Explanation, or for a
    structure of sources the same structure of them."""
    leaves, tree = tree_flatten(source)
    if tree.kind is not None:
        return tree_unflatten(tree, [_explain_one(tape, target, leaf) for leaf in leaves])
    return _explain_one(tape, target, source)


def _explain_one(tape, target, source) -> Explanation:
    targets = [as_value(t, "explain") for t in tree_flatten(target)[0]]
    target_ids = {t._id for t in targets}
    shown = _describe(source), _describe(target if len(targets) != 1 else targets[0])
    source = as_value(source, "explain") if not isinstance(source, Variable) else source
    if source._id in target_ids:
        return Explanation("connected", *shown, (), ((),), 1)
    if source.dtype.kind != "f":
        kind = "bool dtype" if source.dtype.kind == "b" else "integer dtype"
        return Explanation(kind, *shown, (), (), 0)
    if tape._blocks and not any(start < t._id and (end is None or t._id < end)
                                for t in targets for start, end in tape._blocks):
        return Explanation("not recorded", *shown, (), (), 0)
    graph = _Graph(tape, target_ids)
    if source._id not in tape._watched:  # a Variable only a branch not taken reads
        branches = tuple(graph.cuts_from({source._id}, kinds=("branch not taken",)))
        return Explanation("branch not taken" if branches else "unwatched", *shown,
                           branches, (), 0)
    reached = graph.differentiable_from(source._id)
    cuts = tuple(graph.cuts_from(reached))
    if reached & target_ids:
        paths, count = graph.paths(source._id, reached)
        traps = tuple(graph.where_traps(source._id, reached))
        all_zero, zeros = graph.zeroing_ops(source._id, reached, targets)
        # The other branch of a condition loses nothing of a gradient that flows.
        cuts = tuple(c for c in cuts if c.kind != "branch not taken")
        kind = ("zero" if zeros else "cancelled") if all_zero else "connected"
        return Explanation(kind, *shown, cuts, paths, count, traps, zeros)
    # The cut whose value reaches a target explains the None; one srcxform cannot follow
    # (a NumPy array, a branch not run) is the likeliest cause where none does, then one
    # that reaches a target only as a condition or an index.
    ranked = sorted(cuts, key=_rank)
    if ranked and _rank(ranked[0]) < 3:
        return Explanation(ranked[0].kind, *shown, tuple(ranked), (), 0)
    return Explanation("not connected", *shown, tuple(ranked), (), 0)


def _rank(cut):
    if cut.reaches_target is None:
        return 1
    return 0 if cut.reaches_target else 2 if cut.as_operand else 3


@contextlib.contextmanager
def _quietly():
    """Recorded VJPs run for explain: no tape records them, no NaN check raises in this
    thread, others' go on (a where trap's 0/0 is what is looked for), NumPy says nothing."""
    was, recording.CONTEXT.nans_quiet = recording.CONTEXT.nans_quiet, True
    try:
        with recording.paused(), np.errstate(all="ignore"):
            yield
    finally:
        recording.CONTEXT.nans_quiet = was  # as it was: explain may run inside explain


class _Graph:
    """The tape's records and cuts as edges between value ids, in the order they ran."""

    def __init__(self, tape, target_ids):
        self.records = list(tape._records)
        self.cuts = [c for c in tape._cuts if c.kind != "through"]
        self.target_ids = target_ids
        # id -> (id made from it, whether as a float input), by any op the tape kept
        self.edges = {}
        for rec in self.records:
            for x in rec.inputs:
                self.edges.setdefault(x._id, []).extend(
                    (o._id, x.dtype.kind == "f") for o in _outs(rec))
        for c in tape._cuts:
            if c.out is not None:
                for i in c.inputs:
                    self.edges.setdefault(i, []).append((c.out, True))
        self.passing = {}  # record index -> the input positions its gradient flows to
        self.nones = {}  # record index -> the reached input positions its VJP gives None

    def differentiable_from(self, source_id):
        """The ids the gradient flows to from the source: through records with a VJP, by
        the inputs it answers (not polygamma's order, nor what a custom_gradient's
        function gives None for)."""
        reached = {source_id}
        for k, rec in enumerate(self.records):
            if rec.vjp is None:
                continue
            ins = [p for p, x in enumerate(rec.inputs) if x._id in reached]
            if ins:
                self.nones[k] = _none_positions(rec) & set(ins)
                ins = [p for p in ins if p not in self.nones[k]]
            if ins:
                self.passing[k] = ins
                reached.update(o._id for o in _outs(rec))
        return reached

    def cuts_from(self, reached, kinds=None):
        """Each place where the gradient from the source stops (an op with no VJP, a
        custom_gradient that gives None, a Cut the tape kept) on a value the gradient
        reaches, once per kind, line and detail; and whether what it made reaches a
        target. `kinds`: only cuts of these kinds."""
        found = []
        for k, rec in enumerate(self.records):
            if rec.vjp is None and any(x._id in reached for x in rec.inputs):
                found.append(("no gradient", rec.op, rec.origin, _op_name(rec.op),
                              rec.out._id))
            for p in sorted(self.nones.get(k, ())):
                found.append(("custom_gradient returned None", rec.op, rec.origin,
                              f"its gradient function returned None for input {p + 1}",
                              rec.out._id) if rec.op == "custom_gradient" else
                             ("no gradient", rec.op, rec.origin,
                              f"{_op_name(rec.op)} has none for its input {p + 1}",
                              rec.out._id))
        found += [(c.kind, c.op, c.origin, _detail(c), c.out) for c in self.cuts
                  if any(i in reached for i in c.inputs)]
        found.sort(key=lambda f: f[2] or ("", 0))
        seen = set()
        for kind, op, origin, detail, out in found:
            step = _step(_op_name(op), origin)
            if (kinds is None or kind in kinds) and (kind, step, detail) not in seen:
                seen.add((kind, step, detail))
                floats = None if out is None else self._reaches(out, floats_only=True)
                yield Cut(kind, step, detail, floats,
                          floats is False and self._reaches(out, floats_only=False))

    def _reaches(self, start, floats_only):
        seen, todo = {start}, [start]
        while todo:
            node = todo.pop()
            if node in self.target_ids:
                return True
            for nxt, as_float in self.edges.get(node, ()):
                if nxt not in seen and (as_float or not floats_only):
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    def _steps(self):
        """id -> the (record, output id) steps from it on some way to a target, in the
        order they ran (an input used twice is two steps)."""
        wanted, steps = set(self.target_ids), {}
        for k in sorted(self.passing, reverse=True):
            rec = self.records[k]
            outs = [o._id for o in _outs(rec) if o._id in wanted]
            for p in self.passing[k] if outs else ():
                i = rec.inputs[p]._id
                wanted.add(i)
                steps.setdefault(i, []).extend((rec, o) for o in outs)
        for later_first in steps.values():
            later_first.reverse()
        return steps

    def paths(self, source_id, reached):
        """Up to _MAX_PATHS ways from the source to a target (each op on them with a VJP),
        as Steps merged by line, and how many ways there are in all. Iterative: a chain
        of thousands of ops is one path."""
        count = dict.fromkeys(self.target_ids, 1)
        for k in sorted(self.passing, reverse=True):  # the ops reading a value run later
            rec = self.records[k]
            ways = sum(count.get(o._id, 0) for o in _outs(rec))
            for i in (rec.inputs[p]._id for p in self.passing[k]):
                if i not in self.target_ids:
                    count[i] = count.get(i, 0) + ways
        steps = self._steps()
        found, todo = [], [(source_id, None)]  # a path as (record, previous) links
        while todo and len(found) < _MAX_PATHS:
            node, path = todo.pop()
            if node in self.target_ids and path is not None:
                found.append(_unlinked(path))
                continue
            todo.extend((out, (rec, path)) for rec, out in reversed(steps.get(node, ())))
        return tuple(_merged(path) for path in found), count.get(source_id, 0)

    def where_traps(self, source_id, reached):
        """The selections (an op with a condition input `c`: where) with a branch the
        source reaches whose gradient is NaN or inf where the branch is not selected: the
        where sends it a 0 there, and 0 times an infinite derivative is NaN. Found by
        sending that branch a zero cotangent back to the source. Only a where whose value
        reaches a target with its gradient counts."""
        leading = self._steps().keys() | self.target_ids
        for k, rec in enumerate(self.records):
            names = getattr(rec.op, "arg_names", ())
            if "c" not in names or rec.vjp is None or rec.out._id not in leading or \
                    not all(map(eager_tensor, rec.inputs)):  # traced: no values
                continue
            arrays = dict(zip(names, np.broadcast_arrays(*[x._array for x in rec.inputs])))
            branches = [(n, x) for n, x in zip(names, rec.inputs) if n != "c"]
            for (name, x), taken in zip(branches, (arrays["c"], ~arrays["c"])):
                if x._id in reached and _nan_where_unselected(
                        self.records[:k], x, source_id, ~taken.astype(bool)):
                    yield _step(_op_name(rec.op), rec.origin)
                    break

    def zeroing_ops(self, source_id, reached, targets):
        """Whether the gradient is connected and 0 in every element, and then the ops on
        the way whose output's cotangent is nonzero somewhere the cotangent they alone give
        their input is 0 (a zero derivative at these values), as Steps. None of them: the
        paths' contributions cancel (the input's other uses give the rest)."""
        seeds = {t._id: ops.ones_like(t) for t in targets if t._id in reached}
        with _quietly():
            cots = backprop(self.records, seeds, list(reached))
        grad = cots.get(source_id)
        if not eager_tensor(grad) or np.any(grad._array != 0):
            return False, ()
        found = []
        for k in sorted(self.passing):
            rec = self.records[k]
            outs = [cots.get(o._id) for o in _outs(rec)]
            if any(_nonzero(g) for g in outs) and _zeroes(
                    outs, [_own_cotangent(rec, outs, p) for p in self.passing[k]]):
                found.append(_step(_op_name(rec.op), rec.origin))
        return True, tuple(dict.fromkeys(found))


def _none_positions(rec):
    """The input positions a record's VJP gives None for (an op's operand without a
    gradient, what a custom_gradient's function does not answer), asked once with ones
    as the upstream gradient."""
    g = ops.ones_like(rec.out) if rec.outs is None else [ops.ones_like(o) for o in rec.outs]
    with _quietly():
        cotangents = rec.vjp(g, rec.outs or rec.out, *rec.inputs, **rec.params)
    return {p for p, ct in enumerate(cotangents) if ct is None}


def _nan_where_unselected(records, branch, source_id, unselected):
    """Whether a zero cotangent for `branch` comes back to the source as a NaN or inf, at
    an unselected element where the shapes let that be told (a NaN at a selected one is a
    real infinite derivative, not the where's doing)."""
    with _quietly():
        back = backprop(records, {branch._id: ops.zeros_like(branch)}, [source_id])
    grad = back.get(source_id)
    if not eager_tensor(grad):
        return False
    bad = ~np.isfinite(grad._array)
    return bool(np.any(bad & unselected if bad.shape == unselected.shape else
                       bad if unselected.any() else False))


def _own_cotangent(rec, outs, p):
    """The cotangent of rec's input p from rec alone, for its outputs' cotangents outs,
    before it is summed to p's shape (a sum may cancel: x * [1, -1] for a scalar x)."""
    g, out = (outs[0], rec.out) if rec.outs is None else (outs, rec.outs)
    with _quietly():
        ct = rec.vjp(g, out, *rec.inputs, **rec.params)[p]
    return None if ct is None else cotangent_value(ct, rec.inputs[p])


def _zeroes(outs, cotangents):
    """Whether an op gives the inputs the source reaches no cotangent somewhere its
    output's is not 0 (not where another input carries it: where(c, x, 2 * x))."""
    if len(outs) == 1 and eager_tensor(outs[0]) and all(
            eager_tensor(c) and c.shape == outs[0].shape for c in cotangents):
        lost = outs[0]._array != 0
        for c in cotangents:
            lost &= c._array == 0
        return bool(np.any(lost))
    return all(_zeroed(outs, c) for c in cotangents)


def _nonzero(g):
    return eager_tensor(g) and bool(np.any(g._array != 0))


def _zeroed(outs, g_in):
    """Whether an input's cotangent is 0 where its op's (one) output's is not."""
    if not eager_tensor(g_in):
        return g_in is None
    if len(outs) == 1 and eager_tensor(outs[0]) and outs[0].shape == g_in.shape:
        return bool(np.any((outs[0]._array != 0) & (g_in._array == 0)))
    return not np.any(g_in._array != 0)


def _unlinked(path):
    records = []
    while path is not None:
        rec, path = path
        records.append(rec)
    return records[::-1]


def _outs(rec):
    return rec.outs or (rec.out,)


def _detail(cut):
    op = _op_name(cut.op)
    if cut.kind == "integer dtype" or cut.kind == "bool dtype":
        return f"{op} to {cut.detail}"
    if cut.kind == "numpy conversion":
        return f"conversion to a {cut.detail}"
    if cut.kind == "assign":
        return f"{op} {cut.detail}"
    return cut.detail if cut.kind == "branch not taken" else op


def _op_name(op):
    return getattr(op, "name", None) or (op if isinstance(op, str) else "op")


def _step(op, origin):
    if origin is None:
        return Step(op, None, None, "")
    filename, line = origin
    return Step(op, os.path.basename(filename), line, source_line(filename, line).strip())


def _merged(records):
    """A path's records as Steps, the ops of one line in one Step (a run of one op as
    `op x n`)."""
    steps, runs = [], []
    for rec in records:
        step = _step(_op_name(rec.op), rec.origin)
        if steps and (steps[-1].file, steps[-1].line) == (step.file, step.line):
            steps[-1] = step
            if runs[-1][-1][0] == step.op:
                runs[-1][-1][1] += 1
            else:
                runs[-1].append([step.op, 1])
        else:
            steps.append(step)
            runs.append([[step.op, 1]])
    return tuple(Step(", ".join(op if n == 1 else f"{op} x{n}" for op, n in run), step.file,
                      step.line, step.text) for step, run in zip(steps, runs))


def _step_text(step):
    return f"{step.where}  {step.op}" + (f"    {step.text}" if step.text else "")


def _cut_text(cut):
    lines = [f"    {cut.kind}: {cut.detail} at {cut.step.where}"]
    if cut.step.text:
        lines.append(f"        {cut.step.text}")
    if cut.reaches_target is None and cut.kind == "numpy conversion":
        lines.append("      (srcxform cannot follow what it made: it may be what reaches "
                     "the target)")
    if cut.as_operand:
        lines.append("      (it reaches the target only as an operand that carries no "
                     "gradient: a where()'s condition, an index)")
    lines.append(f"      {ADVICE[cut.kind]}")
    return lines


def _describe(value):
    if isinstance(value, Variable):
        return f"Variable '{value.name}'"
    if isinstance(value, (list, tuple, dict)):
        return "the targets"
    aval = getattr(value, "aval", None)
    return f"tensor {aval.short()}" if aval is not None else type(value).__name__


def _count(n, noun):
    return f"{n} {noun}" + ("" if n == 1 else "s")
