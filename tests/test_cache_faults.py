"""The on-disk cache is only a cache: a damaged file in it is a miss that is rebuilt with
one CacheWarning, never an error or a wrong result, and a folder srcxform cannot use gives
way to a temporary one."""

import json
import marshal
import os
import pickle
import random
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

from srcxform import CacheWarning, backend, cachefiles, numba_adapter

# One function per cached artifact, each damaged in its own file: a process checks them all.
SCRIPT = textwrap.dedent("""
    import json, warnings
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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grads = {f.__name__: tf.differentiable(f).grad(w, x).tolist()
                 for f in (f_py, f_code, f_nbi, f_nbc, f_pkl)}
    print(json.dumps({"grads": grads, "warnings": [
        (w.category.__name__, str(w.message)) for w in caught]}))
    """)

W, X = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0])
EXPECTED = {"f_py": X * (1 - np.tanh(X * W) ** 2), "f_code": X * np.cos(X * W),
            "f_nbi": X * np.exp(X * W), "f_nbc": -X * np.sin(X * W),
            "f_pkl": 3 * X * (X * W) ** 2}

CORRUPTIONS = {
    "empty": lambda data: b"",
    "truncated": lambda data: data[:len(data) // 2],
    "garbage": lambda data: random.Random(0).randbytes(len(data)),
    # One bit in the middle: what leaves a file that still loads, and computes otherwise.
    "flipped": lambda data: data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 1]) +
    data[len(data) // 2 + 1:],
}


def _run(script, env):
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _sealed(folder, accept, parse):
    """The one sealed file in folder whose payload `accept`s."""
    found = [p for p in Path(folder).iterdir() if accept(cachefiles.read_sealed(str(p), parse))]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A cache a first process filled, and each function's damaged artifact's first bytes."""
    root = tmp_path_factory.mktemp("faults")
    cache = root / "cache"
    script = root / "script.py"
    script.write_text(SCRIPT)
    # The checkout's srcxform, not whichever the environment installed.
    path = os.pathsep.join(filter(None, [str(Path(__file__).parents[1]),
                                         os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, SRCXFORM_CACHE_DIR=str(cache), PYTHONPATH=path)
    first = _run(script, env)
    assert first["warnings"] == []
    for name, grad in first["grads"].items():
        np.testing.assert_allclose(grad, EXPECTED[name], rtol=1e-12)
    numba_files = cache / "__pycache__"
    code_of = next(cache.glob("f_code__*.py"))
    artifacts = [
        next(cache.glob("f_py__*.py")),
        _sealed(cache / "code", lambda c: c.co_filename == str(code_of), marshal.loads),
        *numba_files.glob("sx1-f_nbi__*.nbi"), *numba_files.glob("sx1-f_nbc__*.nbc"),
        _sealed(cache / "index", lambda specs: specs[0].func_name.startswith("f_pkl"),
                pickle.loads),
    ]
    assert len(artifacts) == 5
    return script, env, {path: path.read_bytes() for path in artifacts}


@pytest.mark.skipif(not numba_adapter.enabled(), reason="Numba's own cache files are not "
                    "sealed: srcxform seals them with the Numba internals it uses")
@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_a_damaged_cache_file_is_rebuilt_with_one_warning(filled, corruption):
    script, env, artifacts = filled
    for path, data in artifacts.items():
        path.write_bytes(CORRUPTIONS[corruption](data))
    second = _run(script, env)
    for name, grad in second["grads"].items():
        np.testing.assert_allclose(grad, EXPECTED[name], rtol=1e-12)
    messages = second["warnings"]
    assert all(category == "CacheWarning" for category, _ in messages), messages
    # One warning for each damaged file, naming it.
    assert sorted(path for path in map(str, artifacts)
                  for _, message in messages if path in message) == \
        sorted(map(str, artifacts)), messages
    assert len(messages) == len(artifacts)
    third = _run(script, env)
    assert third == {"grads": second["grads"], "warnings": []}  # healed


def test_a_sealed_file_whose_payload_does_not_parse_is_a_miss(tmp_path):
    path = str(tmp_path / "entry.pkl")
    cachefiles.write_sealed(path, b"checksum intact, and not a pickle")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [cachefiles.read_sealed(path, pickle.loads) for _ in range(2)] == [None, None]
    assert [(w.category, path in str(w.message)) for w in caught] == [(CacheWarning, True)]
    assert cachefiles.read_sealed(str(tmp_path / "none yet"), pickle.loads) is None  # no warning


def _fallback_from(monkeypatch, **env):
    for name in ("SRCXFORM_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, str(value))
    with pytest.warns(CacheWarning, match="SRCXFORM_CACHE_DIR") as caught:
        folder = cachefiles.cache_dir()
    assert len(caught) == 1 and caught[0].filename == __file__  # the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cachefiles.cache_dir() == folder  # once a process
        # What the cache holds is written there, and read back.
        source = f"def f(x):  # {folder}\n    return x + 1\n"
        assert backend.load(source, "f", jit=False)(1) == 2
    assert any(Path(folder).glob("f_*.py"))
    return folder


def test_a_cache_folder_that_is_a_file_falls_back_to_a_private_temporary_one(
        tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    folder = _fallback_from(monkeypatch, SRCXFORM_CACHE_DIR=tmp_path / "file")
    assert not folder.startswith(str(tmp_path)) and os.stat(folder).st_mode & 0o077 == 0


def test_a_cache_folder_under_a_file_falls_back(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    _fallback_from(monkeypatch, SRCXFORM_CACHE_DIR=tmp_path / "file" / "cache")


def test_a_home_that_is_a_file_falls_back(tmp_path, monkeypatch):
    (tmp_path / "home").write_text("")
    _fallback_from(monkeypatch, HOME=tmp_path / "home")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only folder")
def test_a_read_only_cache_folder_falls_back(tmp_path, monkeypatch):
    (tmp_path / "cache").mkdir(mode=0o500)
    _fallback_from(monkeypatch, SRCXFORM_CACHE_DIR=tmp_path / "cache")


def test_threads_writing_one_file_at_once_each_write_it_whole(tmp_path):
    path = str(tmp_path / "entry")
    errors = []

    def write(n):
        try:
            for _ in range(200):
                cachefiles.write_atomic(path, bytes([n]) * 4096)
        except OSError as err:
            errors.append(err)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    data = Path(path).read_bytes()
    assert len(data) == 4096 and len(set(data)) == 1
    assert os.listdir(tmp_path) == ["entry"]  # no temporary file left
