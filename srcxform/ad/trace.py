"""Tracing: run a Python function on Tracers so that every op appends an IR equation.

Tracers have the Tensor surface (the same `Value` operators), so the same ops, tapes and
VJPs run on them unchanged. Asking a Tracer for a value only known at run time (bool,
float, int, len, iteration) raises TracingError at the user's line.
"""

import itertools
import sys

import numpy as np

from srcxform.core import dims, recording
from srcxform.core import tensor as _tensor
from srcxform.core.aval import Aval
from srcxform.core.errors import (
    PACKAGE_DIR,
    TracingAttributeError,
    TracingError,
    library_call,
    user_frame,
    user_frame_object,
    user_line,
)
from srcxform.core.ir import Eqn, Lit, Program, Var
from srcxform.ops import cast, stack
from srcxform.ops.numpy_dispatch import as_into, in_place_statement, refuse_shared
from srcxform.core.names import assigned_name
from srcxform.core.primitive import op_name
from srcxform.core.tensor import (SAME_AS_FUNCTION, SizeConstant, Tensor, Value, Variable,
                                   as_value, eager_tensor)

_ids = itertools.count(1)

_BRANCH = ("a traced value's truth is unknown while compiling; use srcxform.where(cond, a, b) "
           "or pass the value as a static argument")
_NUMBER = ("a traced value's number is unknown while compiling; keep it a tensor, or pass it "
           "as a static (Python int) argument")
_LENGTH = ("a traced value's length is a size of the input: write x.shape[0] (len(x) gives "
           "it in a function autograph converts), or pass the count as a static int argument")
_ITERATION = ("loop over a traced value's rows with a `for` statement in a function autograph "
              "converts, or with `for i in range(x.shape[0])` reading x[i]; a comprehension, "
              "zip, enumerate or unpacking iterates as Python does, which needs a static length")
_ATTRIBUTE = ("no such attribute; srcxform values have TensorFlow's ops (srcxform.<op>(x)), "
              "the operators and NumPy's array methods (sum, mean, max, reshape, transpose, "
              "astype, dot, ...); for anything else, compute on the result outside the "
              "compiled function (np.asarray(result))")
_LIBRARY = ("{} is SciPy's own Python (not a ufunc, which traced values take): use "
            "srcxform's op where there is one (srcxform.math.reduce_logsumexp, "
            "srcxform.nn.softmax, srcxform.linalg.triangular_solve, ...), or call it on the "
            "compiled function's result")
_IMMUTABLE = ("values are immutable; build a new one: srcxform.where(mask, new, x) replaces "
              "elements, srcxform.scatter_add adds rows at indices, or change the result "
              "with NumPy outside the compiled function (np.asarray(result))")


class Tracer(Value):
    """A value being traced: an aval (with symbolic sizes) and its IR variable."""

    # `eager_kind` is what the same value would be in an eager run (see _eager_kind): "tensor"
    # (what srcxform's functions return), "numpy" or "python" (what NumPy's operators and
    # functions give on NumPy arrays and Python floats). The compiled call returns that.
    # `viewed`: made by an operation that gives a view of a NumPy array (_VIEWS).
    # `view_base`: the value it is a view of, where known (a NumPy operation made it).
    __slots__ = ("_id", "_trace", "aval", "eager_kind", "ir_var", "view_base", "viewed")

    def __init__(self, trace, var, id=None, eager="tensor"):
        self._trace = trace
        self.aval = var.aval
        self.ir_var = var
        self._id = next(_ids) + (1 << 62) if id is None else id
        self.eager_kind = eager
        self.viewed, self.view_base = False, None

    def _fail(self, what, message):
        called = library_call()
        if called is not None:  # SciPy's own Python met the value
            what, message = f"{called} of a traced value", _LIBRARY.format(called)
        raise TracingError(f"{user_line()}\n  {what}: {message}")

    def __bool__(self):  # noqa: PLE0304 - it only raises, as the next three do
        self._fail("bool() of a traced value", _BRANCH)

    def __float__(self):
        self._fail("float() of a traced value", _NUMBER)

    def __int__(self):
        self._fail("int() of a traced value", _NUMBER)

    def __index__(self):  # noqa: PLE0305
        self._fail("a traced value used as an index or count", _NUMBER)

    def __round__(self, ndigits=None):  # a raw TypeError before (helper 76)
        self._fail("round() of a traced value", "use srcxform.round (to an integer, half to "
                   "even as Python's), or pass the value as a static argument")

    def __len__(self):  # noqa: PLE0303
        self._fail("len() of a traced value", _LENGTH)

    def __iter__(self):
        self._fail("iterating over a traced value", _ITERATION)

    def numpy(self):
        self._fail(".numpy() of a traced value", _NUMBER)

    def __array__(self, dtype=None, copy=None):
        self._fail("np.asarray() of a traced value", _NUMBER)

    def item(self, *args):
        self._fail(".item() of a traced value", _NUMBER)

    def __setitem__(self, index, value):
        self._fail("assigning to an item of a traced value", _IMMUTABLE)

    def __getattr__(self, name):
        # Reached only for a name the class lacks. Python and NumPy probe private and
        # special names (__array_interface__): those stay a plain AttributeError.
        if name.startswith("_"):
            raise AttributeError(f"'Tracer' object has no attribute {name!r}")
        raise TracingAttributeError(f"{user_line()}\n  .{name} of a traced value: {_ATTRIBUTE}")

    def __repr__(self):
        return f"<srcxform.Tracer {self.aval.short()}>"


# The NumPy-level surface of Value: on NumPy arrays and Python floats these are NumPy's
# (or Python's) own operations, whose results are not Tensors.
_OPERATORS = ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
              "rfloordiv", "mod", "rmod", "pow", "rpow", "neg", "pos", "abs", "lt", "le", "gt",
              "ge", "eq", "ne")
_NUMPY_LEVEL = ("__matmul__", "__rmatmul__", "__and__", "__rand__", "__or__", "__ror__",
                "__xor__", "__rxor__", "__invert__", "__getitem__",
                "sum", "mean", "prod", "max", "min", "reshape", "transpose", "flatten",
                "ravel", "squeeze", "astype", "dot", "clip", "__array_ufunc__",
                "__array_function__", *SAME_AS_FUNCTION)


def _eager_kind(operands, python):
    """What an eager run gives for a NumPy-level operation on these operands: a Tensor if
    any operand is one (or stands for one), a Python number from Python numbers alone
    (`python`: an operator Python floats have), else NumPy's value."""
    kinds = set()
    for x in operands:
        if isinstance(x, (Tracer, NumpyTensor)):
            kinds.add(x.eager_kind)
        elif eager_tensor(x) or isinstance(x, Variable):
            kinds.add("tensor")
        elif isinstance(x, (list, tuple)):
            kinds.add(_eager_kind(x, python))
        elif not isinstance(x, (bool, int, float)) or isinstance(x, np.generic):
            kinds.add("numpy")
    if "tensor" in kinds:
        return "tensor"
    return "numpy" if "numpy" in kinds or not python else "python"


def eager_kind(value):
    """What a function's argument is to its operators in an eager run (_eager_kind)."""
    return _eager_kind([value], python=True)


def of_kind(value, kind):
    """value (a new tensor standing for an argument: a source of its own) of eager kind
    `kind`: a NumPy array's operators and indexing stay NumPy's."""
    if isinstance(value, Tracer):
        value.eager_kind = kind
    elif kind != "tensor":
        value = NumpyTensor.of(value, kind)
    return value


class NumpyTensor(Tensor):
    """A NumPy array or Python number argument in a compiled function's eager reference
    run (crosscheck.py, the error a kernel's runtime check names): a Tensor that the tape
    watches, of the eager kind a Tracer of it has ("numpy" or "python"), whose operators,
    NumPy functions and rows are NumPy's (or Python's), as that Tracer's are."""

    __slots__ = ("eager_kind", "viewed")

    @classmethod
    def of(cls, value, kind):
        """An eager Tensor's value as a NumpyTensor of this eager kind."""
        out = cls._new(value._array, value._weak, value._id)
        out.eager_kind, out.viewed = kind, False
        return out

    def __iter__(self):  # for row in x: a NumPy array's rows are NumPy's, views of it
        return (viewed(NumpyTensor.of(row, self.eager_kind)) for row in Tensor.__iter__(self))


def _from_user_code():
    """Whether the NumPy-level operation was written in the user's code (srcxform's own
    functions use operators too, and return Tensors)."""
    filename = sys._getframe(2).f_code.co_filename
    return not filename.startswith(PACKAGE_DIR)


# NumPy's operations whose result is a view of their operand's memory (basic indexing, a
# reshape or transpose; ravel and reshape copy an array they cannot view, taken as views).
_VIEWS = {"__getitem__", "reshape", "transpose", "ravel", "squeeze", "diagonal"}
_VIEW_FUNCTIONS = {np.reshape, np.transpose, np.ravel, np.squeeze, np.swapaxes, np.moveaxis,
                   np.expand_dims, np.diagonal, np.flip, np.fliplr, np.flipud, np.rot90,
                   np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit, np.atleast_1d,
                   np.atleast_2d, np.atleast_3d, np.broadcast_to, np.real}


def _gives_view(name, args):
    if name == "__array_function__":  # np.diag of a matrix is a view, of a vector not
        return args[0] in _VIEW_FUNCTIONS or args[0] is np.diag and np.ndim(args[2][0]) == 2
    if name != "__getitem__":
        return name in _VIEWS
    index = args[0] if isinstance(args[0], tuple) else (args[0],)
    return all(i is None or i is Ellipsis or isinstance(i, slice) or
               isinstance(i, (int, np.integer, Value)) and not isinstance(i, (bool, np.bool_))
               and np.ndim(i) == 0 for i in index)


def _numpy_index(index):
    """A NumPy array's index: a list of integers in it is an array of indices (an empty
    one, of no index), where TensorFlow reads a list as a tuple (x[[0, 2]] is x[0, 2])."""
    if isinstance(index, tuple):
        return tuple(_numpy_index(i) if isinstance(i, list) else i for i in index)
    if not isinstance(index, list):
        return index
    if any(isinstance(i, Value) for i in index):  # x[[np.argmax(y), 0]]: traced integers
        return stack([cast(i, np.int64) if isinstance(i, Value) else np.int64(i)
                      for i in index])
    return np.asarray(index) if index else np.zeros(0, np.int64)


def viewed(value, base=None):
    """value (a row of a NumPy array, a view of it) marked as a view where it has axes,
    and as a view of `base` where that is traced too (refuse_shared's test)."""
    # (np.atleast_2d of a matrix is the matrix itself: no view of it)
    if isinstance(value, (Tracer, NumpyTensor)) and value.ndim and value is not base:
        value.viewed = True
        if isinstance(value, Tracer) and isinstance(base, Tracer):
            value.view_base = base
    return value


def _views_of(array):
    """Whether a value is `array` or a view of it (of a view of it...), as traced."""
    def shares(value):
        while isinstance(value, Value):
            if value is array:
                return True
            value = getattr(value, "view_base", None)
        return False

    return shares


def _in_place(symbol):
    """An in-place operator on a NumPy array: NumPy writes a view's result into the array
    it views, which a traced value, immutable, cannot; elsewhere the result, in the array's
    shape and dtype as NumPy keeps it, is bound to the name (an int8 `acc += x` stays int8).
    On a tensor Python calls the plain operator (NotImplemented), as TensorFlow's rebinds."""

    def operator(self, other):
        # A tensor's operator rebinds, as a NumPy scalar's (a 0-d result of NumPy's is one).
        if self.eager_kind != "numpy" or not self.ndim or not _from_user_code():
            return NotImplemented
        if getattr(self, "viewed", False):
            raise TracingError(
                f"{user_line()}\n  `{symbol}` on a view of a NumPy array (a slice, a row, a "
                "reshape or a transpose of it): NumPy writes the result into the array it "
                "views, and srcxform's values are immutable, so that array would keep its old "
                f"values. Write `x = x {symbol[:-1]} ...` where only this name should change, "
                "or build the whole array anew (np.concatenate, np.where, "
                "srcxform.tensor_scatter_nd_update)")
        statement = in_place_statement()
        if statement is not None:
            refuse_shared(statement, _views_of(self))
        ufunc = _UFUNC_OF.get(_IN_PLACE[symbol])
        if ufunc is None or _eager_kind((self, other), python=False) != "numpy":
            return NotImplemented  # a tensor operand's result is a tensor eagerly
        out = ufunc(self, other)  # NumPy's ufunc, then its cast back into the array
        return of_kind(as_into(out, self, f"`{symbol}`"), "numpy")

    operator.__name__ = f"__i{_IN_PLACE[symbol]}__"
    return operator


_IN_PLACE = {"+=": "add", "-=": "sub", "*=": "mul", "/=": "truediv", "//=": "floordiv",
             "%=": "mod", "**=": "pow", "@=": "matmul", "&=": "and", "|=": "or", "^=": "xor"}


# An operator on NumPy's values is NumPy's ufunc: its dtypes (int8 / int8 is float64, not
# TensorFlow's float32) and bools (x * (x > 0)); so is one whose left operand is a NumPy
# array, a tensor on its right (the array's operator calls the ufunc, which the tensor
# takes). Reflected where the name says so.
_UFUNC_OF = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
             "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
             "neg": np.negative, "abs": np.absolute, "lt": np.less, "le": np.less_equal,
             "gt": np.greater, "ge": np.greater_equal, "and": np.bitwise_and,
             "or": np.bitwise_or, "xor": np.bitwise_xor}
_UFUNC_OF.update({f"r{name}": ufunc for name, ufunc in _UFUNC_OF.items() if name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor")})


def _tracking(name, python):
    method = getattr(Value, name)
    ufunc = _UFUNC_OF.get(name.strip("_"))

    def tracked(self, *args, **kwargs):
        if not _from_user_code():  # srcxform's own operations: Tensors, its own rules
            return method(self, *args, **kwargs)
        if name == "__getitem__" and self.eager_kind == "numpy":
            args = (_numpy_index(args[0]),)
        if name == "__getitem__":  # x[i]: x's kind, whatever i is (NumPy takes i's index)
            operands = (self,)
        elif name == "__array_ufunc__":
            operands = args[2:]
        elif name == "__array_function__":
            operands = args[2]
        else:
            operands = (self,) + args
        kind = _eager_kind(operands, python)
        if ufunc is not None and "numpy" in (self.eager_kind, kind):
            out = ufunc(*args, self) if name.startswith("__r") else ufunc(self, *args)
        else:
            out = method(self, *args, **kwargs)
        # Each value of a tuple too (np.linalg.slogdet's, np.split's: helper 128).
        values = out if isinstance(out, (tuple, list)) else (out,)
        for v in values:
            if isinstance(v, Tracer):
                v.eager_kind = kind
        if kind == "numpy" and _gives_view(name, args):
            base = args[2][0] if name == "__array_function__" else self
            values = [viewed(v, base) for v in values]
        if kind == "tensor" or not any(eager_tensor(v) for v in values):
            return out
        values = [NumpyTensor.of(v, kind) if eager_tensor(v) else v for v in values]
        if not isinstance(out, (tuple, list)):
            return values[0]
        return type(out)(*values) if hasattr(out, "_fields") else type(out)(values)

    tracked.__name__ = name
    return tracked


for _cls in (Tracer, NumpyTensor):
    for _name in _OPERATORS:
        setattr(_cls, f"__{_name}__", _tracking(f"__{_name}__", python=True))
    for _name in _NUMPY_LEVEL:
        setattr(_cls, _name, _tracking(_name, python=False))
    _cls.T = property(_tracking("transpose", python=False), doc=Value.T.__doc__)
    for _symbol in _IN_PLACE:
        _operator = _in_place(_symbol)
        setattr(_cls, _operator.__name__, _operator)


def _variable_name(variable):
    """The name the user's code knows a Variable by (a local or global bound to it), else
    the Variable's own name."""
    frame = user_frame_object()
    for scope in (frame.f_locals, frame.f_globals) if frame is not None else ():
        for name, value in scope.items():
            if value is variable:
                return name
    return variable.name.split(":")[0]


class Rerolled(Exception):
    """A gradient inside a trace asked for a value computed before a reroll (reroll.py)
    replaced its part of the program by a loop reading the rows directly: the loop is the
    value's equal, not its function, so the trace is made again without rerolling."""


class Trace:
    """Collects the equations of one function being traced."""

    def __init__(self, name):
        self.name = name
        self.ins, self.eqns, self.consts, self.sizes = [], [], [], []
        self.hints, self.adjoint_of, self.origins = {}, {}, {}
        self.variables = {}  # Variable id -> [Variable, input Var or None, current Tracer]
        self.guards = []
        self.symbols = dims.Symbols(self.guards)
        # This call's value of each integer argument leaf: a gather checks its indices
        # while tracing when they are one, as it checks constant indices (ops/shape.py).
        self.integer_inputs = {}
        # Library state the traced code reported it relied on (capture): (object, attribute
        # name), or (function, None) for a function it called (captures.py probes them).
        self.captured = []
        # The ids of Variables whose identity what it computes relies on (an optimizer's
        # slots are found by their Variable): a kernel for those objects only.
        self.identities = set()
        self.first_reads = {}  # Variable id -> where the trace first read it
        self.const_vars, self.const_arrays = {}, {}  # id(array) -> Var -> array
        self.producers = {}  # Var -> the Eqn computing it
        self.captured_from = {}  # a region's input Var -> the enclosing trace's Tracer read
        self.tracers = {}  # Var -> the Tracer made with it, which tapes know by its id
        # A function computing concat(values, axis) more cheaply, or None where it cannot
        # (reroll.py's loop over rows computed alike); None: joins are equations.
        self.joiner = None
        # A function computing x + y more cheaply, or None where it cannot (reroll.py's
        # loop summing a chain's terms computed alike); None: adds are equations.
        self.folder = None
        self.rerolled = False  # whether a joiner or folder replaced equations by a loop
        # (the index's Var, the loop's lower and upper bound: ints or sizes) where this
        # traces the body of a fori loop over bounds known now (ops/shape.py's windows)
        self.loop_index = None
        # Vars a custom_gradient made: their gradient is its function's, not their
        # equations', so reroll.py never replays them in a loop's body.
        self.custom_gradients = set()
        self._first_new_id = next(_tensor._ids)  # Variables made from now on are new

    # ----- inputs -----
    def new_input(self, value, name, eager="tensor", weak=False):
        """A Tracer for an argument leaf: arrays get a size symbol for each dim but 1;
        `eager` is what the leaf is in an eager run (see Tracer); `weak`: a weak Tensor's
        (its dtype gives way to the other operand's, as in TensorFlow)."""
        if isinstance(value, float) and not isinstance(value, np.floating):
            aval = Aval((), np.dtype(np.float64), weak=True)
        else:
            array = np.asarray(value)
            shape = tuple(self._size(len(self.ins), axis, d) for axis, d in enumerate(array.shape))
            aval = Aval(shape, array.dtype, weak=weak)
        var = Var(aval)
        self.ins.append(var)
        self.hints[var] = name
        if aval.dtype.kind in "iu":
            self.integer_inputs[var] = array
        tracer = self.tracers[var] = Tracer(self, var, eager=eager)
        return tracer

    def _size(self, index, axis, d):
        if d == 1:
            return 1
        self.sizes.append((index, axis))
        return dims.Dim(d, ("size", len(self.sizes) - 1), self.symbols)

    def encloses(self, trace):
        """Whether this trace is a region (sub-program) traced inside `trace`, whose
        values it may read (structured.py's SubTrace)."""
        return False

    # ----- equations -----
    def add_eqn(self, prim, values, params, out_aval):
        out = Var(out_aval)
        adjoint = recording.CONTEXT.adjoint
        rec = adjoint[-1][0] if adjoint else None
        if rec is not None and isinstance(rec.out, Tracer):
            # The forward op's line; a custom_gradient's is where it is called (its
            # record's, as eagerly), not the line inside it that made its output. (Another
            # record's may be a replay's, made away from the user's line: structured.py.)
            origin = rec.origin if rec.op == "custom_gradient" else \
                self.origins.get(rec.out.ir_var, rec.origin)  # another trace's: its record's
        else:
            origin = recording.current_origin()
        of = op_name(rec.op) if rec is not None and rec.op else None
        eqn = Eqn(out, prim, tuple(self._atom(v) for v in values), tuple(sorted(params.items())),
                  origin, bool(adjoint), of)
        self.eqns.append(eqn)
        self.producers[out] = eqn
        self.origins[out] = origin
        tracer = self.tracers[out] = Tracer(self, out)
        return tracer

    def join(self, values, axis):
        """A Tracer equal to concat(values, axis) computed another way, or None."""
        return self.joiner(self, values, axis) if self.joiner else None

    def fold_add(self, x, y):
        """A Tracer equal to x + y computed another way, or None."""
        return self.folder(self, x, y) if self.folder else None

    def _atom(self, value):
        """The IR atom for an op input: a Tracer's var, a scalar literal, or a constant."""
        if isinstance(value, Tracer):
            if value._trace is not self:
                raise TracingError(f"{user_line()}: a value traced by another function is used "
                                   "here; pass it as an argument instead")
            return value.ir_var
        array = value._array
        if isinstance(value, SizeConstant):
            return Lit(value.dim, value.aval)
        if array.ndim == 0:
            return Lit(array.item(), value.aval)
        # One input per constant array, however often the function uses it.
        var = self.const_vars.get(id(array))
        if var is None:
            var = self.const_vars[id(array)] = Var(value.aval)
            self.consts.append((var, array))  # which keeps the array, and so its id
            self.const_arrays[var] = array
        return var

    def on_backward(self, rec, cotangent):
        """Names a cotangent after the value it is the cotangent of (b<name>)."""
        if isinstance(cotangent, Tracer) and isinstance(rec.out, Tracer):
            self.adjoint_of.setdefault(cotangent.ir_var, rec.out.ir_var)

    def name_gradient(self, grad, source):
        """Names a gradient after its source (b<name>)."""
        if isinstance(grad, Tracer) and isinstance(source, Tracer):
            self.adjoint_of.setdefault(grad.ir_var, source.ir_var)

    # ----- variables -----
    def read_variable(self, variable):
        """The Variable's traced value: an extra input on first read, then the last write."""
        entry = self.variables.get(variable._id)
        if entry is None:
            index = len(self.ins)
            shape = tuple(self._size(index, axis, d) for axis, d in enumerate(variable.shape))
            var = Var(Aval(shape, variable.dtype))
            self.ins.append(var)
            self.hints[var] = _variable_name(variable)
            self.first_reads[variable._id] = user_frame()
            entry = self.variables[variable._id] = [variable, var, Tracer(self, var, variable._id)]
            self.tracers[var] = entry[2]
        return entry[2]

    def write_variable(self, variable, value):
        """Makes later reads see `value`; the value is written back after the call."""
        self.read_variable(variable)
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(f"assign: cannot assign a value of shape {value.shape} to "
                             f"{variable.name} of shape {variable.shape}\n  at {user_line()}")
        if value.dtype != variable.dtype:
            from srcxform.ops import cast

            value = cast(value, variable.dtype)
        if isinstance(value, Tracer):
            value = Tracer(self, value.ir_var, variable._id)
        else:
            value = Tensor._new(value._array, id=variable._id)
        self.variables[variable._id][2] = value

    def variable_inputs(self):
        """(Variable, index in ins) for each Variable read or written while tracing."""
        return [(v, self.ins.index(var)) for v, var, _ in self.variables.values()]

    def created(self, returned=()):
        """(name, where first read) for each Variable made while tracing that the
        trace reads, assigns, or returns (among `returned`)."""
        names = {v._id: self.hints[var] for v, var, _ in self.variables.values()}
        found = {v._id: v for v, _, _ in self.variables.values()}
        found.update((v._id, v) for v in returned if isinstance(v, _tensor.Variable))
        return [(names.get(i, v.name), user_line(self.first_reads.get(i)))
                for i, v in found.items() if i > self._first_new_id]

    def capture(self, obj, name=None):
        """Tells the trace that what it computes relies on obj.name staying the object it
        is now (obj a function, without a name: on what that function reads)."""
        self.captured.append((obj, name))

    def rely_on_identity(self, variable):
        """Tells the trace that what it computes is for this Variable object only."""
        self.identities.add(id(variable))

    def variable_writes(self):
        """(Variable, final value) for each Variable assigned while tracing."""
        return [(v, now) for v, var, now in self.variables.values()
                if not (isinstance(now, Tracer) and now.ir_var is var)]

    # ----- the result -----
    def program(self, outs):
        """The Program with outputs `outs` (Tracers or constants), naming user lines."""
        # as_value reads a Variable: its value now, as traced, not as it was at the start.
        out_atoms = [self._atom(as_value(v)) if isinstance(v, Value) else
                     self._atom(Tensor._new(np.asarray(v))) for v in outs]
        for i, eqn in enumerate(self.eqns):
            later = self.eqns[i + 1] if i + 1 < len(self.eqns) else None
            last_of_line = later is None or later.origin != eqn.origin or later.adjoint
            if not eqn.adjoint and last_of_line and eqn.out not in self.hints:
                name = assigned_name(eqn.origin)
                if name:
                    self.hints[eqn.out] = name
        consts = list(self.consts)
        return Program(self.name, self.ins + [v for v, _ in consts], list(self.eqns),
                       out_atoms, consts, list(self.sizes), dict(self.hints),
                       dict(self.adjoint_of))

    def __enter__(self):
        context = recording.CONTEXT
        recording.enter(context.traces, self)
        self._saved_guards, context.guards = context.guards, self.guards
        return self

    def __exit__(self, *exc):
        context = recording.CONTEXT
        recording.leave(context.traces, self)
        context.guards = self._saved_guards
        return False
