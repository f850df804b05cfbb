"""GradBench's evaluations (benchmarks/gradbench/) at tiny sizes: srcxform's values and
derivatives against GradBench's JAX or PyTorch program for the same evaluation when one
is importable, else against finite differences of the eager program; det against NumPy's
det and det(A) inv(A)^T; ht against the complex-step derivatives of a NumPy program.
Compiles a kernel a case (minutes on two loaded cores): slow."""

import importlib.util

import numpy as np
import pytest

from benchmarks.gradbench import ba, common, det, ht, kmeans, llsq, lse, lstm, ode

pytestmark = pytest.mark.slow

HAVE = {name: importlib.util.find_spec(module) is not None
        for name, module in (("JAX", "jax"), ("PyTorch", "torch"))}

TINY = [
    *lse.cases((7,)),
    *ode.cases(((5, 3),)),
    *llsq.cases((6,)),
    *det.cases((4,)),
    *kmeans.cases(((3, 20, 2),)),
    *lstm.cases(((1, 5),)),
    *ba.cases(((3, 4, 7),)),
    # ht's 22 bones are its program's whatever the size: the complicated variant only
    # (its us and theta), two kernels of minutes
    *ht.cases((("complicated", 30, 5),)),
]


def _finite_differences(case) -> np.ndarray:
    """The derivative a case asks for, by central differences of its eager program."""
    import srcxform as tf

    llsq_program = lambda x: llsq.llsq(x, 6, llsq.M)
    programs = {  # (primal, the scalar the gradient is of, arguments); x is the first
        "lse": (lse.logsumexp, lse.logsumexp, (lse.inputs(7),)),
        "ode": (ode.solve, ode.last, (ode.inputs(5), np.int64(3))),
        "llsq": (llsq_program, llsq_program, (llsq.inputs(),)),
    }
    if case.evaluation not in programs:
        pytest.skip(f"{case.evaluation}: no finite-difference reference written; needs a peer")
    primal, program, args = programs[case.evaluation]
    if case.function == "primal":
        return np.asarray(primal(*args))

    def value(x):
        return float(np.asarray(program(tf.constant(x), *args[1:])))

    return common.finite_difference_gradient(value, args[0])


def _reference(case):
    if case.reference is not None:
        return case.reference[1]()()
    for name, build in case.peers.items():
        if HAVE[name]:
            return build()()
    return _finite_differences(case)


@pytest.mark.parametrize("case", TINY, ids=lambda c: f"{c.evaluation}-{c.function}-{c.size}")
def test_srcxform_agrees_with_the_reference(case):
    ours = case.srcxform()()
    want = _reference(case)
    tolerance = 1e-6 if case.reference is None and not any(HAVE[p] for p in case.peers) \
        else 1e-12
    assert common.mismatch(ours, want) <= tolerance, (common.as_numpy(ours),
                                                      common.as_numpy(want))
