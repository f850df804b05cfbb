"""The CUDA target: a traced, differentiated and optimized program lowered to CUDA
kernels, one per fused loop nest, run through numba-cuda (the `srcxform[cuda]` extra; its
simulator, NUMBA_ENABLE_CUDASIM=1, runs them on the CPU for tests).

Importing this package loads neither Numba nor numba-cuda: a first call does.
"""

import functools
from collections.abc import Callable

from srcxform.cuda.compiled import CudaDifferentiable
from srcxform.cuda.lower import UnsupportedOnCuda


def differentiable(fn: Callable, *, wrt: int | tuple | None = None,
                   has_aux: bool | None = None,
                   convert: Callable | None = None) -> CudaDifferentiable:
    """fn and its gradient compiled to CUDA kernels; `srcxform.differentiable(fn,
    device="cuda")` is this with fn's control flow converted (autograph's `convert`).

    Args:
        fn: the function, or a srcxform.differentiable of it (its conversion is taken
            then, and its wrt and has_aux where these are not given).
        wrt: the argument positions the gradient is taken with respect to (default 0).
        has_aux: whether fn returns (output, aux) (default False).

    Example:
        >>> f = srcxform.differentiable(lambda x: tf.reduce_sum(tf.tanh(x)), device="cuda")
        >>> value, grad = f.value_and_grad(np.ones(3))  # doctest: +SKIP
        >>> print(f.source(np.ones(3)))  # doctest: +SKIP
    """
    if hasattr(fn, "_traced_fn") and hasattr(fn, "wrt"):  # a srcxform.differentiable
        return CudaDifferentiable(fn.fn, fn.wrt if wrt is None else wrt,
                                  fn.has_aux if has_aux is None else has_aux,
                                  functools.partial(_traced_by, fn))
    return CudaDifferentiable(fn, 0 if wrt is None else wrt, bool(has_aux), convert)


def _traced_by(compiled, _fn):
    """fn as a CPU-compiled function `compiled` traces it (autograph's conversion)."""
    return compiled._traced_fn()


def source(fn, *args, **kwargs):
    """The generated CUDA module (kernels and host driver) of fn's value and gradient for
    these arguments; fn as `differentiable` takes it."""
    return differentiable(fn).source(*args, **kwargs)


__all__ = ["CudaDifferentiable", "UnsupportedOnCuda", "differentiable", "source"]
