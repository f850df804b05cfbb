"""The compiled path's contract: kernel reuse across batch sizes, the disk cache across
processes, guards, tracing errors, Numba errors, Variables written back, parallel loops."""

import dataclasses
import gc
import os
import pickle
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import srcxform as tf
from srcxform import numba_adapter
from srcxform.jit import backend
from srcxform.numba_adapter import jit as numba_jit


def tanh_loss(w, x):
    return tf.reduce_sum(tf.tanh(x * w))


def test_new_batch_size_reuses_the_kernel():
    f = tf.differentiable(tanh_loss)
    f.grad(np.ones(3), np.arange(3.0))
    kernels = f.cache_info().kernels
    for n in (5, 17, 1000):
        np.testing.assert_allclose(f.grad(np.ones(n), np.arange(n) / n),
                                   (1 - np.tanh(np.arange(n) / n) ** 2) * np.arange(n) / n)
    info = f.cache_info()
    assert info.kernels == kernels and info.misses == 1 and info.hits == 3


def test_a_warm_call_is_tested_again_whenever_its_shape_differs_from_the_last_calls():
    """The entry skips the rank and 1-dims tests for the shape the last call had; any
    other shape is tested: a dim of 1 (which broadcasts) is another kernel."""
    f = tf.differentiable(lambda x, y: tf.reduce_sum(x * y))
    y = np.array([1.0, 2.0, 3.0])
    for rows in (2, 2, 1, 4, 1, 2):
        x = np.ones((rows, 3))
        np.testing.assert_array_equal(f.grad(x, y), np.broadcast_to(y, x.shape))
    assert f.cache_info().kernels == 2  # rows > 1, and rows == 1
    with pytest.raises(tf.ShapeError):
        f.grad(np.ones((2, 4)), y)


def test_warm_calls_never_reach_the_slow_path(monkeypatch):
    f = tf.differentiable(tanh_loss)
    grad = f.grad  # a reference taken before the first call stays on the warm path
    x = np.arange(3.0)
    expected = f.grad(np.ones(3), x)
    monkeypatch.setattr(f, "_kernel", lambda *a: pytest.fail("took the slow path"))
    np.testing.assert_array_equal(grad(np.ones(3), x), expected)
    np.testing.assert_array_equal(tf.grad(tanh_loss)(np.ones(3), x), expected)


def test_each_call_returns_new_output_arrays():
    f = tf.differentiable(tanh_loss, wrt=(0, 1))
    first = f.grad(np.ones(3), np.arange(3.0))
    second = f.grad(np.ones(3), np.arange(3.0))
    assert not any(np.shares_memory(a, b) for a in first for b in second)
    np.testing.assert_array_equal(first, second)


def test_output_arrays_nobody_holds_are_filled_again_and_held_ones_never_are():
    f = tf.differentiable(tanh_loss)
    x = np.arange(3.0)
    view = f.grad(np.ones(3), x)[1:]  # only a view of the first result is kept
    kept = view.copy()
    address = f.grad(np.full(3, 2.0), x).ctypes.data  # dropped at once
    again = f.grad(np.full(3, 3.0), x)
    np.testing.assert_array_equal(view, kept)
    np.testing.assert_allclose(again, (1 - np.tanh(3.0 * x) ** 2) * x)
    if numba_adapter.sole_reference_count() is not None:
        assert again.ctypes.data == address


def test_a_call_the_newest_entry_does_not_fit_reaches_an_older_kernel():
    f = tf.differentiable(lambda x: tf.reduce_sum(x * x))
    assert f(np.ones(3)) == 3.0
    assert f(np.ones((2, 2), np.float32)) == 4.0
    assert f(np.ones(4)) == 4.0
    assert f.cache_info()[:3] == (1, 2, 2)
    assert f(x=np.ones(5)) == 5.0  # keywords take the general path


def test_a_warm_call_with_too_few_or_too_many_arguments_raises_the_functions_error():
    f = tf.differentiable(tanh_loss)
    f.grad(np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match=r"tanh_loss\(\) missing 1 required positional"):
        f.grad(np.ones(3))
    with pytest.raises(TypeError, match=r"tanh_loss\(\) takes 2 positional arguments"):
        f.grad(np.ones(3), np.ones(3), np.ones(3))


def test_contiguous_arrays_skip_the_dispatcher_and_any_other_array_takes_it(monkeypatch):
    """The warm entry calls the compiled code itself only for arrays Numba would type as
    the first call's: C-contiguous, aligned, writeable, NumPy's own float64 dtype object.
    Any other array gets the same gradient through Numba's dispatcher."""
    f = tf.differentiable(tanh_loss)
    w, x = np.linspace(0.5, 1.0, 4), np.arange(4.0)
    expected = f.grad(w, x)
    dispatched = []
    through_dispatcher = backend.Compiled.__call__
    monkeypatch.setattr(backend.Compiled, "__call__",
                        lambda self, *a: dispatched.append(1) or through_dispatcher(self, *a))
    np.testing.assert_array_equal(f.grad(w.copy(), x), expected)
    direct = numba_adapter.enabled()  # else every call takes the dispatcher
    assert len(dispatched) == (0 if direct else 1)
    strided = np.repeat(w, 2)[::2]
    readonly = w.copy()
    readonly.flags.writeable = False
    unaligned = np.frombuffer(bytearray(33), np.float64, count=4, offset=1)
    unaligned[:] = w
    unpickled = pickle.loads(pickle.dumps(w))  # an equal dtype, not NumPy's own object
    for n, odd in enumerate([strided, readonly, unaligned, unpickled], 1):
        np.testing.assert_allclose(f.grad(odd, x), expected, rtol=1e-15)
        assert len(dispatched) == n + (0 if direct else 1)
    assert f.cache_info().kernels == 1


@pytest.mark.parametrize("enabled", [True, False])
def test_a_first_call_pauses_the_garbage_collector_and_leaves_it_as_it_was(enabled):
    seen = []

    def traced(x):
        seen.append(gc.isenabled())
        if x.shape[0] == 2:
            raise ValueError("fails while tracing")
        return tf.reduce_sum(x * x)

    f = tf.differentiable(traced)
    (gc.enable if enabled else gc.disable)()
    try:
        assert f(np.ones(3)) == 3.0 and gc.isenabled() == enabled
        with pytest.raises(ValueError, match="fails while tracing"):
            f(np.ones(2))
        assert gc.isenabled() == enabled
    finally:
        gc.enable()
    assert len(seen) >= 2 and not any(seen)  # both traces (and SRCXFORM_CHECK's eager run)


def test_a_captured_array_made_readonly_takes_the_dispatcher(monkeypatch):
    """A captured array's layout is tested at each call, as an argument's is."""
    scale = np.linspace(1.0, 2.0, 4)
    f = tf.differentiable(lambda w: tf.reduce_sum(w * w * scale))
    w = np.arange(4.0)
    np.testing.assert_array_equal(f.grad(w), 2 * w * scale)
    dispatched = []
    through_dispatcher = backend.Compiled.__call__
    monkeypatch.setattr(backend.Compiled, "__call__",
                        lambda self, *a: dispatched.append(1) or through_dispatcher(self, *a))
    f.grad(w)
    direct = numba_adapter.enabled()  # else every call takes the dispatcher
    assert len(dispatched) == (0 if direct else 1)
    scale.flags.writeable = False
    np.testing.assert_array_equal(f.grad(w), 2 * w * scale)
    assert len(dispatched) == (1 if direct else 2) and f.cache_info().kernels == 1


def test_a_captured_array_of_any_layout_is_called_direct(monkeypatch):
    """A captured read-only broadcast (as a gradient's seed folded while tracing) runs the
    compiled code's own entry, its flags tested exactly at each call (the test above
    changes them), and it is read at each call."""
    base = np.linspace(1.0, 2.0, 4)
    scale = np.broadcast_to(base, (3, 4))
    f = tf.differentiable(lambda w: tf.reduce_sum(w * w * scale))
    w = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(f.grad(w), 2 * w * scale)
    dispatched = []
    through_dispatcher = backend.Compiled.__call__
    monkeypatch.setattr(backend.Compiled, "__call__",
                        lambda self, *a: dispatched.append(1) or through_dispatcher(self, *a))
    base[0] = 5.0
    np.testing.assert_array_equal(f.grad(w), 2 * w * scale)
    assert len(dispatched) == (0 if numba_adapter.enabled() else 1)


def test_a_captured_array_reshaped_in_place_is_traced_again():
    # Its shape is in the kernel's code: a view given another rank crashed the process
    # (Numba unboxed it into the traced rank's struct), one of the same rank read the
    # wrong elements. Traced again, it is what eager computes: broadcast, or the error.
    x = np.linspace(0.1, 1.0, 6).reshape(2, 3)
    scale = (np.arange(6.0).reshape(3, 2) + 1).T  # a transposed view
    f = tf.differentiable(lambda x: tf.reduce_sum(tf.sin(x * scale)))
    f(x)
    scale.shape = (1, 2, 3)
    np.testing.assert_allclose(f(x), np.sum(np.sin(x * scale)), rtol=1e-14)
    other = np.arange(6.0).reshape(2, 3) + 1
    g = tf.differentiable(lambda x: tf.reduce_sum(tf.sin(x * other)))
    g.value_and_grad(x)
    other.shape = (3, 2)
    with pytest.raises(ValueError, match=r"multiply\(f64\[2,3\], f64\[3,2\]\)"):
        g.value_and_grad(x)


def test_a_new_dtype_or_rank_or_static_value_is_a_new_kernel():
    f = tf.differentiable(lambda x, k: tf.reduce_sum(x**k))
    f(np.ones(3), 2)
    f(np.ones(4), 2)
    assert f.cache_info().kernels == 1
    f(np.ones(3, np.float32), 2)
    f(np.ones((3, 2)), 2)
    f(np.ones(3), 3)
    assert f.cache_info().kernels == 4


def test_a_size_the_code_depended_on_retraces():
    f = tf.differentiable(lambda x: tf.reduce_sum(x[:3] * 2.0))  # the slice's length is min(n, 3)
    assert f(np.ones(5)) == 6.0
    assert f(np.ones(2)) == 4.0
    assert f.cache_info().kernels == 2


def test_mismatched_sizes_raise_the_users_shape_error():
    f = tf.differentiable(lambda x, y: tf.reduce_sum(x * y))
    assert f(np.ones(3), np.ones(3)) == 3.0
    with pytest.raises(tf.ShapeError, match=r"multiply\(f64\[3\], f64\[4\]\): dims 3 and 4"):
        f(np.ones(3), np.ones(4))


def test_a_new_process_loads_the_kernel_without_parsing_its_bitcode(tmp_path):
    script = textwrap.dedent("""
        import llvmlite.binding as llvm, numba, numpy as np, srcxform as tf
        parses = []
        parse_bitcode = llvm.parse_bitcode
        llvm.parse_bitcode = lambda data: parses.append(1) or parse_bitcode(data)
        def loss(w, x):
            return tf.reduce_sum(tf.tanh(x * w) ** 2)
        f = tf.differentiable(loss)
        g = f.grad(np.ones(4), np.arange(4.0))
        kernel = f._kernels[next(iter(f._kernels))][0].fn.dispatcher
        print(sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()),
              len(parses) > 0)
        from srcxform.numba_adapter import jit as numba_jit
        from srcxform.runtime import arrays, blas, vecmath
        helpers = [v for m in (arrays, blas, vecmath) for v in vars(m).values()
                   if isinstance(getattr(v, "_cache", None), numba_jit._LazyCache)]
        print(len(helpers) > 5 and all(h._cache._cache is None for h in helpers))
        @numba.njit
        def doubled(kernel, w, x):  # links the kernel in: its bitcode is parsed now
            return kernel(w, x)[1] * 2.0
        print(np.array_equal(doubled(f.kernel(np.ones(4), np.arange(4.0)), np.ones(4),
                                     np.arange(4.0)), 2 * g))
    """)
    path = tmp_path / "loss_script.py"
    path.write_text(script)
    env = dict(os.environ, SRCXFORM_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                           check=True).stdout.split() for _ in range(2)]
    assert runs[0][:2] == ["0", "1"] and runs[0][4] == "True"  # compiled
    # Loaded: no helper's cache made (the kernel holds their code); with the internals
    # off, Numba's own cache, made with the helper.
    assert runs[1][3] == str(numba_adapter.enabled())
    if numba_adapter.enabled():
        assert runs[1] == ["1", "0", "False", "True", "True"]  # loaded from disk, nothing parsed
    else:
        assert runs[1][:2] == ["1", "0"]


def test_with_other_numba_versions_kernels_use_numbas_own_cache_and_helpers_none(monkeypatch):
    """Numba's own cache keeps a kernel's files beside its module in srcxform's cache
    folder; the runtime helpers, whose module is the installed package's, are compiled
    in memory rather than cached beside the package (a read-only install compiles too)."""
    from numba.core.caching import FunctionCache, NullCache

    monkeypatch.setattr(numba_adapter, "VERSIONS", ())
    compiled = backend.Compiled(tanh_loss, "def tanh_loss(w, x): ...")
    assert isinstance(compiled.dispatcher._cache, FunctionCache)
    assert isinstance(numba_jit.helper(tanh_loss)._cache, NullCache)


def test_a_cache_file_it_cannot_restore_is_a_miss():
    from numba.core.registry import cpu_target

    impl = numba_jit.KernelCache(tanh_loss)._impl
    assert impl.rebuild(cpu_target.target_context, ("not", "a", "payload")) is None


@pytest.mark.parametrize("body, what", [
    ("return x if x > 0 else -x", "bool() of a traced value"),
    ("return float(x)", "float() of a traced value"),
    ("return int(x)", "int() of a traced value"),
    ("return x.__len__()", "len() of a traced value"),
    ("return [v for v in x]", "iterating over a traced value"),
])
def test_control_flow_on_traced_values_raises_at_the_users_line(tmp_path, body, what):
    namespace = {"tf": tf}
    source = f"def f(x):\n    {body}\n"
    path = tmp_path / "user_code.py"
    path.write_text(source)
    exec(compile(source, str(path), "exec"), namespace)  # noqa: S102 - a user file's code
    with pytest.raises(tf.TracingError) as err:
        tf.differentiable(namespace["f"])(np.ones(3))
    message = str(err.value)
    assert f"user_code.py:2: {body}" in message and what in message
    assert "srcxform.where" in message or "static" in message


def test_numpy_without_an_op_raises_tracing_error_naming_it():
    with pytest.raises(tf.TracingError, match="numpy.nancumsum"):
        tf.differentiable(lambda x: tf.reduce_sum(np.nancumsum(x)))(np.ones(3))


def test_numba_errors_become_compile_errors_quoting_the_generated_line(monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", "1")
    source = ("import numpy as np\n\n\ndef broken(x):\n    # demo.py:3: y = x.frobnicate()\n"
              "    y = np.frobnicate(x)\n    return y\n")
    fn = backend.load(source, "broken")
    with pytest.raises(tf.CompileError) as err:
        fn(np.ones(2))
    message = str(err.value)
    assert "y = np.frobnicate(x)" in message and "demo.py:3" in message
    assert err.value.__cause__ is not None


def test_interpreted_source_gives_the_compiled_result(monkeypatch):
    args = (np.linspace(0.1, 1, 6), np.linspace(-1, 1, 6))
    compiled = tf.differentiable(tanh_loss, wrt=(0, 1)).value_and_grad(*args)
    monkeypatch.setenv("SRCXFORM_JIT", "0")
    interpreted = tf.differentiable(tanh_loss, wrt=(0, 1)).value_and_grad(*args)
    np.testing.assert_allclose(compiled[0], interpreted[0], rtol=1e-14)
    for a, b in zip(compiled[1], interpreted[1]):
        np.testing.assert_allclose(a, b, rtol=1e-14)


def test_parallel_makes_outer_loops_pranges_with_the_same_result():
    def rosenbrock(x):
        return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    x = np.linspace(-1.5, 1.5, 1001)
    serial = tf.differentiable(rosenbrock).value_and_grad(x)
    f = tf.differentiable(rosenbrock, parallel=True)
    parallel = f.value_and_grad(x)
    assert "prange" in f.source(x)
    np.testing.assert_allclose(parallel[0], serial[0], rtol=1e-12)
    np.testing.assert_allclose(parallel[1], serial[1], rtol=1e-12)


def test_a_training_step_with_a_tape_inside_updates_variables_as_eagerly():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)

    def make_step(w, b):
        def step(X, y):
            with tf.GradientTape() as tape:
                residual = X @ w + b - y
                loss = tf.reduce_mean(residual * residual)
            gw, gb = tape.gradient(loss, [w, b])
            w.assign_sub(0.1 * gw)
            b.assign_sub(0.1 * gb)
            return loss
        return step

    eager_w, eager_b = tf.Variable(np.zeros(3)), tf.Variable(0.0, dtype=tf.float64)
    w, b = tf.Variable(np.zeros(3)), tf.Variable(0.0, dtype=tf.float64)
    eager_step, compiled_step = make_step(eager_w, eager_b), tf.differentiable(make_step(w, b))
    for _ in range(20):
        np.testing.assert_allclose(compiled_step(X, y), eager_step(X, y).numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.numpy(), eager_w.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.numpy(), eager_b.numpy(), rtol=1e-12)
    assert compiled_step.cache_info().kernels == 1


def test_second_order_by_composition_matches_finite_differences():
    f = tf.differentiable(lambda x: tf.reduce_sum(x**3 * tf.sin(x)))
    d2 = tf.differentiable(lambda x: tf.reduce_sum(f.grad(x)))  # grad needs a scalar
    x, v, eps = np.linspace(0.2, 1.0, 4), np.array([1.0, -2.0, 0.5, 3.0]), 1e-6
    hvp_fd = (f.grad(x + eps * v) - f.grad(x - eps * v)) / (2 * eps)
    hessian = np.diag(6 * x * np.sin(x) + 6 * x**2 * np.cos(x) - x**3 * np.sin(x))
    np.testing.assert_allclose(tf.hessian(f.fn)(x) @ v, hvp_fd, rtol=1e-6)
    np.testing.assert_allclose(tf.hessian(f.fn)(x), hessian, rtol=1e-10)
    # The gradient of the summed gradient: the hessian's row sums.
    np.testing.assert_allclose(d2.grad(x), hessian.sum(axis=0), rtol=1e-10)


@pytest.mark.parametrize("shape, op, as_index", [
    ((1, 4), lambda x: tf.squeeze(x, 0), True), ((4, 1), lambda x: tf.squeeze(x, 1), True),
    ((4,), lambda x: tf.expand_dims(x, 0), True), ((4,), lambda x: tf.expand_dims(x, 1), True),
    ((2, 1, 3), lambda x: tf.expand_dims(tf.squeeze(x, 1), 2), True),
    ((2, 3), lambda x: tf.reshape(x, (3, 2)), False)])
def test_a_reshape_that_only_moves_dims_of_one_is_an_index(shape, op, as_index):
    f = tf.differentiable(lambda x: tf.reduce_sum(tf.sin(op(x)) * op(x)))
    x = np.arange(float(np.prod(shape))).reshape(shape).T.copy().T  # Fortran order
    assert ("np.ascontiguousarray(" not in f.source(x)) == as_index
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = f.fn(xt)
    np.testing.assert_allclose(f(x), y.numpy(), rtol=1e-12)
    np.testing.assert_allclose(f.grad(x), tape.gradient(y, xt).numpy(), rtol=1e-12)


@pytest.mark.parametrize("jit", ["0", "1"])
def test_a_scalar_given_axes_is_an_array(jit, monkeypatch):
    """x[None] of a rank-0 value: generated code keeps scalars as scalars, which cannot be
    indexed (a TypeError as Python, a CompileError from Numba, before the fix)."""
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    f = tf.differentiable(lambda v: tf.reduce_sum(tf.reduce_min(v)[None, None] * v))
    x = np.array([-1.0, 0.5, 2.0])
    assert f(x) == -1.5
    np.testing.assert_array_equal(f.grad(x), [-1.0 + 1.5, -1.0, -1.0])


@pytest.mark.parametrize("fn", [
    lambda x: tf.reduce_sum(tf.vmap(lambda s: s[None])(x)),
    lambda x: tf.fori_loop(0, 3, lambda i, s: tf.reduce_sum(tf.sin(s[None, None])),
                           tf.reduce_sum(x))])
def test_the_gradient_of_a_scalar_given_axes_in_a_loop_body(fn):
    """x[None]'s transpose makes a scalar of an array of ones: its element, where Numba
    could not fill a 0-d array of zeros (a CompileError in a vmap or fori_loop body)."""
    x = np.array([3.0, -1.0, 2.0, 0.5])
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt)
    np.testing.assert_allclose(tf.differentiable(fn).grad(x), tape.gradient(y, xt).numpy(),
                               rtol=1e-14)


def test_float32_extremes_run_as_python(monkeypatch):
    """SRCXFORM_JIT=0: a runtime helper called from Python returns a Python float, which
    met a float32 at reduce_max's next step (Numba's TypingError, before the fix)."""
    monkeypatch.setenv("SRCXFORM_JIT", "0")

    def fn(x):
        return tf.reduce_sum(tf.maximum(x, tf.reduce_max(x)) + tf.reduce_min(x))

    f, x = tf.differentiable(fn), np.array([-1.0, 0.5, 2.0], np.float32)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt)
    assert f(x).dtype == np.float32 and float(f(x)) == 3.0
    np.testing.assert_array_equal(f.grad(x), tape.gradient(y, xt).numpy())


def test_a_sum_beside_vectorizable_terms_adds_them_in_lanes():
    """The loop computing the terms stores them and calls vecmath.exp, which LLVM
    vectorizes; the chunk's sum is added after it (codegen/lanes.py). With the sum in the
    loop, it would call libm's exp an element at a time."""
    def loss(w, b, X, y):
        logits = X @ w + b
        return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))

    rng = np.random.default_rng(1)
    w, X, y = rng.normal(size=3), rng.normal(size=(40, 3)), (rng.random(40) < 0.5) * 1.0
    f = tf.differentiable(loss, wrt=(0, 1))
    source = f.source(w, 0.3, X, y)
    assert re.search(r"vecmath\.exp\(-t\d+_i\)", source), source  # the sigmoid's
    assert re.search(r"\n( +)bb_terms\[i0_offset_1\] = \w+_i\n", source), source
    assert "bb += arrays.lane_sum(bb_terms, i0_count_1)" in source
    residual = (1 / (1 + np.exp(-(X @ w + 0.3))) - y) / len(y)  # the analytic gradient
    got = f.grad(w, 0.3, X, y)
    np.testing.assert_allclose(got[0], X.T @ residual, rtol=1e-12)
    np.testing.assert_allclose(got[1], residual.sum(), rtol=1e-12)


def test_generated_source_reads_as_the_design_shows():
    f = tf.differentiable(tanh_loss, wrt=(0, 1))
    source = f.source(np.ones(3), np.arange(3.0))
    # One loop computes the value and the gradient: its section says so, outside it.
    assert "\n    # ---- forward and adjoint, fused ----\n    t2 = np.float64(0.0)\n" in source
    assert "i0 = i0_start + i0_offset" in source and "tanh(t0_i)" in source
    assert "# test_compiler_api.py:" in source  # origin comments name the user's lines
    assert "return (s" not in source  # no invented names


def test_a_function_of_a_non_scalar_output_shows_its_forward_kernel():
    """source and ir of a function with no gradient (a vector, a Jacobian) show the
    kernel its call runs; they raised grad's TypeError. Its gradient still raises."""
    f = tf.differentiable(lambda x: tf.tanh(x) * 2.0)
    x = np.linspace(-1.0, 1.0, 4)
    assert "tanh" in f.source(x) and "adjoint" not in f.source(x) and "tanh" in f.ir(x)
    with pytest.raises(TypeError, match="scalar float output"):
        f.grad(x)
    with pytest.raises(TypeError, match="scalar float output"):
        f.kernel(x)


def test_the_kernel_runs_a_whole_training_loop_inside_njit():
    import numba

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = X @ np.array([1.0, -2.0, 0.5])
    penalty = np.array([1.0, 2.0, 3.0])  # a captured constant: bound into the kernel

    def loss(w, X, y):
        r = X @ w - y
        return tf.reduce_mean(r * r) + 0.01 * tf.reduce_sum(w * penalty)

    f = tf.differentiable(loss)

    @numba.njit
    def train(kernel, w, X, y, steps, lr):
        for _ in range(steps):
            _, g = kernel(w, X, y)
            w = w - lr * g
        return w

    w = train(f.kernel(np.zeros(3), X, y), np.zeros(3), X, y, 30, 0.1)
    expected = np.zeros(3)
    for _ in range(30):
        expected = expected - 0.1 * f.grad(expected, X, y)
    np.testing.assert_allclose(w, expected, rtol=1e-12)


@pytest.mark.filterwarnings("ignore:First-class function type feature is experimental")
def test_jitted_code_calls_the_kernel_also_as_a_first_class_function_value():
    """Kernels are compiled without Numba's C-callable wrapper; a tuple of functions
    types its items as first-class function values."""
    import numba

    f = tf.differentiable(lambda x: tf.reduce_sum(x * x))
    x = np.arange(3.0)

    @numba.njit
    def first_of(kernels, x):
        return kernels[0](x)

    value, grad = first_of((f.kernel(x),), x)
    assert value == 5.0
    np.testing.assert_array_equal(grad, 2 * x)


def test_a_method_decorated_in_a_class_body_compiles_per_instance():
    class Model:
        def __init__(self, scale):
            self.w = tf.Variable(np.full(3, scale))

        @tf.differentiable
        def loss(self, x):
            return tf.reduce_sum(self.w * x)

    a, b = Model(1.0), Model(2.0)
    x = np.arange(3.0)
    assert a.loss(x) == 3.0 and b.loss(x) == 6.0
    np.testing.assert_allclose(b.loss.grad(x), np.full(3, 2.0))
    assert a.loss is a.loss and a.loss.cache_info().kernels == 1


def test_a_method_called_through_its_class_runs_as_bound_in_every_form():
    # Helper 122: Slotted.f.value_and_grad(s, x) raised "cannot pass a Slotted" (a plain
    # method, and tf.function's since helper 97, take it).
    class Slotted:
        __slots__ = ("w",)

        def __init__(self):
            self.w = np.array([1.0, 2.0])

        @tf.differentiable
        def loss(self, x):
            return tf.reduce_sum(self.w * x * x)

    s, x = Slotted(), np.array([0.5, 1.0])
    for _ in range(2):  # the slow path, then the warm entries passing it on
        assert Slotted.loss(s, x) == s.loss(x) == 2.25
        np.testing.assert_array_equal(Slotted.loss.grad(s, x), [1.0, 4.0])
        value, grad = Slotted.loss.value_and_grad(s, x)
        assert value == 2.25 and grad.tolist() == [1.0, 4.0]


def test_a_pytree_whose_class_holds_the_function_is_an_argument():
    # Helper 126: loss.grad(p, x), p a registered pytree whose class holds loss (p.loss(x)
    # for short), was taken for a method's call through its class: the gradient wrt x.
    @tf.differentiable
    def loss(p, x):
        return tf.reduce_sum(p.w * x * x)

    class Params:
        def __init__(self, w):
            self.w = w

        short = loss

    tf.register_pytree_node(Params, lambda p: ((p.w,), None), lambda _, w: Params(*w))
    p, x = Params(np.array([1.0, 10.0, 100.0])), np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(loss.grad(p, x).w, [1.0, 4.0, 9.0])


def test_a_method_of_a_dataclass_or_a_slots_class_compiles_per_instance():
    # A dataclass's instances do not hash, a __slots__ class's take no weak reference:
    # both raised a raw TypeError from weakref (helper 81).
    @dataclasses.dataclass
    class Scaled:
        k: float

        @tf.function
        def __call__(self, x):
            return x * self.k

        @tf.differentiable
        def loss(self, x):
            return tf.reduce_sum(x * self.k)

    class Slotted:
        __slots__ = ("k",)

        def __init__(self, k):
            self.k = k

        @tf.differentiable
        def loss(self, x):
            return tf.reduce_sum(x * self.k)

    x = np.array([1.0, 2.0])
    for make in (Scaled, Slotted):
        a, b = make(2.0), make(2.0)  # equal dataclasses, each its own compiled method
        assert a.loss(x) == 6.0 and a.loss is a.loss and a.loss is not b.loss
        np.testing.assert_array_equal(b.loss.grad(x), [2.0, 2.0])
    assert Scaled(3.0)(x).numpy().tolist() == [3.0, 6.0]
