"""Differential test of srcxform's eager API against TensorFlow itself.

A random eager program is Python TEXT over the ops both frameworks have: sources that are
constants (watched or not) and Variables, float32/float64, shapes with broadcasting and
1-dims, Python scalars and NumPy arrays mixed in, persistent and nested tapes, gradients
with output_gradients and unconnected_gradients, jacobians, batch_jacobians and second
order; Variable updates (assign, assign_add, assign_sub), conversions with `dtype=`,
integer reductions, nested lists of tensors (packed), and the names ported programs use
(linalg.cross, the nn losses, reverse, strided_slice, map_fn, ...). The same text is
executed twice, with `tf` bound to tensorflow and to srcxform;
every value it appends to `out` (and the exception that stopped it, if any) is compared:
structure, None-vs-tensor, dtype, shape and values (exact for ints and bools, NaN == NaN).

Exceptions are compared by kind. TensorFlow's `InvalidArgumentError` (a kernel rejecting
its inputs) is matched by Python's ValueError, TypeError, IndexError or ZeroDivisionError
(srcxform raises it as subclasses of those); TensorFlow's TypeError, ValueError and
RuntimeError need the same Python class (TypeError for ValueError too: TensorFlow raises
ValueError for dtype problems that Python code calls TypeError); anything else needs the
same class name.

The README's "Differences from TensorFlow" are the only tolerated differences; each is a
named allowance in ALLOWANCES, keyed on TensorFlow's error message (where TensorFlow
raises and srcxform computes), or in KNOWN_DIFFERENCES, keyed on the op a program uses
(where TensorFlow's result is wrong: the second-order outputs, after SECOND_ORDER in
`out`, may differ). Documented differences the generator never
produces (`.T`, NumPy's array methods, `custom_gradient`'s signature, `where(c)`, integer
array indexing) have no allowance, so generating them would show up as mismatches.

    python -m tests.tf_differential --programs 2000 --seed 0 [--show 20]

TensorFlow's outcomes for a fixed set of programs are recorded in tests/tf_recorded.json
(`--record`, with TensorFlow installed), which the test suite replays against srcxform
where TensorFlow is not installed: CI checks them without it.
"""

import argparse
import contextlib
import io
import json
import os
import re
import sys
from dataclasses import dataclass, field

import numpy as np

# ----- the generator -----

FLOAT_UNARY = ["tf.sin", "tf.cos", "tf.tanh", "tf.sigmoid", "tf.math.softplus", "tf.nn.relu",
               "tf.abs", "tf.square", "tf.negative", "tf.sign", "tf.floor", "tf.round",
               "tf.stop_gradient", "tf.exp", "tf.math.expm1", "tf.tan", "tf.math.erf",
               "tf.math.erfc", "tf.math.atan", "tf.math.sinh", "tf.math.cosh", "tf.math.asinh",
               "tf.nn.gelu", "tf.nn.elu", "tf.nn.selu", "tf.nn.silu", "tf.math.log_sigmoid",
               "tf.identity"]
DOMAIN_UNARY = ["tf.sqrt", "tf.math.log", "tf.math.log1p", "tf.math.rsqrt", "tf.math.lgamma",
                "tf.math.digamma", "tf.math.asin", "tf.math.acos", "tf.math.atanh",
                "tf.math.acosh", "tf.math.reciprocal"]
# Ops whose result is bit-for-bit the same in both frameworks (one IEEE operation, or a
# selection); transcendental functions, divisions, sums and matmuls may differ in the last
# bit. Ops with a threshold (floor, comparisons, casts to int, clip, relu) only take such
# exact values, so that a last-bit difference cannot cross their threshold.
EXACT_UNARY = ["tf.nn.relu", "tf.abs", "tf.square", "tf.negative", "tf.sign", "tf.floor",
               "tf.round", "tf.stop_gradient"]
THRESHOLD_UNARY = ["tf.nn.relu", "tf.abs", "tf.sign", "tf.floor", "tf.round"]
BINARY_OPERATORS = ["+", "-", "*", "/"]
BINARY_FUNCTIONS = ["tf.maximum", "tf.minimum", "tf.add", "tf.subtract", "tf.multiply",
                    "tf.divide", "tf.math.floordiv", "tf.math.floormod"]
REDUCTIONS = ["tf.reduce_sum", "tf.reduce_mean", "tf.reduce_max", "tf.reduce_min",
              "tf.reduce_prod", "tf.reduce_logsumexp"]
PY_SCALARS = ["2.0", "0.5", "-1.5", "3", "1", "0.0"]
# Conversions with dtype=: Python values by kind, NumPy values as astype, tensors kept.
# Only values every dtype here holds (no negative numbers into unsigned ones, no ints out
# of range: those raise in srcxform, as the README documents).
CONVERSION_DTYPES = ["tf.float32", "tf.float64", "tf.float16", "tf.int32", "tf.int64",
                     "tf.int8", "tf.uint8", "tf.int16", "tf.bool"]
CONVERTED = ["True", "False", "[True, False]", "0", "3", "[1, 2]", "[[1], [2]]", "2.0", "1.5",
             "[0.5, 1.0]", "[]", "[[]]", "[[], []]", "np.float32(2.0)", "np.float32(2.5)",
             "np.float64(0.0)", "np.array([0.0, 1.5], np.float32)", "np.array([1, 0])",
             "np.array([True, False])", "np.int64(7)", "np.array([[2.5]])",
             "tf.constant(1.5)", "tf.constant([1, 2])", "[tf.constant(1.5), 2]",
             "[[tf.constant(1), 0], [0, 1]]"]
CONVERTERS = ["tf.constant", "tf.convert_to_tensor", "tf.Variable"]
# The dtypes TensorFlow's conversion refuses Python bools for (it takes them for the
# others); srcxform converts them (the README's conversion rule).
NO_PYTHON_BOOLS = ("tf.int8", "tf.uint8", "tf.int16")
INT_DTYPES = ["tf.int32", "tf.int64", "tf.int8", "tf.uint8", "tf.int16"]
INT_REDUCTIONS = ["tf.reduce_sum", "tf.reduce_mean", "tf.reduce_max", "tf.reduce_min",
                  "tf.reduce_prod"]
SECOND_ORDER = "second order"  # appended to `out` before the second-order results


@dataclass
class Val:
    name: str
    shape: tuple
    dtype: str  # "float32", "float64", "int32" or "bool"
    exact: bool = True  # computed the same to the bit in both (see EXACT_UNARY)
    variable: bool = False

    @property
    def is_float(self):
        return self.dtype.startswith("float")


@dataclass
class Program:
    lines: list = field(default_factory=list)

    @property
    def text(self):
        return "\n".join(self.lines) + "\n"


def _literal(rng, shape, dtype, low=-2.0, high=2.0):
    np_dtype = {"float32": "np.float32", "float64": "np.float64", "int32": "np.int32"}[dtype]
    if 0 in shape:  # a nested list would lose the shape: [] for (0, 2)
        return f"np.zeros({tuple(shape)!r}, dtype={np_dtype})"
    values = np.round(rng.uniform(low, high, size=shape), 1)
    if dtype == "int32":
        values = np.round(values * 2).astype(int)
    return f"np.array({values.tolist()!r}, dtype={np_dtype})"


class Generator:
    """Builds one program; `indent` is the current block's indentation."""

    def __init__(self, rng):
        self.rng = rng
        self.program = Program()
        self.indent = ""
        self.count = 0
        self.values = []  # what later statements may use

    # -- helpers --
    def chance(self, p):
        return self.rng.random() < p

    def pick(self, seq):
        return seq[self.rng.integers(len(seq))]

    def emit(self, line):
        self.program.lines.append(self.indent + line)

    def fresh(self, prefix="v"):
        self.count += 1
        return f"{prefix}{self.count}"

    def bind(self, expr, shape, dtype, record=True, exact=False):
        name = self.fresh()
        self.emit(f"{name} = {expr}")
        if record:
            self.emit(f"out.append({name})")
        val = Val(name, tuple(shape), dtype, exact)
        self.values.append(val)
        return val

    def floats(self):
        return [v for v in self.values if v.is_float]

    def exact_floats(self):
        return [v for v in self.floats() if v.exact]

    def is_exact(self, expr):
        """Whether an operand (a value's name, a Python scalar, a literal) is exact."""
        return all(v.exact for v in self.values if v.name == expr)

    def broadcast_shape_like(self, shape):
        """A shape that broadcasts against `shape`: some dims 1, some leading ones dropped."""
        dims = [1 if self.chance(0.3) else d for d in shape]
        drop = self.rng.integers(0, len(dims) + 1) if self.chance(0.3) else 0
        dims = dims[drop:]
        if self.chance(0.15):  # now and then a longer one
            dims = [self.pick([1, 2])] + dims
        return tuple(dims)

    # -- the program --
    def generate(self):
        rng = self.rng
        self.dtype = "float64" if self.chance(0.35) else "float32"
        rank = int(rng.integers(0, 4))
        self.base = tuple(int(rng.choice([1, 2, 3])) for _ in range(rank))
        self.sources = []
        self.watched_constants = []
        for i in range(int(rng.integers(1, 4))):
            shape = self.base if i == 0 else self.broadcast_shape_like(self.base)
            dtype = self.dtype
            if self.chance(0.06):  # documented: mixed float dtypes promote
                dtype = "float64" if dtype == "float32" else "float32"
            name = f"x{i}"
            literal = _literal(rng, shape, dtype)
            s_is_variable = self.chance(0.5)
            if s_is_variable:
                trainable = "" if self.chance(0.9) else ", trainable=False"
                self.emit(f"{name} = tf.Variable({literal}{trainable})")
            else:
                self.emit(f"{name} = tf.constant({literal})")
                if self.chance(0.85):
                    self.watched_constants.append(name)
            val = Val(name, shape, dtype, variable=s_is_variable)
            self.sources.append(val)
            self.values.append(val)
        if self.chance(0.3):
            self.updates()
        second_order = self.chance(0.35)
        if second_order:
            self.emit("with tf.GradientTape(persistent=True) as outer:")
            self.indent = "    "
            for name in self.watched_constants:
                self.emit(f"outer.watch({name})")
        persistent = self.chance(0.5)
        self.emit(f"with tf.GradientTape(persistent={persistent}) as tape:")
        self.indent += "    "
        for name in self.watched_constants:
            self.emit(f"tape.watch({name})")
        for _ in range(int(rng.integers(1, 7))):
            self.statement()
        target = self.target()
        self.indent = self.indent[:-4]
        self.gradients(target, persistent)
        if second_order:
            self.second_order()
        return self.program

    def target(self):
        last = self.floats()[-1]
        if self.chance(0.7):
            return self.bind(f"tf.reduce_sum({last.name})", (), last.dtype)
        return last

    def source_list(self):
        sources = [s.name for s in self.sources]
        if self.chance(0.3):  # an intermediate, maybe connected, maybe not
            inner = [v for v in self.floats() if v not in self.sources]
            if inner:
                sources.append(self.pick(inner).name)
        return sources

    def unconnected(self):
        return self.pick(["", "", ", unconnected_gradients='zero'",
                          ", unconnected_gradients=tf.UnconnectedGradients.ZERO",
                          ", unconnected_gradients='none'"])

    def gradients(self, target, persistent):
        sources = self.source_list()
        options = self.unconnected()
        if (target.shape != () or self.chance(0.15)) and self.chance(0.7):
            weight = _literal(self.rng, target.shape, target.dtype)
            options += f", output_gradients=tf.constant({weight})"
        self.emit(f"g = tape.gradient({target.name}, [{', '.join(sources)}]{options})")
        self.emit("out.append(g)")
        if persistent or self.chance(0.05):  # a second use of a non-persistent tape raises
            self.jacobians()
        return sources

    def jacobians(self):
        floats = self.floats()
        small = [v for v in floats if int(np.prod(v.shape)) <= 12]
        if not small:
            return
        t = self.pick(small)
        s = self.pick(self.sources)
        self.emit(f"out.append(tape.jacobian({t.name}, {s.name}{self.unconnected()}))")
        if self.chance(0.4):
            # A rank-1 target now and then: TensorFlow requires rank >= 2 and raises.
            rank = 1 if self.chance(0.1) else 2
            batched = [v for v in small if len(v.shape) >= rank and s.shape
                       and v.shape[0] == s.shape[0]]
            if batched:
                t = self.pick(batched)
                self.emit(f"out.append(tape.batch_jacobian({t.name}, {s.name}))")

    def second_order(self):
        # Inside `outer`: the first-order gradients are recorded, then differentiated with
        # respect to the sources only. (With respect to an intermediate the result depends
        # on how each framework writes a gradient: tan's as 1 + y**2 or 1 / cos(x)**2.)
        sources = [s.name for s in self.sources]
        self.emit(f"out.append({SECOND_ORDER!r})")
        self.emit("gs = [tf.reduce_sum(tf.convert_to_tensor(gi) ** 2) for gi in g "
                  "if gi is not None]")
        self.indent = ""
        self.emit("if gs:")
        self.emit(f"    out.append(outer.gradient(gs, [{', '.join(sources)}]"
                  f"{self.unconnected()}))")
        if self.chance(0.5):
            s = self.pick(self.sources)
            if int(np.prod(s.shape)) <= 12:
                self.emit("if g[0] is not None:")
                self.emit(f"    out.append(outer.jacobian(g[0], {s.name}))")

    # -- statements: each binds one new value --
    def statement(self):
        kinds = [self.unary, self.domain_unary, self.binary, self.binary, self.reduction,
                 self.structural, self.structural, self.selection, self.nn, self.matmul,
                 self.integer, self.pow, self.ported, self.ported, self.packed,
                 self.conversion, self.integer_reduction]
        for _ in range(10):  # a statement that does not apply to the values returns False
            if self.pick(kinds)():
                return

    def operand(self, shape, dtype):
        """The other operand of a binary op: a value, a Python scalar or a NumPy array."""
        r = self.rng.random()
        if r < 0.3:
            return self.pick(PY_SCALARS)
        if r < 0.38:
            return _literal(self.rng, self.broadcast_shape_like(shape), dtype)
        if r < 0.42:  # an incompatible shape, now and then
            return _literal(self.rng, shape[:-1] + (4,) if shape else (4,), dtype)
        return self.pick(self.floats()).name

    def shape_of(self, expr, default):
        for v in self.values:
            if v.name == expr:
                return v.shape, v.dtype
        if expr.startswith("np.array"):
            return np.array(eval(expr, {"np": np})).shape, default[1]
        return (), default[1]

    def result(self, a, b_expr):
        b_shape, b_dtype = self.shape_of(b_expr, (None, a.dtype))
        try:
            shape = np.broadcast_shapes(a.shape, b_shape)
        except ValueError:
            shape = a.shape  # TensorFlow and srcxform should both raise
        dtype = "float64" if "float64" in (a.dtype, b_dtype) else a.dtype
        return shape, dtype

    def unary(self):
        op = self.pick(FLOAT_UNARY)
        candidates = self.exact_floats() if op in THRESHOLD_UNARY else self.floats()
        if not candidates:
            return False
        a = self.pick(candidates)
        return self.bind(f"{op}({a.name})", a.shape, a.dtype,
                         exact=a.exact and op in EXACT_UNARY)

    def domain_unary(self):
        a = self.pick(self.floats())
        arg = a.name if self.chance(0.4) else f"tf.abs({a.name}) + 0.5"
        return self.bind(f"{self.pick(DOMAIN_UNARY)}({arg})", a.shape, a.dtype)

    def binary(self):
        a = self.pick(self.floats())
        b = self.operand(a.shape, a.dtype)
        shape, dtype = self.result(a, b)
        op = self.pick(BINARY_OPERATORS if self.chance(0.5) else BINARY_FUNCTIONS)
        exact = a.exact and self.is_exact(b)
        if op.startswith("tf.math.floor") and not exact:
            return False  # floor(x / y) of inexact operands: a threshold
        if op in BINARY_OPERATORS:
            expr = f"{b} {op} {a.name}" if self.chance(0.3) else f"{a.name} {op} {b}"
        else:
            expr = f"{op}({a.name}, {b})"
        exact = exact and op not in ("/", "tf.divide", "tf.math.floordiv", "tf.math.floormod")
        return self.bind(expr, shape, dtype, exact=exact)

    def pow(self):
        a = self.pick(self.floats())
        r = self.rng.random()
        if r < 0.4:
            return self.bind(f"{a.name} ** {self.pick(['2', '2.0', '3', '0.5', '-1.0'])}",
                             a.shape, a.dtype)
        b = self.pick(self.floats())
        shape, dtype = self.result(a, b.name)
        base = a.name if r < 0.55 else f"(tf.abs({a.name}) + 0.5)"
        return self.bind(f"tf.pow({base}, {b.name})", shape, dtype)

    def reduction(self):
        a = self.pick(self.floats())
        op = self.pick(REDUCTIONS)
        keep = self.chance(0.3)
        if not a.shape or self.chance(0.3):
            shape = tuple(1 for _ in a.shape) if keep else ()
            args = ", keepdims=True" if keep else ""
        else:
            axis = int(self.rng.integers(-len(a.shape), len(a.shape)))
            shape = list(a.shape)
            if keep:
                shape[axis] = 1
            else:
                del shape[axis]
            args = f", axis={axis}" + (", keepdims=True" if keep else "")
        return self.bind(f"{op}({a.name}{args})", shape, a.dtype,
                         exact=a.exact and op in ("tf.reduce_max", "tf.reduce_min"))

    def structural(self):
        """Moves or selects elements: exact where its operands are."""
        a = self.pick(self.floats())
        val = self.rearranged(a)
        val.exact = a.exact
        return val

    def rearranged(self, a):
        s, n = a.shape, len(a.shape)
        choices = ["reshape", "expand_dims", "tile", "broadcast_to", "concat", "stack",
                   "getitem", "getitem"]
        if n >= 1:
            choices += ["gather", "transpose", "reverse_slice"]
        if 1 in s:
            choices.append("squeeze")
        kind = self.pick(choices)
        if kind == "reshape":
            if self.chance(0.5):
                return self.bind(f"tf.reshape({a.name}, [-1])", (int(np.prod(s)),), a.dtype)
            new = tuple(reversed(s))
            return self.bind(f"tf.reshape({a.name}, {list(new)})", new, a.dtype)
        if kind == "expand_dims":
            axis = int(self.rng.integers(-n - 1, n + 1))
            shape = list(s)
            shape.insert(axis if axis >= 0 else n + 1 + axis, 1)
            return self.bind(f"tf.expand_dims({a.name}, {axis})", shape, a.dtype)
        if kind == "squeeze":
            axis = s.index(1)
            shape = s[:axis] + s[axis + 1:]
            if self.chance(0.5):
                return self.bind(f"tf.squeeze({a.name}, axis={axis})", shape, a.dtype)
            return self.bind(f"tf.squeeze({a.name})", tuple(d for d in s if d != 1), a.dtype)
        if kind == "tile":
            reps = [int(self.rng.integers(1, 3)) for _ in s]
            return self.bind(f"tf.tile({a.name}, {reps})",
                             tuple(d * r for d, r in zip(s, reps)), a.dtype)
        if kind == "broadcast_to":
            target = tuple(self.pick([2, 3]) if d == 1 else d for d in s)
            if self.chance(0.3):
                target = (2,) + target
            return self.bind(f"tf.broadcast_to({a.name}, {list(target)})", target, a.dtype)
        if kind in ("concat", "stack"):
            same = [v for v in self.floats() if v.shape == s and (v.exact or not a.exact)]
            b = self.pick(same)
            if kind == "stack":
                axis = int(self.rng.integers(-n - 1, n + 1))
                shape = list(s)
                shape.insert(axis if axis >= 0 else n + 1 + axis, 2)
                return self.bind(f"tf.stack([{a.name}, {b.name}], axis={axis})", shape,
                                 self.result(a, b.name)[1])
            if n == 0:
                return self.bind(f"tf.concat([{a.name}, {b.name}], 0)", (), a.dtype)
            axis = int(self.rng.integers(-n, n))
            shape = list(s)
            shape[axis] *= 2
            return self.bind(f"tf.concat([{a.name}, {b.name}], {axis})", shape,
                             self.result(a, b.name)[1])
        if kind == "gather":
            axis = int(self.rng.integers(0, n))
            idx = [int(self.rng.integers(0, s[axis])) for _ in range(int(self.rng.integers(1, 4)))]
            shape = s[:axis] + (len(idx),) + s[axis + 1:]
            return self.bind(f"tf.gather({a.name}, {idx}, axis={axis})", shape, a.dtype)
        if kind == "transpose":
            perm = [int(p) for p in self.rng.permutation(n)]
            if self.chance(0.3):
                return self.bind(f"tf.transpose({a.name})", tuple(reversed(s)), a.dtype)
            return self.bind(f"tf.transpose({a.name}, {perm})", tuple(s[p] for p in perm),
                             a.dtype)
        if kind == "reverse_slice":
            return self.bind(f"{a.name}[::-1]", s, a.dtype)
        # getitem: an int, a slice, an ellipsis or a new axis
        if n == 0:
            if self.chance(0.5):
                return self.bind(f"{a.name}[None]", (1,), a.dtype)
            return self.bind(f"{a.name}[...]", (), a.dtype)
        i = int(self.rng.integers(0, s[0]))
        pick = self.rng.integers(4)
        if pick == 0:
            return self.bind(f"{a.name}[{i}]", s[1:], a.dtype)
        if pick == 1:
            return self.bind(f"{a.name}[{i}:]", (s[0] - i,) + s[1:], a.dtype)
        if pick == 2:
            return self.bind(f"{a.name}[..., :1]", s[:-1] + (min(1, s[-1]),), a.dtype)
        return self.bind(f"{a.name}[:, None]" if n >= 1 else f"{a.name}[None]",
                         s[:1] + (1,) + s[1:], a.dtype)

    def selection(self):
        exact = self.exact_floats()  # a threshold: clip's bounds, the condition
        if not exact:
            return False
        a = self.pick(exact)
        if self.chance(0.4):
            lo, hi = sorted(self.rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], 2, replace=False))
            if self.chance(0.1):
                lo, hi = hi, lo  # TensorFlow clips to hi, then lo
            return self.bind(f"tf.clip_by_value({a.name}, {lo}, {hi})", a.shape, a.dtype,
                             exact=True)
        b = self.pick(exact)
        shape, dtype = self.result(a, b.name)
        cond = self.pick([f"{a.name} > 0.0", f"{a.name} <= {b.name}",
                          f"tf.math.is_finite({a.name})", f"tf.equal({a.name}, {b.name})",
                          f"tf.logical_and({a.name} > -1.0, {a.name} < 1.0)"])
        return self.bind(f"tf.where({cond}, {a.name}, {b.name})", shape, dtype, exact=True)

    def nn(self):
        a = self.pick(self.floats())
        if not a.shape:
            return False
        kind = self.pick(["softmax", "log_softmax", "sigmoid_xent", "softmax_xent"])
        if kind in ("softmax", "log_softmax"):
            return self.bind(f"tf.nn.{kind}({a.name})", a.shape, a.dtype)
        if kind == "sigmoid_xent":
            labels = _literal(self.rng, a.shape, a.dtype, 0.0, 1.0)
            return self.bind(f"tf.nn.sigmoid_cross_entropy_with_logits("
                             f"labels=tf.constant({labels}), logits={a.name})", a.shape, a.dtype)
        # Labels that sum to 1 and do not depend on the logits: the README documents that
        # srcxform's gradient differs from TensorFlow's otherwise (srcxform's is right).
        labels = f"tf.nn.softmax(tf.constant({_literal(self.rng, a.shape, a.dtype)}))"
        return self.bind(f"tf.nn.softmax_cross_entropy_with_logits(labels={labels}, "
                         f"logits={a.name})", a.shape[:-1], a.dtype)

    def matmul(self):
        a = self.pick(self.floats())
        if len(a.shape) < 2:
            return False
        k = int(self.rng.integers(1, 4))
        other = a.shape[:-2] + (a.shape[-1], k)
        b = f"tf.constant({_literal(self.rng, other, a.dtype)})"
        if self.chance(0.3):
            return self.bind(f"tf.matmul({a.name}, {a.name}, transpose_b=True)",
                             a.shape[:-1] + (a.shape[-2],), a.dtype)
        return self.bind(f"tf.matmul({a.name}, {b})", a.shape[:-1] + (k,), a.dtype)

    def integer(self):
        """A detour through int32: no gradient flows through it."""
        if not self.exact_floats():
            return False  # the cast to int32 is a threshold
        a = self.pick(self.exact_floats())
        i = self.bind(f"tf.cast({a.name} * 4.0, tf.int32)", a.shape, "int32")
        op = self.pick(["// 3", "% 3", "+ 1", "* 2", "& 5", "| 2", "- tf.ones_like({0})",
                        "// ({0} % 2)"])  # by zero where an element is even
        j = self.bind(f"{i.name} {op.format(i.name)}", a.shape, "int32")
        return self.bind(f"tf.cast({j.name}, {a.name}.dtype) * {a.name}", a.shape, a.dtype,
                         exact=True)

    # -- Variable updates: converted to the Variable's dtype, then its exact shape --
    def updates(self):
        for v in [s for s in self.sources if s.variable]:
            if not self.chance(0.6):
                continue
            other = "float64" if v.dtype == "float32" else "float32"
            value = self.pick([
                _literal(self.rng, v.shape, v.dtype),
                _literal(self.rng, v.shape, other),  # NumPy: converted as astype
                str(np.round(self.rng.uniform(-2, 2, size=v.shape) * 2).astype(int).tolist()),
                "1.0",  # a Python scalar: raises unless v is a scalar (no broadcasting)
                f"tf.constant({_literal(self.rng, v.shape, 'int32')})",  # another kind
                f"tf.constant({_literal(self.rng, v.shape, other)})",  # documented: converts
                _literal(self.rng, (1,) + v.shape, v.dtype),  # another shape: raises
            ])
            method = self.pick(["assign", "assign_add", "assign_sub"])
            self.emit(f"{v.name}.{method}({value})")
            self.emit(f"out.append({v.name})")

    # -- record-only statements: values outside the differentiated graph --
    def conversion(self):
        converter, dtype, value = (self.pick(CONVERTERS), self.pick(CONVERSION_DTYPES),
                                   self.pick(CONVERTED))
        if value.startswith(("True", "False", "[True")) and dtype in NO_PYTHON_BOOLS:
            dtype = "tf.int32"  # documented: TensorFlow refuses Python bools only there
        self.emit(f"out.append({converter}({value}, dtype={dtype}))")
        if self.chance(0.2):  # an integer Variable takes NumPy floats truncated
            name = self.fresh("i")
            self.emit(f"{name} = tf.Variable([3, -2])")
            self.emit(f"{name}.{self.pick(['assign', 'assign_add', 'assign_sub'])}"
                      f"({self.pick(['np.float32(0.5)', 'np.array([1.5, -2.5])', '2.0', '1'])})")
            self.emit(f"out.append({name})")
        return True

    def integer_reduction(self):
        dtype = self.pick(INT_DTYPES)
        shape = tuple(int(d) for d in self.rng.integers(1, 4, size=self.rng.integers(1, 3)))
        low = 0 if dtype == "tf.uint8" else -5
        values = self.rng.integers(low, 6, size=shape).tolist()
        axis = self.pick(["", ", axis=0", ", axis=-1", ", keepdims=True", ", axis=0, keepdims=True"])
        self.emit(f"out.append({self.pick(INT_REDUCTIONS)}(tf.constant({values}, {dtype}){axis}))")
        if self.chance(0.3):
            self.emit(f"out.append(tf.math.truediv(tf.constant({values}, {dtype}), "
                      f"tf.constant({values}, {dtype})))")
        return True

    # -- names ported programs use, in the differentiated graph --
    def ported(self):
        a = self.pick(self.floats())
        s, n = a.shape, len(a.shape)
        kinds = ["l2_loss", "reverse", "truediv", "while_loop", "polygamma", "weighted"]
        if a.exact:
            kinds.append("relu6")
        if n >= 1 and 0 not in s:
            kinds += ["strided_slice", "sparse_xent", "map_fn"]
        if n >= 2:
            kinds.append("bias_add")
        if n and s[-1] == 3 and any(v.shape == s for v in self.floats() if v is not a):
            kinds.append("cross")
        kind = self.pick(kinds)
        if kind == "relu6":
            return self.bind(f"tf.nn.relu6({a.name})", s, a.dtype, exact=True)
        if kind == "l2_loss":
            return self.bind(f"tf.nn.l2_loss({a.name})", (), a.dtype)
        if kind == "reverse":
            axes = [int(i) - n if self.chance(0.3) else int(i)
                    for i in self.rng.permutation(n)[:self.rng.integers(0, n + 1)]]
            return self.bind(f"tf.reverse({a.name}, {axes})", s, a.dtype, exact=a.exact)
        if kind == "truediv":
            b = self.operand(s, a.dtype)
            if self.shape_of(b, (None, a.dtype))[1] != a.dtype:
                # TensorFlow's truediv refuses mixed dtypes (TypeError) before it checks
                # shapes: with both faults the two would raise different kinds.
                return False
            shape, dtype = self.result(a, b)
            return self.bind(f"tf.math.truediv({a.name}, {b})", shape, dtype)
        if kind == "while_loop":
            return self.bind(f"tf.while_loop(lambda i, s: i < 2, lambda i, s: (i + 1, s * 1.5 "
                             f"+ 1.0), [tf.constant(0), {a.name}])[1]", s, a.dtype)
        if kind == "polygamma":
            orders = self.rng.choice([0.0, 1.0, 2.0, 3.0, -1.0, 1.5],
                                     size=self.broadcast_shape_like(s))
            np_dtype = {"float32": "np.float32", "float64": "np.float64"}[a.dtype]
            order = f"tf.constant(np.array({orders.tolist()!r}, dtype={np_dtype}))"
            try:
                shape = np.broadcast_shapes(orders.shape, s)
            except ValueError:
                shape = s  # both should raise
            return self.bind(f"tf.math.polygamma({order}, tf.abs({a.name}) + 0.5)", shape,
                             a.dtype)
        if kind == "weighted":
            labels = _literal(self.rng, s, a.dtype, 0.0, 1.0)
            weight = self.pick(["0.5", "2.0", "3"])
            return self.bind(f"tf.nn.weighted_cross_entropy_with_logits(tf.constant({labels}), "
                             f"{a.name}, {weight})", s, a.dtype)
        if kind == "strided_slice":
            return self.strided_slice(a)
        if kind == "sparse_xent":
            labels = self.rng.integers(0, s[-1], size=s[:-1]).tolist()
            return self.bind(f"tf.nn.sparse_softmax_cross_entropy_with_logits("
                             f"labels=tf.constant({labels}), logits={a.name})", s[:-1], a.dtype)
        if kind == "map_fn":
            return self.bind(f"tf.map_fn(lambda r: tf.sin(r) * 2.0, {a.name})", s, a.dtype)
        if kind == "bias_add":
            bias = _literal(self.rng, s[-1:], a.dtype)
            return self.bind(f"tf.nn.bias_add({a.name}, {bias})", s, a.dtype)
        b = self.pick([v for v in self.floats() if v.shape == s and v is not a])
        return self.bind(f"tf.linalg.cross({a.name}, {b.name})", s, self.result(a, b.name)[1])

    def strided_slice(self, a):
        for _ in range(10):  # a slice with elements: later statements pick indices in it
            found = self.strided_slice_args(a)
            if 0 not in found[-1]:
                break
        else:
            found = [0] * len(a.shape), list(a.shape), [1] * len(a.shape), {}, a.shape
        begin, end, strides, masks, shape = found
        options = "".join(f", {k}={v}" for k, v in masks.items() if v)
        return self.bind(f"tf.strided_slice({a.name}, {begin}, {end}, {strides}{options})",
                         shape, a.dtype, exact=a.exact)

    def strided_slice_args(self, a):
        begin, end, strides, index = [], [], [], []
        masks = {"begin_mask": 0, "end_mask": 0, "shrink_axis_mask": 0}
        for i, d in enumerate(a.shape):
            if self.chance(0.2):  # one element, the axis dropped
                b = int(self.rng.integers(-d, d))
                begin, end, strides = begin + [b], end + [b + 1], strides + [1]
                masks["shrink_axis_mask"] |= 1 << i
                index.append(b)
                continue
            step = int(self.pick([1, 1, 2, -1]))
            b, e = (int(v) for v in self.rng.integers(-d - 1, d + 2, size=2))
            begin, end, strides = begin + [b], end + [e], strides + [step]
            start, stop = b, e
            if self.chance(0.2):
                masks["begin_mask"] |= 1 << i
                start = None
            if self.chance(0.2):
                masks["end_mask"] |= 1 << i
                stop = None
            index.append(slice(start, stop, step))
        return begin, end, strides, masks, np.zeros(a.shape)[tuple(index)].shape

    def packed(self):
        """A nested list holding tensors: TensorFlow packs it (tf.stack of its rows)."""
        a = self.pick(self.floats())
        same = [v for v in self.floats() if v.shape == a.shape]
        b = self.pick(same)
        dtype = self.result(a, b.name)[1]
        if not a.shape and self.chance(0.5):
            return self.bind(f"tf.convert_to_tensor([[{a.name}, 1.0], [0.5, {b.name}]])",
                             (2, 2), dtype)
        if self.chance(0.3):
            return self.bind(f"tf.add([{a.name}, {b.name}], 1.0)", (2,) + a.shape, dtype)
        return self.bind(f"tf.convert_to_tensor([{a.name}, {b.name}])", (2,) + a.shape, dtype,
                         exact=a.exact and b.exact)


def generate(rng):
    return Generator(rng).generate().text


# ----- running a program under one framework -----


@dataclass
class Outcome:
    out: list
    error: BaseException = None

    def describe(self):
        lines = [f"  out[{i}] = {_show(v)}" for i, v in enumerate(self.out)]
        if self.error is not None:
            lines.append(f"  raised {type(self.error).__name__}: {_first_line(self.error)}")
        return "\n".join(lines)


def _first_line(error):
    text = str(error).strip().splitlines()
    return text[0][:200] if text else ""


def run(module, numpy_module, text):
    out = []
    namespace = {"tf": module, "np": numpy_module, "out": out}
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            exec(compile(text, "<program>", "exec"), namespace)  # noqa: S102 -- the test
    except Exception as error:  # noqa: BLE001 -- the exception is the result
        return Outcome([_normal(v) for v in out], error)
    return Outcome([_normal(v) for v in out])


def _normal(value):
    """A framework-free picture of a result: None, a list, or (dtype name, numpy array)."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_normal(v) for v in value]
    if type(value).__name__ == "IndexedSlices":
        # TensorFlow's gradient of a gather from a Variable is sparse; srcxform's is dense.
        # Both mean the same array, and tf.convert_to_tensor makes TensorFlow's dense.
        import tensorflow
        value = tensorflow.convert_to_tensor(value)
    if hasattr(value, "numpy"):
        array = np.array(value.numpy())
        return (np.dtype(array.dtype).name, array)
    return ("python " + type(value).__name__, np.array(value))


def _show(value):
    if value is None:
        return "None"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    dtype, array = value
    return f"{dtype}{list(array.shape)} {np.array2string(array, precision=6, threshold=40)}"


# ----- comparing -----

TOLERANCE = {"float32": (2e-4, 1e-5), "float64": (1e-9, 1e-12), "float16": (1e-2, 1e-3)}
# Second-order results sum products of first-order values rounded to float32, whose
# cancellation loses more digits (seed 9004, program 135: TensorFlow 0.734436, srcxform
# 0.734863, float64 0.73482).
SECOND_ORDER_TOLERANCE = dict(TOLERANCE, float32=(2e-3, 1e-4))


def differs(expected, actual, path="out", tolerance=TOLERANCE):
    """The first difference between two normal results, as (class, where), or None."""
    if expected is None or actual is None:
        if expected is None and actual is None:
            return None
        return ("none-vs-tensor", path)
    if isinstance(expected, list) or isinstance(actual, list):
        if not (isinstance(expected, list) and isinstance(actual, list)) \
                or len(expected) != len(actual):
            return ("structure", path)
        for i, (e, a) in enumerate(zip(expected, actual)):
            found = differs(e, a, f"{path}[{i}]", tolerance)
            if found:
                return found
        return None
    (edtype, e), (adtype, a) = expected, actual
    if edtype != adtype:
        return ("dtype", path)
    if e.shape != a.shape:
        return ("shape", path)
    if edtype in tolerance:
        rtol, atol = tolerance[edtype]
        ok = np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = np.array_equal(a, e)
    return None if ok else ("value", path)


# TensorFlow's exception class -> the Python classes that count as the same kind.
EXCEPTION_KINDS = {
    "InvalidArgumentError": (ValueError, TypeError, IndexError, ZeroDivisionError),
    "TypeError": (TypeError,),
    "ValueError": (ValueError, TypeError),
    "RuntimeError": (RuntimeError,),
}


def same_kind(tf_error, sx_error):
    kinds = EXCEPTION_KINDS.get(type(tf_error).__name__)
    if kinds is None:
        return type(tf_error).__name__ == type(sx_error).__name__
    return isinstance(sx_error, kinds)


@dataclass
class Allowance:
    """A documented difference: TensorFlow raises (its message matches `tf_message`) where
    srcxform raises `sx_error` (None: computes a result)."""
    name: str
    readme: str
    tf_message: str
    sx_error: type = None

    def allows(self, tf_outcome, sx_outcome):
        if tf_outcome.error is None or not re.search(self.tf_message, str(tf_outcome.error)):
            return False
        if self.sx_error is None:  # srcxform computes: it went past where TensorFlow stopped
            return sx_outcome.error is None or len(sx_outcome.out) > len(tf_outcome.out)
        return isinstance(sx_outcome.error, self.sx_error)


ALLOWANCES = [
    Allowance("mixed-float-promotion", "Mixed float dtypes promote as NumPy does",
              r"expected to be a (half|float|double) tensor but is a (half|float|double) "
              r"tensor|Cannot convert .* to EagerTensor of dtype (half|float|double)|"
              r"dtype (float16|float32|float64) .* requested dtype (float16|float32|float64)|"
              r"Tensor conversion requested dtype (float16|float32|float64) for Tensor with "
              r"dtype (float16|float32|float64)|"
              r"`x` and `y` must have the same dtype, got tf.(float16|float32|float64) != "
              r"tf.(float16|float32|float64)|"
              r"Cannot convert a list containing a tensor of dtype <dtype: '(float16|float32|"
              r"float64)'> to <dtype: '(float16|float32|float64)'>"),
    Allowance("int-tensor-with-python-float",
              "An integer tensor with a Python float gives float64",
              r"Cannot convert [-0-9.e]+ to EagerTensor of dtype int32"),
    Allowance("variable-assign-other-float",
              "A float tensor assigned to a Variable of another float dtype is converted",
              r"Tensor conversion requested dtype (float|double)"),
    Allowance("constant-packs-lists-of-tensors",
              "`tf.constant` of a nested list holding tensors packs it",
              r"Scalar tensor has no `len\(\)`|Can't convert Python sequence with mixed types"),
]


@dataclass
class KnownDifference:
    """A documented difference where TensorFlow computes a result: in a program that uses
    `op`, srcxform's second-order results differ from TensorFlow's (by `kind`)."""
    name: str
    readme: str
    op: str
    kind: str = "value"

    def allows(self, text, found, tf_outcome, sx_outcome):
        marker = _normal(SECOND_ORDER)
        index = int(re.match(r"out\[(\d+)\]", found[1]).group(1))
        after = any(differs(marker, v) is None for v in tf_outcome.out[:index])
        return self.op in text and found[0] == self.kind and after


@dataclass
class NanDifference:
    """A documented difference where TensorFlow computes a result: in a program that uses
    `op`, srcxform's values are NaN where TensorFlow's are numbers (and agree elsewhere)."""
    name: str
    readme: str
    op: str

    def allows(self, text, found, tf_outcome, sx_outcome):
        if self.op not in text or found[0] != "value":
            return False
        expected, actual = tf_outcome.out, sx_outcome.out
        for k in re.findall(r"\[(\d+)\]", found[1]):  # the path: out[6][1]
            expected, actual = expected[int(k)], actual[int(k)]
        e, a = expected[1], actual[1]
        rtol, atol = TOLERANCE.get(expected[0], (0, 0))
        return bool(np.all(np.isnan(a) | np.isclose(a, e, rtol=rtol, atol=atol))
                    and np.all(np.isnan(a) >= np.isnan(e)))


KNOWN_DIFFERENCES = [
    KnownDifference("reduce-prod-second-order-at-zero",
                    "TensorFlow's second derivative of `reduce_prod` at a zero",
                    "tf.reduce_prod("),
    NanDifference("softmax-of-a-row-with-a-nan", "`softmax` of a row with a NaN",
                  "tf.nn.softmax("),
]


def compare(tf_outcome, sx_outcome, text=""):
    """None if the outcomes agree (or differ only as documented), else (class, detail)."""
    n = min(len(tf_outcome.out), len(sx_outcome.out))
    marker, tolerance = _normal(SECOND_ORDER), TOLERANCE
    for i in range(n):
        if differs(marker, tf_outcome.out[i]) is None:
            tolerance = SECOND_ORDER_TOLERANCE
        found = differs(tf_outcome.out[i], sx_outcome.out[i], f"out[{i}]", tolerance)
        if found and any(k.allows(text, found, tf_outcome, sx_outcome)
                         for k in KNOWN_DIFFERENCES):
            continue
        if found:
            return found
    if any(allowance.allows(tf_outcome, sx_outcome) for allowance in ALLOWANCES):
        return None
    if len(tf_outcome.out) != len(sx_outcome.out):
        if tf_outcome.error is None:
            return ("srcxform-raises", f"after {len(sx_outcome.out)} outputs")
        if sx_outcome.error is None:
            return ("tensorflow-raises", f"after {len(tf_outcome.out)} outputs")
        return ("raise-at-different-points", "")
    if (tf_outcome.error is None) != (sx_outcome.error is None):
        return ("srcxform-raises" if tf_outcome.error is None else "tensorflow-raises", "")
    if tf_outcome.error is not None and not same_kind(tf_outcome.error, sx_outcome.error):
        kinds = f"{type(tf_outcome.error).__name__} vs {type(sx_outcome.error).__name__}"
        return ("exception-kind", kinds)
    return None


# ----- the campaign -----


@dataclass
class Mismatch:
    index: int
    text: str
    kind: str
    where: str
    tf_outcome: Outcome
    sx_outcome: Outcome

    def report(self):
        return (f"--- program {self.index}: {self.kind} {self.where}\n{self.text}"
                f"TensorFlow:\n{self.tf_outcome.describe()}\n"
                f"srcxform:\n{self.sx_outcome.describe()}\n")


def _tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow  # optional, and slow to import

    tensorflow.get_logger().setLevel("ERROR")  # jacobian's retracing warnings
    return tensorflow


def campaign(programs, seed, tf_module=None, sx_module=None):
    """Runs `programs` random programs; returns the mismatches."""
    tf_module = tf_module or _tensorflow()
    if sx_module is None:
        import srcxform as sx_module
    rng = np.random.default_rng(seed)
    mismatches = []
    for index in range(programs):
        text = generate(rng)
        tf_outcome = run(tf_module, np, text)
        sx_outcome = run(sx_module, np, text)
        found = compare(tf_outcome, sx_outcome, text)
        if found:
            mismatches.append(Mismatch(index, text, *found, tf_outcome, sx_outcome))
    return mismatches


# ----- recorded outcomes: TensorFlow's, replayed where it is not installed (CI) -----

RECORDED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tf_recorded.json")


def record(programs, seed, path=RECORDED, tf_module=None):
    """Writes `programs` random programs' texts and TensorFlow's outcomes for them."""
    tf_module = tf_module or _tensorflow()
    rng = np.random.default_rng(seed)
    entries = []
    for _ in range(programs):
        text = generate(rng)
        outcome = run(tf_module, np, text)
        error = outcome.error and [type(outcome.error).__name__, str(outcome.error)[:500]]
        entries.append({"text": text, "out": [_encoded(v) for v in outcome.out],
                        "error": error})
    with open(path, "w") as f:
        json.dump({"tensorflow": tf_module.__version__, "seed": seed, "programs": entries}, f,
                  separators=(",", ":"))


def replay(sx_module, path=RECORDED):
    """Runs the recorded programs under sx_module; returns the mismatches with
    TensorFlow's recorded outcomes."""
    with open(path) as f:
        entries = json.load(f)["programs"]
    mismatches = []
    for index, entry in enumerate(entries):
        error = entry["error"] and type(entry["error"][0], (Exception,), {})(entry["error"][1])
        tf_outcome = Outcome([_decoded(v) for v in entry["out"]], error)
        sx_outcome = run(sx_module, np, entry["text"])
        found = compare(tf_outcome, sx_outcome, entry["text"])
        if found:
            mismatches.append(Mismatch(index, entry["text"], *found, tf_outcome, sx_outcome))
    return mismatches


def _encoded(value):
    """A normal result (see _normal) as JSON: null, a list, or [dtype, shape, values]."""
    if value is None or isinstance(value, list):
        return value if value is None else [_encoded(v) for v in value]
    dtype, array = value
    # A float as its dtype's shortest text ('0.3' for float32's 0.3), exact and short.
    values = ([str(v) for v in array.ravel()] if array.dtype.kind == "f"
              else array.ravel().tolist())
    return {"dtype": dtype, "shape": list(array.shape), "values": values}


def _decoded(value):
    if value is None or isinstance(value, list):
        return value if value is None else [_decoded(v) for v in value]
    numeric = not value["dtype"].startswith("python")
    array = np.array(value["values"], dtype=value["dtype"] if numeric else None)
    return (value["dtype"], array.reshape(value["shape"]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=None,
                        help="print at most this many mismatches (default: all)")
    parser.add_argument("--record", metavar="PATH", nargs="?", const=RECORDED,
                        help=f"write TensorFlow's outcomes there instead (default: {RECORDED})")
    args = parser.parse_args(argv)
    if args.record:
        record(args.programs, args.seed, args.record)
        return 0
    mismatches = campaign(args.programs, args.seed)
    for m in mismatches[:args.show]:
        print(m.report())
    counts = {}
    for m in mismatches:
        counts[m.kind] = counts.get(m.kind, 0) + 1
    print(f"{args.programs} programs, {len(mismatches)} mismatches"
          + "".join(f"\n  {k}: {v}" for k, v in sorted(counts.items())))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
