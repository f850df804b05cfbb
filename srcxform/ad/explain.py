"""tape.explain: why d target / d source is what it is, named with the user's lines.

Reads what a GradientTape kept (its records, each with its op and line, and its Cuts: the
ops that took a watched value and carry no gradient) and runs no op and no gradient: the
recorded values are read only to find a where() trap. Knows no primitive by name: a cut's
kind is what recording.py decided from the primitive's fields.
"""

import os
from dataclasses import dataclass

import numpy as np

from srcxform.core import recording
from srcxform.core.errors import source_line
from srcxform.core.tensor import Tensor, Variable, as_value
from srcxform.core.tree import tree_flatten

# Each kind of explanation, with what to do about it.
ADVICE = {
    "connected": "",
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
    "assign": "assign is not differentiated: the Variable's new value is a constant to the "
              "tape; use the value itself where it should carry a gradient",
    "not connected": "the target does not depend on the source: nothing computed from the "
                     "source reaches it",
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
    """An op that took a value computed from the source and carries no gradient."""

    kind: str  # a key of ADVICE
    step: Step
    detail: str  # "cast to int32", "conversion to a NumPy array"
    reaches_target: bool | None  # None where srcxform cannot follow it (a NumPy array)


@dataclass(frozen=True)
class Explanation:
    """What tape.explain found. `kind` is "connected", or the kind of the cut that makes
    the gradient None; `file`, `line` and `op` are that cut's (None when connected);
    `cuts` are every cut met on the way (the first the reason, when not connected);
    `paths` the ways from source to target, each a tuple of Steps; `where_traps` the
    where()s on the way that select away NaN or inf values (whose gradient is NaN)."""

    kind: str
    source: str
    target: str
    cuts: tuple
    paths: tuple
    path_count: int
    where_traps: tuple = ()

    @property
    def cut(self) -> Cut | None:
        return self.cuts[0] if self.cuts and self.kind != "connected" else None

    @property
    def file(self) -> str | None:
        return self.cut.step.file if self.cut else None

    @property
    def line(self) -> int | None:
        return self.cut.step.line if self.cut else None

    @property
    def op(self) -> str | None:
        return self.cut.step.op if self.cut else None

    def __str__(self):
        head = f"gradient of {self.target} wrt {self.source}: "
        if self.kind == "connected":
            return "\n".join([head + f"connected, by {_count(self.path_count, 'path')}",
                              *self._paths_text(), *self._lost_text()])
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
            yield (f"  where trap at {step.where}: {step.op} selects away NaN or inf values, "
                   f"and their gradient (0 times an infinite derivative) is NaN")
            yield f"        {step.text}"
            yield f"      {_DOUBLE_WHERE}"


def explain_tape(tape, target, source) -> Explanation:
    """tape.explain's report (see GradientTape.explain)."""
    targets = [as_value(t, "explain") for t in tree_flatten(target)[0]]
    target_ids = {t._id for t in targets}
    shown = _describe(source), _describe(target if len(targets) != 1 else targets[0])
    source = as_value(source, "explain") if not isinstance(source, Variable) else source
    if source._id in target_ids:
        return Explanation("connected", *shown, (), ((),), 1)
    if source.dtype.kind != "f":
        kind = "bool dtype" if source.dtype.kind == "b" else "integer dtype"
        return Explanation(kind, *shown, (), (), 0)
    if source._id not in tape._watched:
        return Explanation("unwatched", *shown, (), (), 0)
    graph = _Graph(tape)
    reached = graph.differentiable_from(source._id)
    connected = bool(reached & target_ids)
    # A connected gradient loses a cut's part only where the cut's value goes on as a
    # float one (not as a condition: where(x > 0, x, 0) loses nothing at its comparison).
    cuts = tuple(graph.cuts_from(reached, target_ids, floats_only=connected))
    if connected:
        paths, count = graph.paths(source._id, reached, target_ids)
        return Explanation("connected", *shown, cuts, paths, count,
                           tuple(graph.where_traps(reached)))
    # The cut that reaches a target explains the None; a NumPy array cannot be followed,
    # so a conversion is the likeliest cause where no cut reaches one.
    ranked = sorted(cuts, key=lambda c: (not c.reaches_target, c.reaches_target is not None))
    if ranked and ranked[0].reaches_target is not False:
        return Explanation(ranked[0].kind, *shown, tuple(ranked), (), 0)
    return Explanation("not connected", *shown, tuple(ranked), (), 0)


class _Graph:
    """The tape's records and cuts as edges between value ids, in the order they ran."""

    def __init__(self, tape):
        self.records = list(tape._records)
        self.cuts = [c for c in tape._cuts if c.kind != "through"]
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

    def differentiable_from(self, source_id):
        """The ids the gradient flows to from the source: through records with a VJP."""
        reached = {source_id}
        for rec in self.records:
            if rec.vjp is not None and any(x._id in reached for x in rec.inputs):
                reached.update(o._id for o in _outs(rec))
        return reached

    def cuts_from(self, reached, target_ids, floats_only=False):
        """Each place where the gradient from the source stops: an op with no VJP (a
        record of it), or a Cut the tape kept, on a value the gradient reaches; and
        whether what it made reaches a target (`floats_only`: as a float input of each
        op on the way)."""
        found = [(rec.origin, _cut_of_record(rec)) for rec in self.records
                 if rec.vjp is None and any(x._id in reached for x in rec.inputs)]
        found += [(c.origin, c) for c in self.cuts if any(i in reached for i in c.inputs)]
        found.sort(key=lambda pair: pair[0] or ("", 0))
        for origin, c in found:
            reaches = None if c.out is None else \
                self._reaches(c.out, target_ids, floats_only)
            yield Cut(c.kind, _step(_op_name(c.op), origin), _detail(c), reaches)

    def where_traps(self, reached):
        """The selections (an op with a condition input `c`: where) whose unselected
        branch depends on the source and holds a NaN or inf there: its gradient is 0 times
        the infinite derivative that made it, NaN. The first branch is taken where c is
        true, the second where it is false (where's order)."""
        for rec in self.records:
            names = getattr(rec.op, "arg_names", ())
            if "c" not in names or rec.vjp is None or \
                    not all(isinstance(x, Tensor) for x in rec.inputs):  # traced: no values
                continue
            arrays = dict(zip(names, np.broadcast_arrays(*[x._array for x in rec.inputs])))
            branches = [(n, x) for n, x in zip(names, rec.inputs) if n != "c"]
            for (name, x), taken in zip(branches, (arrays["c"], ~arrays["c"])):
                hidden = arrays[name][~taken]
                if x._id in reached and hidden.dtype.kind == "f" and \
                        not np.isfinite(hidden).all():
                    yield _step(_op_name(rec.op), rec.origin)
                    break

    def _reaches(self, start, target_ids, floats_only):
        seen, todo = {start}, [start]
        while todo:
            node = todo.pop()
            if node in target_ids:
                return True
            for nxt, as_float in self.edges.get(node, ()):
                if nxt not in seen and (as_float or not floats_only):
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    def paths(self, source_id, reached, target_ids):
        """Up to _MAX_PATHS ways from the source to a target (each op on them with a VJP),
        as Steps merged by line, and how many ways there are in all."""
        useful, wanted = {}, set(target_ids)
        for rec in reversed(self.records):  # the records on some way to a target
            if rec.vjp is not None and any(o._id in wanted for o in _outs(rec)):
                ins = [x._id for x in rec.inputs if x._id in reached]
                wanted.update(ins)
                for i in ins:
                    useful.setdefault(i, []).insert(0, rec)
        found, count = [], _count_paths(source_id, useful, target_ids, {})
        self._walk(source_id, useful, target_ids, [], found)
        return tuple(_merged(path) for path in found), count

    def _walk(self, node, useful, target_ids, path, found):
        if len(found) >= _MAX_PATHS:
            return
        if node in target_ids and path:
            found.append(list(path))
            return
        for rec in useful.get(node, ()):
            path.append(rec)
            self._walk(rec.out._id, useful, target_ids, path, found)
            path.pop()


def _count_paths(node, useful, target_ids, memo):
    if node in target_ids:
        return 1
    if node not in memo:
        memo[node] = sum(_count_paths(rec.out._id, useful, target_ids, memo)
                         for rec in useful.get(node, ()))
    return memo[node]


def _outs(rec):
    return rec.outs or (rec.out,)


def _cut_of_record(rec):
    """A recorded op with no VJP (floor, round) as the cut the tape would keep for it."""
    return recording.Cut("no gradient", rec.op, tuple(x._id for x in rec.inputs), rec.out._id,
                rec.origin)


def _detail(cut):
    op = _op_name(cut.op)
    if cut.kind == "integer dtype" or cut.kind == "bool dtype":
        return f"{op} to {cut.detail}"
    if cut.kind == "numpy conversion":
        return f"conversion to a {cut.detail}"
    if cut.kind == "assign":
        return f"assign {cut.detail}"
    return op


def _op_name(op):
    return getattr(op, "name", None) or (op if isinstance(op, str) else "op")


def _step(op, origin):
    if origin is None:
        return Step(op, None, None, "")
    filename, line = origin
    return Step(op, os.path.basename(filename), line, source_line(filename, line).strip())


def _merged(records):
    """A path's records as Steps, the ops of one line in one Step."""
    steps = []
    for rec in records:
        step = _step(_op_name(rec.op), rec.origin)
        if steps and (steps[-1].file, steps[-1].line) == (step.file, step.line):
            last = steps.pop()
            step = Step(f"{last.op}, {step.op}", step.file, step.line, step.text)
        steps.append(step)
    return tuple(steps)


def _step_text(step):
    return f"{step.where}  {step.op}" + (f"    {step.text}" if step.text else "")


def _cut_text(cut):
    lines = [f"    {cut.kind}: {cut.detail} at {cut.step.where}"]
    if cut.step.text:
        lines.append(f"        {cut.step.text}")
    if cut.reaches_target is None:
        lines.append("      (srcxform cannot follow a NumPy value: it may be what reaches "
                     "the target)")
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
