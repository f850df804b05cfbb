"""What every GradBench evaluation module provides to run.py and the tests: `Case`s, one
an evaluation function at one size, each with its srcxform program and its peers."""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# A builder makes a fresh program (compiling it, for srcxform and JAX) and returns a
# thunk that computes the function's output for the case's input, as NumPy.
Builder = Callable[[], Callable[[], Any]]


@dataclass
class Case:
    evaluation: str  # GradBench's module name: lse, ode, ...
    function: str  # GradBench's function name: primal, gradient, dir, jacobian, ...
    size: str  # as GradBench's eval describes it: n=2500
    srcxform: Builder
    peers: dict = field(default_factory=dict)  # "JAX" / "PyTorch" -> Builder
    # (name, Builder) of the values srcxform is checked against; None: the first peer
    reference: tuple | None = None
    tolerance: float = 1e-4  # GradBench's


def as_numpy(value) -> np.ndarray:
    """A result of any system as a float64 array (tuples concatenated, flattened)."""
    if isinstance(value, (tuple, list)):
        return np.concatenate([as_numpy(v).ravel() for v in value])
    if hasattr(value, "detach"):  # torch
        value = value.detach().numpy()
    return np.asarray(value, dtype=np.float64)


def mismatch(got, want) -> float:
    """GradBench's measure (python/gradbench/gradbench/comparison.py, from ADBench): the
    largest |got - want| / max(|got| + |want|, 1) over the elements; it accepts <= 1e-4."""
    got, want = as_numpy(got).ravel(), as_numpy(want).ravel()
    if got.shape != want.shape:
        return float("inf")
    scale = np.maximum(np.abs(got) + np.abs(want), 1.0)
    return float(np.max(np.abs(got - want) / scale, initial=0.0))


def first_call_s(build: Builder):
    """(seconds to build the program and run its first call, the thunk)."""
    start = time.perf_counter()
    thunk = build()
    thunk()
    return time.perf_counter() - start, thunk


def warm_s(thunk, budget_s: float = 0.3, repeats: int = 5) -> float:
    """The best of `repeats` means over batches of calls, each batch about budget_s/repeats."""
    start = time.perf_counter()
    thunk()
    once = max(time.perf_counter() - start, 1e-7)
    if once > budget_s:  # a call of seconds (PyTorch's eager LSTM): that call's time
        return once
    number = max(1, int(budget_s / repeats / once))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            thunk()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def jax_module():
    """JAX in float64, as GradBench's JAX tool configures it."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def finite_difference_gradient(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of a scalar f at x (the check where no peer is importable)."""
    x = np.array(x, dtype=np.float64)
    grad = np.empty_like(x)
    flat, out = x.ravel(), grad.ravel()
    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + eps
        up = float(f(x))
        flat[i] = keep - eps
        down = float(f(x))
        flat[i] = keep
        out[i] = (up - down) / (2 * eps)
    return grad
