"""srcxform on Dask: the data-parallel gradient of a loss over rows equals the one-process
gradient on every scheduler, a data-parallel training step leaves the parameters where the
one-process loop does, a loss that is not a sum or mean over rows is refused, large
parameters are scattered rather than put in the graph, and compiled forms run as Dask
tasks (delayed, client.map), through a worker's death too. The cluster is the test's own:
two worker processes, one thread each."""

import os
import pickle
import signal
import threading
import time

import numpy as np
import pytest

import srcxform as tf

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
sxdask = pytest.importorskip("srcxform.dask")

ROWS, FEATURES = 25, 3
UNEVEN = (7, 1, 12, 5)  # uneven blocks, one of a single row


def logistic_mean(w, X, y):
    logits = tf.reduce_sum(X * w, axis=1)
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))


def logistic_sum(w, X, y):
    logits = tf.reduce_sum(X * w, axis=1)
    return tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))


LOSSES = {"mean": logistic_mean, "sum": logistic_sum}


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(ROWS, FEATURES))
    y = (rng.random(ROWS) < 0.5).astype(np.float64)
    return rng.normal(size=FEATURES), X, y


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of two worker processes, as the test's own."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit="1GiB") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        yield client


def _assert_equal_to_one_process(reduce, scheduler):
    w, X, y = _data()
    want_value, want_grad = tf.value_and_grad(LOSSES[reduce])(w, X, y)
    step = sxdask.value_and_grad(LOSSES[reduce], reduce=reduce, scheduler=scheduler)
    value, grad = step(w, da.from_array(X, chunks=(UNEVEN, 2)), da.from_array(y, chunks=UNEVEN))
    assert isinstance(value, np.floating | np.ndarray) and isinstance(grad, np.ndarray)
    np.testing.assert_allclose(value, want_value, rtol=1e-12, atol=0)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("reduce", ["mean", "sum"])
def test_equals_the_one_process_gradient_with_threads(reduce):
    _assert_equal_to_one_process(reduce, "threads")


@pytest.mark.parametrize("reduce", ["mean", "sum"])
def test_equals_the_one_process_gradient_on_a_cluster(client, reduce):
    _assert_equal_to_one_process(reduce, client)


@pytest.mark.slow
def test_equals_the_one_process_gradient_with_processes():
    _assert_equal_to_one_process("mean", "processes")


def test_blocks_of_no_rows_and_blocks_of_unknown_sizes():
    # A mask gives blocks of unknown sizes; computed, some may have no rows: their mean
    # was NaN, weighted by 0 rows, and the whole loss NaN.
    w, X, y = _data()
    keep = X[:, 0] > 0
    step = sxdask.value_and_grad(logistic_mean, scheduler="threads")
    Xd, yd = da.from_array(X, chunks=(UNEVEN, 2)), da.from_array(y, chunks=UNEVEN)
    masked = Xd[da.from_array(keep, chunks=UNEVEN)], yd[da.from_array(keep, chunks=UNEVEN)]
    with pytest.raises(ValueError, match=r"unknown sizes .* compute_chunk_sizes\(\)"):
        step(w, *masked)
    assert step(w, *(a.compute_chunk_sizes() for a in masked))[0] > 0
    n = int(keep.sum())
    rows = (n - 2, 0, 2, 0)
    value, grad = step(w, da.from_array(X[keep], chunks=(rows, 3)),
                       da.from_array(y[keep], chunks=(rows,)))
    want_value, want_grad = tf.value_and_grad(logistic_mean)(w, X[keep], y[keep])
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-15)


def test_a_loss_that_is_not_a_mean_over_rows_is_refused():
    def worst_row(w, X, y):
        return tf.reduce_max(tf.reduce_sum(X * w, axis=1) - y)

    w, X, y = _data()
    step = sxdask.value_and_grad(worst_row, reduce="mean", scheduler="threads")
    with pytest.raises(ValueError, match="the loss is not a mean over rows"):
        step(w, da.from_array(X, chunks=5), da.from_array(y, chunks=5))


def test_a_mean_declared_as_a_sum_is_refused():
    w, X, y = _data()
    step = sxdask.value_and_grad(logistic_mean, reduce="sum", scheduler="threads")
    with pytest.raises(ValueError, match="not a sum over rows"):
        step(w, da.from_array(X, chunks=5), da.from_array(y, chunks=5))


def test_other_reductions_and_gradients_wrt_data_are_refused():
    with pytest.raises(ValueError, match="only a sum or a mean over rows"):
        sxdask.value_and_grad(logistic_mean, reduce="max")
    with pytest.raises(TypeError, match="has_aux is not supported"):
        sxdask.value_and_grad(tf.differentiable(logistic_mean, has_aux=True))
    w, X, y = _data()
    step = sxdask.value_and_grad(logistic_mean, wrt=1, scheduler="threads")
    with pytest.raises(TypeError, match="argument 1 is wrt and a Dask array"):
        step(w, da.from_array(X, chunks=5), da.from_array(y, chunks=5))


def test_parameters_are_one_node_of_the_graph():
    w, X, y = _data()
    step = sxdask.value_and_grad(logistic_mean, scheduler="sync")
    graph = dict(step.delayed(w, da.from_array(X, chunks=5),
                              da.from_array(y, chunks=5)).__dask_graph__())
    holding_w = [key for key, task in graph.items() if w.tobytes() in pickle.dumps(task)]
    assert len(holding_w) == 1


def _block_tasks_arguments(delayed):
    """The arguments of each block's task in a Delayed's graph."""
    graph = dict(delayed.__dask_graph__())
    return [task.args for key, task in graph.items() if str(key).startswith("_block_part")]


def test_large_parameters_are_scattered_to_every_worker_once(client):
    # Both workers up first: under load, one of the module's cluster may be restarting
    # (once, the future was on the one worker there was)
    client.wait_for_workers(2, timeout=120)
    w, X, y = _data()
    step = sxdask.value_and_grad(logistic_mean, scheduler=client, scatter_bytes=w.nbytes - 1)
    data = da.from_array(X, chunks=(UNEVEN, 2)), da.from_array(y, chunks=UNEVEN)
    delayed = step.delayed(w, *data)
    graph = dict(delayed.__dask_graph__())
    assert not [key for key, task in graph.items() if w.tobytes() in pickle.dumps(task)]
    futures = {arg for args in _block_tasks_arguments(delayed) for arg in args
               if isinstance(arg, distributed.Future)}
    assert len(futures) == 1  # one future, read by every block's task
    future = futures.pop()
    np.testing.assert_array_equal(future.result()[0], w)
    assert len(client.who_has(future)[future.key]) == 2  # broadcast: on both workers
    want_value, want_grad = tf.value_and_grad(logistic_mean)(w, X, y)
    value, grad = step(w, *data)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-15)


def test_small_parameters_stay_in_the_graph_on_a_cluster(client):
    w, X, y = _data()
    step = sxdask.value_and_grad(logistic_mean, scheduler=client, scatter_bytes=w.nbytes)
    delayed = step.delayed(w, da.from_array(X, chunks=5), da.from_array(y, chunks=5))
    assert not [arg for args in _block_tasks_arguments(delayed) for arg in args
                if isinstance(arg, distributed.Future)]
    graph = dict(delayed.__dask_graph__())
    assert len([key for key, task in graph.items() if w.tobytes() in pickle.dumps(task)]) == 1


# ----- the training step: gradients reduced, then one update -----

def mlp_loss(params, X, y, reduce):
    """A one-hidden-layer perceptron's logistic loss: the mean or sum over rows."""
    hidden = tf.tanh(X @ params["hidden"]["w"] + params["hidden"]["b"])
    logits = tf.reduce_sum(hidden * params["output"], axis=1)
    losses = tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits)
    return tf.reduce_mean(losses) if reduce == "mean" else tf.reduce_sum(losses)


def _mlp_variables(seed=1, hidden=4):
    rng = np.random.default_rng(seed)
    return {"hidden": {"w": tf.Variable(rng.normal(size=(FEATURES, hidden))),
                       "b": tf.Variable(np.zeros(hidden))},
            "output": tf.Variable(rng.normal(size=hidden))}


OPTIMIZERS = {"mean": lambda: tf.optimizers.Adam(learning_rate=0.1),
              "sum": lambda: tf.optimizers.SGD(learning_rate=0.01, momentum=0.9)}


def _leaves(params):
    return [params["hidden"]["w"], params["hidden"]["b"], params["output"]]


def _one_process_loop(reduce, X, y, steps):
    """The parameters and losses of the loop on the whole data, tape and optimizer."""
    variables, optimizer, losses = _mlp_variables(), OPTIMIZERS[reduce](), []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = mlp_loss(variables, X, y, reduce)
        optimizer.apply(tape.gradient(loss, variables), variables)
        losses.append(float(loss))
    return variables, losses


def _assert_trains_as_one_process(reduce, scheduler, steps=4):
    _, X, y = _data()
    want_variables, want_losses = _one_process_loop(reduce, X, y, steps)
    variables = _mlp_variables()
    step = sxdask.train_step(lambda p, X, y: mlp_loss(p, X, y, reduce), OPTIMIZERS[reduce](),
                             variables, reduce=reduce, scheduler=scheduler)
    data = da.from_array(X, chunks=(UNEVEN, 2)), da.from_array(y, chunks=UNEVEN)
    losses = [step(*data) for _ in range(steps)]
    np.testing.assert_allclose(losses, want_losses, rtol=1e-12)
    assert want_losses[-1] < want_losses[0]  # it trains: the comparison is not of zeros
    for variable, expected in zip(_leaves(variables), _leaves(want_variables)):
        np.testing.assert_allclose(variable.numpy(), expected.numpy(), rtol=1e-12,
                                   atol=1e-14)


@pytest.mark.parametrize("reduce", ["mean", "sum"])
def test_a_training_step_updates_as_the_one_process_loop_with_threads(reduce):
    _assert_trains_as_one_process(reduce, "threads")


def test_a_training_step_updates_as_the_one_process_loop_on_a_cluster(client):
    _assert_trains_as_one_process("mean", client)


def test_a_training_step_needs_variables_and_an_optimizer():
    optimizer = tf.optimizers.SGD(0.1)
    with pytest.raises(TypeError, match="must be a Variable or a structure of Variables"):
        sxdask.train_step(logistic_mean, optimizer, [tf.Variable(np.zeros(3)), np.zeros(2)])
    with pytest.raises(TypeError, match="must be a srcxform.optimizers optimizer"):
        sxdask.train_step(logistic_mean, "adam", tf.Variable(np.zeros(3)))
    with pytest.raises(TypeError, match=r"differentiated wrt \(0, 1\); a training step"):
        sxdask.train_step(tf.differentiable(logistic_mean, wrt=(0, 1)), optimizer,
                          tf.Variable(np.zeros(3)))


def test_delayed_grad_runs_on_the_processes_scheduler():
    f = tf.differentiable(lambda x: tf.reduce_sum(tf.tanh(x) * x))
    x = np.array([0.0, 0.5, -1.0])
    got = dask.delayed(f.grad)(x).compute(scheduler="processes", num_workers=1)
    np.testing.assert_allclose(got, np.tanh(x) + x * (1 - np.tanh(x) ** 2), rtol=1e-12)


def test_client_map_of_value_and_grad(client):
    f = tf.differentiable(lambda x: tf.reduce_sum(x ** 3))
    xs = [np.arange(3.0), np.arange(4.0) - 1.0]
    results = client.gather(client.map(f.value_and_grad, xs))
    for (value, grad), x in zip(results, xs):
        assert value == pytest.approx(np.sum(x ** 3), rel=1e-12)
        np.testing.assert_allclose(grad, 3 * x ** 2, rtol=1e-12)


def _misses_of(payload):
    """On a worker: how many kernels the function it received was compiled or loaded for
    (the same payload unpickles to the same function in one process)."""
    return pickle.loads(payload).cache_info().misses


def test_a_worker_compiles_once_for_many_tasks(client):
    f = tf.differentiable(lambda x: tf.reduce_sum(x * x * 0.5))
    xs = [np.full(3, float(i)) for i in range(8)]
    results = client.gather(client.map(f.grad, xs))
    np.testing.assert_allclose(np.stack(results), np.stack(xs), rtol=1e-12)
    misses = client.run(_misses_of, pickle.dumps(f)).values()
    assert sum(misses) >= 1 and max(misses) == 1  # per process, not per task


def _slowly(block):
    """The block after a while, as a large data set's rows are read: a worker can die
    meanwhile."""
    time.sleep(0.4)
    return block


def test_a_killed_worker_leaves_the_gradient_unchanged(client):
    w, X, y = _data()
    want_value, want_grad = tf.value_and_grad(logistic_mean)(w, X, y)
    step = sxdask.value_and_grad(logistic_mean, scheduler=client)
    step(w, da.from_array(X, chunks=5), da.from_array(y, chunks=5))  # warm: compiled
    X_slow = da.map_blocks(_slowly, da.from_array(X, chunks=(5, -1)), dtype=X.dtype)
    victim = next(iter(client.run(os.getpid).values()))
    killer = threading.Timer(0.6, os.kill, (victim, signal.SIGKILL))
    killer.start()
    value, grad = step(w, X_slow, da.from_array(y, chunks=5))
    assert killer.finished.is_set()  # killed before the result came
    killer.join()
    assert victim not in client.run(os.getpid).values()  # it died: the nanny made another
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-15)
