"""A random-program fuzzer for indexing: each program runs at several sizes, in sequence,
through ONE compiled Differentiable, and must give the eager tape's answer at every size.

Why: a Differentiable keeps one kernel per signature (ndim, dtype, which dims are 1), so a
kernel traced at one size runs at others. Whatever the trace decided from a size (a
negative index, a slice's bounds, a length-1 broadcast, a gather's bound) must be
symbolic in the kernel or guarded (SPEC.md). Testing one size per trace hides exactly
those bugs.

A program maps one or two float64 arrays (and maybe an integer index array) to a scalar
loss through indexing (ints, slices with any start/stop/step, reversals, chains, None,
Ellipsis, integer arrays; a list index is a tuple of indices, as in TF), tf.gather,
broadcasting elementwise ops, reductions, concat and transpose. At each size, in the
order of the sequence:
- NumPy runs the same program text with a tf-like shim: the eager value must equal it
  (the reference is checked before it is trusted);
- the eager tape's gradient must equal central differences of the NumPy program;
- the compiled value_and_grad (Numba), and the same generated code run as Python, must
  equal the eager value and gradient, or raise an exception of the type eager raised.

SRCXFORM_JIT is read by backend.load whenever a kernel is loaded, not at import: the
interpreted path is a second Differentiable whose every call runs with SRCXFORM_JIT=0 (any
call may trace and load a new kernel). Each path gets a function of its own code filename,
so neither finds the other's kernel in the on-disk index: both trace for themselves.

Programs run in a worker subprocess: a kernel that reads or writes out of bounds can kill
the process; the parent reports that program as a crash and goes on with the next.

The worker inherits the environment: under pytest, conftest's SRCXFORM_CHECK=1 (IR
verified, each new kernel's first call checked against eager); from the command line,
set it to run as the suite does.

    python -m tests.fuzz --minutes 10 [--seed N] [--no-minimize]
"""

import argparse
import contextlib
import dataclasses
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
VALUE_TOL = {"rtol": 1e-9, "atol": 1e-11}  # the paths against each other
FD_TOL = {"rtol": 1e-5, "atol": 1e-6}  # eager against central differences
KINK_TOL = {"rtol": 1e-4, "atol": 1e-4}  # against one-sided ones, at a kink
FD_EPS = 1e-6
PROGRAM_TIMEOUT_S = 300  # a worker silent this long on one program is killed


# ----- the NumPy shim: the program text run on arrays -----


class NumpyTF:
    """The few tf functions programs call, on NumPy arrays, with TF's semantics where they
    differ from NumPy's (the max of nothing is -inf)."""

    @staticmethod
    def reduce_sum(v, axis=None, keepdims=False):
        return np.sum(v, axis=axis, keepdims=keepdims)

    @staticmethod
    def reduce_mean(v, axis=None, keepdims=False):
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.mean(v, axis=axis, keepdims=keepdims)

    @staticmethod
    def reduce_max(v, axis=None, keepdims=False):
        return np.max(v, axis=axis, keepdims=keepdims, initial=-np.inf)

    @staticmethod
    def gather(v, indices, axis=0):
        # np.take skips the bounds check when the result is empty; TF checks every index.
        indices = np.asarray(indices)
        size = np.shape(v)[axis]
        if indices.size and not (-size <= indices.min() and indices.max() < size):
            raise IndexError(f"gather index out of range for size {size}")
        return np.take(v, indices, axis=axis)

    @staticmethod
    def concat(values, axis):
        return np.concatenate(values, axis=axis)

    sin, tanh, square, transpose = np.sin, np.tanh, np.square, np.transpose


# ----- programs -----


@dataclasses.dataclass
class Call:
    """One call's sizes: x has (n,), a has (m, n), idx (if any) these values."""

    m: int
    n: int
    idx: tuple | None = None

    def shape(self, param):
        return (self.n,) if param in ("x", "y") else (self.m, self.n)


@dataclasses.dataclass
class Program:
    """params: argument names: x (a vector of n), a (a matrix of m x n), y and b (second
    ones of the same shapes), idx (an int vector). steps: (name, expression) in order.
    terms: (name, template) summed into the loss, the first with weight 1, the rest 0.5.
    calls: the sizes, in order."""

    params: tuple
    steps: list
    terms: list
    calls: list

    def source(self):
        lines = [f"def prog({', '.join(self.params)}):"]
        lines += [f"    {name} = {expr}" for name, expr in self.steps]
        loss = [template.format(name) for name, template in self.terms]
        lines.append("    return " + " + ".join([loss[0]] + [f"0.5 * {t}" for t in loss[1:]]))
        return "\n".join(lines) + "\n"

    def float_params(self):
        return tuple(i for i, p in enumerate(self.params) if p != "idx")

    def args(self, call):
        """The arguments at `call`: deterministic data of the shape, distinct values."""
        out = []
        for p in self.params:
            if p == "idx":
                out.append(np.array(call.idx, dtype=np.int64))
                continue
            shape, phase = call.shape(p), 0.3 if p in ("x", "a") else 1.2
            count = int(np.prod(shape))
            out.append(1.4 * np.sin(1.7 * np.arange(count) + phase).reshape(shape))
        return out

    def describe(self):
        def call(c):
            return ", ".join(f"idx={list(c.idx)}" if p == "idx" else f"{p}: {c.shape(p)}"
                             for p in self.params)
        return self.source() + "calls, in order: " + "; ".join(call(c) for c in self.calls)

    def only_term(self, k):
        """The program with the one loss term k, and only the steps and params it reads."""
        name, template = self.terms[k]
        needed, steps = {name}, []
        for step_name, expr in reversed(self.steps):
            if step_name in needed:
                steps.insert(0, (step_name, expr))
                needed |= {v for v in self.params + tuple(s for s, _ in self.steps)
                           if _reads(expr, v)}
        params = tuple(p for p in self.params if p in needed)
        return dataclasses.replace(self, params=params, steps=steps, terms=[(name, template)])

    def with_calls(self, calls):
        return dataclasses.replace(self, calls=list(calls))


def _reads(expr, name):
    """Whether the expression text reads the variable `name` (v1 is not read by v10)."""
    return re.search(rf"\b{name}\b", expr) is not None


def numpy_steps(program, args, upto=None):
    """Runs the steps on NumPy arrays (through the shim); the environment of names."""
    env = dict(zip(program.params, args), tf=NumpyTF, np=np)
    for name, expr in program.steps[:upto]:
        env[name] = eval(expr, env)
    return env


def numpy_loss(program, args):
    env = numpy_steps(program, args)
    loss = [eval(template.format(name), env) for name, template in program.terms]
    return float(loss[0] + sum(0.5 * t for t in loss[1:]))


# ----- generating -----


class Generator:
    """Draws one program from a seeded generator. Steps are drawn at a nominal size and
    kept only if NumPy runs them there (so the program is valid at one size at least);
    the other sizes of the sequence are drawn freely and may make it invalid."""

    MAX_STEPS = 6

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def pick(self, options, p=None):
        return options[self.rng.choice(len(options), p=p)]

    def chance(self, p):
        return self.rng.random() < p

    def program(self):
        matrix = self.chance(0.4)
        params = ["a" if matrix else "x"]
        if self.chance(0.35):
            params.append("b" if matrix else "y")
        uses_idx = self.chance(0.3)
        if uses_idx:
            params.append("idx")
        nominal = Call(int(self.rng.integers(2, 5)), int(self.rng.integers(3, 8)))
        if uses_idx:
            nominal.idx = (0,)  # replaced once the gather that reads it is drawn
        program = Program(tuple(params), [], [], [nominal])
        env = numpy_steps(program, program.args(nominal))
        n_steps = int(self.rng.integers(2, self.MAX_STEPS + 1))
        idx_step = int(self.rng.integers(n_steps)) if uses_idx else None
        for k in range(n_steps):
            add = self._add_idx_gather if k == idx_step else self._add_step
            add(program, env, f"v{k + 1}")
        self._add_terms(program, env)
        program.calls = self._calls(program)
        return program

    # ----- steps -----
    def _add_step(self, program, env, name):
        for _ in range(50):
            kind = self.pick(["index", "index", "index", "gather", "binary", "binary",
                              "unary", "reduce", "join"])
            operand = self._operand(program, env)
            expr = getattr(self, "_" + kind)(operand, env)
            if expr is not None and self._keep(name, expr, env):
                program.steps.append((name, expr))
                return

    def _keep(self, name, expr, env):
        try:
            value = eval(expr, env)
        except (IndexError, ValueError, TypeError):
            return False
        value = np.asarray(value)
        if value.ndim > 2 or value.dtype.kind != "f":
            return False
        env[name] = value
        return True

    def _operand(self, program, env):
        """A float value, the newest half the time (deeper chains)."""
        names = [p for p in program.params if p != "idx"] + [s for s, _ in program.steps]
        return names[-1] if self.chance(0.5) else self.pick(names)

    def _index(self, operand, env):
        text, value = operand, env[operand]
        for _ in range(self.pick([1, 1, 2, 3], p=[0.4, 0.2, 0.3, 0.1])):
            if np.ndim(value) == 0:
                break
            text += self._subscript(np.shape(value))
            try:
                value = eval(text, env)
            except (IndexError, ValueError, TypeError):
                return None
        return text if text != operand else None

    def _subscript(self, shape):
        if len(shape) == 1:
            n = shape[0]
            forms = ["int", "slice", "slice", "slice", "None", "ellipsis", "list"]
            form = self.pick(forms)
            if form == "int" and n:
                return f"[{self._int(n)}]"
            if form == "None":
                return self.pick(["[None]", "[:, None]", "[..., None]",
                                  f"[None, {self._slice(n)}]"])
            if form == "ellipsis" and n:
                return f"[..., {self._int(n)}]"
            if form == "list" and n:
                return f"[np.array({self._index_list(n)})]"
            return f"[{self._slice(n)}]"
        m, n = shape
        form = self.pick(["row", "col", "both", "ellipsis", "list"])
        if form == "row":
            return f"[{self._int(m) if m and self.chance(0.4) else self._slice(m)}]"
        if form == "col" and n:
            return f"[:, {self._int(n)}]"
        if form == "ellipsis" and n:
            return f"[..., {self._int(n) if self.chance(0.6) else self._slice(n)}]"
        if form == "list" and m and n:
            return self.pick([f"[np.array({self._index_list(m)})]",
                              f"[:, np.array({self._index_list(n)})]"])
        first = self._int(m) if m and self.chance(0.25) else self._slice(m)
        return f"[{first}, {self._slice(n)}]"

    def _int(self, n):
        """An index in range at n: negative half the time."""
        k = int(self.rng.integers(n))
        return str(k - n if self.chance(0.5) else k)

    def _index_list(self, n):
        """Integer indices in range at n, with repeats (sometimes negative)."""
        count = int(self.rng.integers(1, 5))
        values = [int(v) for v in self.rng.integers(0, n, count)]
        if self.chance(0.3):
            values.append(values[0])
        if self.chance(0.15):
            values[-1] -= n
        return str(values)

    def _slice(self, n):
        curated = ["1:", ":-1", "-1:", "::-1", "::-2", "1::2", "::2", "-2:", ":1", "1:-1",
                   "-1::-1", ":-1:2"]
        if self.chance(0.5):
            return self.pick(curated)

        def bound():
            return None if self.chance(0.3) else int(self.rng.integers(-n, n + 1))

        start, stop = bound(), bound()
        if self.chance(0.15) and start is not None:  # a slice of one (or none past the end)
            stop = start + 1 if start != -1 else None
        step = self.pick([None, None, 1, 2, 3, -1, -2, -3])
        text = lambda v: "" if v is None else str(v)
        return f"{text(start)}:{text(stop)}" + ("" if step is None else f":{step}")

    def _gather(self, operand, env):
        shape = np.shape(env[operand])
        if not shape or not shape[0]:
            return None
        if len(shape) == 2 and shape[1] and self.chance(0.4):
            return f"tf.gather({operand}, {self._index_list(shape[1])}, axis=1)"
        return f"tf.gather({operand}, {self._index_list(shape[0])})"

    def _add_idx_gather(self, program, env, name):
        """A gather by the idx argument, of a value with rows; idx in range at the nominal
        size."""
        names = [p for p in program.params if p != "idx"] + [s for s, _ in program.steps]
        rows = [v for v in names if np.ndim(env[v]) >= 1 and np.shape(env[v])[0]]
        operand = rows[-1] if self.chance(0.5) else self.pick(rows)
        program.steps.append((name, f"tf.gather({operand}, idx)"))
        program.calls[0].idx = self._idx_values(np.shape(env[operand])[0])
        env.update(numpy_steps(program, program.args(program.calls[0])))

    def _idx_values(self, rows, allow_bad=False):
        """Indices in range at `rows` (repeats, some negative, sometimes none); with
        allow_bad, sometimes one out of range (always where there are no rows)."""
        count = int(self.rng.integers(0 if self.chance(0.1) else 1, 5))
        values = [int(v) for v in self.rng.integers(0, max(rows, 1), count)]
        if self.chance(0.3) and values:
            values.append(values[-1])
        if self.chance(0.15) and values:
            values[0] -= rows
        if allow_bad and (self.chance(0.15) or rows == 0):
            values.append(int(self.pick([rows, rows + 3, -rows - 1, 10**6])))
        return tuple(values)

    def _binary(self, operand, env):
        """operand op another value it broadcasts with, a length-1 one preferred."""
        shape = np.shape(env[operand])
        fits = [v for v in env if isinstance(env[v], np.ndarray) and env[v].dtype.kind == "f"
                and _broadcasts(shape, np.shape(env[v]))]
        ones = [v for v in fits if _one_against_many(shape, np.shape(env[v]))]
        other = self.pick(ones) if ones and self.chance(0.6) else self.pick(fits)
        op = self.pick(["+", "-", "*"])
        if self.chance(0.15):
            return f"{operand} {op} {self.pick(['2.0', '0.5'])}"
        return f"{operand} {op} {other}"

    def _join(self, operand, env):
        """A concat with a value of the same rank and other dims, or a transpose."""
        shape = np.shape(env[operand])
        if len(shape) == 2 and self.chance(0.3):
            return f"tf.transpose({operand})"
        if not shape:
            return None
        axis = int(self.rng.integers(len(shape)))
        rest = shape[:axis] + shape[axis + 1:]
        fits = [v for v in env if isinstance(env[v], np.ndarray) and env[v].dtype.kind == "f"
                and np.ndim(env[v]) == len(shape)
                and np.shape(env[v])[:axis] + np.shape(env[v])[axis + 1:] == rest]
        return f"tf.concat([{operand}, {self.pick(fits)}], axis={axis})"

    def _unary(self, operand, env):
        return self.pick(["tf.sin({})", "tf.tanh({})", "{} ** 2", "tf.square({})"]) \
            .format(operand)

    def _reduce(self, operand, env):
        ndim = np.ndim(env[operand])
        fn = self.pick(["tf.reduce_sum", "tf.reduce_max", "tf.reduce_mean"])
        if ndim == 0 or self.chance(0.4):
            return f"{fn}({operand})"
        axis = int(self.rng.integers(-ndim, ndim))
        keep = ", keepdims=True" if self.chance(0.4) else ""
        return f"{fn}({operand}, axis={axis}{keep})"

    # ----- the loss and the sizes -----
    def _add_terms(self, program, env):
        read = {s for s, _ in program.steps if any(_reads(e, s) for _, e in program.steps)}
        unread = [s for s, _ in program.steps if s not in read] or [program.params[0]]
        for name in reversed(unread):
            template = self.pick(["tf.reduce_sum({})", "tf.reduce_sum({} ** 2)",
                                  "tf.reduce_sum(tf.sin({}))"])
            program.terms.append((name, template))

    def _calls(self, program):
        """The nominal call and 2-3 more: other sizes, some of 1 or 0; the nominal first
        most of the time (the kernel is traced at a valid size, then reused)."""
        calls = [program.calls[0]]
        for _ in range(int(self.rng.integers(2, 4))):
            m = int(self.pick([1, 2, 3, 4, 5, 6], p=[0.1, 0.25, 0.25, 0.2, 0.1, 0.1]))
            n = int(self.pick([0, 1, 2, 3, 4, 5, 6, 7, 9, 13],
                              p=[0.04, 0.06, 0.15, 0.15, 0.15, 0.15, 0.1, 0.1, 0.05, 0.05]))
            call = Call(m, n)
            if "idx" in program.params:
                call.idx = self._idx_values(self._idx_rows(program, call), allow_bad=True)
            calls.append(call)
        if self.chance(0.25):
            self.rng.shuffle(calls)
        return calls

    def _idx_rows(self, program, call):
        """The rows idx gathers from at `call` (0 where the program fails before)."""
        k = next(i for i, (_, e) in enumerate(program.steps) if _reads(e, "idx"))
        operand = program.steps[k][1][len("tf.gather("):-len(", idx)")]
        try:
            env = numpy_steps(program, program.args(dataclasses.replace(call, idx=(0,))), k)
            return int(np.shape(env[operand])[0])
        except (IndexError, ValueError):
            return 0


def _broadcasts(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _one_against_many(a, b):
    """Whether broadcasting a with b stretches a length-1 dim of one against the other."""
    a, b = (1,) * (len(b) - len(a)) + a, (1,) * (len(a) - len(b)) + b
    return any((x == 1) != (y == 1) for x, y in zip(a, b))


# ----- running one program -----


@dataclasses.dataclass
class Outcome:
    """A path's result at one call: a value and gradients, or the exception it raised."""

    value: float | None = None
    grads: list | None = None
    error: BaseException | None = None

    def __str__(self):
        if self.error is not None:
            return f"raised {type(self.error).__name__}: {self.error}"[:300]
        if self.grads is None:
            return f"value {self.value!r}"
        grads = "; ".join(np.array2string(np.asarray(g), precision=6) for g in self.grads)
        return f"value {self.value!r}, grads {grads}"


@contextlib.contextmanager
def jit_off():
    """SRCXFORM_JIT=0 for the calls inside: read whenever a kernel is loaded."""
    old = os.environ.get("SRCXFORM_JIT")
    os.environ["SRCXFORM_JIT"] = "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["SRCXFORM_JIT"]
        else:
            os.environ["SRCXFORM_JIT"] = old


def _function(program, filename):
    import srcxform as tf
    namespace = {"tf": tf, "np": np}
    exec(compile(program.source(), filename, "exec"), namespace)  # noqa: S102 -- our text
    return namespace["prog"]


def _attempt(fn, *args):
    try:
        return Outcome(*fn(*args))
    except Exception as err:  # noqa: BLE001 -- what a path raised is its outcome
        return Outcome(error=err)


def _eager(fn, program, args):
    import srcxform as tf
    wrt = program.float_params()
    tensors = [tf.constant(a) if i in wrt else a for i, a in enumerate(args)]
    with tf.GradientTape() as tape:
        tape.watch([tensors[i] for i in wrt])
        out = fn(*tensors)
    grads = tape.gradient(out, [tensors[i] for i in wrt], unconnected_gradients="zero")
    return float(np.asarray(out)), [np.asarray(g, np.float64) for g in grads]


def _compiled(differentiable, args):
    value, grads = differentiable.value_and_grad(*args)
    return float(value), [np.asarray(g, np.float64) for g in grads]


def _value_only(differentiable, args):
    return float(differentiable(*args)), None


def _numeric(program, args, signs=(1.0, -1.0)):
    """Differences of the NumPy program wrt every float argument: central by default;
    with signs (1.0, 0.0) forward and (0.0, -1.0) backward ones."""
    grads = []
    for i in program.float_params():
        grad = np.zeros(args[i].shape)
        for k in range(args[i].size):
            moved = []
            for sign in signs:
                shifted = list(args)
                shifted[i] = args[i].copy()
                shifted[i].flat[k] += sign * FD_EPS
                moved.append(numpy_loss(program, shifted))
            grad.flat[k] = (moved[0] - moved[1]) / ((signs[0] - signs[1]) * FD_EPS)
        grads.append(grad)
    return grads


def _at_a_kink(program, args, eager_grads):
    """Whether each gradient element eager gave is a one-sided derivative where central
    differences straddle a kink: the data are sines, so two elements of a max can tie to
    the last bit, and there the gradient is either side's (TensorFlow picks one)."""
    sides = [_numeric(program, args, signs) for signs in ((1.0, 0.0), (0.0, -1.0))]
    return all(np.all(np.isclose(g, f, **KINK_TOL) | np.isclose(g, b, **KINK_TOL))
               for g, f, b in zip(eager_grads, *sides))


def _close(a, b, tol):
    return np.allclose(a, b, equal_nan=True, **tol)


def compare(path, outcome, eager):
    """A mismatch's kind (a short fixed phrase, to classify by), or None if they agree."""
    if eager.error is not None:
        if outcome.error is None:
            return f"{path} gave a value where eager raised {type(eager.error).__name__}"
        if not isinstance(outcome.error, type(eager.error)):
            return (f"{path} raised {type(outcome.error).__name__} where eager raised "
                    f"{type(eager.error).__name__}")
        return None
    if outcome.error is not None:
        return f"{path} raised {type(outcome.error).__name__} where eager gave a value"
    if outcome.value is not None and not _close(outcome.value, eager.value, VALUE_TOL):
        return f"{path} value"  # (a gradient-only path has no value)
    if outcome.grads is None:  # a value-only path
        return None
    if any(np.shape(g) != np.shape(e) for g, e in zip(outcome.grads, eager.grads)):
        return f"{path} gradient shape"
    if not all(_close(g, e, VALUE_TOL) for g, e in zip(outcome.grads, eager.grads)):
        return f"{path} gradient"
    return None


def check_reference(program, args, eager):
    """Checks eager against NumPy (the value) and central differences (the gradient)."""
    try:
        expected = numpy_loss(program, args)
    except (IndexError, ValueError) as err:
        if eager.error is None:
            return f"eager gave a value where NumPy raised {type(err).__name__}"
        return None
    if eager.error is not None:
        return f"eager raised {type(eager.error).__name__} where NumPy gave a value"
    if not _close(eager.value, expected, VALUE_TOL):
        return "eager value != NumPy"
    numeric = _numeric(program, args) if np.isfinite(expected) else eager.grads
    if not all(_close(g, e, FD_TOL) for g, e in zip(eager.grads, numeric)) and \
            not _at_a_kink(program, args, eager.grads):
        return "eager gradient != central differences"
    return None


def run_program(program, tag):
    """Runs the program's calls in order through one compiled and one interpreted
    Differentiable. The mismatches: dicts of call index, kind and the outcomes."""
    import srcxform as tf
    wrt = program.float_params()
    compiled = tf.differentiable(_function(program, f"<fuzz {tag} jit>"), wrt=wrt)
    interpreted = tf.differentiable(_function(program, f"<fuzz {tag} python>"), wrt=wrt)
    eager_fn = _function(program, f"<fuzz {tag} eager>")
    found = []
    for k, call in enumerate(program.calls):
        args = program.args(call)
        eager = _attempt(_eager, eager_fn, program, args)
        outcomes = {"compiled": _attempt(_compiled, compiled, args)}
        with jit_off():
            outcomes["interpreted"] = _attempt(_compiled, interpreted, args)
            outcomes["interpreted value-only"] = _attempt(_value_only, interpreted, args)
        kinds = [check_reference(program, args, eager)]
        kinds += [compare(path, outcome, eager) for path, outcome in outcomes.items()]
        for kind in filter(None, kinds):
            path = max((p for p in outcomes if kind.startswith(p + " ")), key=len,
                       default="eager")
            found.append({"call": k, "kind": kind, "eager": str(eager),
                          "got": str(outcomes.get(path, ""))})
    return found


# ----- minimizing -----


def minimize(program, mismatch, tag):
    """A smaller program and call sequence showing the same kind of mismatch: the failing
    call alone or after one earlier call, then one loss term (and the steps it reads)."""
    kind = mismatch["kind"]
    failing = program.calls[mismatch["call"]]
    trials = [[failing]] + [[c, failing] for c in program.calls[:mismatch["call"]]]
    trial = 0

    def shows(candidate):
        nonlocal trial
        trial += 1
        return any(m["kind"] == kind for m in run_program(candidate, f"{tag} min{trial}"))

    best = next((program.with_calls(c) for c in trials if shows(program.with_calls(c))),
                program)
    if len(best.terms) > 1:
        best = next((best.only_term(k) for k in range(len(best.terms))
                     if shows(best.only_term(k))), best)
    return best


# ----- the worker: programs in sequence, one JSON line each -----


def program_for(seed, k):
    return Generator([seed, k]).program()


def worker(seed, first, count, deadline, minimizing):
    import faulthandler

    import srcxform
    assert Path(srcxform.__file__).resolve().is_relative_to(ROOT), srcxform.__file__
    faulthandler.enable()
    warnings.simplefilter("ignore", RuntimeWarning)
    k = first
    while k < first + count and time.time() < deadline:
        program = program_for(seed, k)
        _emit({"begin": k, "program": program.describe()})
        try:
            found = run_program(program, f"{seed}:{k}")
        except Exception:  # noqa: BLE001 -- a bug of the fuzzer's own: report, go on
            found = [{"call": None, "kind": "fuzzer error", "eager": "",
                      "got": traceback.format_exc()}]
        for mismatch in found:
            _emit({"mismatch": k, **mismatch})
        if found and minimizing and found[0]["call"] is not None:
            small = minimize(program, found[0], f"{seed}:{k}")
            _emit({"minimized": k, "program": small.describe()})
        _emit({"done": k})
        k += 1


def _emit(record):
    print(json.dumps(record), flush=True)


# ----- the parent: restarts the worker after a crash -----


@dataclasses.dataclass
class Report:
    programs: int = 0
    mismatches: list = dataclasses.field(default_factory=list)  # dicts, one per program

    def kinds(self):
        """How many programs show each kind of mismatch (a program counts once a kind)."""
        counts = {}
        for m in self.mismatches:
            for kind in {f["kind"] for f in m["found"]}:
                counts[kind] = counts.get(kind, 0) + 1
        return counts

    def text(self):
        lines = [f"{self.programs} programs, {len(self.mismatches)} mismatches"]
        for kind, n in sorted(self.kinds().items(), key=lambda p: -p[1]):
            lines.append(f"  {n:4d}  {kind}")
        for m in self.mismatches:
            lines.append(f"\n--- program {m['k']}: {m['found'][0]['kind']}")
            lines.append(m["program"])
            for f in m["found"][:4]:
                lines.append(f"  call {f['call']}: {f['kind']}\n    eager: {f['eager']}"
                             f"\n    got:   {f['got']}")
            if m.get("minimized"):
                lines.append("minimized (the same kind of mismatch, at the last call):\n"
                             + m["minimized"])
        return "\n".join(lines)


def run(seed=0, minutes=None, count=None, minimizing=True, log=None, module="tests.fuzz"):
    """Runs programs seed:0, seed:1, ... until `minutes` pass or `count` programs ran,
    in worker subprocesses. `log` (a function of a line) hears each finished program.
    `module` runs the workers (`python -m module --worker ...`): another fuzzer's, with
    this one's records."""
    deadline = time.time() + (minutes * 60 if minutes is not None else 10**9)
    count = count if count is not None else 10**9
    report, k = Report(), 0
    while k < count and time.time() < deadline:
        k = _run_worker(seed, k, count - k, deadline, minimizing, report, log, module)
    return report


def _run_worker(seed, first, count, deadline, minimizing, report, log, module):
    """Runs one worker from program `first`; the next program to run when it ends."""
    command = [sys.executable, "-m", module, "--worker", "--seed", str(seed),
               "--first", str(first), "--count", str(count), "--deadline", str(deadline)]
    if not minimizing:
        command.append("--no-minimize")
    with tempfile.TemporaryFile("w+") as stderr:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr,
                                text=True)
        lines = queue.Queue()  # a thread reads: a hung worker must not block the parent
        threading.Thread(target=lambda: [*map(lines.put, proc.stdout), lines.put("")],
                         daemon=True).start()
        current, last, nxt, hung = None, None, first, False
        while True:
            try:
                line = lines.get(timeout=PROGRAM_TIMEOUT_S)
            except queue.Empty:
                hung = True
                proc.kill()
                break
            if not line:
                break
            if not line.startswith("{"):
                continue  # not a record: something the program printed
            record = json.loads(line)
            if "begin" in record:
                current = {"k": record["begin"], "program": record["program"], "found": []}
            elif "mismatch" in record:
                current["found"].append(record)
            elif "minimized" in record:
                current["minimized"] = record["program"]
            elif "done" in record:
                _finish(current, report, log)
                current, last, nxt = None, current, record["done"] + 1
        proc.wait()
        stderr.seek(0)
        errors = stderr.read()
        if current is not None:  # it died (or hung) inside this program
            what = "hang" if hung else f"crash (exit status {proc.returncode})"
            current["found"].append({"call": None, "kind": what, "eager": "",
                                     "got": _crash_text(errors)})
            _finish(current, report, log)
            nxt = current["k"] + 1
        elif proc.returncode and last is not None:  # it died later: heap corrupted?
            last["found"].append({"call": None, "eager": "", "got": _crash_text(errors),
                                  "kind": f"crash (exit status {proc.returncode}) after "
                                          "the program finished"})
            if last not in report.mismatches:
                report.mismatches.append(last)
        elif proc.returncode:
            raise RuntimeError(f"the fuzz worker failed:\n{errors[-3000:]}")
    return nxt


def _crash_text(errors):
    """The end of a dead worker's stderr: faulthandler's report, less its module list."""
    start = errors.rfind("Fatal Python error")
    text = errors[start:] if start >= 0 else errors[-1500:]
    return text.split("\nExtension modules:")[0][:1500]


def _finish(record, report, log):
    report.programs += 1
    if record["found"]:
        report.mismatches.append(record)
    if log:
        log(f"program {record['k']}: " + (record["found"][0]["kind"] if record["found"]
                                          else "ok"))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=None, help="stop after this many programs")
    parser.add_argument("--no-minimize", dest="minimizing", action="store_false")
    parser.add_argument("--verbose", action="store_true", help="a line per program")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.worker:
        worker(options.seed, options.first, options.count, options.deadline, options.minimizing)
        return
    log = (lambda line: print(line, file=sys.stderr, flush=True)) if options.verbose else None
    report = run(options.seed, options.minutes, options.count, options.minimizing, log)
    print(report.text())


if __name__ == "__main__":
    main()
