"""Issue 16's linear algebra (srcxform/ops/lapack.py, linalg.py, einsum.py): values and
gradients against TensorFlow 2.21 (the numbers below were printed by it, float64), einsum
against NumPy's, the same ops compiled (Numba and SRCXFORM_JIT=0) against eager at two
sizes, their errors, and NumPy dispatch.

The op tables (tests/samples.py) check every gradient against finite differences, first
and second order, eager and compiled.
"""

import numpy as np
import pytest
from helpers import quick_first, tape_gradient

import srcxform as tf
from srcxform.testing import check_grads

A = np.array([[2.0, -1.0, 0.5], [1.0, 3.0, -2.0], [0.5, 0.25, 4.0]])
B = np.array([[1.0, 2.0], [-1.0, 0.5], [3.0, -2.0]])
S = A @ A.T + np.eye(3)  # symmetric positive definite
M = np.array([[1.0, 2.0, 0.0, -1.0], [0.5, -1.0, 3.0, 2.0], [2.0, 1.0, 1.0, 0.0]])
W = np.array([[0.3, -1.2, 0.7], [2.0, 0.1, -0.4], [-0.5, 0.9, 1.1]])

TENSORFLOW = {
    "det": 29.375000000000004,
    "det_grad":
        [[12.500000000000002, -5.000000000000001, -1.2500000000000002], [4.125, 7.750000000000001,
        -1.0000000000000002], [0.5000000000000002, 4.500000000000001, 7.000000000000001]],
    "logdet_grad":
        [[0.425531914893617, -0.1702127659574468, -0.04255319148936171], [0.1404255319148936,
        0.26382978723404255, -0.03404255319148936], [0.017021276595744688, 0.15319148936170215,
        0.23829787234042554]],
    "slogdet": [1.0, 3.380143972464323],
    "inv":
        [[0.425531914893617, 0.14042553191489363, 0.017021276595744678], [-0.1702127659574468,
        0.26382978723404255, 0.15319148936170213], [-0.04255319148936171, -0.03404255319148936,
        0.23829787234042554]],
    "inv_grad":
        [[0.1555273879583522, 0.0678315980081485, -0.1034676324128565], [-0.2246844726120416,
        0.15230783159800815, 0.029736532367587148], [-0.11486826618379359, -0.055090991398823015,
        -0.03538976912630149]],
    "solve":
        [[0.3361702127659575, 0.8872340425531915], [0.025531914893617023, -0.5148936170212766],
        [0.7063829787234043, -0.5787234042553191]],
    "solve_adjoint":
        [[0.46808510638297873, 0.851063829787234], [-0.225531914893617, 0.4808510638297872],
        [0.5787234042553191, -0.3659574468085106]],
    "solve_grad":
        [[-0.9422074106893462, 0.4988567080512024, 0.41344210820338445], [-0.03508960442291209,
        0.0071722835980466805, -0.03245862670121264], [0.23823021873765923, -0.21677909519085364,
        -0.48485842250753686]],
    "chol":
        [[2.5, 0.0, 0.0], [-0.8, 3.789459064299283, 0.0], [1.1, -1.5490337539997767,
        3.701755587416511]],
    "chol_grad":
        [[0.2190857468791139, 0.3487267531420079, -0.10793905880379848], [0.3487267531420079,
        0.08656352668265721, 0.1794853986282782], [-0.10793905880379848, 0.1794853986282782,
        0.14857815082919887]],
    "tri": [[0.5, 1.0], [-0.5, -0.16666666666666666], [0.71875, -0.6145833333333334]],
    "tri_upper_adj": [[0.5, 1.0], [-0.16666666666666666, 0.5], [0.6041666666666666, -0.375]],
    "tri_grad":
        [[-1.2760416666666667, 0.0, 0.0], [-0.010416666666666657, -0.16319444444444445, 0.0],
        [0.125, 0.2916666666666667, -0.8463541666666667]],
    "eigh_values": [5.574133654125028, 9.32312909521911, 23.66523725065586],
    "eigh_values_grad":
        [[1.0769818378840068, 0.0, 0.0], [-0.3859316914693494, 2.39177749930355, 0.0],
        [0.6540201374552216, -0.920856575455046, 2.5312406628124435]],
    "eigh_vectors_grad":
        [[-0.012062700719935359, 0.0, 0.0], [-0.1403992558070464, -0.035475820004285286, 0.0],
        [-0.1128184479170285, 0.02755988745429022, 0.04753852072422063]],
    "svd_s": [3.97518644582032, 3.159418067654758, 0.6826200954726434],
    "svd_s_grad":
        [[-0.5543615173763647, 2.1040515374272215, 1.0382407305034422, -0.5329054034618901],
        [-0.4715091073215216, 0.2854111840759722, 1.148679528794537, 0.4316341723592825],
        [2.4408780500410674, -0.2215465034276739, -0.2931148834121037, -0.03578418999221536]],
    "svd_uv_grad":
        [[0.12420158832545986, -0.18723896576132742, 0.12261286227460294, 1.0530236305839182],
        [0.38745440590514657, 0.7614379388163777, 0.3332997908304673, 0.17256231772286013],
        [0.18737091453033985, -0.2962874185757274, 0.4475322912228447, -0.3601492308096389]],
    "svd_uv_grad_tall":
        [[0.010979471709332379, -0.2795315180910958, -0.11607488528742778], [-0.14766020841751754,
        -0.6446654747222746, 0.35304574494223406], [0.2926928159370621, -0.14069291712000492,
        -0.6784610552868972], [-0.7331995640249731, 0.012942748851768104, 0.19419328868316454]],
    "svd_full_grad":
        [[-0.6366470098864908, 2.5229323212916706, 1.0975964245778416, 0.05010135790174103],
        [-0.4187938348416682, 0.34773361804875486, 1.0969093396709786, 0.7103948800544161],
        [2.1424720258829417, -0.17112859432623684, -0.2854361083391656, -0.3181881238903992]],
    "svd_full_grad_tall":
        [[-0.45191322158846536, -0.6100343102760419, 2.487434157791645], [1.484173698483496,
        0.28110705861340457, -0.0071133581876076935], [1.5630136427147652, 1.7931519616952394,
        -0.43744264740719263], [-0.8523994747672772, -0.17529738196040678, 0.10101477841943238]],
    "norm_euclidean_all": 5.123475382979799,
    "norm_1_all": 14.5,
    "norm_inf_all": 3.0,
    "norm_3_1": [2.154434690031884, 3.305744509228972, 2.154434690031884],
    "norm_fro_matrix": 5.123475382979799,
    "norm_1_matrix": 4.0,
    "norm_2_matrix": 3.97518644582032,
    "norm_inf_matrix": 6.5,
    "norm2_grad":
        [[-0.0381118315266383, 0.08579983373002878, -0.20070272940704076, -0.14325128156853476],
        [0.13681776631214923, -0.3080130534448703, 0.7205032671030266, 0.5142581602739484],
        [0.026321480216989778, -0.0592566280780148, 0.1386129375044824, 0.09893478279124858]],
    "einsum": [[4.5, 2.5], [-8.0, 7.5], [12.25, -6.875]],
    "trace": 1.0,
    "tensordot":
        [[5.25, 3.5, 3.5, 0.0], [3.5, 6.0, -2.0, -4.0], [3.5, -2.0, 10.0, 6.0], [0.0, -4.0, 6.0,
        5.0]],
    "diag_part": [1.0, -1.0, 1.0],
    "set_diag": [[7.0, 2.0, 0.0, -1.0], [0.5, 8.0, 3.0, 2.0], [2.0, 1.0, 9.0, 0.0]],
}


def _ramp(t):
    """Fixed weights that are not a linear ramp (whose weighted sum of an orthogonal
    matrix's squares would be constant)."""
    return np.sin(np.arange(int(np.prod(t.shape)), dtype=np.float64)).reshape(t.shape)


def _singular_vectors_loss(x):
    _, u, v = tf.linalg.svd(x)
    return tf.reduce_sum(u ** 2 * _ramp(u)) + tf.reduce_sum(v ** 2 * _ramp(v)[::-1])


def _full_svd_loss(x):
    """A function of every column of the full u and v (m and n differ by 1: the extra
    column is fixed by the others up to its sign, which its squares do not see)."""
    s, u, v = tf.linalg.svd(x, full_matrices=True)
    return (tf.reduce_sum(u ** 2 * _ramp(u)) + tf.reduce_sum(v ** 2 * _ramp(v)[::-1])
            + tf.reduce_sum(s * [1.0, 2.0, 3.0]))


OURS = {
    "det": lambda: tf.linalg.det(A),
    "det_grad": lambda: tape_gradient(tf.linalg.det, A),
    "logdet_grad": lambda: tape_gradient(lambda x: tf.linalg.slogdet(x)[1], A),
    "slogdet": lambda: tf.stack(tf.linalg.slogdet(A)),
    "inv": lambda: tf.linalg.inv(A),
    "inv_grad": lambda: tape_gradient(lambda x: tf.reduce_sum(tf.linalg.inv(x) * W), A),
    "solve": lambda: tf.linalg.solve(A, B),
    "solve_adjoint": lambda: tf.linalg.solve(A, B, adjoint=True),
    "solve_grad": lambda: tape_gradient(lambda x: tf.reduce_sum(tf.linalg.solve(x, B) ** 2), A),
    "chol": lambda: tf.linalg.cholesky(S),
    "chol_grad": lambda: tape_gradient(lambda x: tf.reduce_sum(tf.linalg.cholesky(x) * W), S),
    "tri": lambda: tf.linalg.triangular_solve(A, B, lower=True),
    "tri_upper_adj": lambda: tf.linalg.triangular_solve(A, B, lower=False, adjoint=True),
    "tri_grad": lambda: tape_gradient(lambda x: tf.reduce_sum(tf.linalg.triangular_solve(x, B) * B), A),
    "eigh_values": lambda: tf.linalg.eigh(S)[0],
    "eigh_values_grad": lambda: tape_gradient(
        lambda x: tf.reduce_sum(tf.linalg.eigh(x)[0] * [1.0, 2.0, 3.0]), S),
    "eigh_vectors_grad": lambda: tape_gradient(lambda x: tf.reduce_sum(tf.linalg.eigh(x)[1] ** 2 * W), S),
    "svd_s": lambda: tf.linalg.svd(M)[0],
    "svd_s_grad": lambda: tape_gradient(lambda x: tf.reduce_sum(tf.linalg.svd(x)[0] * [1.0, 2.0, 3.0]),
                                M),
    "svd_uv_grad": lambda: tape_gradient(_singular_vectors_loss, M),
    "svd_uv_grad_tall": lambda: tape_gradient(_singular_vectors_loss, M.T.copy()),
    "svd_full_grad": lambda: tape_gradient(_full_svd_loss, M),
    "svd_full_grad_tall": lambda: tape_gradient(_full_svd_loss, M.T.copy()),
    "norm_euclidean_all": lambda: tf.norm(M),
    "norm_1_all": lambda: tf.norm(M, ord=1),
    "norm_inf_all": lambda: tf.norm(M, ord=np.inf),
    "norm_3_1": lambda: tf.norm(M, ord=3, axis=1),
    "norm_fro_matrix": lambda: tf.linalg.norm(M, ord="fro", axis=(0, 1)),
    "norm_1_matrix": lambda: tf.norm(M, ord=1, axis=(0, 1)),
    "norm_2_matrix": lambda: tf.norm(M, ord=2, axis=(0, 1)),
    "norm_inf_matrix": lambda: tf.norm(M, ord=np.inf, axis=(0, 1)),
    "norm2_grad": lambda: tape_gradient(lambda x: tf.norm(x, ord=2, axis=(0, 1)), M),
    "einsum": lambda: tf.einsum("ij,jk->ik", A, B),
    "trace": lambda: tf.linalg.trace(M),
    "tensordot": lambda: tf.tensordot(M, M, axes=[[0], [0]]),
    "diag_part": lambda: tf.linalg.diag_part(M),
    "set_diag": lambda: tf.linalg.set_diag(M, [7.0, 8.0, 9.0]),
}


@pytest.mark.parametrize("name", sorted(TENSORFLOW))
def test_values_and_gradients_match_tensorflow(name):
    got = OURS[name]()
    assert isinstance(got, tf.Tensor) and got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), TENSORFLOW[name], rtol=1e-10, atol=1e-13)


def test_decompositions_reconstruct_their_input():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 4, 3))
    s, u, v = tf.linalg.svd(x)
    np.testing.assert_allclose((u * s[:, None, :]).numpy() @ np.swapaxes(v.numpy(), 1, 2), x,
                               atol=1e-12)
    values, vectors = tf.linalg.eigh(S)
    np.testing.assert_allclose(S @ vectors.numpy(), vectors.numpy() * values.numpy(),
                               atol=1e-12)
    # The sign convention: each vector's entry of largest magnitude is positive.
    for q in (u.numpy(), vectors.numpy()):
        columns = np.moveaxis(q, -1, -2).reshape(-1, q.shape[-2])
        assert all(c[np.argmax(np.abs(c))] > 0 for c in columns)
    assert tf.linalg.svd(x, compute_uv=False).shape == (2, 3)
    np.testing.assert_allclose(tf.linalg.eigvalsh(S).numpy(), values.numpy(), rtol=1e-14)


def test_batched_decompositions_and_broadcast_solves():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 3, 3)) + 3 * np.eye(3)
    b = rng.normal(size=(4, 1, 3, 2))
    np.testing.assert_allclose(tf.linalg.det(a).numpy(), np.linalg.det(a), rtol=1e-12)
    np.testing.assert_allclose(tf.linalg.inv(a, adjoint=True).numpy(),
                               np.swapaxes(np.linalg.inv(a), 1, 2), rtol=1e-12)
    x = tf.linalg.solve(a, b)  # batch axes (2,) and (4, 1) broadcast to (4, 2)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b), rtol=1e-12)
    tri = tf.linalg.triangular_solve(a, b, lower=False)
    np.testing.assert_allclose(tri.numpy(), np.linalg.solve(np.triu(a), b), rtol=1e-12)
    spd = a @ np.swapaxes(a, 1, 2)
    np.testing.assert_allclose(tf.linalg.cholesky(spd).numpy(), np.linalg.cholesky(spd),
                               rtol=1e-12)
    sign, logdet = tf.linalg.slogdet(-a)
    np.testing.assert_allclose(sign.numpy(), np.sign(np.linalg.det(-a)))
    np.testing.assert_allclose(logdet.numpy(), np.log(np.abs(np.linalg.det(a))), rtol=1e-12)


def test_float32_stays_float32():
    a = tf.constant(A.astype(np.float32))
    for out in (tf.linalg.det(a), tf.linalg.inv(a), tf.linalg.eigh(a)[1], tf.linalg.svd(a)[0],
                tf.einsum("ij,jk", a, a), tf.norm(a, ord=2, axis=(0, 1))):
        assert out.dtype == np.float32


def test_full_svd_reconstructs_with_orthogonal_u_and_v():
    rng = np.random.default_rng(5)
    for shape in ((3, 2), (2, 5), (2, 4, 3), (3, 3)):
        x = rng.normal(size=shape)
        s, u, v = (t.numpy() for t in tf.linalg.svd(x, full_matrices=True))
        m, n = shape[-2:]
        assert u.shape == shape[:-2] + (m, m) and v.shape == shape[:-2] + (n, n)
        k = min(m, n)
        np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ np.swapaxes(
            v[..., :k], -1, -2), x, atol=1e-12)
        for q in (u, v):
            np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(
                np.eye(q.shape[-1]), q.shape), atol=1e-12)
        # The first k columns are the reduced SVD's, signs included.
        for full, reduced in zip((s, u[..., :k], v[..., :k]), tf.linalg.svd(x)):
            np.testing.assert_allclose(full, reduced.numpy(), atol=1e-12)
    assert tf.linalg.svd(M, full_matrices=True, compute_uv=False).shape == (3,)


# ----- einsum, against NumPy's -----


EQUATIONS = [
    ("ij,jk->ik", (3, 4), (4, 5)), ("ij,jk", (3, 4), (4, 5)), ("ij,kj->ik", (3, 4), (5, 4)),
    ("i,i->", (4,), (4,)), ("i,j->ij", (3,), (4,)), ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    ("bij,jk->bik", (2, 3, 4), (4, 5)), ("bij,bkj->bki", (2, 3, 4), (2, 5, 4)),
    ("ij,ij->ij", (3, 4), (3, 4)), ("ijk,ikl->jl", (2, 3, 4), (2, 4, 5)),
    ("...ij,...jk->...ik", (2, 3, 4), (4, 5)), ("...ij,...jk", (2, 1, 3, 4), (5, 4, 2)),
    ("ii->i", (4, 4)), ("ii", (4, 4)), ("iij->j", (3, 3, 2)), ("ij->", (3, 4)),
    ("ij->ji", (3, 4)), ("ba", (3, 4)), ("...->...", (2, 3)),
    ("bii,bij->bj", (2, 3, 3), (2, 3, 4)),
    ("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)), ("i,i,i->i", (3,), (3,), (3,)),
    ("ij,j->i", (3, 1), (4,)),
]


@pytest.mark.parametrize("equation, shapes", [(e[0], e[1:]) for e in EQUATIONS],
                         ids=[e[0] for e in EQUATIONS])
def test_einsum_as_numpy(equation, shapes):
    rng = np.random.default_rng(2)
    operands = [rng.normal(size=s) for s in shapes]
    got = tf.einsum(equation, *operands)
    want = np.einsum(equation, *operands)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_einsum_of_integers_and_tensordot_as_numpy():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = tf.einsum("ij,kj->ik", a, a)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), np.einsum("ij,kj->ik", a, a))
    x, y = np.arange(24.0).reshape(2, 3, 4), np.arange(24.0).reshape(4, 3, 2)
    for axes in (0, 1, [[1, 2], [1, 0]], ([2], [0]), (2, 0)):
        np.testing.assert_array_equal(tf.tensordot(x, y, axes).numpy(),
                                      np.tensordot(x, y, axes))


# ----- compiled, as Python (SRCXFORM_JIT=0), at two sizes -----


def _linear_algebra(a, b, m):
    spd = tf.matmul(a, a, transpose_b=True) + 3.0 * np.eye(a.shape[-1])
    sign, logdet = tf.linalg.slogdet(a)
    values, vectors = tf.linalg.eigh(spd)
    s, u, v = tf.linalg.svd(m)
    return (tf.linalg.det(a), tf.linalg.inv(a), tf.linalg.solve(a, b), sign, logdet,
            tf.linalg.cholesky(spd), tf.linalg.triangular_solve(a, b, lower=False, adjoint=True),
            values, vectors, s, u, v, tf.einsum("bij,bjk->bik", a, b),
            tf.einsum("ij,kj->ik", m, m), tf.tensordot(m, m, [[0], [0]]), tf.linalg.trace(a),
            tf.norm(m, ord=2, axis=(0, 1)), tf.linalg.diag_part(m))


def _inputs(rng):
    for n, k, shape in ((3, 2, (4, 3)), (4, 1, (2, 5))):
        yield (rng.normal(size=(2, n, n)) + 3 * np.eye(n), rng.normal(size=(2, n, k)),
               rng.normal(size=shape))


@pytest.mark.parametrize("jit", [pytest.param("1", marks=pytest.mark.slow), "0"])
def test_compiled_as_eager_at_two_sizes(jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    compiled = tf.differentiable(_linear_algebra)
    for args in _inputs(np.random.default_rng(3)):
        eager = _linear_algebra(*[tf.constant(x) for x in args])
        for k, (got, want) in enumerate(zip(compiled(*args), eager)):
            assert got.dtype == want.dtype and got.shape == want.shape
            # Rounding only: the kernel's LAPACK (SciPy's) is not NumPy's.
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=f"output {k}")


def _full_svd(x):
    s, u, v = tf.linalg.svd(x, full_matrices=True)
    k = s.shape[-1]
    rebuilt = tf.matmul(u[..., :k] * tf.expand_dims(s, -2), v[..., :k], transpose_b=True)
    return (s, u, v, rebuilt, tf.matmul(u, u, transpose_a=True),
            tf.matmul(v, v, transpose_a=True))


@pytest.mark.parametrize("jit", [pytest.param("1", marks=pytest.mark.slow), "0"])
def test_compiled_full_svd_as_eager(jit, monkeypatch):
    """One kernel for three sizes. Where m and n differ by 1 or less the extra columns are
    unique up to their signs (fixed alike eager and compiled); beyond, they are any
    orthonormal basis of what the others leave, each LAPACK's own: compared through u's
    and v's products there."""
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    compiled = tf.differentiable(_full_svd)
    rng = np.random.default_rng(6)
    for shape in ((2, 4, 3), (2, 3, 3), (2, 2, 5)):
        x = rng.normal(size=shape)
        unique = abs(shape[-1] - shape[-2]) <= 1
        for k, (got, want) in enumerate(zip(compiled(x), _full_svd(tf.constant(x)))):
            assert got.shape == want.shape
            if unique or k not in (1, 2):
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12,
                                           err_msg=f"output {k} for {shape}")


@pytest.mark.slow
def test_full_svd_gradients_compiled_eager_and_finite_differences():
    check_grads(_full_svd_loss, [M.T.copy()])
    check_grads(_full_svd_loss, [M], order=2, compiled=False)  # wide; second order


def _loss(a, b, m):
    s, u, v = tf.linalg.svd(m)
    return (tf.reduce_sum(tf.sin(tf.linalg.solve(a, b))) + tf.linalg.slogdet(a)[1][0]
            + tf.reduce_sum(tf.sin(s)) + tf.reduce_sum(tf.sin(u)) + tf.reduce_sum(tf.cos(v)))


@pytest.mark.slow
def test_compiled_gradients_as_eager_at_two_sizes():
    """One kernel for both sizes (tall m both times): its VJPs' sizes are computed."""
    compiled = tf.differentiable(_loss, wrt=(0, 1, 2))
    rng = np.random.default_rng(4)
    for n, shape in ((3, (4, 3)), (4, (6, 2))):
        args = (rng.normal(size=(2, n, n)) + 3 * np.eye(n), rng.normal(size=(2, n, 2)),
                rng.normal(size=shape))
        xs = [tf.constant(x) for x in args]
        with tf.GradientTape() as tape:
            tape.watch(xs)
            y = _loss(*xs)
        for got, want in zip(compiled.grad(*args), tape.gradient(y, xs)):
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-8, atol=1e-10)


# A det of one matrix is rank 0, a scalar in generated code, where an elementwise op on it
# (a conditional expression for relu, maximum, ...) needs one: a 0-d array does not unify.
_ON_A_DET = {
    "relu": lambda d: tf.nn.relu(d),
    "maximum": lambda d: tf.maximum(d, 1.0),
    "minimum": lambda d: tf.minimum(d, 100.0),
    "clip_by_value": lambda d: tf.clip_by_value(d, -5.0, 50.0),
    "where": lambda d: tf.where(d > 0.0, d * d, -d),
}


@pytest.mark.parametrize("jit", ["1", "0"])
@pytest.mark.parametrize("op", quick_first(sorted(_ON_A_DET), keep=2))
def test_elementwise_ops_on_a_det_compile(op, jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)

    def fn(a):
        return _ON_A_DET[op](tf.linalg.det(a)) * 2.0

    x = tf.constant(A)
    with tf.GradientTape() as tape:
        tape.watch(x)
        value = fn(x)
    grad = tape.gradient(value, x).numpy()
    f = tf.differentiable(fn)
    np.testing.assert_allclose(f(A).numpy(), value.numpy(), rtol=1e-12)
    np.testing.assert_allclose(f.grad(A), grad, rtol=1e-12)
    got_value, got_grad = f.value_and_grad(A)
    np.testing.assert_allclose(got_value, value.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got_grad, grad, rtol=1e-12)


# ----- errors -----


def test_bad_shapes_and_dtypes_raise_clearly():
    with pytest.raises(tf.ShapeError, match=r"det\(f64\[3,4\]\): expects square matrices"):
        tf.linalg.det(M)
    with pytest.raises(tf.ShapeError, match="expects matrices"):
        tf.linalg.inv(np.ones(3))
    with pytest.raises(tf.ShapeError, match=r"solve\(f64\[3,3\], f64\[4,3\]\): the "
                       "right-hand side must have 3 rows"):
        tf.linalg.solve(A, M.T)
    with pytest.raises(tf.ShapeError, match="batch shapes"):
        tf.linalg.solve(np.ones((2, 3, 3)), np.ones((3, 3, 1)))
    with pytest.raises(TypeError, match="float32 or float64"):
        tf.linalg.det(np.eye(3, dtype=np.int32))
    with pytest.raises(NotImplementedError, match=r"full_matrices=True .* at most 1"):
        tape_gradient(lambda x: tf.linalg.svd(x, full_matrices=True)[2], np.ones((2, 4)) + np.eye(2, 4))
    with pytest.raises(ValueError, match="matrix norm"):
        tf.norm(M, ord="nuc", axis=(0, 1))
    with pytest.raises(ValueError, match="vector norm"):
        tf.norm(M, ord=-1)
    with pytest.raises(ValueError, match="not both"):
        tf.linalg.matmul(A, A, transpose_a=True, adjoint_a=True)


def test_matrices_lapack_cannot_factor_raise_invalid_argument():
    # TensorFlow raises InvalidArgumentError for inv and solve (TensorFlow 2.21's cholesky
    # fills NaNs instead, and its triangular_solve gives infinities; srcxform raises for
    # both, as NumPy). Also NumPy's LinAlgError, which NumPy code catches.
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    for call, message in (
            (lambda: tf.linalg.inv(singular), r"inv\(f64\[2,2\]\): Singular matrix"),
            (lambda: tf.linalg.solve(singular, np.ones((2, 1))),
             r"solve\(f64\[2,2\], f64\[2,1\]\): Singular matrix"),
            (lambda: tf.linalg.triangular_solve(np.tril(singular) - np.eye(2), np.ones((2, 1))),
             r"triangular_solve\(f64\[2,2\], f64\[2,1\]\): Singular matrix"),
            (lambda: tf.linalg.cholesky(-S),
             r"cholesky\(f64\[3,3\]\): Matrix is not positive definite")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message) as caught:
            call()
        assert isinstance(caught.value, np.linalg.LinAlgError)
        assert "test_linalg.py" in str(caught.value)  # the user's line


def _factored(a, c, b, spd):
    return tf.linalg.inv(a), tf.linalg.solve(c, b), tf.linalg.cholesky(spd)


@pytest.mark.parametrize("jit", ["1", "0"])
def test_compiled_matrices_lapack_cannot_factor_raise_invalid_argument(jit, monkeypatch):
    # Numba's np.linalg raises NumPy's LinAlgError in the kernel: srcxform.runtime.lapack
    # raises srcxform's instead, which the call then raises as eager's, naming the op,
    # the operands and the user's line.
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    compiled = tf.differentiable(_factored)
    a, b = np.stack([A, A]), np.ones((2, 3, 1))
    spd = np.stack([S, S])
    compiled(a, a, b, spd)  # factors
    singular = a.copy()
    singular[1] = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]]
    for args, message in (
            ((singular, a, b, spd), r"inv\(f64\[2,3,3\]\): Singular matrix"),
            ((a, singular, b, spd), r"solve\(f64\[2,3,3\], f64\[2,3,1\]\): Singular matrix"),
            ((a, a, b, -spd), r"cholesky\(f64\[2,3,3\]\): Matrix is not positive definite")):
        for _ in range(2):  # the first call and the warm path
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=message + r"\n  at .*test_linalg.py:\d+") as caught:
                compiled(*args)
            assert isinstance(caught.value, np.linalg.LinAlgError)


def test_einsum_errors():
    with pytest.raises(tf.ShapeError, match="label 'j' has sizes 4 and 3"):
        tf.einsum("ij,jk->ik", M, M)
    with pytest.raises(ValueError, match="names 2 operand"):
        tf.einsum("ij,jk->ik", A)
    with pytest.raises(ValueError, match="do not fit an operand of rank 2"):
        tf.einsum("ijk->i", A)
    with pytest.raises(ValueError, match="at most once"):
        tf.einsum("ij->iz", A)
    with pytest.raises(tf.ShapeError, match="differ in size"):
        tf.tensordot(M, M, 1)
    # A diagonal's axes do not broadcast (helper 124: "ii->i" of a 1x3 gave its row).
    for equation in ("ii->i", "ij,jj->i"):
        with pytest.raises(tf.ShapeError, match="label '[ij]' has sizes 1 and 3"):
            tf.einsum(equation, *[np.ones((1, 3))] * equation.count(","), np.ones((1, 3)))
    assert tf.einsum("j,jj->j", np.ones(3), np.ones((1, 1))).numpy().tolist() == [1, 1, 1]


# ----- NumPy dispatch -----


def _same(got, want):
    assert isinstance(got, tf.Tensor)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-13)


def test_numpy_dispatch():
    a, s, m = (tf.constant(x) for x in (A, S, M))
    for func, args, kwargs in (
            (np.linalg.det, (A,), {}), (np.linalg.inv, (A,), {}), (np.linalg.solve, (A, B), {}),
            (np.linalg.solve, (A, B[:, 0]), {}), (np.linalg.cholesky, (S,), {}),
            (np.linalg.cholesky, (S,), {"upper": True}), (np.linalg.eigvalsh, (S,), {}),
            (np.linalg.eigvalsh, (S,), {"UPLO": "U"}), (np.linalg.norm, (M,), {}),
            (np.linalg.norm, (M, 2), {}), (np.linalg.norm, (M, 1, 0), {}),
            (np.linalg.norm, (M,), {"axis": 1, "keepdims": True}),
            (np.linalg.norm, (M[0], np.inf), {}), (np.trace, (M,), {}),
            (np.trace, (np.arange(24.0).reshape(2, 3, 4),), {"axis1": 1, "axis2": 2}),
            (np.tensordot, (M, M), {"axes": [[0], [0]]}), (np.einsum, ("ij,jk->ik", A, B), {})):
        converted = [tf.constant(x) if isinstance(x, np.ndarray) else x for x in args]
        _same(func(*converted, **kwargs), func(*args, **kwargs))
    sign, logabsdet = np.linalg.slogdet(a)
    _same(sign, 1.0)
    _same(logabsdet, np.linalg.slogdet(A).logabsdet)
    assert np.linalg.eigh(s).eigenvalues.shape == (3,)
    result = np.linalg.svd(m, full_matrices=False)
    _same(result.U * result.S @ result.Vh, M)
    full = np.linalg.svd(m)  # NumPy's default: full matrices
    assert full.U.shape == (3, 3) and full.Vh.shape == (4, 4)
    _same(full.U * full.S @ full.Vh[:3], M)
    _same(np.linalg.svd(m, compute_uv=False), np.linalg.svd(M, compute_uv=False))
    with pytest.raises(TypeError, match="ord='nuc'"):
        np.linalg.norm(m, "nuc")
    with pytest.raises(TypeError, match="out"):
        np.einsum("ij->ji", a, out=np.empty((3, 3)))


def test_det_and_slogdet_of_empty_matrices_compile_as_eagerly():
    """A stack of 0 x 0 matrices: det 1 and log|det| 0, as eagerly; the compiled
    reshape((-1, 0, 0)) could not infer the batch (a CompileError, helper 71)."""
    f = tf.differentiable(lambda a: (tf.linalg.det(a), tf.linalg.slogdet(a)[1]), wrt=())
    for shape in ((0, 0), (2, 0, 0)):
        det, logdet = f(np.zeros(shape))
        np.testing.assert_array_equal(np.asarray(det), np.ones(shape[:-2]))
        np.testing.assert_array_equal(np.asarray(logdet), np.zeros(shape[:-2]))


def _factors(a):
    s, u, v = tf.linalg.svd(a, full_matrices=True)
    return (*tf.linalg.eigh(a[..., :0, :0]), s, u, v, tf.linalg.svd(a, compute_uv=False))


@pytest.mark.slow  # LAPACK's kernels compiled at two ranks: about 35 s of one core
def test_svd_and_eigh_of_empty_matrices_are_numpys_eagerly_and_compiled():
    """Eagerly, eigh and svd of empty matrices raised NumPy's argmax ValueError (the
    column signs of no rows); compiled, svd raised LinAlgError (Numba's svd refuses
    empty matrices; helper 71). NumPy's full u or v is then the identity."""
    for shape in ((0, 3), (3, 0), (2, 0, 0)):
        eager = _factors(tf.constant(np.zeros(shape)))
        for got, want in zip(tf.differentiable(_factors, wrt=())(np.zeros(shape)), eager):
            np.testing.assert_array_equal(np.asarray(got), want.numpy())
            assert np.shape(got) == want.shape
    np.testing.assert_array_equal(_factors(tf.constant(np.zeros((0, 3))))[4].numpy(), np.eye(3))


def _qr_checked(a, q, r):
    """q r = a, q's columns orthonormal, r upper triangular with a diagonal not negative,
    and NumPy's factors up to those signs."""
    q, r = np.asarray(q), np.asarray(r)
    k = q.shape[-1]
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)),
                               atol=1e-12)
    diagonal = np.diagonal(r, axis1=-2, axis2=-1)
    assert np.all(np.tril(r, -1) == 0) and np.all(diagonal >= 0)
    numpy_q, numpy_r = np.linalg.qr(a)
    signs = np.sign(np.diagonal(numpy_r, axis1=-2, axis2=-1))[..., None, :]
    width = numpy_q.shape[-1]
    np.testing.assert_allclose(q[..., :width], numpy_q * signs, atol=1e-12)


def test_qr_is_numpys_with_r_diagonal_not_negative():
    rng = np.random.default_rng(3)
    for shape in ((4, 3), (3, 5), (2, 3, 3), (5, 1)):
        a = rng.standard_normal(shape)
        for full in (False, True):
            q, r = tf.linalg.qr(a, full_matrices=full)
            m, n = shape[-2:]
            assert q.shape == shape[:-2] + (m, m if full else min(m, n))
            _qr_checked(a, q, r)
        q, r = tf.differentiable(np.linalg.qr, wrt=())(tf.constant(a))  # NumPy's name
        _qr_checked(a, q, r)
        assert np.linalg.qr(tf.constant(a), mode="r").shape == r.shape
    with pytest.raises(ValueError, match="'raw' is not supported"):
        np.linalg.qr(tf.constant(a), mode="raw")
    with pytest.raises(TypeError, match="float32 or float64 matrices, got int64"):
        tf.linalg.qr(np.ones((2, 2), np.int64))


def test_lstsq_is_numpys_least_squares_and_minimum_norm_solution():
    rng = np.random.default_rng(5)
    deep, b = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    np.testing.assert_allclose(tf.linalg.lstsq(deep, b).numpy(),
                               np.linalg.lstsq(deep, b, rcond=None)[0], rtol=1e-10)
    wide = deep.T  # the minimum-norm solution of an underdetermined system
    np.testing.assert_allclose(tf.linalg.lstsq(wide, b[:3]).numpy(),
                               np.linalg.lstsq(wide, b[:3], rcond=None)[0], rtol=1e-10)
    ridge = np.linalg.solve(deep.T @ deep + 0.5 * np.eye(3), deep.T @ b)
    np.testing.assert_allclose(tf.linalg.lstsq(deep, b, l2_regularizer=0.5).numpy(), ridge,
                               rtol=1e-12)
    with pytest.raises(NotImplementedError, match="fast=False"):
        tf.linalg.lstsq(deep, b, fast=False)


@pytest.mark.slow  # qr's kernels and its gradient's: about 10 s of one core
def test_qr_compiled_as_eagerly_and_its_gradient_where_it_has_one():
    def both(a):
        return tf.linalg.qr(a) + tf.linalg.qr(a, full_matrices=True)

    rng = np.random.default_rng(4)
    factors = tf.differentiable(both, wrt=())
    for shape in ((4, 3), (3, 5), (2, 6, 4), (0, 3)):
        a = rng.standard_normal(shape)
        for got, want in zip(factors(a), both(tf.constant(a))):
            np.testing.assert_allclose(np.asarray(got), want.numpy(), atol=1e-12)
    tall = rng.standard_normal((4, 2))
    with pytest.raises(NotImplementedError, match=r"qr: the gradient of full_matrices=True .* "
                                                  r"got f64\[4,2\]"):
        tape_gradient(lambda a: tf.reduce_sum(tf.linalg.qr(a, full_matrices=True).q), tall)


@pytest.mark.slow  # eigh's and triangular_solve's kernels: about 10 s of one core
def test_eigh_reads_the_lower_triangle_alone_compiled_as_eagerly():
    """A NaN in the upper triangle, which eigh never reads (NumPy's UPLO='L'): compiled,
    Numba's finiteness check raised LinAlgArgumentError (helper 73). A singular triangle
    is named as triangular_solve's, not as solve's."""
    m = np.array([[1.0, np.nan], [0.0, 2.0]])
    f = tf.differentiable(lambda a: tf.linalg.eigh(a), wrt=())
    for got, want in zip(f(m), tf.linalg.eigh(tf.constant(m))):
        np.testing.assert_array_equal(np.asarray(got), want.numpy())
    solve = tf.differentiable(lambda a, b: tf.linalg.triangular_solve(a, b), wrt=())
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"^triangular_solve\(f64\[2,2\], "
                       r"f64\[2,1\]\): Singular matrix"):
        solve(np.array([[1.0, 0.0], [5.0, 0.0]]), np.ones((2, 1)))


@pytest.mark.slow  # svd's and eigh's float32 kernels: about 15 s of one core
def test_float32_vectors_take_the_same_signs_compiled_as_eagerly():
    # Helper 124: a column whose two largest entries tie took its sign from the first of
    # them; NumPy's LAPACK gave an exact tie, Numba's one an ulp apart, so compiled u, v
    # and eigenvectors came out negated (u diag(s) v^T the same). Ties are within
    # SIGN_TIE epsilons now. (A zero singular value's u and v pair up by either sign:
    # rank-deficient matrices still part, README.)
    matrices = [np.array([[1.0, 2.0], [2.0, 1.0]]),
                np.array([[13.0, 1.0, -8.0], [1.0, 13.0, -8.0], [-8.0, -8.0, 22.0]]) / 6]

    def factors(x):
        return (*tf.linalg.svd(x), *tf.linalg.eigh(x))

    compiled = tf.differentiable(factors, wrt=())
    for m in matrices:
        m = m.astype(np.float32)
        for got, want in zip(compiled(m), factors(tf.constant(m))):
            np.testing.assert_allclose(np.asarray(got), want.numpy(), atol=1e-6)


def test_numpys_norm_of_nothing_is_zero_by_every_ord():
    # Helper 124: the largest ords reduced an empty axis to -inf (tf.norm's, as
    # TensorFlow's, stays so); NumPy gives 0.
    for a, ord, axis in [(np.zeros(0), np.inf, None), (np.zeros((3, 0)), 1, None),
                         (np.zeros((3, 0)), 2, None), (np.zeros((2, 0, 3)), np.inf, 1)]:
        got = np.linalg.norm(tf.constant(a), ord, axis)
        np.testing.assert_array_equal(got.numpy(), np.linalg.norm(a, ord, axis))
    assert tf.norm(np.zeros(0), ord=np.inf).numpy() == -np.inf
    with pytest.raises(ValueError, match="ord"):  # helper 126: 0 where NumPy gives inf
        np.linalg.norm(tf.constant(np.zeros(0)), -1)
