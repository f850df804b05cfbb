"""The CUDA target: a traced, differentiated and optimized program lowered to CUDA
kernels, one per fused loop nest, run through numba-cuda (the `srcxform[cuda]` extra; its
simulator, NUMBA_ENABLE_CUDASIM=1, runs them on the CPU for tests).

Importing this package loads neither Numba nor numba-cuda: a first call does.
"""

from srcxform.cuda.compiled import CudaDifferentiable
from srcxform.cuda.lower import UnsupportedOnCuda


def differentiable(fn, *, wrt=0, has_aux=False):
    """fn and its gradient compiled to CUDA kernels.

    Args:
        fn: the function, or a srcxform.differentiable of it (its wrt and has_aux are
            taken then).
        wrt: the argument positions the gradient is taken with respect to.
        has_aux: whether fn returns (output, aux).

    Example:
        >>> f = srcxform.cuda.differentiable(lambda x: tf.reduce_sum(tf.tanh(x)))
        >>> value, grad = f.value_and_grad(np.ones(3))  # doctest: +SKIP
        >>> print(f.source(np.ones(3)))  # doctest: +SKIP
    """
    if hasattr(fn, "_traced_fn") and hasattr(fn, "wrt"):  # a srcxform.differentiable
        return CudaDifferentiable(fn.fn, fn.wrt, fn.has_aux, traced_fn=fn._traced_fn())
    return CudaDifferentiable(fn, wrt, has_aux)


def source(fn, *args, **kwargs):
    """The generated CUDA module (kernels and host driver) of fn's value and gradient for
    these arguments; fn as `differentiable` takes it."""
    return differentiable(fn).source(*args, **kwargs)


__all__ = ["CudaDifferentiable", "UnsupportedOnCuda", "differentiable", "source"]
