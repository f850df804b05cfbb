"""GradBench's `det`: the determinant of an ell x ell matrix by expansion by minors,
`primal` and `gradient` (evals/det/run.py: A uniform in [0, 1), row-major, ell from 5 to
11, seed 31337).

GradBench ships no JAX or PyTorch tool for det. The srcxform program expands along the
first row as cpp/gradbench/evals/det.hpp does, but computes the determinant of each minor
once (a level of minors at a time, indexed by their column sets): ell * 2^(ell-1)
multiplications where the plain recursion does about e * ell!, so its times are not
comparable with GradBench's other tools'. The peers are the same program in JAX and
PyTorch (ours); the check is NumPy's det and its gradient det(A) inv(A)^T."""

import itertools

import numpy as np

import srcxform as tf
from benchmarks.gradbench.common import Case, jax_module

SIZES = (5, 6, 7, 8, 9, 10, 11)


def inputs(ell: int) -> np.ndarray:
    np.random.seed(31337)
    return np.random.rand(ell * ell)


def minor_tables(ell: int) -> list:
    """For each level k = 1..ell (the minors of the last k rows): for each k-subset of
    columns and each of its columns (in order), the column, the sign of its cofactor, and
    the index of the (k-1)-subset left without it in the level below."""
    tables, below = [], {(): 0}
    for k in range(1, ell + 1):
        subsets = list(itertools.combinations(range(ell), k))
        columns = np.array(subsets, dtype=np.int64)
        children = np.array([[below[s[:p] + s[p + 1:]] for p in range(k)] for s in subsets],
                            dtype=np.int64)
        signs = np.array([(-1.0) ** p for p in range(k)])
        tables.append((columns, signs, children))
        below = {s: i for i, s in enumerate(subsets)}
    return tables


def det_by_minors(flat, ell: int, tables: list):
    """The srcxform program: level k's minors from level k-1's, by gathers."""
    a = tf.reshape(flat, (ell, ell))
    minors = tf.ones((1,), tf.float64)
    for k, (columns, signs, children) in enumerate(tables, start=1):
        row = a[ell - k]
        terms = signs * tf.gather(row, columns) * tf.gather(minors, children)
        minors = tf.reduce_sum(terms, 1)
    return minors[0]


def srcxform_builder(function: str, flat: np.ndarray, ell: int):
    def build():
        tables = minor_tables(ell)
        f = tf.differentiable(lambda a: det_by_minors(a, ell, tables), wait=True)
        return (lambda: f(flat)) if function == "primal" else (lambda: f.grad(flat))
    return build


def numpy_reference(function: str, flat: np.ndarray, ell: int):
    def build():
        a = flat.reshape(ell, ell)
        if function == "primal":
            return lambda: np.linalg.det(a)
        return lambda: (np.linalg.det(a) * np.linalg.inv(a).T).ravel()
    return build


# ----- peers: the same program in JAX and PyTorch (GradBench ships neither) -----


def _program(xp_gather, xp_sum, ell, tables, flat, ones):
    a = flat.reshape(ell, ell)
    minors = ones
    for k, (columns, signs, children) in enumerate(tables, start=1):
        minors = xp_sum(signs * xp_gather(a[ell - k], columns) * xp_gather(minors, children))
    return minors[0]


def jax_builder(function: str, flat: np.ndarray, ell: int):
    def build():
        jax = jax_module()
        jnp = jax.numpy
        tables = minor_tables(ell)

        def det(v):
            return _program(lambda x, i: x[i], lambda t: jnp.sum(t, 1), ell, tables, v,
                            jnp.ones(1))

        f = jax.jit(det if function == "primal" else jax.grad(det))
        arg = jnp.asarray(flat)
        return lambda: f(arg).block_until_ready()
    return build


def torch_builder(function: str, flat: np.ndarray, ell: int):
    def build():
        import torch
        tables = [(torch.tensor(c), torch.tensor(s), torch.tensor(ch))
                  for c, s, ch in minor_tables(ell)]

        def det(v):
            return _program(lambda x, i: x[i], lambda t: t.sum(1), ell, tables, v,
                            torch.ones(1, dtype=torch.float64))

        if function == "primal":
            arg = torch.tensor(flat)
            return lambda: det(arg)
        arg = torch.tensor(flat, requires_grad=True)
        return lambda: torch.autograd.grad(det(arg), arg)[0]
    return build


def cases(sizes=(5, 11)) -> list:
    out = []
    for ell in sizes:
        flat = inputs(ell)
        for function in ("primal", "gradient"):
            out.append(Case("det", function, f"ell={ell}", srcxform_builder(function, flat, ell),
                            {"JAX": jax_builder(function, flat, ell),
                             "PyTorch": torch_builder(function, flat, ell)},
                            reference=("NumPy det", numpy_reference(function, flat, ell))))
    return out
