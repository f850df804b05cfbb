"""Structured control flow in the IR: equations whose params hold regions (sub-programs),
for the loops and branches whose trip count or predicate is known only at run time.

    while_loop(*init, *captures; cond, body, checkpoint)
    fori_loop(lower, upper, *init, *xs, *captures; body, reverse, checkpoint)
    cond(pred, *operands; true, false)

A region is a Program traced once from the user's function (a SubTrace): its inputs are
the explicit ones (the loop index, the loop-carried values, a row of each of a
fori_loop's `xs`) and then its captures, the values of enclosing traces it reads. The
IR's equations have one output, so a structured equation's output is a token and each of
its results an `output` equation of the token (DCE and CSE then treat the results as
they treat any value). A loop's results are its carries, then a fori_loop's stacked
outputs (a row per iteration: scan's), then, where a tape differentiates it, its trip
count and a stack per carry of the value at the start of each iteration
(codegen/control.py stores only the stacks that something reads).

Reverse mode is derived at trace time from the primitives' VJPs. A loop's adjoint is a
fori_loop over the same rows in the other direction whose body recomputes the forward
body from the stored values under a tape and runs that tape backwards; the captures'
cotangents are summed in extra carries. Being a loop itself, it has an adjoint too
(second order). cond's adjoint is a cond of the branches' adjoints.

With `checkpoint=k` the stacks keep the carries of every k-th iteration only (row s:
iteration s·k), and the adjoint runs in segments of k iterations, last first: each
recomputes its carries from its checkpoint with the forward body (its `recompute`
region, the same arithmetic, so the gradients are the same to the bit), into a segment
stack of k rows, then runs the adjoint body over them backwards. Peak stack memory is
ceil(trips / k) + k rows instead of trips, for one more forward pass. A second
derivative reads the stacks themselves, so under nested tapes every carry is stored.
"""

import contextlib
import contextvars
import dataclasses
import inspect

import numpy as np

from srcxform.core import recording, settings
from srcxform.core.aval import Aval
from srcxform.core.dims import Dim
from srcxform.core.dtypes import out_of_range, promote
from srcxform.core.errors import TracingError, user_line
from srcxform.core.ir import Var
from srcxform.core.primitive import Algebra, Codegen
from srcxform.passes.carries import live_carries
from srcxform.passes.pipeline import optimize
from srcxform.core.recording import CONTEXT
from srcxform.ops.held_sizes import size_argument
from srcxform.core.tensor import (
    PythonNumber, SizeConstant, Tensor, Value, as_value, converted_python_int,
)
from srcxform.ad.trace import Trace, Tracer


UNROLLING = contextvars.ContextVar("srcxform_unrolling", default=False)


@contextlib.contextmanager
def unrolling():
    """fori_loops over bounds known when tracing unroll in this block, i a Python int: for
    the CUDA target, whose structured loops run on the host (kernels launched per trip)."""
    token = UNROLLING.set(True)
    try:
        yield
    finally:
        UNROLLING.reset(token)


_TOKEN = Aval((), np.dtype(np.bool_))
INDEX = Aval((), np.dtype(np.int64))  # a loop index: a body region's first input
_WEAK_INDEX = Aval((), np.dtype(np.int64), weak=True)  # a Python int's, as JAX's static i


class Trips(int):
    """The leading dim of a loop's stack: the trip count, known when the loop has run."""

    def __str__(self):
        return "trips"

    __repr__ = __str__


class StructuredOp:
    """An IR operation that runs regions. Not a Primitive: nothing evaluates it eagerly
    (eager control flow runs as Python) and it has no emit template (codegen/control.py
    lowers it). It has the attributes the passes read of every primitive."""

    kind = "opaque"
    structured = True  # codegen/control.py lowers it
    nondiff = False
    variadic = True
    algebra, codegen = Algebra(), Codegen()  # nothing to assume: the defaults
    template = vector_template = None

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<structured {self.name}>"

    @property
    def is_result(self):
        """Whether this is the `output` op (the IR shows it in its structured equation)."""
        return self.name == "output"

    def shape(self, *avals, **params):
        return params["aval"] if self.name == "output" else _TOKEN

    def format_lines(self, eqn, program, namer, width):
        """The printed form: `x: f64[], y: f64[] = while_loop(x0, y0, a, carries=2, ...):`
        (the results the program reads), then each region as a nested function."""
        from srcxform.core.ir import format_atom, format_param, format_program

        results = results_of(program, eqn.out)
        targets = ", ".join(f"{namer(v)}: {v.aval.short(symbolic=True)}"
                            for _, v in sorted(results.items())) or "_"
        ins = [format_atom(a, namer) for a in eqn.ins]
        ins += [f"{k}={format_param(v)}" for k, v in eqn.params
                if not hasattr(v, "eqns") and k != "y_avals"]
        lines = [f"    {targets} = {self.name}({', '.join(ins)}):"]
        for key, region in eqn.params:
            if hasattr(region, "eqns"):
                text = format_program(region.replace(name=key), namer, width - 8)
                lines += ["        " + line for line in text.split("\n")]
        return lines


def reads_index(body):
    """Whether a loop's body region reads its index (its first input)."""
    index = body.ins[0]
    return index in body.outs or any(index in e.ins for e in body.eqns)


def results_of(program, token):
    """{index: Var} of a structured equation's results that the program computes."""
    return {e.kwargs["index"]: e.out for e in program.eqns
            if e.prim is OUTPUT and e.ins[0] is token}


WHILE, FORI, COND = (StructuredOp(n) for n in ("while_loop", "fori_loop", "cond"))
OUTPUT = StructuredOp("output")


# ----- tracing regions -----


class SubTrace(Trace):
    """Traces a region inside `parent`: values of enclosing traces it reads (a closure's
    tracers, constants, Variables) become extra inputs, its captures."""

    def __init__(self, parent, name):
        super().__init__(name)
        self.parent = parent
        self.symbols, self.sizes, self.guards = parent.symbols, parent.sizes, parent.guards
        self.captured = parent.captured
        self.joiner = parent.joiner
        self.captures = []  # the outer values read, in order
        self.reads_traced = False  # whether it reads a traced value (not a constant)
        self.tapes = [tape for tape in CONTEXT.tapes if tape._recording]  # where it runs
        self._capture_vars = {}  # outer Var -> this region's input Var

    def encloses(self, trace):
        parent = self.parent
        while parent is not None:
            if parent is trace:
                return True
            parent = getattr(parent, "parent", None)
        return False

    def input(self, aval, hint, eager="tensor"):
        var = Var(aval)
        self.ins.append(var)
        self.hints[var] = hint
        return Tracer(self, var, eager=eager)

    def _atom(self, value):
        if isinstance(value, Tracer) and value._trace is not self:
            if not self.encloses(value._trace):
                raise TracingError(f"{user_line()}: a value traced by another function or "
                                   "loop body is used here; pass it as an argument instead")
            self.reads_traced = True
            return self._capture(value)
        if not isinstance(value, (Tracer, SizeConstant)) and value._array.ndim:
            # A constant array is an input of the outermost trace, captured.
            var = self.parent._atom(value)
            return self._capture(Tracer(self.parent, var))
        return super()._atom(value)

    def _capture(self, outer):
        inner = self._capture_vars.get(outer.ir_var)
        if inner is None:
            inner = self._capture_vars[outer.ir_var] = Var(outer.aval)
            self.captured_from[inner] = outer
            self.captures.append(outer)
            hint = outer._trace.hints.get(outer.ir_var)  # the outer name, where it has one
            if hint:
                self.hints[inner] = hint
        return inner

    def read_variable(self, variable):
        # Read where the loop or branch runs: the tapes recording there watch it, as
        # eagerly (they are paused while the region is traced).
        recording.variable_read(variable, self.tapes)
        self.reads_traced = True
        return Tracer(self, self._capture(self.parent.read_variable(variable)), variable._id)

    def write_variable(self, variable, value):
        raise AssignInRegion(user_line(), variable.name)


class AssignInRegion(TracingError):
    """A Variable assigned inside a compiled loop body or branch (vmap names its own)."""

    def __init__(self, where, variable):
        # A Generator's draw advances its counter, a Variable (srcxform.random).
        self.draw = variable.startswith("rng_counter")
        super().__init__(
            f"{where}\n  a random draw (srcxform.random, nn.dropout) inside a compiled loop "
            f"body or branch, which would advance its Generator there: draw every "
            f"iteration's values before it (one draw of shape (n, ...)) and index them" if
            self.draw else
            f"{where}\n  assigning a Variable inside a compiled loop body or branch "
            f"({variable}): return the new value from it and assign after")
        self.where, self.variable = where, variable


def trace_region(name, fn, avals, hints, kinds=(), views=()):
    """Traces fn on fresh inputs of `avals` as a region of the innermost trace, no tape
    recording it; the first inputs are what `kinds` says in an eager run (Tracer.eager_kind),
    the rest tensors, and views of a NumPy array where `views` says (Tracer.viewed).
    Returns the SubTrace and fn's result."""
    sub = SubTrace(CONTEXT.traces[-1], name)
    kinds = list(kinds) + ["tensor"] * (len(avals) - len(kinds))
    with recording.paused(), sub:
        args = [sub.input(aval, hint, kind) for aval, hint, kind in zip(avals, hints, kinds)]
        for arg, view in zip(args, views):
            arg.viewed = view
        result = fn(*args)
    return sub, result


def viewed_of(values):
    """Whether each value is a view of a NumPy array (Tracer.viewed)."""
    return [getattr(v, "viewed", False) for v in values]


def _kept_views(results, *sources):
    """results, each a view where a value it stands for is one: a view a loop's body gives
    back (the carried view itself), or a branch gives, stays one in an eager run (an
    in-place operator on it then raises). A body that rebinds the value gives a new array
    once it has run (at no trips the view would stay: the one case left)."""
    for k, result in enumerate(results):
        if isinstance(result, Tracer) and any(k < len(s) and getattr(s[k], "viewed", False)
                                              for s in sources):
            result.viewed = True
    return results


def restorer():
    """A function putting the enclosing traces back as they are now: undoing what a region
    traced and given up added to them (captures, constants, Variables read, guards)."""
    kinds = (list, dict, set)
    saved = [(obj, key, value.copy() if isinstance(value, kinds) else value)
             for trace in CONTEXT.traces for obj in (trace, trace.symbols)
             for key, value in vars(obj).items()]

    def restore():
        for obj, key, value in saved:
            current = getattr(obj, key)
            if isinstance(current, kinds):  # refilled in place: traces share some
                current.clear()
                (current.extend if isinstance(current, list) else current.update)(value)
            else:
                setattr(obj, key, value)

    return restore


def align(subs_and_outs):
    """The regions traced by SubTraces (with their outputs), taking the same captures in
    one order: (regions, captures)."""
    programs = [sub.program(list(outs)) for sub, outs in subs_and_outs]  # may capture
    captures, seen = [], set()
    for sub, _ in subs_and_outs:
        for c in sub.captures:
            if c.ir_var not in seen:
                seen.add(c.ir_var)
                captures.append(c)
    check = settings.switch("SRCXFORM_CHECK")
    regions = []
    # Verified and optimized as the whole program is, after its trace: deciding nothing
    # for this call's sizes (comparing a size here would record a guard).
    saved, CONTEXT.guards = CONTEXT.guards, None
    try:
        for (sub, _), program in zip(subs_and_outs, programs):
            ins = program.ins + [sub._capture_vars.get(c.ir_var) or Var(c.aval) for c in captures]
            program = program.replace(ins=ins)
            if check:
                program.check()
            # The adjoint evaluates the region again under a tape: its gradient stops stay.
            regions.append(optimize(program, check=check, keep_gradient_stops=True))
    finally:
        CONTEXT.guards = saved
    return regions, captures


# ----- binding -----


def bind(op, values, params, avals, vjp=None):
    """Adds a structured equation and its outputs to the innermost trace; records it on
    the tapes watching its inputs (vjp as Record.outs describes). Returns the outputs."""
    trace = CONTEXT.traces[-1]
    values = [as_value(v) for v in values]
    token = trace.add_eqn(op, values, params, _TOKEN)
    outs = [trace.add_eqn(OUTPUT, [token], {"index": k, "aval": aval}, aval)
            for k, aval in enumerate(avals)]
    for out, aval in zip(outs, avals):  # the stacks a loop keeps for its adjoint
        if aval is INDEX and op is not COND:
            trace.hints[out.ir_var] = "trips"
        elif aval.shape and isinstance(aval.shape[0], Trips):
            trace.hints[out.ir_var] = "stack"
    if vjp is not None and (CONTEXT.tapes or CONTEXT.accumulators):
        recording.record_outputs(vjp, values, outs, {})
    return outs


def evaluate(program, args):
    """Runs a region's equations on values (Tracers), binding each primitive again, so that
    tapes record them: the forward body recomputed in its adjoint."""
    env = dict(zip(program.ins, args))

    def read(atom):
        return env[atom] if isinstance(atom, Var) else literal(atom)

    for eqn in program.eqns:
        ins = [read(a) for a in eqn.ins]
        if eqn.prim is OUTPUT:
            env[eqn.out] = env[eqn.ins[0]][eqn.kwargs["index"]]
        elif isinstance(eqn.prim, StructuredOp):
            env[eqn.out] = rebind(eqn.prim, ins, eqn.kwargs)
        else:
            env[eqn.out] = at_origin(eqn.prim.bind(*ins, **eqn.kwargs), eqn.origin)
    return [read(a) for a in program.outs]


def literal(atom):
    """An equation's literal operand (a Lit) as a value: a size, or a constant."""
    if hasattr(atom.value, "expr"):  # a size
        return as_value(atom.value)
    return Tensor._new(np.asarray(atom.value, atom.aval.dtype), atom.aval.weak)


def at_origin(value, origin):
    """value, its equation (just traced) attributed to the user's line `origin`: the
    line the recomputed equation came from, not the line that called the compiler."""
    trace = getattr(value, "_trace", None)
    if trace is not None and trace.eqns and trace.eqns[-1].out is value.ir_var:
        trace.eqns[-1] = dataclasses.replace(trace.eqns[-1], origin=origin)
        trace.origins[value.ir_var] = origin
    return value


# ----- loops -----


def carry_avals(values):
    return [as_value(v).aval for v in values]


def eager_kinds(values):
    """What each value is in an eager run (Tracer.eager_kind): a Tracer's own kind, a
    NumPy value NumPy's, a Python number (autograph's PythonNumber, a size) one, anything
    else (a Tensor, tf.exp(0.1) folded at the trace) a tensor."""
    return [v.eager_kind if isinstance(v, Tracer) else
            "numpy" if isinstance(v, (np.generic, np.ndarray)) else
            "python" if isinstance(v, (bool, int, float, PythonNumber, SizeConstant, Dim))
            else "tensor" for v in values]


def _same_shape(a, b):
    """Whether two shapes are equal; sizes of different inputs found equal are guarded
    so (dims.py), as an elementwise op of the two would."""
    return len(a) == len(b) and all(x == y for x, y in zip(a, b))


def _weak_promoted(inits, avals, outs, numbers=()):
    """The loop variables, each that starts weak (a Python number; or at a position in
    `numbers`, one made a tensor by TensorFlow's rule, which the body gives another dtype)
    and that the body makes a strong value of its shape cast to the body's dtype, as
    eagerly (JAX's rule for weak carries), or a wider Python number made one; None if none."""
    from srcxform.ops import cast

    promoted, changed = list(inits), False
    for k, (before, out) in enumerate(zip(avals, outs)):
        after = as_value(out).aval
        number = before.weak or (k in numbers and after.dtype != before.dtype)
        if not number or not _same_shape(before.shape, after.shape):
            continue
        if not after.weak:  # as the first trip leaves it eagerly: a NumPy value or a tensor
            if not _loses_nothing(before, after, inits[k]):
                continue  # check_carries raises, as TensorFlow and JAX do
            kind = eager_kinds([out])[0]
            if kind == "numpy" and isinstance(inits[k], (bool, int, float, PythonNumber)):
                promoted[k] = np.asarray(inits[k], after.dtype)[()]
            else:  # a traced Python int checked where it runs (helper 130: -1 gave 255)
                promoted[k] = cast(converted_python_int(
                    as_value(inits[k]), after.dtype, "a loop variable's start"), after.dtype)
                if isinstance(promoted[k], Tracer):
                    promoted[k].eager_kind = kind
            changed = True
        elif before.weak and before.dtype != after.dtype == np.promote_types(
                before.dtype, after.dtype):  # widened only: total = 0, then total + 0.5
            promoted[k], changed = inits[k] + (0.0 if after.dtype.kind == "f" else 0), True
    return promoted if changed else None


def _loses_nothing(before, after, init):
    """Whether a weak loop variable, `init`, takes the dtype the body gives it (`after`'s)
    with no more than rounding: it promotes to it, as a Python number does beside it (a
    float does not become an int, nor an int a bool), and does not overflow it. A cast
    that loses more is what a loop of no trips would return (helper 127: -1.5 gave -1)."""
    if promote([Aval((), before.dtype, True), Aval((), after.dtype)])[0] != after.dtype:
        return False
    # A concrete tensor (a tracer is a Tensor to isinstance): tf.while_loop's made ones
    if isinstance(init, Tensor) and init._trace is None:  # (helper 132: its int32 -1
        value = init._array  # became a uint8 255 too)
    elif isinstance(init, (bool, int, float)):
        value = np.asarray(init)
    else:
        return True  # a traced one is checked where the kernel runs (_weak_promoted)
    if after.dtype.kind in "iu":
        return value.dtype.kind != "O" and out_of_range(value, after.dtype) is None
    with np.errstate(all="ignore"):
        return bool(np.isfinite(value.astype(after.dtype)) or not np.isfinite(value))


def check_carries(op, names, before, after):
    """TracingError naming the first loop-carried value whose shape or dtype the body
    changes."""
    if len(after) != len(before):
        raise TracingError(f"{op}: the body returns {len(after)} values for {len(before)} "
                           f"loop variables\n  at {user_line()}")
    for name, a, b in zip(names, before, after):
        b = as_value(b)  # storage with storage (a Python number's .dtype is TensorFlow's)
        if not _same_shape(a.shape, b.shape) or a.dtype != b.aval.dtype:
            raise TracingError(
                f"{op}: the body changes loop variable {name!r} from {a.short()} to "
                f"{b.aval.short()}; a loop-carried value keeps its shape and dtype (cast it, "
                f"or give it its final shape before the loop)\n  at {user_line()}")


def while_loop(cond_fn, body_fn, inits, names, checkpoint=None, numbers=()):
    """The structured while loop over flat loop variables `inits` (values); cond_fn and
    body_fn take and give flat lists. `numbers`: the positions of those that were Python
    numbers, which take the dtype the body gives them (_weak_promoted)."""
    avals, kinds = carry_avals(inits), eager_kinds(inits)
    cond_sub, pred = trace_region("cond", lambda *c: as_bool(cond_fn(list(c))), avals,
                                  names)
    body_sub, outs = trace_region("body", lambda *c: body_fn(list(c)), avals, names, kinds,
                                  viewed_of(inits))
    promoted = _weak_promoted(inits, avals, outs, numbers)
    if promoted is not None:  # traced again from inits of the dtypes the body gives
        return while_loop(cond_fn, body_fn, promoted, names, checkpoint)
    check_carries("while_loop", names, avals, outs)
    (cond_region, body_region), captures = align([(cond_sub, [pred]), (body_sub, list(outs))])
    return _kept_views(_bind_loop(WHILE, [], inits, captures, {"cond": cond_region,
                                                               "body": body_region},
                                  checkpoint=checkpoint, kinds=eager_kinds(outs)), outs)


def fori_loop(lower, upper, body_fn, inits, names, xs=(), y_avals=(), checkpoint=None,
              static=False):
    """The structured fori loop; body_fn(i, flat carries, rows) gives the new carries and
    the iteration's row of each output of `y_avals` (the stacked outputs' avals), rows
    being each of `xs`'s row i - lower (scan's elements). `y_avals` may instead be a
    function of the avals of the rows the traced body gives (map_fn's outputs, which only
    the body's trace tells). `static` (Python-int bounds): i is weak, and a loop reading
    no traced value (in inits or captures) is not bound: None (the caller unrolls it)."""
    avals = carry_avals(inits)
    row_avals = [Aval(tuple(x.shape[1:]), x.dtype) for x in xs]
    n, m = len(inits), len(xs)

    sizes = [size_argument(b) for b in (lower, upper)]  # tf.shape(x)[0] - 1 as the size

    def traced(i, *values):
        if not any(isinstance(b, Value) for b in sizes):
            i._trace.loop_index = (i.ir_var, *sizes)
        carries, rows = body_fn(i, list(values[:n]), list(values[n:]))
        return list(carries) + list(rows)

    # i is a Python int in an eager run, whatever the bounds: weak, as JAX's static i
    sub, outs = trace_region("body", traced, [_WEAK_INDEX] + avals +
                             row_avals, ["i"] + names + [f"row{k}" for k in range(m)],
                             ["python"] + eager_kinds(inits), [False] + viewed_of(inits))
    if static and not sub.reads_traced and not any(isinstance(v, Tracer) for v in inits):
        return None
    promoted = _weak_promoted(inits, avals, outs[:n])
    if promoted is not None:  # traced again from inits of the dtypes the body gives
        return fori_loop(lower, upper, body_fn, promoted, names, xs, y_avals, checkpoint,
                         static)
    check_carries("fori_loop", names, avals, outs[:n])
    if callable(y_avals):
        y_avals = y_avals([as_value(row).aval for row in outs[n:]])
    (body_region,), captures = align([(sub, list(outs))])
    bounds = [_as_index(lower), _as_index(upper)]
    return _kept_views(_bind_loop(FORI, bounds, inits, captures, {"body": body_region}, xs,
                                  tuple(y_avals), checkpoint=checkpoint,
                                  kinds=eager_kinds(outs[:n])), outs[:n])


def map_loop(region, captures, xs, y_avals):
    """A fori_loop with no carries over the rows of xs (values of one length): region
    (inputs: the index, a row of each of xs, then captures) gives a trip's rows of the
    stacked outputs (`y_avals`)."""
    bounds = [_as_index(0), _as_index(xs[0].shape[0])]
    return _bind_loop(FORI, bounds, [], captures, {"body": region}, xs, tuple(y_avals))


def _as_index(bound):
    value = as_value(bound)
    if value.dtype.kind not in "iu" or value.aval.ndim != 0:
        raise TypeError(f"fori_loop: a bound must be an integer scalar, got "
                        f"{value.aval.short()}")
    if value.aval.dtype != np.int64:  # a Python int is held as int64 and stays weak
        from srcxform.ops import cast

        value = cast(value, np.int64)
    return value


def as_bool(pred, op="while_loop"):
    """A predicate as a bool scalar, as Python's truth takes it."""
    from srcxform.ops import not_equal, reshape

    pred = as_value(pred)
    if int(np.prod(pred.shape)) != 1:
        raise ValueError(f"{op}: the predicate has shape {tuple(pred.shape)}; it must be a "
                         "scalar (use reduce_all or reduce_any)")
    pred = reshape(pred, ()) if pred.shape != () else pred
    return pred if pred.dtype == np.bool_ else not_equal(pred, 0)


def checked_checkpoint(checkpoint, op):
    """A loop's `checkpoint` option: None, or a positive Python int."""
    if checkpoint is None:
        return None
    if isinstance(checkpoint, bool) or not isinstance(checkpoint, (int, np.integer)) \
            or checkpoint < 1:
        raise ValueError(f"{op}: checkpoint must be a positive int (store every k-th "
                         f"carry) or None, got {checkpoint!r}")
    return int(checkpoint)


def _bind_loop(op, bounds, inits, captures, regions, xs=(), y_avals=(), reverse=False,
               checkpoint=None, recompute=(), kinds=None):
    """Binds a loop (a fori_loop runs i from upper - 1 down with `reverse`): its results
    are the carries, then the stacked outputs (`y_avals`), then where a tape
    differentiates it the trip count and the stacks of the carries (the value at the
    start of each iteration, at row i - lower, or at the iteration's count for a
    while_loop; with `checkpoint=k` of every k-th iteration only, at row count // k).
    `recompute`: a checkpointed loop's adjoint's (forward body, counts of its inputs,
    the inputs, (k, the forward carries whose segment rows the adjoint reads)), as
    _loop_vjp makes it. `kinds`: what each carry is after the loop in an eager run (the
    body's results' eager_kinds: a trip count known only at run time is taken as not 0).
    Returns the carries and the stacked outputs."""
    outs = _bind_loop_results(op, bounds, inits, captures, regions, xs, y_avals, reverse,
                              checkpoint, recompute, False, kinds)
    return outs[:len(inits) + len(y_avals)]


def _bind_loop_results(op, bounds, inits, captures, regions, xs, y_avals, reverse,
                       checkpoint, recompute, stacked, kinds=None):
    """_bind_loop, returning every result; with `stacked` the trip count and stacks are
    results even where no tape differentiates the loop."""
    n, m = len(inits), len(xs)
    values = [as_value(v) for v in (*bounds, *inits, *xs, *captures)]
    # A forward accumulator differentiates the loop too (LoopRule.jvp).
    watched = recording.watching(values) or any(
        accumulator.follows(values) for accumulator in CONTEXT.accumulators)
    if recompute and watched:
        raise NotImplementedError("the derivative of a checkpointed loop's adjoint: use "
                                  "checkpoint=None for a second derivative")
    stacked = stacked or watched
    if not stacked or recording.tapes_watching(values) > 1:
        checkpoint = None  # nothing stored, or a second derivative reads every carry
    avals = carry_avals(values[len(bounds):len(bounds) + n])
    out_avals = avals + list(y_avals)  # a weak carry stays weak: a Python number
    if stacked:
        out_avals += [INDEX] + [Aval((Trips(0),) + tuple(a.shape), a.dtype) for a in avals]
    params = dict(regions, carries=n, stacked=stacked, checkpoint=checkpoint)
    if op is FORI:
        params.update(xs=m, y_avals=tuple(y_avals), reverse=reverse)
    if recompute:
        region, counts, ins, segment = recompute
        params.update(recompute=region, recompute_ins=counts, segment=segment)
        values += [as_value(v) for v in ins]
    vjp = LoopRule(op, len(bounds), n, m, regions, tuple(y_avals), reverse, checkpoint,
                   bool(recompute)) if stacked else None
    return _with_kinds(bind(op, values, params, out_avals, vjp), kinds, n)


def _with_kinds(outs, kinds, n):
    """outs, the first n of them given eager kinds `kinds` (Tracer.eager_kind); where no
    traced value tells (an equation bound again), each weak one is taken as a Python
    number (a loop's carry or a branch's result that stays one)."""
    if kinds is None:
        kinds = ["python" if out.aval.weak else "tensor" for out in outs[:n]]
    for out, kind in zip(outs[:n], kinds):
        if isinstance(out, Tracer):
            out.eager_kind = kind
    return outs


def _rebind_loop(op):
    def rebind(ins, params):
        bounds = 2 if op is FORI else 0
        n, m = params["carries"], params.get("xs", 0)
        regions = {k: params[k] for k in ("cond", "body") if k in params}
        recompute = ()
        if params.get("recompute") is not None:
            counts = params["recompute_ins"]
            ins, rest = ins[:len(ins) - sum(counts)], ins[len(ins) - sum(counts):]
            recompute = (params["recompute"], counts, rest, params["segment"])
        # Stacks where the equation had them: the region may read them (a tape inside
        # the enclosing body differentiated this loop), whether or not a tape watches now.
        return _bind_loop_results(op, ins[:bounds], ins[bounds:bounds + n],
                                  ins[bounds + n + m:], regions, ins[bounds + n:bounds + n + m],
                                  params.get("y_avals", ()), params.get("reverse", False),
                                  params["checkpoint"], recompute, params["stacked"])

    return rebind


def _loop_vjp(bounds, n, m, r, body, reverse, checkpoint):
    """The VJP of a loop: a fori_loop over the same rows in the other direction, reading
    the stacks of the carries and the rows of the inputs `xs`, of the stacked outputs'
    cotangents and of the stacks' own (a second derivative reads the stacks); carrying
    the carries' cotangents and the captures' summed ones; stacking the rows' cotangents.
    Its body recomputes the loop's body from the stored values under a tape."""

    index = body.ins[0].aval if bounds else INDEX  # lower + j: weak where i is (static)

    def vjp(gs, outs, *inputs):
        from srcxform.ops import zeros_like
        from srcxform.ad.tape import GradientTape

        lower = inputs[0] if bounds else None
        inits = inputs[bounds:bounds + n]
        xs, captures = inputs[bounds + n:bounds + n + m], inputs[bounds + n + m:]
        ys, trips, stacks = outs[n:n + r], outs[n + r], outs[n + r + 1:]
        if bounds:  # a fori_loop's count from its bounds: a recomputed loop read for it dies
            from srcxform.ops import maximum
            trips = maximum(inputs[1] - inputs[0], 0)
        x_floats = [k for k in range(m) if xs[k].dtype.kind == "f"]
        y_floats = [j for j in range(r) if ys[j].dtype.kind == "f" and gs[n + j] is not None]
        stack_cts = [k for k in range(n) if gs[n + r + 1 + k] is not None]
        # Only the cotangents that may not be zero are carried: those given, and the
        # float carries' that they read (an int carry's stops there).
        floats = live_carries(body, 1 if bounds else 0, n,
                              [k for k in range(n) if inits[k].dtype.kind == "f"], y_floats,
                              [k for k in range(n) if gs[k] is not None] + stack_cts)
        sources = _float_captures(captures)
        cts = [gs[k] if gs[k] is not None else zeros_like(outs[k]) for k in floats]
        accs = [zeros_like(captures[k]) for k in sources]
        carried = cts + accs
        rows = [*stacks, *xs, *[gs[n + j] for j in y_floats],
                *[gs[n + r + 1 + k] for k in stack_cts]]

        def step(j, state):
            cts_, accs_ = state[:len(cts)], state[len(cts):len(carried)]
            slices = state[len(carried):len(carried) + n]
            x_rows = state[len(carried) + n:len(carried) + n + m]
            gy_rows = state[len(carried) + n + m:len(carried) + n + m + len(y_floats)]
            gs_rows = state[len(carried) + n + m + len(y_floats):]
            with GradientTape(persistent=False, watch_accessed_variables=False) as tape:
                watched = [slices[k] for k in floats] + [x_rows[k] for k in x_floats] + \
                    [captures[k] for k in sources]
                tape.watch(watched)
                index = [lower + j] if bounds else []
                new = evaluate(body, [*index, *slices, *x_rows, *captures])
            targets = [new[k] for k in floats] + [new[n + j] for j in y_floats]
            grads = tape.gradient(targets, watched, output_gradients=cts_ + gy_rows,
                                  unconnected_gradients="zero")
            f, xf = len(floats), len(x_floats)
            new_cts = list(grads[:f])
            for k, g in zip(stack_cts, gs_rows):  # the stack read this carry's value
                new_cts[floats.index(k)] = new_cts[floats.index(k)] + g
            return new_cts + [a + g for a, g in zip(accs_, grads[f + xf:])], \
                list(grads[f:f + xf])

        row_avals = [Aval(tuple(v.shape[1:]), v.dtype) for v in rows]
        names = [f"b{k}" for k in floats] + [f"bcapture{k}" for k in sources] + \
            [f"x{k}" for k in range(n)] + [f"row{k}" for k in range(len(rows) - n)]
        x_cts = [Aval(tuple(xs[k].shape), xs[k].dtype) for k in x_floats]

        def traced(j, *values):
            new, x_ct_rows = step(j, list(values))
            return new + x_ct_rows

        sub, new = trace_region("adjoint", traced, [index] + carry_avals(carried) +
                                row_avals, ["j"] + names)
        (region,), region_captures = align([(sub, list(new))])
        # Only the rows the adjoint reads are stored (stacks) or passed: drop the rest.
        read = {a for e in region.eqns for a in e.ins if isinstance(a, Var)} | \
            {a for a in region.outs if isinstance(a, Var)}
        first = 1 + len(carried)
        kept = [k for k in range(len(rows)) if region.ins[first + k] in read]
        region = region.replace(ins=region.ins[:first] + [region.ins[first + k] for k in kept]
                                + region.ins[first + len(rows):])
        zero = as_value(0 if index.weak else np.int64(0))  # its VJP's lower + j: as index
        recompute = ()
        if checkpoint:
            # The rows of the kept stacks come from the segment's recomputed carries;
            # the recomputation reads every stack (checkpoint), the forward xs, and
            # the forward captures (and the first index).
            segment_rows = tuple(k for k in kept if k < n)
            kept = [k for k in kept if k >= n]
            counts = (bounds // 2, n, m, len(captures))
            recompute = (body, counts, [*inputs[:bounds // 2], *stacks, *xs, *captures],
                         (checkpoint, segment_rows))
        results = _bind_loop(FORI, [zero, trips], carried, region_captures, {"body": region},
                             [rows[k] for k in kept], tuple(x_cts), reverse=not reverse,
                             recompute=recompute)
        cotangents = [None] * len(inputs)
        for j, k in enumerate(floats):
            cotangents[bounds + k] = results[j]
        for j, k in enumerate(sources):
            cotangents[bounds + n + m + k] = results[len(floats) + j]
        for j, k in enumerate(x_floats):
            cotangents[bounds + n + k] = results[len(carried) + j]
        return cotangents

    return vjp


def _float_captures(captures):
    """The positions of the float captures, each value once: a region optimized after its
    trace may take one value twice (CSE made `a` and `b = tf.identity(a)` one), and a
    rule watching both would count its cotangent (or tangent) twice (helper 146)."""
    return [k for k, c in enumerate(captures)
            if c.dtype.kind == "f" and not any(c is d for d in captures[:k])]


class LoopRule:
    """A loop's derivatives: called, its VJP (_loop_vjp); `jvp`, its JVP (_loop_jvp). A
    loop has a JVP of its own where every other op's is its VJP transposed (forward.py):
    transposed, a loop's VJP would make the tangents of its stacks by equations outside
    any loop, shaped as a stack whose rows only the loop counts."""

    def __init__(self, op, bounds, n, m, regions, y_avals, reverse, checkpoint, recompute):
        self.vjp = _loop_vjp(bounds, n, m, len(y_avals), regions["body"], reverse,
                             checkpoint)
        self.op, self.bounds, self.n, self.m, self.regions = op, bounds, n, m, regions
        self.y_avals, self.reverse, self.checkpoint = y_avals, reverse, checkpoint
        self.recompute = recompute

    def __call__(self, gs, outs, *inputs):
        return self.vjp(gs, outs, *inputs)

    def jvp(self, tangents, outs, inputs):
        """The tangents of the loop's results given its inputs' (None: zero)."""
        if self.recompute:
            raise NotImplementedError("forward mode through a checkpointed loop's adjoint: "
                                      "use checkpoint=None for a second derivative")
        return _loop_jvp(self, tangents, outs, inputs)


def _loop_jvp(rule, tangents, outs, inputs):
    """Forward mode through a loop: a loop of the same kind, bounds and direction whose
    carries are the loop's and the tangents of those a tangent reaches (tangents ride
    along the carry), whose rows are the loop's and their tangents, and whose body runs
    the loop's under a ForwardAccumulator. Its stacks of the tangent carries are the
    tangents of the loop's stacks (what a reverse loop reads). It computes the primal
    again, by the same arithmetic: the loop's results are not read from it."""
    from srcxform.ops import zeros_like

    b, n, m, r = rule.bounds, rule.n, rule.m, len(rule.y_avals)
    inits, xs, captures = inputs[b:b + n], inputs[b + n:b + n + m], inputs[b + n + m:]

    def seeded(start, count):
        return [k for k in range(count) if tangents[start + k] is not None
                and inputs[start + k].dtype.kind == "f"]

    x_seeded = seeded(b + n, m)
    c_seeded = [k for k in _float_captures(captures) if tangents[b + n + m + k] is not None]
    active, y_active = _reached(rule, seeded(b, n), x_seeded, c_seeded, inits)
    if not active and not y_active:
        return [None] * len(outs)
    t_inits = [zeros_like(inits[k]) if tangents[b + k] is None else tangents[b + k]
               for k in active]
    t_xs = [tangents[b + n + k] for k in x_seeded]
    t_captures = [tangents[b + n + m + k] for k in c_seeded]

    def step(index, values, rows):
        """The body's carries and rows, then their tangents'."""
        from srcxform.ad.forward import ForwardAccumulator

        carries, x_rows = values[:n], rows[:m]
        primals = [carries[k] for k in active] + [x_rows[k] for k in x_seeded] + \
            [captures[k] for k in c_seeded]
        with ForwardAccumulator(primals, [*values[n:], *rows[m:], *t_captures]) as acc:
            new = evaluate(rule.regions["body"], [*index, *carries, *x_rows, *captures])
        return [*new[:n], *(acc.jvp(new[k], "zero") for k in active)], \
            [*new[n:], *(acc.jvp(new[n + j], "zero") for j in y_active)]

    avals = carry_avals([*inits, *t_inits])
    names = [f"c{k}" for k in range(n)] + [f"t{k}" for k in active]
    if rule.op is FORI:
        row_avals = [Aval(tuple(x.shape[1:]), x.dtype) for x in (*xs, *t_xs)]

        def body_fn(i, *values):
            carries, rows = step([i], values[:len(avals)], values[len(avals):])
            return carries + rows

        index = rule.regions["body"].ins[0].aval  # weak where the loop's is (static)
        sub, new = trace_region("body", body_fn, [index] + avals + row_avals,
                                ["i"] + names + [f"row{k}" for k in range(len(row_avals))])
        (body,), region_captures = align([(sub, new)])
        regions = {"body": body}
    else:
        cond_sub, pred = trace_region("cond", lambda *c: as_bool(evaluate(
            rule.regions["cond"], [*c[:n], *captures])[0]), avals, names)
        body_sub, new = trace_region("body", lambda *c: step([], c, [])[0], avals, names)
        (cond, body), region_captures = align([(cond_sub, [pred]), (body_sub, new)])
        regions = {"cond": cond, "body": body}
    y_avals = (*rule.y_avals, *(rule.y_avals[j] for j in y_active))
    stacked = len(outs) > n + r
    results = _bind_loop_results(rule.op, inputs[:b], [*inits, *t_inits], region_captures,
                                 regions, [*xs, *t_xs], y_avals, rule.reverse,
                                 rule.checkpoint, (), stacked)
    found = [None] * len(outs)
    a = len(active)
    stacks = n + a + len(y_avals) + 1 + n  # where the tangent stacks start
    for j, k in enumerate(active):
        found[k] = results[n + j]
        if stacked:
            found[n + r + 1 + k] = results[stacks + j]
    for j, k in enumerate(y_active):
        found[n + k] = results[n + a + r + j]
    return found


def _reached(rule, carries, rows, captures, inits):
    """The float carries and stacked outputs of the loop that a tangent reaches from the
    carries, rows and captures that have one: what its body computes from them, to a
    fixed point over iterations (a carry reached in one has a tangent in the next)."""
    body, n, m = rule.regions["body"], rule.n, rule.m
    first = 1 if rule.op is FORI else 0
    floats = [k for k in range(n) if inits[k].dtype.kind == "f"]
    active = set(carries) & set(floats)
    while True:
        live = {body.ins[first + k] for k in active} | \
            {body.ins[first + n + k] for k in rows} | \
            {body.ins[first + n + m + k] for k in captures}
        for eqn in body.eqns:
            if any(isinstance(a, Var) and a in live for a in eqn.ins):
                live.add(eqn.out)
        reached = [isinstance(out, Var) and out in live for out in body.outs]
        grown = active | {k for k in floats if reached[k]}
        if grown == active:
            return sorted(active), [j for j, y in enumerate(rule.y_avals)
                                    if y.dtype.kind == "f" and reached[n + j]]
        active = grown


# ----- cond -----


def cond(pred, true_fn, false_fn):
    """The structured cond: true_fn() or false_fn(), each giving a flat list of values of
    the same shapes and dtypes."""
    subs, branch_kinds = [], []
    for name, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        sub, outs = trace_region(name, fn, [], [])
        branch_kinds.append(eager_kinds(outs))
        subs.append((sub, [as_value(o) for o in outs]))  # as_value: a Python number
    (t_outs, f_outs) = (subs[0][1], subs[1][1])
    if len(t_outs) != len(f_outs):
        raise TracingError(f"cond: true_fn returns {len(t_outs)} values, false_fn "
                           f"{len(f_outs)}\n  at {user_line()}")
    for k, (a, b) in enumerate(zip(t_outs, f_outs)):
        if not _same_shape(a.shape, b.shape) or _branches_aval(a.aval, b.aval) is None:
            raise TracingError(f"cond: output {k} is {_branch_value(a)} from true_fn but "
                               f"{_branch_value(b)} from false_fn; both branches must give "
                               f"the same shapes and dtypes (a Python number may stand "
                               f"for a tensor of its kind)\n  at {user_line()}")
    (t_region, f_region), captures = align(subs)
    kinds = [a if a == b else "tensor" if "tensor" in (a, b) else "numpy"
             for a, b in zip(*branch_kinds)]
    return _kept_views(_bind_cond(as_bool(pred, "cond"), t_region, f_region, captures, kinds),
                       t_outs, f_outs)


def _branches_aval(a, b):
    """The aval of a cond's output whose branches give values of avals a and b, or None
    where they cannot be one: a Python number (weak) both give is one, as eagerly; a
    Python number beside a tensor takes the tensor's dtype (a float one a float's, an int
    one any number's), as it would meet it eagerly; tensors must have one dtype. (The
    true branch's aval was the output's, and a Python number's float64 spread.)"""
    if a.weak and b.weak:
        return a if a.dtype == b.dtype else None
    weak, strong = (a, b) if a.weak else (b, a)
    if not weak.weak:
        return a if a.dtype == b.dtype else None
    kinds = {"b": "biuf", "i": "iuf", "u": "iuf", "f": "f"}[weak.dtype.kind]
    return Aval(tuple(strong.shape), strong.dtype) if strong.dtype.kind in kinds else None


def _branch_value(value):
    """`f32[2]`, or for a Python number its storage and the number: `i64[]~ (the Python
    number 1)`."""
    array = getattr(value, "_array", None)  # none where traced (a Python float argument)
    number = "" if array is None else f" {array.item()!r}"
    return value.aval.short() + (f" (the Python number{number})" if value.aval.weak else "")


def _bind_cond(pred, t_region, f_region, captures, kinds=None):
    """The cond's results, of eager kinds `kinds` (where the branches give different
    kinds: a tensor if either gives one, else a NumPy value)."""
    avals = [_branches_aval(a.aval, b.aval) for a, b in zip(t_region.outs, f_region.outs)]
    outs = bind(COND, [pred, *captures], {"true": t_region, "false": f_region}, avals,
                _cond_vjp(t_region, f_region))
    return _with_kinds(outs, kinds, len(outs))


def _rebind_cond(ins, params):
    return _bind_cond(ins[0], params["true"], params["false"], ins[1:])


def _cond_vjp(t_region, f_region):
    def vjp(gs, outs, pred, *captures):
        from srcxform.ops import zeros_like
        from srcxform.ad.tape import GradientTape

        floats = [k for k, o in enumerate(outs) if o.dtype.kind == "f"]
        sources = _float_captures(captures)
        cts = [gs[k] if gs[k] is not None else zeros_like(outs[k]) for k in floats]

        def adjoint(region):
            def fn(*cts_):
                with GradientTape(persistent=False, watch_accessed_variables=False) as tape:
                    watched = [captures[k] for k in sources]
                    tape.watch(watched)
                    new = evaluate(region, list(captures))
                return list(tape.gradient([new[k] for k in floats], watched,
                                          output_gradients=list(cts_),
                                          unconnected_gradients="zero"))
            return fn

        subs = []
        for name, region in (("true", t_region), ("false", f_region)):
            sub, new = trace_region(f"adjoint_{name}", adjoint(region), carry_avals(cts),
                                    [f"b{k}" for k in floats])
            subs.append((sub, new))
        # The cotangents are the adjoint branches' explicit inputs: a cond passes its
        # operands to its regions' inputs in order, explicit ones first.
        (t_adj, f_adj), adj_captures = align(subs)
        results = _bind_cond(pred, t_adj, f_adj, [*cts, *adj_captures])
        cotangents = [None] * (1 + len(captures))
        for j, k in enumerate(sources):
            cotangents[1 + k] = results[j]
        return cotangents

    return vjp


_REBIND = {WHILE: _rebind_loop(WHILE), FORI: _rebind_loop(FORI), COND: _rebind_cond}


def rebind(op, ins, params):
    """A structured equation bound again on values ins: its results."""
    return _REBIND[op](ins, params)


# ----- what the loops store -----


@dataclasses.dataclass(frozen=True)
class LoopStacks:
    """The stacks one differentiated loop keeps for its adjoint: `row_bytes` for each
    iteration it stores (its stored carries, at the traced sizes), every `checkpoint`-th
    iteration stored (None: every one)."""

    loop: str
    row_bytes: int
    checkpoint: int | None

    @property
    def bytes_per_iteration(self):
        """The stacks' bytes per iteration of the loop: a row, or a k-th of one."""
        return self.row_bytes / (self.checkpoint or 1)

    def peak_bytes(self, trips):
        """The stacks' bytes at their largest for `trips` iterations: the stored rows, and
        with a checkpoint the adjoint's segment of k recomputed rows besides (a
        while_loop's stacks, doubling as they fill, may have up to twice the rows)."""
        k = self.checkpoint
        rows = trips if not k else -(-trips // k) + min(k, trips)
        return rows * self.row_bytes


def loop_stacks(program):
    """A LoopStacks for each loop of `program` (in regions too) that stores carries."""
    found = []
    for eqn in program.eqns:
        for region in (v for k, v in eqn.params if hasattr(v, "eqns") and k != "recompute"):
            found += loop_stacks(region)
        if eqn.prim not in (WHILE, FORI) or not eqn.kwargs["stacked"]:
            continue
        n, r = eqn.kwargs["carries"], len(eqn.kwargs.get("y_avals", ()))
        stacks = [v for k, v in results_of(program, eqn.out).items() if k > n + r]
        row_bytes = sum(int(np.prod([int(d) for d in v.aval.shape[1:]])) * v.aval.dtype.itemsize
                        for v in stacks)
        found.append(LoopStacks(eqn.prim.name, row_bytes, eqn.kwargs["checkpoint"]))
    return found


def param_names(fn, count, fallback):
    """Names for a function's flat parameters: its own where it has as many."""
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return names if len(names) == count else [f"{fallback}{k}" for k in range(count)]


__all__ = ["cond", "fori_loop", "while_loop"]
