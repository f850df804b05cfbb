"""srcxform.random and nn.dropout: draws made by the kernel from a carried state.

Eager and compiled draws come from the same Philox source (srcxform/core/philox.py), so the
tests compare them bit for bit; distributions are checked on 1e5 draws.
"""

import threading

import numpy as np
import pytest

import srcxform as tf
from srcxform.core import philox
from srcxform.runtime import philox_jit

Generator = tf.random.Generator


def test_philox_gives_the_published_known_answer():
    # Random123's kat_vectors: philox4x32, 10 rounds, counter 0, key 0.
    words = philox.blocks(np.zeros(1, np.uint64), 0, 0)
    assert [int(w[0]) for w in words] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_a_seed_reproduces_the_stream_and_draws_continue_it():
    a, b = Generator.from_seed(7), Generator.from_seed(7)
    first = a.normal([4]).numpy()
    np.testing.assert_array_equal(b.normal([4]), first)
    assert not np.array_equal(a.normal([4]).numpy(), first)  # the state moved on
    assert not np.array_equal(Generator.from_seed(8).normal([4]).numpy(), first)
    # Element i comes from counter + i: one draw of 6 is two draws of 2 and 4.
    whole, parts = Generator.from_seed(7), Generator.from_seed(7)
    np.testing.assert_array_equal(
        whole.uniform([6]), np.concatenate([parts.uniform([2]), parts.uniform([4])]))
    assert whole.state.numpy().tolist() == parts.state.numpy().tolist()
    assert whole.state.numpy()[0] == 6


def test_reset_and_from_state_repeat_draws():
    g = Generator.from_seed(3)
    g.normal([5])
    state = g.state
    later = g.uniform([3, 2], -1.0, 1.0).numpy()
    np.testing.assert_array_equal(Generator.from_state(state).uniform([3, 2], -1.0, 1.0), later)
    g.reset(state)
    np.testing.assert_array_equal(g.uniform([3, 2], -1.0, 1.0), later)


def test_a_state_past_int64s_range_draws_as_compiled_and_wraps():
    """A counter past 2**63 - 1 and a negative key: their bits, as uint64, as the compiled
    draws take them (eager raised OverflowError)."""
    for state in [(2**63 - 2, 5), (5, -1), (-3, 7)]:
        eager, compiled = Generator.from_state(state), Generator.from_state(state)
        f = tf.differentiable(lambda g=compiled: g.normal([3], dtype=tf.float64))
        for _ in range(2):
            np.testing.assert_array_equal(eager.normal([3], dtype=tf.float64), f())
        np.testing.assert_array_equal(eager.state, compiled.state)
    assert Generator.from_state((2**63 - 2, 5)).normal([3]).shape == (3,)


def _draws(generator):
    def draws(x):
        n = x.shape[0]
        return (generator.normal(x.shape),
                generator.uniform([n], -2.0, 3.0, dtype=tf.float64),
                generator.uniform(x.shape, -3, 9, dtype=tf.int32),
                generator.truncated_normal([n, 8], 1.0, 2.0, dtype=tf.float64),
                generator.truncated_normal([]),
                tf.random.shuffle(x, seed=4))

    return draws


@pytest.mark.slow
@pytest.mark.parametrize("jit", ["1", "0"])
def test_compiled_draws_equal_eager_ones_for_two_batch_sizes(jit, monkeypatch):
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    compiled = tf.differentiable(_draws(Generator.from_seed(5)))
    eager = _draws(Generator.from_seed(5))
    x = np.arange(128.0, dtype=np.float32).reshape(64, 2)
    tf.random.set_seed(1)
    got = [compiled(x), compiled(x), compiled(x[:5])]
    tf.random.set_seed(1)
    want = [eager(tf.constant(x)), eager(tf.constant(x)), eager(tf.constant(x[:5]))]
    assert compiled.cache_info().kernels == 1
    for g, w in zip(got, want):
        assert [a.dtype for a in g] == [b.dtype for b in w]
        for a, b in zip(g, w):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(got[0][0].numpy(), got[1][0].numpy())  # each call draws anew
    # 512 truncated draws: some were redrawn (P(none) ~ 4e-11), and all are within 2 std.
    assert np.abs(np.asarray(got[0][3]) - 1.0).max() < 4.0
    shuffled = np.asarray(got[0][5])
    assert not np.array_equal(shuffled, x)
    np.testing.assert_array_equal(shuffled[np.argsort(shuffled[:, 0])], x)
    # One compiled helper a distribution, whatever the shapes drawn ([n, 8] and []); none
    # where Numba's cache had the kernel, whose code holds the helper's.
    assert len(philox_jit.truncated_normal.signatures) <= 1


def _dropped_sum(x):
    return tf.reduce_sum(tf.nn.dropout(x, 0.5))


def test_compiled_dropout_draws_fresh_masks_that_a_seed_repeats():
    # check=True runs the eager tape beside the first call, from the same generator state.
    f = tf.differentiable(_dropped_sum, check=True)
    x = np.linspace(1.0, 2.0, 200).astype(np.float32)
    tf.random.set_seed(3)
    first, second = f.grad(x), f.grad(x)  # the gradient is the mask times 2
    assert set(np.unique(first)) == {0.0, 2.0}
    assert not np.array_equal(first, second)
    tf.random.set_seed(3)
    np.testing.assert_array_equal(f.grad(x), first)
    np.testing.assert_array_equal(f.grad(x), second)
    tf.random.set_seed(3)
    eager = tf.nn.dropout(x, 0.5).numpy()
    np.testing.assert_array_equal(eager, np.where(first != 0, x * np.float32(2.0), 0.0))


def test_dropout_gradient_is_exactly_the_mask_times_the_scale():
    x = tf.constant(np.random.default_rng(0).normal(size=(60, 50)).astype(np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.dropout(x, 0.25, seed=9)
    scale = np.float32(1 / (1 - 0.25))
    keep = y.numpy() != 0
    np.testing.assert_array_equal(tape.gradient(y, x), keep * scale)
    np.testing.assert_array_equal(y, np.where(keep, x.numpy() * scale, 0.0))
    assert abs(keep.mean() - 0.75) < 0.03


def test_dropout_noise_shape_keeps_or_drops_whole_rows():
    y = tf.nn.dropout(tf.ones([40, 6]), 0.5, noise_shape=[None, 1]).numpy()
    assert all(len(set(row)) == 1 for row in y)
    assert set(np.unique(y)) == {0.0, 2.0}
    assert tf.nn.dropout(tf.ones([3]), 0.0).numpy().tolist() == [1.0, 1.0, 1.0]


def test_dropout_rate_may_be_a_scalar_tensor():
    x = tf.constant(np.linspace(1.0, 2.0, 400).astype(np.float32))
    rate = tf.constant(0.25)
    tf.random.set_seed(4)
    number = tf.nn.dropout(x, 0.25).numpy()
    for given in (rate, tf.constant(0.25, tf.float64), tf.Variable(0.25), np.float32(0.25)):
        tf.random.set_seed(4)
        y = tf.nn.dropout(x, given)
        assert y.dtype == tf.float32  # a float64 rate is cast to x's dtype
        np.testing.assert_array_equal(y.numpy(), number)
    tf.random.set_seed(4)
    # Its gradient: d/drate of x * mask / (1 - rate) is x * mask / (1 - rate)².
    with tf.GradientTape() as tape:
        tape.watch(rate)
        y = tf.reduce_sum(tf.nn.dropout(x, rate))
    kept = number != 0  # the mask drawn after set_seed(4): the one y was drawn with
    np.testing.assert_allclose(tape.gradient(y, rate), np.sum(x.numpy() * kept) / 0.75 ** 2,
                               rtol=1e-5)


def _dropout_at(x, rate):
    return tf.nn.dropout(x, rate) * 3.0


@pytest.mark.parametrize("jit", ["1", "0"])
def test_compiled_dropout_rate_is_a_traced_argument(jit, monkeypatch):
    """One kernel for every rate (a float argument is traced), drawing what eager draws
    from the same seed; the gradient wrt the rate as eager's."""
    monkeypatch.setenv("SRCXFORM_JIT", jit)
    f = tf.differentiable(_dropout_at)
    total = tf.differentiable(lambda x, rate: tf.reduce_sum(_dropout_at(x, rate)), wrt=(0, 1))
    x = np.linspace(1.0, 2.0, 2000)
    for rate in (0.25, 0.5, 0.75):
        tf.random.set_seed(8)
        got = f(x, rate).numpy()
        tf.random.set_seed(8)
        np.testing.assert_array_equal(got, _dropout_at(x, rate).numpy())
        assert abs(np.mean(got == 0) - rate) < 0.04
        tf.random.set_seed(8)
        gx, grate = total.grad(x, rate)
        keep = got != 0
        np.testing.assert_allclose(gx, keep * 3.0 / (1 - rate), rtol=1e-12)
        np.testing.assert_allclose(grate, np.sum(x * keep) * 3.0 / (1 - rate) ** 2, rtol=1e-12)
    assert f.cache_info().kernels == total.cache_info().kernels == 1  # for all rates


def test_general_dropout_draws_from_the_generator_it_is_given():
    """A model's own Generator: twins seeded alike drop the same elements, compiled or not,
    and each compiled call draws a fresh mask from the state it advances."""
    def dropped(x, noise):
        return tf.nn.experimental.general_dropout(x, 0.5, noise.uniform)

    x = np.linspace(1.0, 2.0, 100)
    eager_noise, compiled_noise = tf.random.Generator.from_seed(5), \
        tf.random.Generator.from_seed(5)
    compiled = tf.differentiable(lambda x: dropped(x, compiled_noise))
    first = compiled(x).numpy()
    np.testing.assert_array_equal(first, dropped(x, eager_noise))
    mask = tf.random.Generator.from_seed(5).uniform([100], dtype=tf.float64).numpy() >= 0.5
    np.testing.assert_array_equal(first, np.where(mask, 2 * x, 0.0))
    second = compiled(x).numpy()
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(second, dropped(x, eager_noise))


def _train_step(w, x, y):
    with tf.GradientTape() as tape:
        h = tf.nn.dropout(tf.tanh(tf.matmul(x, w)), 0.3)
        loss = tf.reduce_mean(tf.square(tf.reduce_sum(h, axis=1) - y))
    w.assign_sub(0.1 * tape.gradient(loss, w))
    return loss


def test_a_compiled_training_step_with_dropout_matches_the_eager_step():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(32, 5)), rng.normal(size=32)
    start = rng.normal(size=(5, 4))
    eager_w, compiled_w = tf.Variable(start), tf.Variable(start)
    step = tf.differentiable(_train_step)
    tf.random.set_seed(11)
    eager = [_train_step(eager_w, x, y).numpy() for _ in range(3)]
    eager_state = tf.random.get_global_generator().state.numpy()
    tf.random.set_seed(11)
    compiled = [float(step(compiled_w, x, y)) for _ in range(3)]
    np.testing.assert_allclose(compiled, eager, rtol=1e-12)
    np.testing.assert_allclose(compiled_w.numpy(), eager_w.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(tf.random.get_global_generator().state, eager_state)
    assert len(set(eager)) == 3


def test_distributions_have_their_moments():
    g, n = Generator.from_seed(1), 100_000
    z = g.normal([n], dtype=tf.float64).numpy()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    z = g.normal([n], mean=3.0, stddev=2.0).numpy()
    assert z.dtype == np.float32 and abs(z.mean() - 3) < 0.04 and abs(z.std() - 2) < 0.04
    u = g.uniform([n]).numpy()
    assert u.dtype == np.float32 and 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    assert np.all(u * 2.0**24 == np.floor(u * 2.0**24))  # float32's grid: never rounds to 1
    u = g.uniform([1000], minval=0.5).numpy()  # maxval 1
    assert 0.5 <= u.min() and u.max() < 1 and abs(u.mean() - 0.75) < 0.03
    u = g.uniform([n], -2.0, 5.0, dtype=tf.float64).numpy()
    assert -2 <= u.min() and u.max() < 5 and abs(u.mean() - 1.5) < 0.04
    t = g.truncated_normal([n], dtype=tf.float64).numpy()
    # The standard normal truncated to [-2, 2] has standard deviation 0.87962.
    assert np.abs(t).max() < 2 and abs(t.mean()) < 0.02 and abs(t.std() - 0.87962) < 0.01
    t = g.truncated_normal([n], mean=1.0, stddev=3.0).numpy()
    assert np.abs(t - 1).max() < 6 and abs(t.std() - 3 * 0.87962) < 0.03
    k = g.uniform([n], minval=-3, maxval=4, dtype=tf.int32).numpy()
    assert k.dtype == np.int32
    values, counts = np.unique(k, return_counts=True)
    assert values.tolist() == list(range(-3, 4))
    assert np.abs(counts / (n / 7) - 1).max() < 0.05
    assert g.uniform([1000], dtype=tf.float16).numpy().max() < 1


def test_op_level_seeds_and_the_global_seed_repeat_sequences():
    tf.random.set_seed(5)
    a = [tf.random.normal([3], seed=1).numpy(), tf.random.normal([3], seed=1).numpy(),
         tf.random.uniform([2]).numpy()]
    tf.random.set_seed(5)
    b = [tf.random.normal([3], seed=1).numpy(), tf.random.normal([3], seed=1).numpy(),
         tf.random.uniform([2]).numpy()]
    for p, q in zip(a, b):
        np.testing.assert_array_equal(p, q)
    assert not np.array_equal(a[0], a[1])
    tf.random.set_seed(6)
    assert not np.array_equal(tf.random.normal([3], seed=1).numpy(), a[0])


def test_split_gives_independent_generators_deterministically():
    first = [g.normal([4]).numpy() for g in Generator.from_seed(2).split(2)]
    again = [g.normal([4]).numpy() for g in Generator.from_seed(2).split(2)]
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first[0], first[1])


def test_generators_in_threads_are_independent_and_deterministic():
    results = {1: [], 2: []}

    def run(seed):
        g = Generator.from_seed(seed)
        results[seed].extend(g.normal([50]).numpy() for _ in range(30))

    threads = [threading.Thread(target=run, args=(seed,)) for seed in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seed, draws in results.items():
        alone = Generator.from_seed(seed)
        np.testing.assert_array_equal(draws, [alone.normal([50]) for _ in range(30)])
    assert not np.array_equal(results[1][0], results[2][0])


def test_threads_sharing_a_generator_get_disjoint_counters():
    shared, drawn = Generator.from_seed(4), []

    def run():
        drawn.extend(np.concatenate([shared.uniform([7]).numpy() for _ in range(40)]))

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Each draw had its own counters, so together they are the stream's first 840 values.
    np.testing.assert_array_equal(np.sort(drawn), np.sort(Generator.from_seed(4).uniform([840])))


def _splits(x):
    return tf.random.get_global_generator().split(2)[0].normal([2]) + x


def test_bad_arguments_raise():
    g = Generator.from_seed(0)
    with pytest.raises(ValueError, match="maxval"):
        g.uniform([2], dtype=tf.int32)
    with pytest.raises(TypeError, match="float dtype"):
        g.normal([2], dtype=tf.int32)
    with pytest.raises(ValueError, match="rate"):
        tf.nn.dropout(tf.ones([2]), 1.0)
    with pytest.raises(ValueError, match=r"scalar float tensor, got f32\[1\]"):
        tf.nn.dropout(tf.ones([2]), tf.constant([0.5]))
    with pytest.raises(ValueError, match=r"scalar float tensor, got i32\[\]"):
        tf.nn.dropout(tf.ones([2]), tf.constant(0))
    with pytest.raises(ValueError, match="rate"):
        tf.nn.dropout(tf.ones([2]), "0.5")
    with pytest.raises(TypeError, match="float"):
        tf.nn.dropout(tf.ones([2], tf.int32), 0.5)
    with pytest.raises(ValueError, match="negative"):
        g.normal([2, -1])
    assert g.state.numpy()[0] == 0  # a draw that raised took no counters
    with pytest.raises(ValueError, match="algorithm"):
        Generator.from_seed(0, alg="threefry")
    with pytest.raises(tf.TracingError, match="split before"):
        tf.differentiable(_splits)(np.ones(2))


@pytest.mark.parametrize("low, high, dtype", [
    (-2**31, 2**31 - 1, tf.int32), (-2_000_000_000, 2_000_000_000, tf.int32),
    (-2**62, 2**62, tf.int64), (-2**63, 2**63 - 1, tf.int64), (3, 7, tf.int32)])
def test_integer_uniform_stays_in_its_range_wider_than_the_dtype(low, high, dtype):
    """maxval - minval wrapped in the bounds' dtype where they were tensors: every draw
    was minval, or outside [minval, maxval); a full int64 range raised from mod (helper
    95). Python-int and tensor bounds, eager and compiled, give the same draws."""
    compiled = Generator.from_seed(5)
    draw = tf.differentiable(lambda lo, hi: compiled.uniform((4000,), lo, hi, dtype), wrt=())
    bounds = tf.constant(low, dtype), tf.constant(high, dtype)
    draws = [Generator.from_seed(5).uniform((4000,), low, high, dtype).numpy(),
             Generator.from_seed(5).uniform((4000,), *bounds, dtype).numpy(),
             np.asarray(draw(*(b.numpy() for b in bounds)))]
    for d in draws:
        np.testing.assert_array_equal(d, draws[0])
    assert low <= draws[0].min() and draws[0].max() < high
    quarter = (high - low) // 4  # each quarter of the range is drawn about 1000 times
    counts = np.histogram(draws[0].astype(float), [low + k * quarter for k in range(5)])[0]
    assert counts.min() > 850, counts


def test_an_empty_integer_range_of_tensors_raises():
    """TensorFlow raises; from tensors it drew values in (minval - 2, minval] (helper 95).
    Compiled, where the bounds are known at run time only, its mod by 0 raises."""
    g = Generator.from_seed(0)
    with pytest.raises(ValueError, match=r"need minval < maxval, got \[5, 3\)"):
        g.uniform((4,), tf.constant(5), tf.constant(3), tf.int32)
    draw = tf.differentiable(lambda lo, hi: g.uniform((4,), lo, hi, tf.int32), wrt=())
    with pytest.raises(ZeroDivisionError):
        draw(np.int32(5), np.int32(5))


@pytest.mark.parametrize("low, high, dtype", [
    (0, 2**40, tf.int32), (np.int64(0), np.int64(9), tf.int32),
    (np.uint64(2**64 - 2), np.uint64(2**64 - 1), tf.int64)])
def test_integer_uniform_bounds_of_another_dtype_raise(low, high, dtype):
    """Helper 98 on 7be488f: they wrapped into the draw's dtype (half of the draws in
    [0, 2**40) as int32 were negative; uint64 bounds near 2**64 drew -2 only)."""
    with pytest.raises(TypeError, match="the bounds of an int.. draw must be"):
        Generator.from_seed(0).uniform((3,), low, high, dtype)


def test_draw_parameters_take_the_draws_dtype():
    """A NumPy float64 mean, stddev, bound, dropout rate or label smoothing made float32
    results float64; a list bound raised a raw TypeError (helper 95)."""
    g = Generator.from_seed(0)
    x = tf.ones(4)
    assert {g.normal((2,), mean=np.float64(1.0)).dtype, g.normal((2,), stddev=np.array(2.0)).dtype,
            g.truncated_normal((2,), mean=np.float64(1.0)).dtype,
            g.uniform((2,), maxval=np.float64(3.0)).dtype, tf.nn.dropout(x, np.float64(0.5)).dtype,
            tf.keras.losses.binary_crossentropy(x * 0.5, x * 0.3, label_smoothing=np.float64(0.1)).dtype,
            tf.keras.losses.categorical_crossentropy(x * 0.5, x * 0.3,
                                                     label_smoothing=np.float64(0.1)).dtype,
            } == {tf.float32}
    draws = g.uniform((3000, 3), maxval=[5.0, 15.0, 25.0]).numpy()
    np.testing.assert_allclose(draws.max(0), [5.0, 15.0, 25.0], rtol=0.01)


def test_tensorflows_seed_and_state_forms():
    """set_seed(None) and TensorFlow's three-word Philox state raised raw errors (helper 95)."""
    tf.random.set_seed(None)
    assert tf.random.uniform((2,)).shape == (2,)
    assert tf.random.Generator.from_state([5, 0, 77]).state.numpy().tolist() == [5, 77]
    with pytest.raises(ValueError, match="counter, 0, key"):
        tf.random.Generator.from_state([5, 1, 77])


def test_a_draw_in_a_compiled_loop_or_vmap_says_so():
    """Both said a Variable 'rng_counter:0' was assigned, which the user never made, and
    vmap's told them to assign after the vmap (helper 96)."""
    def loop(x):
        s = 0.0
        while s < x[0]:
            s = s + tf.reduce_sum(tf.nn.dropout(x, 0.5))
        return s

    with pytest.raises(tf.TracingError, match="a random draw .* inside a compiled loop"):
        tf.differentiable(loop)(np.ones(3))
    noisy = tf.differentiable(lambda a: a + tf.random.uniform(()))
    with pytest.raises(tf.TracingError, match="<lambda> draws random numbers"):
        tf.vmap(noisy)(np.zeros(3))


def test_a_generator_copies_and_pickles_at_its_state():
    import copy
    import pickle

    gen = Generator.from_seed(1)
    copies = [pickle.loads(pickle.dumps(gen)), copy.deepcopy(gen)]
    first = gen.uniform((3,)).numpy()
    for other in copies:  # each its own stream, from the state it was copied at
        np.testing.assert_array_equal(other.uniform((3,)).numpy(), first)
    assert not np.array_equal(gen.uniform((3,)).numpy(), first)
    f = tf.differentiable(lambda x: tf.nn.experimental.general_dropout(x, 0.5, gen.uniform))
    assert pickle.loads(pickle.dumps(f))(np.ones(8)).shape == (8,)


def test_forked_workers_draw_streams_of_their_own_unless_seeded(monkeypatch):
    import multiprocessing

    # A global generator of a non-deterministic state, as a process starts (an earlier
    # test may have seeded that one) or as set_global_generator gives it.
    monkeypatch.setattr(tf.random, "_global_generator",
                        Generator.from_non_deterministic_state())
    context = multiprocessing.get_context("fork")

    def draws():
        with context.Pool(2) as pool:
            return pool.map(_draw_in_worker, range(2), chunksize=1)

    tf.random.uniform((1,))  # the parent's generator in use before the fork
    first, second = draws()
    assert first[0] != second[0] and first[1] != second[1]  # two processes, two streams
    tf.random.set_seed(3)
    first, second = draws()
    assert first[1] == second[1]  # seeded: each worker repeats the parent's stream


def _draw_in_worker(_):
    import os
    import time

    time.sleep(0.2)  # so that the two tasks run in two workers
    return os.getpid(), float(tf.random.uniform((1,))[0])


def test_a_forked_child_draws_though_a_thread_was_drawing_at_the_fork():
    # A draw holds the generator's and its Variables' locks: a child forked meanwhile
    # waited on them forever (19 of 20 forks, helper 86), a compiled draw's entry holding
    # the lock objects themselves.
    import os
    import time

    draw = tf.differentiable(lambda x: x + tf.random.normal([4], dtype=tf.float64))
    own = Generator.from_seed(5)
    x = np.zeros(4)
    draw(x)
    stop = threading.Event()

    def drawing():
        while not stop.is_set():
            draw(x)
            own.normal([3])

    thread = threading.Thread(target=drawing)
    thread.start()
    hung = 0
    try:
        for _ in range(8):
            time.sleep(0.01)
            pid = os.fork()
            if pid == 0:
                draw(x)
                own.normal([3])
                os._exit(0)
            deadline = time.monotonic() + 20
            while os.waitpid(pid, os.WNOHANG)[0] == 0:
                if time.monotonic() > deadline:
                    hung += 1
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    break
                time.sleep(0.02)
    finally:
        stop.set()
        thread.join()
    assert hung == 0
