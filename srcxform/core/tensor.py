"""Tensor and Variable: NumPy-backed values with TensorFlow's surface.

`Value` is the surface shared with the tracer. Its operators, indexing, NumPy methods and
NumPy dispatch each call an op, and are installed onto it by srcxform/ops/operators.py,
as is `Value._pack` (a nested list holding tensors packed, as conversions need):
nothing here computes or differentiates by itself, and this module imports no op.
"""

import contextlib
import itertools
import os
import sys
import threading

import numpy as np

from srcxform.core import branches, recording
from srcxform.core.aval import Aval
from srcxform.core.dims import Dim, concrete, local
from srcxform.core.dtypes import (as_dtype, check_convertible, out_of_range, settled,
                             weak_storage)
from srcxform.core.errors import (GradientCutWarning, ShapeArgumentError, TracingError,
                             ValueArgumentError, is_own_file, user_line, warn_once_at)
from srcxform.core.tensor_shape import TensorShape

_ids = itertools.count(1)


# NumPy's array methods that are its function of the array, their arguments in the same
# order (t.var(0) is np.var(t, 0)), which ops/operators.py installs on Value: NumPy code
# calls them on arrays (helper 137).
SAME_AS_FUNCTION = ("all", "any", "argmax", "argmin", "copy", "cumprod", "cumsum",
                    "diagonal", "repeat", "round", "std", "take", "trace", "var")


class Value:
    """The surface Tensor, Variable and the tracer share (its operators: ops/operators.py)."""

    __slots__ = ()
    __array_priority__ = 100
    _trace = None
    _id: int  # what tapes know a value by (each subclass's slot)

    @property
    def shape(self):
        return TensorShape.of(self.aval.shape)

    def get_shape(self):
        return self.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return len(self.aval.shape)

    def __pos__(self):
        return self

    # As TensorFlow: == is elementwise, so values are not hashable.
    __hash__ = None  # type: ignore[assignment]

    # ----- iteration -----
    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a scalar tensor")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def item(self, *args):
        """The element as a Python scalar (NumPy's item; eager only)."""
        if recording.OPEN_ANYWHERE and recording.CONTEXT.tapes:
            _converted(self, "Python scalar")
        return np.asarray(self).item(*args)


class _TensorType(type):
    """Tensor's type: a traced value is a Tensor to isinstance, as TensorFlow's symbolic
    tensors are tf.Tensor (and JAX's tracers jax.Array), so that a user's
    `isinstance(x, tf.Tensor)` answers alike eagerly and compiled (helper 74).
    srcxform's own code asks `eager_tensor(x)` for a Tensor that holds values."""

    def __instancecheck__(cls, obj):
        return type.__instancecheck__(cls, obj) or (
            cls is Tensor and isinstance(obj, Value) and obj._trace is not None)


def next_id():
    """An id no value has yet: values made from now on have larger ones."""
    return next(_ids)


def eager_tensor(x):
    """Whether x is a Tensor holding values (an eager tensor), not a traced value."""
    return type.__instancecheck__(Tensor, x)


class Tensor(Value, metaclass=_TensorType):
    """An immutable NumPy-backed value (tf.Tensor)."""

    __slots__ = ("_array", "_id", "_weak")

    def __init__(self, value, dtype=None):
        self._array = _to_array(value, as_dtype(dtype), copy=True)
        self._weak = False
        self._id = next(_ids)

    @classmethod
    def _new(cls, array, weak=False, id=None):
        """Wraps an ndarray as is (the op path: no conversion)."""
        t = object.__new__(cls)
        t._array = array
        t._weak = weak
        t._id = next(_ids) if id is None else id
        return t

    @property
    def aval(self):
        return Aval(self._array.shape, self._array.dtype, self._weak)

    @property
    def shape(self):
        return TensorShape.of(self._array.shape)

    @property
    def dtype(self):
        # A value made of Python scalars alone is held exactly, but shows TensorFlow's
        # dtype for it (2.0 * 3.0 is float32).
        return settled(self._array.dtype, self._array) if self._weak else self._array.dtype

    @property
    def ndim(self):
        return self._array.ndim

    def numpy(self):
        """A copy of the value as a NumPy array (a NumPy scalar for a 0-d tensor), as
        TensorFlow's: changing it cannot change the Tensor."""
        if recording.OPEN_ANYWHERE and recording.CONTEXT.tapes:
            _converted(self, "NumPy value", warn=False)
        array = self._array
        if array.ndim == 0:
            return (array.astype(self.dtype) if self._weak else array)[()]
        return array.astype(self.dtype) if self._weak else array.copy()

    def __array__(self, dtype=None, copy=None):
        if recording.OPEN_ANYWHERE and recording.CONTEXT.tapes:
            _converted(self, "NumPy array")
        return _shared_array(self._array, self.dtype if dtype is None else dtype, copy)

    def __float__(self):
        if recording.OPEN_ANYWHERE and recording.CONTEXT.tapes:
            _converted(self, "Python float")
        return float(self._scalar("float"))

    def __int__(self):
        if recording.OPEN_ANYWHERE and recording.CONTEXT.tapes:
            _converted(self, "Python int")
        return int(self._scalar("int"))

    def __index__(self):
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        return int(self._scalar("index"))

    def __bool__(self):
        if self._array.size != 1:
            # NumPy's and TensorFlow's type for an ambiguous truth.
            raise ValueError(f"bool() of a tensor of shape {self.shape}: only one element "
                             "has a truth value; use reduce_any/reduce_all or index it")
        truth = bool(self._array.reshape(()).item())
        if recording.OPEN_ANYWHERE and recording.CONTEXT.tapes:  # for tape.explain
            branches.not_taken(truth, lambda v: isinstance(v, Value),
                               is_own_file(sys._getframe(1).f_code.co_filename))
        return truth

    def _scalar(self, what):
        # A number only from a scalar, as NumPy 2 and TensorFlow: float() of a 1-element
        # vector raises, where taking its element would hide a shape bug.
        if self._array.ndim:
            raise TypeError(f"{what}() of a tensor of shape {self.shape}: only a scalar "
                            "(shape ()) has a number value; index it or reduce it")
        return self._array.item()

    def __repr__(self):
        return (f"<srcxform.Tensor: shape={self.shape}, dtype={self.dtype.name}, "
                f"numpy={_numpy_text(np.asarray(self.numpy()), repr)}>")

    def __str__(self):
        return (f"srcxform.Tensor({_numpy_text(np.asarray(self.numpy()), str)}, "
                f"shape={self.shape}, dtype={self.dtype.name})")

    def __format__(self, spec):
        # TensorFlow formats the NumPy value, whatever the spec: f"{t}" of a scalar is
        # "9.0", of an array str(array); an array with a spec raises NumPy's TypeError.
        return format(self.numpy(), spec)


class SizeConstant(Tensor):
    """A traced size used as a number (x.shape[0] in a mean): a weak int constant that
    keeps its Dim, so generated code computes it from the input sizes."""

    __slots__ = ("dim",)

    def numpy(self):  # its value as a plain number: right only for this size (guarded)
        return np.asarray(self.dim.__index__(), self._array.dtype)


class PythonNumber(Tensor):
    """A Python number kept as one where TensorFlow's rule would make it a tensor: a
    variable of the user's loop autograph converts, which is the number in an eager run
    (a weak op of numbers alone, tf.exp(0.1), is a Tensor there)."""

    __slots__ = ()

    @classmethod
    def of(cls, x):
        return cls._new(np.asarray(x, dtype=weak_storage(x)), weak=True)


class Variable(Value):
    """A mutable value whose reads are watched by tapes (tf.Variable).

    Each update is atomic, as TensorFlow's ops are: assign, assign_add, assign_sub, an
    optimizer's update of it and a compiled call that assigns it hold its `_lock` (an
    RLock: an update made of other updates takes it again) from their read of the value
    to their write of the new one. Where one holds several, it takes them in order of
    creation (`Updating`), so two threads never each wait for the other's.
    """

    __slots__ = ("_array", "_id", "_lock", "_trainable", "constraint", "name")

    def __init__(self, initial_value, trainable=True, name=None, dtype=None, constraint=None,
                 shape=None):
        """`constraint`: a function an optimizer applies to the value after each update
        (TensorFlow's and Keras's projection). `shape` must fit the initial value's: a
        Variable keeps its shape (TensorFlow's TensorShape(None) lets one change)."""
        if constraint is not None and not callable(constraint):
            raise ValueError(f"Variable: the constraint must be callable, got {constraint!r}")
        if callable(initial_value):
            initial_value = initial_value()
        # A NumPy value is copied; a Tensor's array is shared: neither changes in place.
        array = _to_array(initial_value, as_dtype(dtype), copy=True, what="Variable")
        if shape is not None and not _fits(array.shape, shape):
            raise ValueError(f"Variable: an initial value of shape {array.shape} for shape "
                             f"{shape} (srcxform's Variables keep their value's shape)")
        self.constraint = constraint
        if not array.dtype.isnative:  # as compiled code reads and writes it (Numba's only)
            array = array.astype(array.dtype.newbyteorder("="))
        self._array = array
        self._id = next(_ids)
        self._lock = threading.RLock()
        self._trainable = bool(trainable)
        # TensorFlow's name is the name of the variable's output: "w" gives "w:0".
        self.name = f"{name or 'Variable'}:0" if name is None or ":" not in name else name
        if isinstance(initial_value, Value):  # for explain: a watched value made a Variable
            _assigned(initial_value, "Variable", self)

    # A deep copy or an unpickled Variable is a new Variable, as TensorFlow's deepcopy
    # makes one: its own identity, which traces and tapes know it by, and its own lock.
    # (Keeping the id made a copy read and update as the original, helper 74.) A shallow
    # copy is the Variable itself, as TensorFlow's.
    def __getstate__(self):
        return {"_array": self._array, "name": self.name, "trainable": self._trainable,
                "constraint": self.constraint}

    def __setstate__(self, state):
        self._array, self.name, self._trainable = state["_array"], state["name"], \
            state["trainable"]
        self.constraint = state.get("constraint")
        self._id = next(_ids)
        self._lock = threading.RLock()

    @property
    def trainable(self):
        """Whether a tape watches the Variable where it reads it: fixed at creation, as
        TensorFlow's (a kernel traced for one kind keeps to it)."""
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        raise AttributeError("Variable.trainable is fixed when the Variable is made, as "
                             "TensorFlow's: make it with trainable=False, or leave it out "
                             "of the tape (watch_accessed_variables=False and tape.watch)")

    def __copy__(self):
        return self

    @property
    def aval(self):
        return Aval(self._array.shape, self._array.dtype)

    @property
    def shape(self):
        return TensorShape.of(self._array.shape)

    @property
    def dtype(self):
        return self._array.dtype

    def _read(self):
        """A snapshot of the value that carries the Variable's identity, so that the tape
        sends each read's gradient to the Variable even after later assignments. While
        tracing, the trace supplies the value (an input, or the last traced assignment)."""
        recording.variable_read(self)
        traces = recording.CONTEXT.traces
        if traces:
            return traces[-1].read_variable(self)
        return Tensor._new(self._array, id=self._id)

    def read_value(self):
        return self._read()

    value = read_value

    def numpy(self):
        if recording.OPEN_ANYWHERE and recording.CONTEXT.tapes:
            _converted(self, "NumPy value", warn=False)
        return self._array[()] if self._array.ndim == 0 else self._array.copy()

    def __getitem__(self, index):
        """self[index], a Tensor whose assign() writes into that part of the Variable
        (TensorFlow's sliced assignment; eager only, as a traced part is no Tensor)."""
        part = super().__getitem__(index)
        if type(part) is not Tensor:
            return part
        return VariablePart._of(part, self, index)

    def __array__(self, dtype=None, copy=None):
        if recording.OPEN_ANYWHERE and recording.CONTEXT.tapes:
            _converted(self, "NumPy array")
        return _shared_array(self._array, self.dtype if dtype is None else dtype, copy)

    # Each update returns the Variable, or None with read_value=False, as TensorFlow's.
    def assign(self, value, read_value=True):
        """Replaces the value with `value` converted to the Variable's dtype, which must
        have its shape (see _update)."""
        with self._update_lock():  # not in the middle of another thread's assign_add
            assigned = self._assign(self._update(value, "assign"))
        return assigned if read_value else None

    def assign_add(self, delta, read_value=True):
        """Adds delta to the value, atomically (not differentiated, as in TensorFlow)."""
        with self._update_lock():
            delta = _assigned(self._update(delta, "assign_add"), "assign_add", self)
            with recording.paused():
                assigned = self._assign(self._read() + delta)
        return assigned if read_value else None

    def assign_sub(self, delta, read_value=True):
        """Subtracts delta from the value, atomically (not differentiated, as in
        TensorFlow)."""
        with self._update_lock():
            delta = _assigned(self._update(delta, "assign_sub"), "assign_sub", self)
            with recording.paused():
                assigned = self._assign(self._read() - delta)
        return assigned if read_value else None

    def _update(self, value, op):
        """An update's argument as TensorFlow takes it, convert_to_tensor(value,
        dtype=self.dtype): a Python value by its kind (2.0 never becomes an int), a NumPy
        value as astype (np.float32(0.5) is 0), a tensor only of the Variable's kind (of
        another float or integer dtype it is converted: the README's difference); then of
        the Variable's shape exactly, as nothing broadcasts into a Variable."""
        what = f"{op} to {self.name}"
        live(value, op)
        if isinstance(value, Value) or holds_value(value):
            # A list of Python numbers (a loop's int among them, checked) converts in the
            # Variable's dtype, as tf.constant(list, dtype) does.
            value = Value._pack(value, self.dtype) if not isinstance(value, Value) and \
                not holds_strong(value) else as_value(value, op)
            if value.aval.weak:  # made of Python scalars: converts as they would
                check_convertible(value.aval.dtype, self.dtype, what)
                value = converted_python_int(value, self.dtype, what)
            elif getattr(value, "eager_kind", "tensor") != "tensor":  # an array argument, traced
                value = value.astype(self.dtype)  # as its NumPy value converts
            elif _KINDS[value.dtype.kind] != _KINDS[self.dtype.kind]:
                raise TypeError(f"{what}: cannot convert a tensor of dtype {value.dtype.name} "
                                f"to {self.dtype.name}; cast it (srcxform.cast)")
        else:
            value = Tensor._new(_to_array(value, self.dtype, what=what))
        if tuple(value.shape) != tuple(self.shape):
            raise ShapeArgumentError(f"{op}: cannot use a value of shape {value.shape} on "
                                     f"{self.name} of shape {self.shape}; the shapes must be "
                                     f"equal (nothing broadcasts into a Variable)\n  at "
                                     f"{user_line()}")
        return value

    def _update_lock(self):
        """What an update of the value holds: its lock, except while tracing, which
        changes no value, and runs holding its compiled function's lock, which a thread
        holding this one may be waiting for."""
        return _NO_LOCK if recording.CONTEXT.traces else self._lock

    def _assign(self, value):
        """assign, its caller holding the lock."""
        value = as_value(value, "assign")
        check_convertible(value.dtype, self.dtype, f"assign to {self.name}")
        traces = recording.CONTEXT.traces
        if traces:
            traces[-1].write_variable(self, value)
            return self
        new = np.asarray(value._array)
        if new.shape != self._array.shape:
            raise ValueError(f"assign: cannot assign a value of shape {new.shape} to "
                             f"{self.name} of shape {self._array.shape}")
        check_fits(new, self.dtype, f"assign to {self.name}")
        _assigned(value, "assign", self)
        self._array = new.astype(self._array.dtype, copy=True)
        return self

    def __float__(self):
        value = self._read()
        if recording.OPEN_ANYWHERE and recording.CONTEXT.tapes:
            _converted(value, "Python float")
        return float(value)

    def __int__(self):
        value = self._read()
        if recording.OPEN_ANYWHERE and recording.CONTEXT.tapes:
            _converted(value, "Python int")
        return int(value)

    def __bool__(self):
        return bool(self._read())

    def __repr__(self):
        return (f"<srcxform.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={_numpy_text(self._array, repr)}>")

    def __str__(self):
        return repr(self)

    def __format__(self, spec):
        return format(self._read(), spec)


_NO_LOCK = contextlib.nullcontext()
_KINDS = {"b": "bool", "i": "integer", "u": "integer", "f": "float"}  # dtypes updates keep


class Updating:
    """Holds the locks of the Variables given while a call (a kernel's) reads and assigns
    them, taken in order of creation (a copy shares its original's _id: then by
    address), so that two callers holding several each never wait for the other."""

    __slots__ = ("locks",)

    def __init__(self, variables):
        ordered = sorted(variables, key=lambda v: (v._id, id(v)))
        self.locks = [v._lock for v in ordered]

    def __enter__(self):
        for lock in self.locks:
            lock.acquire()

    def __exit__(self, *exc_info):
        for lock in reversed(self.locks):
            lock.release()


class VariablePart(Tensor):
    """A read of part of a Variable (v[0], v[:, 1:]): a Tensor that can also be assigned."""

    __slots__ = ("_index", "_variable")

    @classmethod
    def _of(cls, part, variable, index):
        t = cls._new(part._array, part._weak, id=part._id)  # the id: the tape knows the read
        t._variable, t._index = variable, index
        return t

    def assign(self, value, read_value=True):
        """Writes value (of this part's shape) into the Variable at this part's index."""
        value = as_value(value, "assign")
        if value.shape != self.shape:
            raise ValueError(f"assign: cannot assign a value of shape {value.shape} to "
                             f"{self._variable.name}[...] of shape {self.shape}")
        what = f"assign to {self._variable.name}"
        check_convertible(value.dtype, self.dtype, what)
        check_fits(value._array, self.dtype, what)
        _assigned(value, "assign", self._variable, "[...]")
        with self._variable._lock:  # the rest of the value is as it is now
            new = self._variable.numpy()
            # A list is a tuple of indices, as getitem reads it (x[[0, 1]] is x[0, 1]).
            new[tuple(self._index) if isinstance(self._index, list) else self._index] = \
                value._array
            return self._variable._assign(new)


_NUMPY_DIR = os.path.dirname(np.__file__) + os.sep


def _fits(shape, wanted):
    """Whether an array's shape fits `wanted` (a TensorShape or a sequence of sizes, None
    for any)."""
    dims = [wanted] if isinstance(wanted, int) else list(wanted)
    return len(dims) == len(shape) and all(d is None or d == n for d, n in zip(dims, shape))


def _assigned(value, op, variable, part=""):
    """An update of `variable` from `value` while a tape records: not differentiated (as in
    TensorFlow), so the tape keeps it as a cut for explain. Returns the value."""
    if recording.CONTEXT.tapes and not recording.CONTEXT.traces:
        recording.cut_by("assign", op, [value], variable, f"to {variable.name}{part}")
    return value


def _converted(value, what, warn=True):
    """A value becomes a NumPy array or a Python number while a tape records: where a tape
    watches it, its gradient stops here. The tape keeps the cut for explain, at the
    user's line, which is warned of once (GradientCutWarning) unless `warn` is False:
    `t.numpy()` is a deliberate read, what logging code calls. srcxform's own conversions
    are none of the user's. A Variable converted is read, as TensorFlow reads it."""
    if is_own_file(sys._getframe(2).f_code.co_filename):
        return
    frame = sys._getframe(2)
    while frame is not None and (is_own_file(frame.f_code.co_filename)
                                 or frame.f_code.co_filename.startswith(_NUMPY_DIR)):
        frame = frame.f_back  # np.sum([t1, t2]) converts inside NumPy's Python code
    site = frame and (frame.f_code.co_filename, frame.f_lineno)
    if isinstance(value, Variable):
        recording.variable_read(value)
    if not recording.cut_by("numpy conversion", what, [value], None, what, site) or not warn:
        return
    warn_once_at(site, f"a watched tensor became a {what} inside a recording GradientTape: "
                 f"its gradient stops here ({user_line(site)}); use srcxform ops on the "
                 f"tensor instead, or tape.stop_recording() if this is only for display",
                 GradientCutWarning)


def _numpy_text(array, text):
    if array.ndim == 0:
        return str(array[()])
    body = text(array)
    return "\n" + body if "\n" in body else body  # TensorFlow breaks before multi-line values


def _shared_array(array, dtype, copy):
    """NumPy's __array__ protocol over a value's array: a read-only view where no copy is
    asked for (np.asarray(t) costs no copy and cannot change the value), else a copy."""
    dtype = np.dtype(dtype)
    if copy or array.dtype != dtype:
        if copy is False:
            raise ValueError(f"a {array.dtype} value cannot be had as {dtype} without a copy")
        return array.astype(dtype)
    view = array.view()
    view.setflags(write=False)
    return view


def _to_array(value, dtype=None, copy=False, what="constant"):
    """TensorFlow's conversion: Python floats become float32, Python ints int32 (int64
    where one does not fit int32); NumPy values keep their dtype unless one is given. A
    given dtype takes a NumPy value as NumPy's astype does, and Python values only where
    their kind allows (dtypes.check_convertible: 2.0 never becomes an int); a Tensor's
    dtype may not change at all, nor a Python int wrap: TensorFlow raises for each.

    With `copy` (constant, convert_to_tensor, Variable) a NumPy array is copied, once: its
    owner may change it later, and a Tensor must not change with it. Without, it is used
    as is: an op's operand, or an array a traced function captures and reads at each
    call. A Value's array is always shared, Tensors being immutable. A nested list
    holding tensors is packed first, as TensorFlow packs it.
    """
    if holds_value(value) and not isinstance(value, Value):
        value = Value._pack(value, dtype)
    if isinstance(value, Value):
        source = as_value(value)
        if source._trace is not None:
            raise TracingError(f"{user_line()}\n  a traced value cannot become a constant or a "
                               "Variable's initial value while compiling; use it as it is (a "
                               "Variable built from an argument's shape takes ints: "
                               "tf.ones([int(x.shape[-1]), 2]); draw a random one with "
                               "NumPy, or build the layer before compiling)")
        if source._weak:  # made of Python scalars: converts as they would
            return _python_array(source._array, dtype, what)
        if dtype is not None and dtype != source.dtype:
            raise TypeError(f"{what}: expected a value of dtype {dtype.name}, got a tensor of "
                            f"dtype {source.dtype.name}; cast it (srcxform.cast)")
        return source._array
    if isinstance(value, (np.ndarray, np.generic)):
        _check_kind(value.dtype, value)
        return np.array(value, dtype) if copy else np.asarray(value, dtype)
    array = np.array(value)  # a new array, even from an object that holds one
    # NumPy's making of ints past int64 (fmax passes over NaNs, without nanmax's warning
    # where all are NaN)
    if array.dtype.kind in "uO" or array.dtype.kind == "f" and \
            np.fmax.reduce(np.abs(array), axis=None, initial=0.0) >= 2**63:
        array = _past_int64(value, array, None if dtype is None else np.dtype(dtype), what)
        if dtype is not None and array.dtype == dtype:
            return array
    _check_kind(array.dtype, value)
    return _python_array(array, dtype, what)


def _past_int64(value, array, given, what):
    """array, value's array as NumPy made it, or, where value (Python numbers in nested
    lists) holds ints past int64's range: an array of the dtype `given` if it is a float
    dtype, or uint64 and holds them, as TensorFlow converts them; else of float64 beside
    a float; else ValueArgumentError naming one that does not fit."""
    low = high = 0
    floats, todo = False, [value]
    while todo:
        item = todo.pop()
        if isinstance(item, (list, tuple)):
            todo.extend(item)
        elif isinstance(item, (float, np.floating)):
            floats = True
        elif isinstance(item, int):
            low, high = min(low, item), max(high, item)
    if -2**63 <= low and high < 2**63:
        return array
    if floats and given is not None:
        check_convertible(np.float64, given, what)  # 1.5 never becomes an int
    into = given if given is not None and (given.kind == "f" or given == np.uint64 and
                                           low >= 0) else \
        np.dtype(np.float64) if floats and given is None else given or np.dtype(np.int64)
    try:
        if into.kind in "fu":
            return np.array(value, into)
    except OverflowError:  # past float64 or uint64 too
        pass
    misfit = low if low < 0 and (into.kind == "u" or low < -2**63 or -low > high) else high
    raise ValueArgumentError(f"{what}: {misfit} does not fit in {into.name}")


def _python_array(array, dtype, what):
    """An array made from Python values (held as int64, float64 or bool) in `dtype`, or
    in TensorFlow's dtype for them."""
    if dtype is None:
        if array.dtype == np.float64:
            dtype = np.dtype(np.float32)
        elif array.dtype == np.int64:
            dtype = np.dtype(np.int32 if out_of_range(array, np.int32) is None else np.int64)
        elif array.dtype == np.uint64:  # what NumPy makes of ints in [2**63, 2**64)
            raise ValueError(f"{what}: {array.max()} does not fit in int64")
        else:
            return array
    if array.size:  # an empty list has no kind: [[]] is any dtype's
        check_convertible(array.dtype, dtype, what)
    check_fits(array, dtype, what)
    return array.astype(dtype, copy=False)


# A traced Python int, checked when the kernel runs and cast to a narrower integer dtype
# it meets (ops/elementwise.py's python_int_in; set there, as core cannot import ops).
FIT_PYTHON_INT = None


def converted_python_int(value, dtype, what):
    """A traced Python int converted to the integer dtype given (tf.constant(k, tf.int8),
    an assign), checked when the kernel runs as the eager conversion checks it: `what: N
    does not fit in int8`. Any other value as it is."""
    dtype = np.dtype(dtype)
    if value._trace is None or not value.aval.weak or value.aval.dtype.kind != "i" or \
            dtype.kind not in "iu" or dtype == np.int64:
        return value
    return FIT_PYTHON_INT(value, dtype, f"{what}: ", f" does not fit in {dtype.name}")


def check_fits(array, dtype, what):
    bad = out_of_range(array, dtype)
    if bad is not None:
        raise TypeError(f"{what}: {bad} does not fit in {np.dtype(dtype).name}")


def _check_kind(dtype, value):
    if dtype.kind not in "biuf":
        # Strings and objects have no ops, and complex values no real-valued gradients.
        raise TypeError(f"cannot convert a {type(value).__name__} of dtype {dtype} to a "
                        "tensor: srcxform supports bool, integer and float values")


def holds_strong(value):
    """Whether a nested list holds a tensor that is no Python number."""
    return any(holds_strong(v) if isinstance(v, (list, tuple)) else
               isinstance(v, Value) and not as_value(v).aval.weak for v in value)


def holds_value(value):
    """Whether value is a tensor, or a nested list or tuple with one in it."""
    return isinstance(value, Value) or (isinstance(value, (list, tuple))
                                         and any(map(holds_value, value)))


def live(x, op):
    """x, unless a trace that has ended traced it (check_active)."""
    if getattr(x, "_trace", None) is not None:
        check_active(x._trace, op)
    return x


def check_active(trace, op):
    """A TracingError at the use by `op` of a value of `trace` unless it is being traced
    now (a value kept in a list, a global or an attribute past its trace)."""
    if not any(t is trace for t in recording.CONTEXT.traces):
        raise TracingError(f"{user_line()}\n  {op}: a value traced inside a compiled function "
                           "or loop body is used after its trace ended (it was kept in a "
                           "list, a global or an attribute while traced): return it instead")


def as_value(x, op=None):
    """Any operand as a Value: Variables are read, Python scalars become weak constants."""
    if isinstance(x, Value):
        return x._read() if isinstance(x, Variable) else x
    # np.float64 is also a Python float, but as a NumPy value it keeps its dtype.
    if isinstance(x, Dim) and isinstance(x := local(x), Dim):
        size = SizeConstant._new(np.asarray(concrete(x), dtype=np.int64), weak=True)
        size.dim = x
        return size
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        if isinstance(x, int) and not -2**63 <= x < 2**63:  # TensorFlow's ValueError
            raise ValueError(f"{op or 'constant'}: {x} does not fit in int64")
        return Tensor._new(np.asarray(x, dtype=weak_storage(x)), weak=True)
    if holds_value(x):  # a nested list holding tensors, which TensorFlow packs
        return Value._pack(x)
    try:
        return Tensor._new(_to_array(x, what=op or "constant"))
    except ValueArgumentError:
        raise  # a Python int past int64
    except (TypeError, ValueError):
        where = f"{op}: " if op else ""
        what = type(x).__name__ + (f" of dtype {x.dtype}" if isinstance(x, np.ndarray) else "")
        raise TypeError(f"{where}cannot use a {what} as a tensor (srcxform supports bool, "
                        "integer and float values)") from None
