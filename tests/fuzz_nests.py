"""A random-program fuzzer for loop nests: one value consumed by several loop nests of
different kinds, each program run at several sizes in sequence through ONE compiled
Differentiable, in every form (f(x), f.grad, f.value_and_grad), compiled and as Python.

Why (issue 26): the scheduler stores some values and recomputes others inside the nest
that reads them. A value both stored and recomputed, then read by a later nest (a
reduction after cumsum, sort, reduce_prod, a transpose or det; an elementwise chain; a
loop whose trip count is a reduction of it), was read stale: the last element of the
producer's loop. Each form has a kernel and a schedule of its own, and a trip count from
the data can be right at the first size by luck and wrong at the next, so every form
runs at three or more sizes, in order, through one Differentiable.

A program maps x, a vector of n or an n x n matrix (float64), to a scalar:

    def prog(x):
        v1 = x * x                        # cheap elementwise values over x ...
        v2 = tf.tanh(x)
        v3 = tf.sort(v1 * v2, axis=0)     # ... values after opaque ops or reductions ...
        k1 = tf.cast(tf.clip_by_value(tf.reduce_sum(v1), 0.0, 6.0), tf.int64)
        c1 = v2 * 0.5                     # ... loops of a trip count from a reduction
        for i in range(k1):               # (autograph's rewrite, or a tf.fori_loop)
            c1 = 0.5 * (c1 + tf.tanh(c1 * v1))
        return tf.reduce_max(v1) + tf.reduce_sum(tf.cumsum(v2) * v1) + tf.reduce_sum(c1)

Leaves favour one value (the hub), so it is read by a reduction in its own nest, by
opaque ops and by later elementwise nests. At each size, in order:
- NumPy runs the same text with a tf-like shim: the eager value must equal it, and the
  eager tape's gradient must equal central differences of it (or one side's, at a kink);
- each form of the compiled Differentiable, and of a second one whose every call runs
  with SRCXFORM_JIT=0 (the generated code as Python), must give eager's value and
  gradient.

The worker subprocess, the parent that restarts it after a crash, the comparisons and
the report are tests/fuzz.py's. A worker minimizes the first program of each kind of
mismatch it finds: the failing size alone or after one earlier size, then as few loss
terms (and the statements they read) as still show it.

The worker inherits the environment; run it as the suite does with SRCXFORM_CHECK=1
and SRCXFORM_TIERED=0. Numba's compiles cost seconds a program (three kernels or more);
`--paths interpreted` runs the generated code as Python alone, many times faster.
benchmarks/fuzz_nests.py runs thousands of programs over several processes.

    python -m tests.fuzz_nests --programs 200 [--seed N] [--paths compiled,interpreted]
                               [--minutes M] [--no-minimize] [--verbose]
"""

import argparse
import contextlib
import dataclasses
import linecache
import os
import sys
import time
import traceback
import types
import warnings
from pathlib import Path

import numpy as np

if __package__:  # python -m tests.fuzz_nests
    from tests import fuzz
else:  # imported from the tests' folder, as pytest imports the tests' helpers
    import fuzz

NOMINAL = 5  # the size programs are drawn at: every op drawn is valid at any size
REDUCTIONS = ["reduce_sum", "reduce_max", "reduce_min", "reduce_mean", "reduce_prod"]


def data(n, matrix):
    """x at size n: distinct values of both signs, no two of one magnitude, and a
    well-conditioned matrix (a sine of a linear phase would give one of rank 2)."""
    k = np.arange(n * n if matrix else n)
    x = 1.4 * np.sin(1.7 * k + 0.37 * k * k + 0.3)
    return x.reshape((n, n) if matrix else (n,))


# ----- the NumPy shim: the program text run on arrays -----


def _cumulative(fn, v, axis=0, exclusive=False, reverse=False, start=0.0):
    v = np.flip(v, axis) if reverse else v
    out = fn(v, axis=axis)
    if exclusive:
        first = np.full_like(np.take(v, [0], axis), start)
        out = np.concatenate([first, np.take(out, range(v.shape[axis] - 1), axis)], axis)
    return np.flip(out, axis) if reverse else out


def _fori_loop(lower, upper, body, init):
    for i in range(int(lower), int(upper)):
        init = body(np.int64(i), init)
    return init


class NumpyShim(fuzz.NumpyTF):
    """The tf functions programs call, on NumPy arrays."""

    @staticmethod
    def reduce_min(v, axis=None, keepdims=False):
        return np.min(v, axis=axis, keepdims=keepdims, initial=np.inf)

    @staticmethod
    def reduce_prod(v, axis=None, keepdims=False):
        return np.prod(v, axis=axis, keepdims=keepdims)

    @staticmethod
    def cumsum(v, axis=0, exclusive=False, reverse=False):
        return _cumulative(np.cumsum, v, axis, exclusive, reverse)

    @staticmethod
    def sort(v, axis=-1, direction="ASCENDING"):
        out = np.sort(v, axis=axis)
        return np.flip(out, axis) if direction == "DESCENDING" else out

    @staticmethod
    def cast(v, dtype):
        return np.asarray(v).astype(dtype)  # float to int truncates, as TF's does

    @staticmethod
    def sigmoid(v):
        return 1.0 / (1.0 + np.exp(-v))

    @staticmethod
    def clip_by_value(v, low, high):
        return np.clip(v, low, high)

    exp, maximum, minimum, where, matmul = np.exp, np.maximum, np.minimum, np.where, np.matmul
    int64, float64 = np.int64, np.float64
    fori_loop = staticmethod(_fori_loop)
    nn = types.SimpleNamespace(relu=lambda v: np.maximum(v, 0.0))
    math = types.SimpleNamespace(cumprod=lambda v, axis=0, exclusive=False, reverse=False:
                                 _cumulative(np.cumprod, v, axis, exclusive, reverse, 1.0))
    linalg = types.SimpleNamespace(det=np.linalg.det)


# ----- programs -----


@dataclasses.dataclass
class Statement:
    """Defines `name`: one line, or a for statement and its body (lines after the first
    indented relative to it)."""

    name: str
    text: str


@dataclasses.dataclass
class Program:
    """x is (n,), or (n, n) if matrix. The loss is the sum of the terms; sizes, the n of
    each call, in order."""

    matrix: bool
    statements: list
    terms: list
    sizes: list

    def source(self):
        lines = ["def prog(x):"]
        for statement in self.statements:
            lines += ["    " + line for line in statement.text.split("\n")]
        lines.append("    return " + " + ".join(self.terms))
        return "\n".join(lines) + "\n"

    def float_params(self):
        return (0,)

    def args(self, n):
        return [data(n, self.matrix)]

    def describe(self):
        shape = "(n, n)" if self.matrix else "(n,)"
        sizes = ", ".join(map(str, self.sizes))
        return (self.source() + f"x = tests.fuzz_nests.data(n, matrix={self.matrix}), "
                f"shape {shape}, at n = {sizes} in order")

    def with_terms(self, terms):
        """The program with these loss terms, and only the statements they read."""
        needed, kept = set(), []
        for statement in reversed(self.statements):
            if statement.name in needed or any(fuzz._reads(t, statement.name) for t in terms):
                kept.insert(0, statement)
                needed |= {s.name for s in self.statements if fuzz._reads(statement.text, s.name)}
        return dataclasses.replace(self, statements=kept, terms=list(terms))

    def with_sizes(self, sizes):
        return dataclasses.replace(self, sizes=list(sizes))


def numpy_function(program):
    """The program's text as a function on NumPy arrays (through the shim)."""
    namespace = {"tf": NumpyShim, "np": np}
    exec(program.source(), namespace)  # noqa: S102 -- our text
    return namespace["prog"]


# ----- generating -----


def _operand(text):
    """text as an operand of an infix operator: in parentheses if it has one of its own."""
    depth = 0
    for char in text:
        depth += (char in "([") - (char in ")]")
        if depth == 0 and char == " ":  # the templates space only infix operators
            return f"({text})"
    return text


# Templates: {a} an operand as is, {A} one in parentheses where it needs them.
CHEAP = ["{A} * {A}", "tf.nn.relu({a})", "tf.clip_by_value({a}, -0.6, 0.9)",
         "tf.maximum({a}, 0.2)", "tf.minimum({a}, -0.1)", "tf.where({A} > 0.1, {a}, 0.5 * {A})"]
TRANSCENDENTAL = ["tf.tanh({a})", "tf.exp(-{A} * {A})", "tf.sigmoid({a})", "tf.sin({a})"]
UNARY = CHEAP + TRANSCENDENTAL
BINARY = ["{A} * {B}", "{A} + {B}", "{A} - 0.5 * {B}", "tf.maximum({a}, {b})",
          "tf.minimum({a}, {b})", "tf.where({A} > {B}, {a}, 0.5 * {B})"]
# Opaque ops that keep the shape, by the operand's rank they need; square: both dims n.
OPAQUE = [(1, "tf.cumsum({a})"), (2, "tf.cumsum({a}, axis=1)"),
          (1, "tf.cumsum({a}, reverse=True)"), (1, "tf.cumsum({a}, exclusive=True)"),
          (1, "tf.math.cumprod(0.5 + tf.sigmoid({a}))"), (1, "tf.sort({a})"),
          (2, "tf.sort({a}, axis=0)"), (1, "tf.sort({a}, direction='DESCENDING')"),
          (2, "tf.transpose({a})"), ("square", "tf.matmul({a}, {b})")]
# Elementwise ops on a scalar (a det's among them: its 0-d result in an elementwise nest).
SCALAR_UNARY = ["tf.tanh({a})", "tf.nn.relu({a})", "tf.maximum({a}, 0.1)",
                "tf.minimum({a}, 1.5)", "tf.clip_by_value({a}, -1.0, 1.0)",
                "tf.where({A} > 0.0, {a}, 0.5 * {A})", "{A} * {A}"]


class Generator:
    """Draws one program from a seeded generator, evaluating each statement on NumPy at
    the nominal size to know its shape. Programs are small: a kernel's compile time grows
    with its length, and the class of bug this hunts shows in a few lines."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def pick(self, options):
        return options[self.rng.integers(len(options))]

    def chance(self, p):
        return self.rng.random() < p

    def program(self):
        matrix = self.chance(0.5)
        self.env = {"tf": NumpyShim, "np": np, "x": data(NOMINAL, matrix)}
        self.names, self.hub, self.elementwise_values = ["x"], "x", []
        program = Program(matrix, [], [], [])
        # The elementwise values: mostly a cheap one of x (which the scheduler may store
        # and recompute both) and a transcendental one of x (a loop of its own may run
        # the reductions beside one), then any.
        for template in [CHEAP, TRANSCENDENTAL, None][:self.pick([1, 2, 2, 3])]:
            first = template is not None and self.chance(0.7)
            self._define(program, "v", self._fill(self.pick(template), "x") if first
                         else self.elementwise(self.pick([1, 2])))
        self.elementwise_values = self.names[:]
        self.hub = self.names[1] if self.chance(0.5) else self.pick(self.names[1:])
        for _ in range(self.pick([0, 1, 1, 2])):  # values after opaque ops
            self._define(program, "v", self.array(2) if self.chance(0.7) else self.scalar(2))
        for _ in range(self.pick([0, 0, 1, 1, 1, 2])):
            self._add_loop(program)
        program.terms = [self.scalar(self.pick([1, 2, 2, 3]))
                         for _ in range(self.pick([1, 2, 2, 3]))]
        if self.chance(0.8):
            program.terms += self._hub_terms()
            self.rng.shuffle(program.terms)
        program.terms += [f"tf.reduce_sum({s.name})" for s in program.statements
                          if s.name in self.names and not _read_after(program, s)]
        program.sizes = self._sizes()
        return program

    def _define(self, program, prefix, expr):
        """A statement `name = expr`, its name made of the prefix; returns the name."""
        name = f"{prefix}{len(program.statements) + 1}"
        self._add(program, Statement(name, f"{name} = {expr}"), operand=prefix != "k")
        return name

    def _add(self, program, statement, operand=True):
        """Appends the statement, its value an operand of later ones unless not `operand`
        (a trip count, an int)."""
        exec(statement.text, self.env)  # noqa: S102 -- our text
        program.statements.append(statement)
        if operand:
            self.names.append(statement.name)

    def shape(self, text):
        with np.errstate(all="ignore"):
            return np.shape(eval(text, self.env))

    # ----- expressions -----
    def leaf(self, ndim=None):
        """A value, the hub half the time; of at least `ndim` dims if given."""
        names = [v for v in self.names if ndim is None or len(self.shape(v)) >= ndim]
        return self.hub if self.hub in names and self.chance(0.5) else self.pick(names)

    def _fill(self, template, a, b=None):
        return template.format(a=a, A=_operand(a), b=b, B=_operand(b or ""))

    def elementwise(self, depth):
        """A chain of elementwise ops over the values."""
        if depth == 0:
            return self.leaf(1)
        a, b = self.elementwise(depth - 1), self.elementwise(int(self.rng.integers(depth)))
        if a == b or self.chance(0.5):  # (an op of a value with itself is a unary one)
            return self._fill(self.pick(UNARY), a)
        return self._fill(self.pick(BINARY), a, b)

    def array(self, depth):
        """An array: a value, or an elementwise, opaque or axis-reducing op on arrays."""
        if depth == 0 or self.chance(0.2):
            return self.leaf(1)
        a = self.array(depth - 1)
        kind = self.pick(["unary", "binary", "binary", "opaque", "opaque", "axis"])
        ndim = len(self.shape(a))
        if kind == "unary":
            return self._fill(self.pick(UNARY), a)
        if kind == "binary":
            b = self.scalar(depth - 1) if self.chance(0.25) else self.array(depth - 1)
            return self._fill(self.pick(BINARY if b != a else UNARY), a, b)
        if kind == "axis" and ndim == 2:
            keep = ", keepdims=True" if self.chance(0.3) else ""
            return self._reduction(a, f", axis={self.pick([0, 1, -1])}{keep}")
        return self._opaque(a)

    def _opaque(self, a):
        """An opaque op of a that keeps its shape (an elementwise one of a scalar)."""
        shape = self.shape(a)
        fits = [t for need, t in OPAQUE if (shape == (NOMINAL, NOMINAL) if need == "square"
                                            else len(shape) >= need)]
        if not fits:
            return self._fill(self.pick(UNARY), a)
        square = [v for v in self.names if self.shape(v) == (NOMINAL, NOMINAL)]
        return self._fill(self.pick(fits), a, self.pick(square) if square else None)

    def _hub_terms(self):
        """The hub read by a reduction of its own, by an opaque op (or an elementwise op
        of one), and by an elementwise nest after it."""
        other = self.leaf(1)
        read_by_opaque = self.pick([self._opaque(self.hub),
                                    self._fill(self.pick(BINARY), self._opaque(other), self.hub)])
        later = self._fill(self.pick(BINARY), self._fill(self.pick(UNARY), self.hub), other)
        return [self._reduction(self.hub), self._reduction(read_by_opaque),
                self._reduction(later)]

    def _reduction(self, a, params=""):
        """A reduction of a. A product runs over values near 1, unless of a few small
        ones (a vector of the elementwise values), so it neither underflows nor swamps the
        loss (whose central differences lose digits as it grows)."""
        name = self.pick(REDUCTIONS)
        if name == "reduce_prod" and not (a in self.elementwise_values
                                          and len(self.shape(a)) == 1):
            a = f"0.9 + 0.2 * tf.sigmoid({a})"
        return f"tf.{name}({a}{params})"

    def scalar(self, depth):
        """A scalar: a reduction of an array, a det, or an elementwise op on a scalar."""
        kind = self.pick(["reduce", "reduce", "reduce", "det", "unary"])
        a = self.array(max(depth - 1, 0))
        if kind == "det" and self.shape(a) == (NOMINAL, NOMINAL):
            # Of x moved a bounded step: no matrix with a row of zeros (a relu's), where
            # eager's gradient, through the inverse, raises as TensorFlow's does.
            return f"tf.linalg.det(x + 0.5 * tf.tanh({a}))"
        if kind == "unary" and depth > 1:
            return self._fill(self.pick(SCALAR_UNARY), self.scalar(depth - 1))
        return self._reduction(a)

    # ----- loops with a trip count from the data -----
    def _add_loop(self, program):
        """k = an int from a reduction; c = a carry, updated k times by a body that reads
        the values: a tf.fori_loop, or a for over range(k) that autograph rewrites."""
        count = f"{self._reduction(self.array(1))} * {self.pick(['1.0', '2.0', '0.5'])}"
        trips = self._define(program, "k", f"tf.cast(tf.clip_by_value({count}, 0.0, 6.0), "
                                           "tf.int64)")
        init = self.pick([f"0.5 * {_operand(self.leaf(1))}", self.scalar(1), self.leaf()])
        carry_shape = self.shape(init)
        fits = [v for v in self.names
                if fuzz._broadcasts(self.shape(v), carry_shape)
                and np.broadcast_shapes(self.shape(v), carry_shape) == carry_shape]
        read = self.pick(fits) if fits and self.chance(0.7) else self._reduction(self.leaf())
        index = " + 0.05 * tf.cast(i, tf.float64)" if self.chance(0.3) else ""

        def body(c):
            return f"0.5 * ({c} + tf.tanh({c} * {_operand(read)})){index}"

        if self.chance(0.5):
            self._define(program, "c", f"tf.fori_loop(0, {trips}, lambda i, c: {body('c')}, "
                                       f"{init})")
            return
        name = f"c{len(program.statements) + 1}"
        self._add(program, Statement(name, f"{name} = {init}\nfor i in range({trips}):\n"
                                           f"    {name} = {body(name)}"))

    def _sizes(self):
        """Three or four sizes, in a random order; rarely 1 (a kernel of its own)."""
        sizes = [int(n) for n in self.rng.choice(np.arange(2, 8), int(self.rng.integers(3, 5)),
                                                 replace=False)]
        if self.chance(0.1):
            sizes.insert(int(self.rng.integers(len(sizes) + 1)), 1)
        return sizes


def _read_after(program, statement):
    """Whether a later statement or a loss term reads what the statement defines."""
    later = program.statements[program.statements.index(statement) + 1:]
    return any(fuzz._reads(text, statement.name)
               for text in [s.text for s in later] + program.terms)


def program_for(seed, k):
    return Generator([seed, k]).program()


# ----- running one program -----


def _numeric(fn, x, signs=(1.0, -1.0)):
    """Differences of fn wrt x: central by default; with signs (1.0, 0.0) forward and
    (0.0, -1.0) backward ones."""
    grad = np.zeros(x.shape)
    for k in range(x.size):
        moved = []
        for sign in signs:
            shifted = x.copy()
            shifted.flat[k] += sign * fuzz.FD_EPS
            moved.append(float(fn(shifted)))
        grad.flat[k] = (moved[0] - moved[1]) / ((signs[0] - signs[1]) * fuzz.FD_EPS)
    return grad


def check_reference(program, args, eager):
    """Checks eager against NumPy (the value) and central differences (the gradient):
    at a kink, against either side's differences."""
    reference = numpy_function(program)
    with np.errstate(all="ignore"):
        expected = float(reference(*args))
    if eager.error is not None:
        return f"eager raised {type(eager.error).__name__} where NumPy gave a value"
    if not fuzz._close(eager.value, expected, fuzz.VALUE_TOL):
        return "eager value != NumPy"
    if not np.isfinite(expected):
        return None
    with np.errstate(all="ignore"):
        if fuzz._close(eager.grads[0], _numeric(reference, args[0]), fuzz.FD_TOL):
            return None
        sides = [_numeric(reference, args[0], signs) for signs in ((1.0, 0.0), (0.0, -1.0))]
    at_a_kink = np.isclose(eager.grads[0], sides[0], **fuzz.KINK_TOL) | \
        np.isclose(eager.grads[0], sides[1], **fuzz.KINK_TOL)
    return None if at_a_kink.all() else "eager gradient != central differences"


def _function(program, filename):
    """The program as a function, its text in linecache: autograph reads the source."""
    text = program.source()
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    return fuzz._function(program, filename)


def _value_and_grad(f, x):
    value, grad = f.value_and_grad(x)
    return float(value), [np.asarray(grad, np.float64)]


FORMS = {  # each form has a kernel of its own: (value, gradients), None for what it lacks
    "f(x)": lambda f, x: (float(f(x)), None),
    "f.grad": lambda f, x: (None, [np.asarray(f.grad(x), np.float64)]),
    "f.value_and_grad": _value_and_grad,
}
PATHS = ("compiled", "interpreted")
PATHS_VARIABLE = "SRCXFORM_FUZZ_NESTS_PATHS"  # how the parent tells its workers the paths


def run_program(program, tag, paths=PATHS):
    """Runs the program's sizes in order through one compiled and one interpreted
    Differentiable (or those of `paths`), every form at each size. The mismatches: dicts
    of the size's index, the kind and the outcomes."""
    import srcxform as tf
    eager_fn = _function(program, f"<nests {tag} eager>")
    functions = {path: tf.differentiable(_function(program, f"<nests {tag} {path}>"),
                                         wait=True) for path in paths}
    found = []
    for k, n in enumerate(program.sizes):
        args = program.args(n)
        eager = fuzz._attempt(fuzz._eager, eager_fn, program, args)
        mismatches = [("eager", check_reference(program, args, eager), eager)]
        for path in paths:
            with fuzz.jit_off() if path == "interpreted" else contextlib.nullcontext():
                for form, call in FORMS.items():
                    outcome = fuzz._attempt(call, functions[path], args[0])
                    where = f"{path} {form}"
                    mismatches.append((where, fuzz.compare(where, outcome, eager), outcome))
        found += [{"call": k, "kind": kind, "eager": str(eager), "got": str(outcome)}
                  for _, kind, outcome in mismatches if kind]
    return found


# ----- minimizing -----


def minimize(program, mismatch, tag, paths=PATHS):
    """A smaller program showing the same kind of mismatch: the failing size alone or
    after one earlier size, then without each loss term that it does not need."""
    kind, failing = mismatch["kind"], program.sizes[mismatch["call"]]
    trial = 0

    def shows(candidate):
        nonlocal trial
        trial += 1
        found = run_program(candidate, f"{tag} min{trial}", paths)
        return any(m["kind"] == kind for m in found)

    trials = [[failing]] + [[n, failing] for n in program.sizes[:mismatch["call"]]]
    best = next((program.with_sizes(s) for s in trials if shows(program.with_sizes(s))),
                program)
    for k in reversed(range(len(best.terms))):
        smaller = best.with_terms(best.terms[:k] + best.terms[k + 1:])
        if smaller.terms and shows(smaller):
            best = smaller
    return best


# ----- the worker: programs in sequence, one JSON line each (tests/fuzz.py's records) ----


def worker(seed, first, count, deadline, minimizing):
    """Runs programs first, first + 1, ... of the seed through the paths PATHS_VARIABLE
    names (all by default), printing tests/fuzz.py's records."""
    import faulthandler

    import srcxform
    assert Path(srcxform.__file__).resolve().is_relative_to(fuzz.ROOT), srcxform.__file__
    faulthandler.enable()
    warnings.simplefilter("ignore", RuntimeWarning)
    paths = tuple(os.environ.get(PATHS_VARIABLE, ",".join(PATHS)).split(","))
    minimized = set()  # the kinds of mismatch minimized already: the first program's
    for k in range(first, first + count):
        if time.time() >= deadline:
            break
        program = program_for(seed, k)
        fuzz._emit({"begin": k, "program": program.describe()})
        try:
            found = run_program(program, f"{seed}:{k}", paths)
        except Exception:  # noqa: BLE001 -- a bug of the fuzzer's own: report, go on
            found = [{"call": None, "kind": "fuzzer error", "eager": "",
                      "got": traceback.format_exc()}]
        for mismatch in found:
            fuzz._emit({"mismatch": k, **mismatch})
        first_found = found[0] if found else None
        if minimizing and first_found and first_found["call"] is not None \
                and first_found["kind"] not in minimized:
            minimized.add(first_found["kind"])
            small = minimize(program, first_found, f"{seed}:{k}", paths)
            fuzz._emit({"minimized": k, "program": small.describe()})
        fuzz._emit({"done": k})


def run(seed=0, count=None, minutes=None, minimizing=True, log=None, paths=PATHS):
    """Runs programs seed:0, seed:1, ... in worker subprocesses, through `paths` (the
    workers hear them from the environment): tests/fuzz.py's Report."""
    unknown = set(paths) - set(PATHS)
    if unknown:
        raise ValueError(f"unknown paths {sorted(unknown)}: the paths are {PATHS}")
    old = os.environ.get(PATHS_VARIABLE)
    os.environ[PATHS_VARIABLE] = ",".join(paths)
    try:
        return fuzz.run(seed, minutes, count, minimizing, log, module="tests.fuzz_nests")
    finally:
        if old is None:
            del os.environ[PATHS_VARIABLE]
        else:
            os.environ[PATHS_VARIABLE] = old


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz_nests", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--programs", type=int, default=100, help="how many programs to run")
    parser.add_argument("--minutes", type=float, default=None, help="stop after this long")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-minimize", dest="minimizing", action="store_false")
    parser.add_argument("--paths", default=",".join(PATHS),
                        help="the paths to run, of compiled,interpreted (interpreted alone: "
                             "no Numba compile, many more programs an hour)")
    parser.add_argument("--verbose", action="store_true", help="a line per program")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.worker:
        worker(options.seed, options.first, options.count, options.deadline, options.minimizing)
        return
    log = (lambda line: print(line, file=sys.stderr, flush=True)) if options.verbose else None
    report = run(options.seed, options.programs, options.minutes, options.minimizing, log,
                 tuple(options.paths.split(",")))
    print(report.text())
    failed = len(report.mismatches)
    print(f"{report.programs - failed} passed, {failed} failed")


if __name__ == "__main__":
    main()
