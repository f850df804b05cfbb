"""What the cache tests share: a script that fills a cache (one function per kind of
artifact srcxform loads) and checks its gradients, the environment that runs it on this
checkout, and the one sealed file among a folder's entries."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from srcxform.numba_adapter import cachefiles

# One function per cached artifact: a Python source module (f_py), a marshalled module
# (f_code), Numba's index and data files (f_nbi, f_nbc), an index entry (a pickle, f_pkl).
# The script's arguments name the functions to run; none runs all.
GRADS = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import srcxform as tf

    def f_py(w, x):
        return tf.reduce_sum(tf.tanh(x * w))

    def f_code(w, x):
        return tf.reduce_sum(tf.sin(x * w))

    def f_nbi(w, x):
        return tf.reduce_sum(tf.exp(x * w))

    def f_nbc(w, x):
        return tf.reduce_sum(tf.cos(x * w))

    def f_pkl(w, x):
        return tf.reduce_sum((x * w) ** 3)

    w, x = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    chosen = [f for f in (f_py, f_code, f_nbi, f_nbc, f_pkl)
              if not sys.argv[1:] or f.__name__ in sys.argv[1:]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grads = {f.__name__: tf.differentiable(f).grad(w, x).tolist() for f in chosen}
    print(json.dumps({"grads": grads, "warnings": [
        (w.category.__name__, str(w.message)) for w in caught]}))
    """)

W, X = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0])
EXPECTED = {"f_py": X * (1 - np.tanh(X * W) ** 2), "f_code": X * np.cos(X * W),
            "f_nbi": X * np.exp(X * W), "f_nbc": -X * np.sin(X * W),
            "f_pkl": 3 * X * (X * W) ** 2}


def assert_expected(grads):
    """Each of a GRADS run's gradients is its function's."""
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, EXPECTED[name], rtol=1e-12)


def checkout_env(cache, **more):
    """The environment that runs a script on this checkout's srcxform (not whichever the
    environment installed) with its cache at `cache`, without a shared cache's trust, and
    with no SlowCompileWarning however loaded the machine: the tests count warnings."""
    path = os.pathsep.join(filter(None, [str(Path(__file__).parents[1]),
                                         os.environ.get("PYTHONPATH")]))
    env = {k: v for k, v in os.environ.items() if k != "SRCXFORM_CACHE_TRUST"}
    env.update(SRCXFORM_CACHE_DIR=str(cache), PYTHONPATH=path, SRCXFORM_SLOW_COMPILE="900")
    env.update(more)
    return env


def run_json(script, env, *argv, as_user=(), timeout=300, **popen):
    """Runs a script, which must succeed, and parses the JSON of its last line."""
    done = subprocess.run([*as_user, sys.executable, str(script), *map(str, argv)], env=env,
                          capture_output=True, text=True, timeout=timeout, check=False,
                          **popen)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def sealed_file(folder, accept, parse):
    """The one sealed file in folder whose payload `accept`s."""
    found = [p for p in Path(folder).iterdir() if accept(cachefiles.read_sealed(str(p), parse))]
    assert len(found) == 1, found
    return found[0]


def assert_each_named_once(messages, paths):
    """The (category, message) warnings are CacheWarnings, one naming each path."""
    assert all(category == "CacheWarning" for category, _ in messages), messages
    assert sorted(path for path in map(str, paths)
                  for _, message in messages if path in message) == \
        sorted(map(str, paths)), messages
    assert len(messages) == len(paths), messages
