"""What the functions rewrite.py converts call (as `ag__`): a statement whose condition or
range is a Python value (or a concrete tensor) runs as the Python it was; one whose
condition is traced runs through srcxform.cond, while_loop or fori_loop, its branches and
body as functions of the variables they assign (their state).

State the converted statement could not keep (a variable assigned in one branch only, or
first assigned inside a loop) is an Undefined: using it raises TracingError saying why.
"""

import builtins
import inspect
import os

import numpy as np

from srcxform.control_flow import cond, kept_while_loop, named_fori_loop, while_loop
from srcxform.core.dims import Dim
from srcxform.core.errors import TracingError, user_frame, user_line
from srcxform.ops import cast, logical_and, logical_not, logical_or
from srcxform.ops import range as tf_range
from srcxform.core.dtypes import promote
from srcxform.core.tensor import PythonNumber, Value, as_value
from srcxform.ad.trace import NumpyTensor, Tracer, viewed
from srcxform.core.tree import leaf_paths, tree_flatten

# What a converted statement that cannot be compiled should be written as instead.
_INSTEAD = {
    "return": "assign the result to a variable in each branch and return it after the "
              "if or loop",
    "break": "put the exit condition in the loop's test (`while not done and ...:`, with "
             "`done = ...` in the body)",
    "continue": "put the rest of the body under `if not ...:` instead",
    "del": "assign the variable a new value instead of deleting it",
    "global": "assign a local variable inside, and the global or nonlocal one after the "
              "if or loop",
    "mutation": "it changes an object in place (append, an item or an attribute), which a "
                "compiled branch or loop cannot carry: assign a new tensor instead "
                "(srcxform.where, concat, tensor_scatter_nd_update; srcxform.scan "
                "collects one value per step)",
    "target": "loop over a plain name (`for i in range(n):`) and unpack inside the body",
    "walrus": "assign the variable before the loop and at the end of its body instead",
}


class Undefined:
    """A variable without a value after a converted statement, and why; any use raises."""

    __slots__ = ("name", "reason")

    def __init__(self, name, reason):
        self.name, self.reason = name, reason

    def _refuse(self, *args, **kwargs):
        raise TracingError(f"{user_line()}\n  {self.name!r} has no value here: {self.reason}")

    def __getattr__(self, attribute):
        if attribute.startswith("_"):  # Python's and NumPy's probes stay plain misses
            raise AttributeError(attribute)
        self._refuse()

    def __repr__(self):
        return f"<undefined {self.name!r}: {self.reason}>"


for _name in ("bool", "float", "int", "index", "len", "iter", "array", "call", "getitem",
              "neg", "pos", "abs", "invert", "add", "radd", "sub", "rsub", "mul", "rmul",
              "truediv", "rtruediv", "floordiv", "rfloordiv", "mod", "rmod", "pow", "rpow",
              "matmul", "rmatmul", "lt", "le", "gt", "ge", "and", "or", "array_ufunc",
              "array_function"):
    setattr(Undefined, f"__{_name}__", Undefined._refuse)


class TracedRange:
    """range(start, stop, step) with a traced or symbolic bound: fori_loop runs it. Its
    index is the loop's own (an int; a traced int64 compiled), or of `dtype` (tf.range's:
    its bounds' dtype, int32 for Python ints, as in TF)."""

    def __init__(self, start, stop, step, dtype=None):
        self.start, self.stop, self.step, self.dtype = start, stop, step, dtype

    def index(self, i):
        return i if self.dtype is None else cast(i, self.dtype)


def traced_value(value):
    """Whether a value is known only when the compiled function runs (a test may make
    every tensor count, to run the converted forms eagerly)."""
    return isinstance(value, Tracer)


def is_traced(value):
    """Whether a converted statement's condition or range is known only at run time."""
    return isinstance(value, TracedRange) or traced_value(value)


def static_truth(value, traced):
    """The truth of a while loop's test, run as Python; a traced test is put in `traced`
    and ends the Python loop, so that while_loop runs the rest of it."""
    if traced_value(value):
        traced.append(value)
        return False
    return bool(value)


def and_(first, *rest):
    """`first and rest[0]() and ...`: Python's where the values are Python's; once one is
    traced, logical_and of it and all the rest (each evaluated, as autograph does)."""
    value = first
    for operand in rest:
        if traced_value(value):
            value = logical_and(value, operand())
        elif not value:
            return value
        else:
            value = operand()
    return value


def or_(first, *rest):
    """`first or rest[0]() or ...`, as and_ does it."""
    value = first
    for operand in rest:
        if traced_value(value):
            value = logical_or(value, operand())
        elif value:
            return value
        else:
            value = operand()
    return value


def not_(value):
    """`not value`: Python's on a Python value, logical_not on a traced one."""
    return logical_not(value) if traced_value(value) else not value


def ld(read, name):
    """A variable's value, or an Undefined where it has none yet (read: lambda: name)."""
    try:
        return read()
    except NameError:  # UnboundLocalError too; a free variable not yet bound is a NameError
        return Undefined(name, "it is used before it is assigned")


def unconvertible(kind, lineno, statement):
    """The TracingError for a branch or loop on a traced value that holds what it
    cannot run, at that line."""
    frame = user_frame()
    where = user_line((frame[0], lineno)) if frame else f"line {lineno}"
    what = {"mutation": "an in-place change", "target": "a target that is not a name",
            "global": "an assignment to a global or nonlocal name",
            "walrus": "a `:=` in the test"}.get(kind, f"`{kind}`")
    return TracingError(f"{where}\n  {what} inside {statement} whose condition or range is "
                        f"traced cannot be compiled: {_INSTEAD[kind]}")


def for_range(convertible, range_fn, *args):
    """What a `for ... in range(...)` (or `tf.range(...)`) loop iterates: the range itself
    when its bounds are Python ints, a TracedRange (fori_loop) when one is traced or a size read from a shape (one
    kernel for every size), unless the body cannot be converted: then a size still
    unrolls, as it did, and a traced bound raises."""
    if range_fn is not builtins.range and range_fn is not tf_range:  # another `range`
        return range_fn(*args)
    traced = any(traced_value(a) for a in args)
    if not traced and not (convertible and any(isinstance(a, Dim) for a in args)):
        return range_fn(*args)  # tf.range's steps are scalar tensors, as in TF
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
    if not isinstance(step, int) or isinstance(step, Dim) or step == 0:
        raise TracingError(f"{user_line()}\n  range() over a traced bound needs a nonzero "
                           "Python int step")
    for bound in (start, stop):  # eagerly range(2.5) raises, and tf.range(2.5) has 3 trips
        if traced_value(bound) and bound.dtype.kind not in "iu":
            raise TypeError(f"{user_line()}\n  range: a traced bound of dtype "
                            f"{bound.dtype.name} cannot be a loop's count: cast it to an "
                            "integer (srcxform.cast(n, tf.int32))")
    dtype = None
    if range_fn is tf_range:  # tf.range's dtype: its bounds', Python ints int32
        dtype, weak = promote([as_value(a).aval for a in args])
        dtype = np.dtype(np.int32) if weak else dtype
    return TracedRange(start, stop, step, dtype)


def for_rows(convertible, items):
    """What `for T in items` loops over: a tensor's row numbers (for_range's range of its
    first dim: a size compiles to one loop for every size), else items themselves."""
    if isinstance(items, Value) and items.ndim:
        return for_range(convertible, builtins.range, items.shape[0])
    return items


def len_(value):
    """len() in converted code: a tensor's first size, as TensorFlow's autograph gives it (a
    traced size stays symbolic: core/dims.py), else len()."""
    return value.shape[0] if isinstance(value, Value) and value.ndim else builtins.len(value)


def row(items, taken):
    """T in `for T in items` (for_rows): a tensor's row at the number taken (a NumPy
    array's row is NumPy's in an eager run, Tracer.eager_kind), else the item."""
    if not (isinstance(items, Value) and items.ndim):
        return taken
    item = items[taken]
    if isinstance(item, Tracer):
        item.eager_kind = getattr(items, "eager_kind", "tensor")
    if type(items) is NumpyTensor:
        item = NumpyTensor.of(item, items.eager_kind)
    return viewed(item, items) if getattr(item, "eager_kind", None) == "numpy" else item


def if_stmt(pred, true_fn, false_fn, values, names, sure_true, sure_false):
    """An if statement on a traced condition: cond of its two branches. values: the
    state's values before it (Undefined where unassigned); sure_true, sure_false: the
    names each branch surely assigns. A name that is not assigned on both paths is
    Undefined after it."""
    where = _here()
    before = [not isinstance(v, Undefined) for v in values]
    keep = [k for k, name in enumerate(names)
            if before[k] or name in sure_true and name in sure_false]
    assigned = [set(), set()]  # by each branch's trace, the true branch's first

    def branch(fn, side):
        def run():
            try:
                out = fn(*values)
            except Exception as err:  # a raise in a branch runs whatever the condition
                if hasattr(err, "add_note") and not isinstance(err, TracingError):
                    err.add_note(f"(raised tracing a branch of the if at {where}: both "
                                 "branches of an if on a traced condition are traced, so a "
                                 "raise there runs for every input)")
                raise
            assigned[side] = {k for k, v in enumerate(out) if not isinstance(v, Undefined)}
            _check_tensors(out, keep, names, where, "the if")
            return tuple(out[k] for k in keep)
        return run

    result = cond(pred, branch(true_fn, 0), branch(false_fn, 1))
    if (assigned[0] & assigned[1]) - set(keep):  # assigned on both paths after all (in a
        keep = sorted(set(keep) | (assigned[0] & assigned[1]))  # loop that ran: helper 127)
        result = cond(pred, branch(true_fn, 0), branch(false_fn, 1))
    out = [_unkept(name, sure_true, sure_false, where) for name in names]
    for k, value in zip(keep, result):
        out[k] = value
    return tuple(out)


def _unkept(name, sure_true, sure_false, where):
    side = "only in the true branch" if name in sure_true else \
        "only in the false branch" if name in sure_false else "not on every path"
    return Undefined(name, f"it is assigned {side} of the if at {where}, whose condition is "
                           "traced: assign it before the if, or in both branches")


def _here():
    """file.py:12, the converted statement's line."""
    frame = user_frame()
    return f"{os.path.basename(frame[0])}:{frame[1]}" if frame else "<unknown>"


def while_stmt(test_fn, body_fn, values, names):
    """A while loop on a traced condition: while_loop over the state that has a value
    before it (a name first assigned in the body is the body's own)."""
    where = _here()
    carried = [k for k, v in enumerate(values) if not isinstance(v, Undefined)]
    _check_tensors(values, carried, names, where, "the while loop")
    state = _State(values, carried, names, where, "while loop")

    def body(*vals):
        out = body_fn(*state.full(vals))
        _check_tensors(out, carried, names, where, "the while loop")
        return tuple(out[k] for k in carried)

    if not carried:  # the body changes nothing the condition reads: a trip count is
        # carried, so that the loop runs as eagerly, never or without end
        def counted(trips):
            body()
            return (trips + 1,)

        while_loop(lambda trips: test_fn(*state.full(())), counted, (0,))
        return state.full(())
    # The loop variables' names are the user's (while_loop names them by body's params).
    body.__signature__ = inspect.Signature(
        [inspect.Parameter(names[k], inspect.Parameter.POSITIONAL_ONLY) for k in carried])
    # A Python number stays one, exact (weak, as a for loop's): while_loop would make it
    # a float32 or int32 tensor, TensorFlow's rule, where eagerly it is Python's.
    initial = [_python_number(v, names[k], where) if type(v) in (bool, int, float) else v
               for k, v in zip(carried, state.initial())]
    result = kept_while_loop(lambda *vals: test_fn(*state.full(vals)), body, initial)
    return state.full(result)


def _python_number(value, name, where):
    """A loop variable's Python number as a weak value, or TracingError for an int that
    int64 cannot hold (a raw OverflowError: helper 130)."""
    try:
        return PythonNumber.of(value)
    except OverflowError:
        raise TracingError(f"{where}\n  {name!r} starts as {value}, past int64, which a "
                           "compiled loop cannot carry: start it as a float, or as a "
                           "Python int that int64 holds") from None


def for_stmt(rng, body_fn, values, names, target):
    """A for loop over a TracedRange: fori_loop over the state that has a value before
    it. Returns the state, then the loop index (which has no value after the loop)."""
    where = _here()
    carried = [k for k, v in enumerate(values) if not isinstance(v, Undefined)]
    index = Undefined(target, f"the index of the loop over a traced range at {where} has no "
                              "value after it: use the range's bound instead")
    if not any(traced_value(b) for b in (rng.start, rng.stop)) and \
            not all(_is_tensor(values[k]) for k in carried):
        return _python_loop(rng, body_fn, values, index)  # a size's loop carrying a list
    _check_tensors(values, carried, names, where, "the for loop")
    state = _State(values, carried, names, where, "for loop")
    # The bounds as int64, Python's ints: in an int8 or unsigned bound's own dtype the
    # trip count wrapped (range(0, n, 2) with n = np.int8(127) ran no trip: helper 105).
    start, stop = (cast(b, np.int64) if traced_value(b) else b for b in (rng.start, rng.stop))
    step = rng.step

    # The state as a dict by the user's names, which name its leaves in errors.
    kept = [names[k] for k in carried]

    def body(k, state_dict):
        out = body_fn(rng.index(start + k * step if step != 1 else k),
                      *state.full([state_dict[name] for name in kept]))
        _check_tensors(out, carried, names, where, "the for loop")
        return {name: out[j] for name, j in zip(kept, carried)}

    initial = dict(zip(kept, state.initial()))
    leaf_names = [path[0] for path in leaf_paths(tree_flatten(initial)[1])]
    try:
        if step == 1:
            result = named_fori_loop(start, stop, body, initial, leaf_names)
        else:  # as many steps as the range has (none if negative)
            trips = (stop - start + step - (1 if step > 0 else -1)) // step
            result = named_fori_loop(0, trips, body, initial, leaf_names)
    except TracingError:
        if any(traced_value(b) for b in (rng.start, rng.stop)):
            raise
        # A size's loop whose body needs its index as a Python int (float(i), a slice
        # bound): unrolled as TensorFlow's static shapes unroll it, a kernel per size.
        return _python_loop(rng, body_fn, values, index)
    return (*state.full([result[name] for name in kept]), index)


def _python_loop(rng, body_fn, values, index):
    """The loop run as Python, one iteration at a time, as it was before conversion."""
    for i in range(rng.start, rng.stop, rng.step):
        values = body_fn(rng.index(i), *values)
        index = rng.index(i)
    return (*values, index)


class _State:
    """A loop's state: the carried values (those assigned before it), and the names only
    its body assigns, Undefined outside an iteration."""

    def __init__(self, values, carried, names, where, loop):
        self.values, self.carried = values, carried
        self.unset = [Undefined(name, f"it is first assigned inside the {loop} at {where}, "
                                      "whose condition is traced: assign it before the loop "
                                      "to keep its value") for name in names]

    def initial(self):
        return tuple(self.values[k] for k in self.carried)

    def full(self, carried_values):
        out = list(self.unset)
        for k, value in zip(self.carried, carried_values):
            out[k] = value
        return tuple(out)


def _is_tensor(value):
    return isinstance(value, (Value, np.ndarray, np.generic, bool, int, float))


def _check_tensors(values, positions, names, where, statement):
    """Refuses state a compiled branch or loop cannot carry (a list, None, a string)."""
    for k in positions:
        if isinstance(values[k], Undefined):
            values[k]._refuse()
        if not _is_tensor(values[k]):
            kind = type(values[k]).__name__
            raise TracingError(f"{user_line()}\n  {names[k]!r} is a {kind} in {statement} at "
                               f"{where}, whose condition is traced: a compiled branch or loop "
                               "carries tensors and numbers only (make it a tensor, or keep it "
                               "out of the branch or loop)")
