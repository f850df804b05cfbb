"""How a compiled function takes its arguments: the one place that says so.

A call's arguments are flattened into leaves (tree.py: the containers' TreeDef is part of
the cache key, and the warm entry tests it). Each leaf is of one kind, whose rule (RULES,
in the order a leaf is matched) says: its part of the slow path's cache key (`key`, api.py);
the warm entry's tests of a later leaf in its place (`write_tests`, as text: they let
through only a leaf of the same key, and send to the slow path some that the kernel
cannot take as they are); whether the kernel takes it (`traced`: a static leaf is fixed in
the trace, a Variable read as one); and what it is to the function's eager code (`eager`:
"tensor", "numpy" or "python"; ad/trace.py). tf.function's rules (TF_RULES) make a Python
float static and an array a tensor. The kernel's guards on sizes (`admits`, `failing`),
the value the kernel receives (`kernel_value`, and as the entry's text `kernel_expr`) and
its type as the compile worker is told it (`described`) are here too.
"""

import math
import operator

import numpy as np

from srcxform.core.dims import Dim, evaluate, render
from srcxform.core.errors import user_line
from srcxform.core.ir import equations
from srcxform.core.tensor import Tensor, Variable, eager_tensor, live
from srcxform.core.tree import DATACLASS, DICT, NAMEDTUPLE, NONE, SEQUENCE, \
    flatten_function, spelled_key, tree_flatten

# The dtypes a kernel computes in (by NumPy's type character; a big-endian array has its
# native dtype's character and is converted by kernel_value). float16, longdouble and
# complex values are refused by name.
_COMPILED_DTYPES = set(np.typecodes["AllInteger"] + "fd?")


def _refusal(dtype):
    return (f"srcxform.differentiable compiles float32, float64, integer and bool values, "
            f"not {dtype.name}")


def _compiled(dtype):
    """The dtype's character, where a kernel computes in it; a TypeError else."""
    if dtype.char not in _COMPILED_DTYPES:
        raise TypeError(f"{_refusal(dtype)}: cast it first (x.astype(np.float32)), or run "
                        "the function eagerly under a GradientTape")
    return dtype.char


def check_computed_dtypes(program):
    """A TypeError naming the first equation that makes or reads a value no kernel computes
    in (a cast to float16 inside the function, a captured big-endian array), its operands
    and the user's line: Numba's own error would name neither."""
    for eqn in equations(program):
        refused = next((a.aval.dtype for a in (eqn.out, *eqn.ins) if not a.aval.dtype.isnative
                        or a.aval.dtype.char not in _COMPILED_DTYPES), None)
        if refused is not None:
            why = f"{_refusal(refused)}; compute in float32 there" if refused.isnative else \
                "a captured big-endian array: convert it (a.astype(a.dtype.newbyteorder('=')))"
            raise TypeError(f"{eqn.prim.name}({', '.join(a.aval.short() for a in eqn.ins)}) -> "
                            f"{eqn.out.aval.short()}: {why}, or run the function eagerly "
                            f"under a GradientTape\n  at {user_line(eqn.origin)}")


def static_key(leaf):
    """The key part of a static leaf: its type and value (a size kept from a trace, the int
    it is; a float by number_key)."""
    if isinstance(leaf, Dim):
        return ("static", int, operator.index(leaf))
    return ("static", float, number_key(leaf)) if type(leaf) is float else \
        ("static", type(leaf), leaf)


def number_key(x):
    """A float's or complex's value as a key: its repr and signs, so that -0.0 is not 0.0,
    a NaN is itself, and -NaN is not NaN (copysign tells them apart)."""
    parts = (x.real, x.imag) if isinstance(x, complex) else (x,)
    return repr(x), tuple(math.copysign(1.0, part) for part in parts)


class _Static:
    """A Python bool, int, str or None (with tf.function's rules, a float too; NumPy's
    scalars are values): the trace fixes its value, and the key holds it."""

    traced, eager = False, None

    def __init__(self, types):
        self.types = types

    def matches(self, leaf):
        return isinstance(leaf, self.types) and not isinstance(leaf, np.generic)

    def key(self, leaf):
        return static_key(leaf)

    def write_tests(self, w, name, leaf):
        if type(leaf) is float and not leaf:  # == takes -0.0 for 0.0
            w.fails(f"type({name}) is not float or repr({name}) != {repr(leaf)!r}")
            return
        w.fails(f"type({name}) is not {w.constant(type(leaf))} or "
                f"{name} != {w.constant(leaf)}")


class _Scalar:
    """A number the kernel takes as a value of a dtype its type fixes: NumPy's scalar, or
    a Python float (a float64, weak, as in TensorFlow)."""

    traced = True

    def __init__(self, kinds, eager):
        self.kinds, self.eager = kinds, eager

    def matches(self, leaf):
        return isinstance(leaf, self.kinds)

    def key(self, leaf):
        if isinstance(leaf, np.generic):
            return ("scalar", _compiled(leaf.dtype))
        return type(leaf).__name__

    def write_tests(self, w, name, leaf):
        w.fails(f"type({name}) is not {w.constant(type(leaf))}")


class _Array:
    """A NumPy array, or a Tensor or Variable holding one (its `wrapper`, keyed apart by
    `tag`): keyed by its rank, dtype and which dims are 1, the kernel taking any size of
    the others."""

    def __init__(self, eager, wrapper=None, tag=None, traced=True):
        self.eager, self.wrapper, self.tag, self.traced = eager, wrapper, tag, traced

    def matches(self, leaf):
        return isinstance(leaf, self.wrapper or np.ndarray)

    def key(self, leaf):
        array = leaf._array if self.wrapper else leaf
        key = (array.ndim, _compiled(array.dtype), tuple(d == 1 for d in array.shape))
        if getattr(leaf, "_weak", False):  # traced weak: it takes the other operand's dtype
            return ("weak " + self.tag, key)
        if self.wrapper is Variable:  # a tape watches a trainable one only
            return (self.tag, key, leaf._trainable)
        if hasattr(leaf, "eager_kind"):  # a NumpyTensor: its operators are NumPy's
            return (self.tag, key, leaf.eager_kind)
        return (self.tag, key) if self.wrapper else key

    def write_tests(self, w, name, leaf):
        tests = f"type({name}) is not {w.constant(type(leaf))}"
        # A weak Tensor and a strong one, a trainable Variable and another, are keyed apart.
        flag = {Tensor: "_weak", Variable: "_trainable"}.get(self.wrapper)
        if flag:
            tests += f" or not {name}.{flag}" if getattr(leaf, flag) else f" or {name}.{flag}"
        value, array = (f"{name}._array", leaf._array) if self.wrapper else (name, leaf)
        if array.ndim:
            w.fails(tests)
            w.layout(value, array.dtype)
        else:  # the kernel takes its value as a scalar: no layout to test
            w.fails(f"{tests} or {value}.dtype.num != {array.dtype.num}",
                    _dtype_number(array.dtype))
        w.shape_tests(value, array.shape)


_STATIC = (bool, int, str, type(None))
# The kinds of leaves, in the order a leaf is matched (NumPy's float64 is a float, a bool
# an int). A Tensor's key differs from its array's (the plain call returns Tensors where
# eager code on it makes them), and a Variable's from a Tensor's (the kernel reads and
# assigns a Variable, which it does not take as a leaf).
RULES = (_Array(wrapper=Variable, tag="variable", eager=None, traced=False),
         _Array(wrapper=Tensor, tag="tensor", eager="tensor"),
         _Array(eager="numpy"),
         _Scalar(np.generic, eager="numpy"),
         _Scalar(float, eager="python"),
         _Static(_STATIC))
# tf.function's: a Python float is static, an array a tensor to the function's code.
TF_RULES = (*RULES[:2], _Array(eager="tensor"), _Scalar(np.generic, eager="tensor"),
            _Static((*_STATIC, float)))


def rule_of(leaf, tf_rules=False):
    """The rule for an argument leaf; a TypeError for a leaf a kernel cannot take."""
    live(leaf, "a compiled function's argument")
    for rule in TF_RULES if tf_rules else RULES:
        if rule.matches(leaf):
            return rule
    raise TypeError(f"srcxform.differentiable: cannot pass a {type(leaf).__name__} "
                    "(arrays, tensors, Variables, floats, and static ints, bools, strings "
                    "and None are accepted, in tuples, lists and dicts)")


def key(leaves, tf_rules=False):
    """The part of a call's cache key its argument leaves make."""
    return tuple(rule_of(leaf, tf_rules).key(leaf) for leaf in leaves)


# ----- how the kernel receives a value (a traced leaf, a Variable's value) -----


def kernel_value(value):
    """A traced leaf as the kernel receives it: arrays in native byte order, with 0-d ones
    as scalars (the generated call path's `leaf`)."""
    if eager_tensor(value) or isinstance(value, Variable):
        value = value._array
    if isinstance(value, (np.ndarray, np.generic)) and not value.dtype.isnative:
        value = value.astype(value.dtype.newbyteorder("="))
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def kernel_expr(name, value):
    """kernel_value as the warm entry writes it for a value like `value` held in `name`
    (its tests send a non-native byte order to the slow path)."""
    if eager_tensor(value) or isinstance(value, Variable):
        name, value = f"{name}._array", value._array
    return f"{name}[()]" if isinstance(value, np.ndarray) and value.ndim == 0 else name


def described(value):
    """A kernel argument as the compile worker types it: an array by the parts of its
    Numba type (numba.typeof's: dtype, ndim, layout, read-only), a scalar as itself."""
    if isinstance(value, np.ndarray):
        flags = value.flags
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"
        return ("array", value.dtype.str, value.ndim, layout, not flags.writeable)
    return ("value", value)


# ----- the trace's guards on sizes: (expr, op), holding where `expr op 0` (dims.py) -----
_GUARDS = {">=": (operator.ge, "<"), "==": (operator.eq, "!="), "!=": (operator.ne, "==")}


def admits(guards, sizes):
    """Whether sizes (each size symbol's value) satisfy every guard."""
    return all(_GUARDS[op][0](evaluate(expr, sizes), 0) for expr, op in guards)


def failing(guards, size):
    """A test per guard, as text, that holds where the guard fails; size(k) names size
    symbol k."""
    return [f"{render(expr, size)} {_GUARDS[op][1]} 0" for expr, op in guards]


# ----- the warm entry's tests, as text -----


def guard(test, fall_back, why=""):
    """The lines sending a call for which `test` holds on: one statement a line."""
    return [f"if {test}:{f'  # {why}' if why else ''}", f"    {fall_back}"]


def _dtype_number(dtype):
    """The comment naming the dtype a test of `.dtype.num` compares with: NumPy's number
    for it, tested rather than the dtype's equality, which costs more."""
    return f"{dtype.num}: {dtype.name}"


class ArgumentTests:
    """The warm entry's tests that a call's arguments are like one call's (its `args`),
    as lines: `unpack` (the containers, down to names for the leaves) then `checks` (the
    leaves, by their rules). Every name they bind is made by a scheme of their own (a<i>,
    x<k>, c<k>, s<k>, k<k>): the user's names reach an entry only as the dict keys it
    writes as literals, so none can clash with them. With `exact`, an array of another
    shape than the call's fails its tests."""

    def __init__(self, args, tf_rules=False, exact=False):
        self.tf_rules, self.exact = tf_rules, exact
        self.unpack, self.checks, self.names, self.constants = [], [], [], {}
        self._constant_names = {}  # id of each constant: its name
        # Each leaf array's shape tuple, by the array's name: (the tuple's name, its rank).
        self.shapes = {}
        # The globals holding the shape each leaf array had at the last call that passed
        # its tests (an equal shape passes them again), with their first values.
        self.last_shapes = {}
        # How a call the entry does not fit goes on to the next entry.
        self.fall_back = f"return fallback({', '.join(f'a{i}' for i in range(len(args)))})"
        for i, arg in enumerate(args):
            leaves, tree = tree_flatten(arg)
            self._unpack(tree, f"a{i}", iter(leaves))

    def fails(self, test, why=""):
        """Sends a call for which `test` holds to the fallback (`why`: a comment)."""
        self.checks += guard(test, self.fall_back, why)

    def constant(self, value):
        """The entry's global name for `value`: one name per object (a captured Variable
        read and assigned, a type or dtype several leaves share). A dtype is NumPy's own
        instance of it, so that an entry's text is the same whether its kernel was traced
        in this process or its Spec unpickled from the index (the text is the key of the
        entry's cached bytecode)."""
        if isinstance(value, np.dtype) and value.isnative:
            value = np.dtype(value.str)
        name = self._constant_names.get(id(value))
        if name is None:
            name = self._constant_names[id(value)] = f"k{len(self.constants)}"
            self.constants[name] = value
        return name

    def _unpack(self, tree, expr, leaves):
        """Unpacks the leaves of a structure `tree` found at `expr`, in the order
        tree_flatten visits them, testing the containers (their TreeDef is in the key)."""
        if tree.kind is None:
            name = expr
            if not expr.isidentifier():
                name = f"x{len(self.names)}"
                self.unpack.append(f"{name} = {expr}")
            self.names.append(name)
            leaf = next(leaves)
            rule_of(leaf, self.tf_rules).write_tests(self, name, leaf)
            return
        if tree.how == NONE:
            self.unpack += guard(f"{expr} is not None", self.fall_back)
            return
        n = len(tree.children)
        if tree.how in (SEQUENCE, DICT) and tree.kind in (tuple, list, dict):
            self.unpack += guard(f"type({expr}) is not {tree.kind.__name__} or "
                                 f"len({expr}) != {n}", self.fall_back)
        else:  # its type, a constant; a NamedTuple's or dataclass's fields come with it
            kind = self.constant(tree.kind)
            length = f" or len({expr}) != {n}" if tree.how == SEQUENCE else ""
            self.unpack += guard(f"type({expr}) is not {kind}{length}", self.fall_back)
        if tree.how == DICT:  # the same keys in the same order: results come back in it
            self.unpack += guard(f"tuple({expr}) != {self.constant(tree.order)}",
                                 self.fall_back)
            children = [f"{expr}[{repr(k) if spelled_key(k) else self.constant(k)}]"
                        for k in tree.keys]
        elif tree.how == DATACLASS:
            children = [f"{expr}.{k}" for k in tree.keys]
        elif tree.how in (SEQUENCE, NAMEDTUPLE):
            children = [f"{expr}[{k}]" for k in range(n)]
        else:  # a registered type: its flatten function's children and aux data
            flat, flatten = f"c{len(self.unpack)}", self.constant(flatten_function(tree.kind))
            aux = self.constant(tree.order)  # the aux data, compared as tree.py's keys are
            self.unpack += [f"{flat}, {flat}_aux = {flatten}({expr})", f"{flat} = tuple({flat})"]
            self.unpack += guard(f"({flat}_aux,) != {aux} or len({flat}) != {n}",
                                 self.fall_back)
            children = [f"{flat}[{k}]" for k in range(n)]
        for child, child_expr in zip(tree.children, children):
            self._unpack(child, child_expr, leaves)

    def layout(self, value, dtype, fixed=False):
        """Tests that the array `value` has `dtype` (unless its dtype is `fixed`: a captured
        array's or Variable's cannot change) in native byte order (the slow path converts
        one that is not, which Numba cannot type); and unless it is C-contiguous, aligned
        and writeable with the very dtype object NumPy uses natively, the kernel is run
        through `checked` (Numba's dispatcher), not `direct`."""
        native = self.constant(np.dtype(dtype.type))
        test = f"{value}.dtype is not {native} or not {value}.flags.carray"
        if fixed:
            self.checks.append(f"if {test}: run = checked")
            return
        other = f"{value}.dtype.num != {dtype.num} or not {value}.dtype.isnative"
        self.checks += [f"if {test}:"]
        self.checks += [f"    {line}" for line in guard(other, self.fall_back,
                                                        _dtype_number(dtype))]
        self.checks.append("    run = checked")

    def captured_layout(self, value, array):
        """Tests that the captured `array` (one object at every call, named `value`) is as
        traced: its dtype and shape, which the kernel holds (else: traced again), and its
        flags, Numba's layout of it (else: `checked`). Any layout runs `direct` (a read-only
        broadcast of a gradient's seed: GradBench det's gradient 12 -> 6.8 µs)."""
        self.fails(f"{value}.dtype is not {self.constant(array.dtype)} or {value}.shape != "
                   f"{tuple(map(int, array.shape))}", "changed in place: traced again")
        self.checks.append(f"if {value}.flags.num != {array.flags.num}: run = checked")

    def shape_tests(self, value, shape):
        """Tests that the array `value` has the rank of `shape` and its dims of 1 (the
        key's), made only when its shape differs from the last call's: one tuple
        comparison costs less than these tests, a large part of a small warm call."""
        name = f"s{len(self.shapes)}"
        self.shapes[value] = name, len(shape)
        tests = [f"len({name}) != {len(shape)}"]
        ones = [d == 1 for d in shape]
        if any(ones):
            tests += [f"{name}[{a}] {'!=' if one else '=='} 1" for a, one in enumerate(ones)]
        elif ones:
            tests.append(f"1 in {name}")
        last = f"last_{name}"
        self.last_shapes[last] = shape
        self.checks += [f"if ({name} := {value}.shape) != {last}:"]
        if self.exact:
            self.checks.append(f"    {self.fall_back}  # traced again first (right_for)")
            return
        self.checks += [f"    {line}" for line in guard(" or ".join(tests), self.fall_back)]
        self.checks.append(f"    {last} = {name}")
