"""The on-disk cache is only a cache: a damaged file in it is a miss that is rebuilt with
one CacheWarning, never an error or a wrong result, and a folder srcxform cannot use gives
way to a temporary one. A write that fails (a full disk, a file size limit, a folder made
read-only) ends the process's writing, with one CacheWarning, and what it compiles runs
from memory; an entry of the wrong kind (a folder for a file, a file for a folder) heals;
and a read-only install, its user without a home, compiles and runs."""

import errno
import json
import marshal
import os
import pickle
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import srcxform as tf
from cache_scripts import (GRADS, assert_each_named_once, assert_expected, checkout_env,
                           run_json, sealed_file)
from helpers import AS_NOBODY, CAN_SETPRIV, IS_ROOT, NOBODY, quick_first
from srcxform import CacheWarning, numba_adapter
from srcxform.jit import backend
from srcxform.numba_adapter import cachefiles


CORRUPTIONS = {  # the first in the quick tier, the rest in the slow one
    # One bit in the middle: what leaves a file that still loads, and computes otherwise.
    "flipped": lambda data: data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 1]) +
    data[len(data) // 2 + 1:],
    "empty": lambda data: b"",
    "truncated": lambda data: data[:len(data) // 2],
    "garbage": lambda data: random.Random(0).randbytes(len(data)),
}


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A cache a first process filled, and each function's damaged artifact's first bytes."""
    root = tmp_path_factory.mktemp("faults")
    cache = root / "cache"
    script = root / "script.py"
    script.write_text(GRADS)
    env = checkout_env(cache)
    first = run_json(script, env)
    assert first["warnings"] == []
    assert_expected(first["grads"])
    numba_files = cache / "__pycache__"
    code_of = next(cache.glob("f_code__*.py"))
    artifacts = [
        next(cache.glob("f_py__*.py")),
        sealed_file(cache / "code", lambda c: c.co_filename == str(code_of), marshal.loads),
        *numba_files.glob("sx2-f_nbi__*.nbi"), *numba_files.glob("sx2-f_nbc__*.nbc"),
        sealed_file(cache / "index", lambda specs: specs[0].func_name.startswith("f_pkl"),
                pickle.loads),
    ]
    assert len(artifacts) == 5
    return script, env, {path: path.read_bytes() for path in artifacts}


@pytest.mark.skipif(not numba_adapter.enabled(), reason="Numba's own cache files are not "
                    "sealed: srcxform seals them with the Numba internals it uses")
@pytest.mark.parametrize("corruption", quick_first(CORRUPTIONS))
def test_a_damaged_cache_file_is_rebuilt_with_one_warning(filled, corruption):
    script, env, artifacts = filled
    for path, data in artifacts.items():
        path.write_bytes(CORRUPTIONS[corruption](data))
    second = run_json(script, env)
    assert_expected(second["grads"])
    assert_each_named_once(second["warnings"], artifacts)
    third = run_json(script, env)
    assert third == {"grads": second["grads"], "warnings": []}  # healed


def test_a_sealed_file_whose_payload_does_not_parse_is_a_miss(tmp_path):
    path = str(tmp_path / "entry.pkl")
    cachefiles.write_sealed(path, b"checksum intact, and not a pickle")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [cachefiles.read_sealed(path, pickle.loads) for _ in range(2)] == [None, None]
    assert [(w.category, path in str(w.message)) for w in caught] == [(CacheWarning, True)]
    assert cachefiles.read_sealed(str(tmp_path / "none yet"), pickle.loads) is None  # no warning


def test_a_sealed_file_copied_over_anothers_name_is_a_miss(tmp_path):
    # Helper 107: one function's code file copied over another's name ran as the other
    # (each file's checksum covered its content alone).
    mine, theirs = str(tmp_path / "code-a.marshal"), str(tmp_path / "code-b.marshal")
    cachefiles.write_sealed(mine, pickle.dumps("mine"))
    cachefiles.write_sealed(theirs, pickle.dumps("theirs"))
    shutil.copyfile(theirs, mine)
    with pytest.warns(CacheWarning, match="does not match its name and content"):
        assert cachefiles.read_sealed(mine, pickle.loads) is None
    assert cachefiles.read_sealed(theirs, pickle.loads) == "theirs"


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


# ----- a write that fails, or an entry that is not a file -----

FILLING = textwrap.dedent("""
    import json, os, sys, warnings
    import numpy as np
    import srcxform as tf

    def make(k):
        def f(x):
            return tf.reduce_sum(tf.tanh(x * k) * x)
        f.__name__ = f"f{k}"
        return f

    x = np.linspace(-1.0, 1.0, 5)
    grads = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(1, int(sys.argv[1]) + 1):
            grads.append(tf.differentiable(make(float(k))).grad(x).tolist())
            if k == 1 and len(sys.argv) > 2:  # the folder is made read-only, as it runs
                for folder, _, _ in os.walk(sys.argv[2]):
                    os.chmod(folder, 0o500)
    print(json.dumps({"grads": grads, "package": tf.__file__, "warnings": [
        (w.category.__name__, str(w.message)) for w in caught],
        "places": [os.path.basename(w.filename) for w in caught]}))
    """)


def _filling_expected(n):
    x = np.linspace(-1.0, 1.0, 5)
    return [np.tanh(k * x) + k * x * (1 - np.tanh(k * x) ** 2) for k in range(1, n + 1)]


def _fill(tmp_path, cache, n, argv=(), as_user=(), env=(), **popen):
    """Runs FILLING for n functions with the cache at `cache` (and `env`): its grads
    (checked) and warnings."""
    script = tmp_path / "filling.py"
    script.write_text(FILLING)
    out = run_json(script, checkout_env(cache, **dict(env)), n, *argv, as_user=as_user,
                   timeout=600, **popen)
    for got, want in zip(out["grads"], _filling_expected(n), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # Each at the script's line, not at a generated module's in the cache (helper 134)
    assert set(out["places"]) <= {"filling.py"}, out["places"]
    return out["warnings"]


def _one_write_warning(messages, reason):
    assert [category for category, _ in messages] == ["CacheWarning"], messages
    assert reason in messages[0][1] and "in memory" in messages[0][1], messages


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG, errno.EROFS, errno.EACCES])
def test_a_failed_write_turns_writing_off_with_one_warning(tmp_path, monkeypatch, code):
    monkeypatch.setenv("SRCXFORM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cachefiles, "_WRITE_ERROR", None)  # as it was, after the test
    tried = []

    def failing(path, data):
        tried.append(path)
        raise OSError(code, os.strerror(code), path)

    monkeypatch.setattr(cachefiles, "_write_file", failing)  # the one function that writes

    def cubed(x):
        return tf.reduce_sum(x * x * x) * float(code)  # a kernel of each test's own

    x = np.array([1.0, -2.0, 0.5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = tf.differentiable(cubed)
        grads = [f.grad(x), f.grad(2 * x)]
    for got, at in zip(grads, [x, 2 * x]):
        np.testing.assert_allclose(got, 3 * at * at * code, rtol=1e-14)
    assert isinstance(f._kernels[next(iter(f._kernels))][0].fn, backend.Compiled)
    _one_write_warning([(w.category.__name__, str(w.message)) for w in caught],
                       os.strerror(code))
    assert len(tried) == 1  # nothing more was tried in this process
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.fixture
def tmpfs(tmp_path):
    """A folder on a 64 KiB tmpfs of its own (root can mount one; others skip)."""
    folder = tmp_path / "tmpfs"
    folder.mkdir(mode=0o700)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs",
                              str(folder)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.slow
@pytest.mark.parametrize("internals", ["1", "0"])  # 0: Numba's own cache, which writes
def test_a_full_disk_compiles_and_runs_in_memory_with_one_warning(tmp_path, tmpfs, internals):
    env = {"SRCXFORM_NUMBA_INTERNALS": internals}
    _one_write_warning(_fill(tmp_path, tmpfs, 6, env=env), "No space left on device")
    assert len(_fill(tmp_path, tmpfs, 6, env=env)) <= 1  # what fits loads; the rest compiles


def test_a_file_size_limit_compiles_and_runs_in_memory_with_one_warning(tmp_path):
    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))

    _one_write_warning(_fill(tmp_path, tmp_path / "cache", 2, preexec_fn=limited),
                       "File too large")


@pytest.mark.skipif(IS_ROOT and not CAN_SETPRIV,
                    reason="root writes in a read-only folder; needs setpriv to be another")
def test_a_cache_folder_made_read_only_compiles_and_runs_in_memory(tmp_path):
    """As another user where this runs as root, who writes in a read-only folder."""
    root = Path(tempfile.mkdtemp(prefix="srcxform-readonly-"))
    try:
        root.chmod(0o755)
        cache = root / "cache"
        cache.mkdir(mode=0o700)
        if IS_ROOT:
            for path in (root, cache):
                os.chown(path, NOBODY, NOBODY)
        warned = _fill(root, cache, 2, argv=[str(cache)], as_user=AS_NOBODY if IS_ROOT else ())
        _one_write_warning(warned, "Permission denied")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _folder_in_place_of(path):
    path.unlink()
    path.mkdir()
    (path / "inside").write_text("a folder where a cache file should be")


@pytest.mark.skipif(not numba_adapter.enabled(), reason="Numba's own cache files: below")
def test_every_kind_of_entry_replaced_by_a_folder_heals(filled):
    script, env, artifacts = filled
    for path in artifacts:
        _folder_in_place_of(path)
    second = run_json(script, env)
    assert_expected(second["grads"])
    assert_each_named_once(second["warnings"], artifacts)
    assert all(path.is_file() for path in artifacts)  # replaced
    assert run_json(script, env) == {"grads": second["grads"], "warnings": []}


@pytest.mark.skipif(not numba_adapter.enabled(), reason="Numba's own cache files are not "
                    "sealed: srcxform seals them with the Numba internals it uses")
def test_every_sealed_entry_replaced_by_a_fifo_heals_without_waiting(filled):
    """Helper 134: a FIFO where an index entry should be hung the first call (opened for
    reading, it waits for a writer). Each sealed file is read without waiting now, and a
    FIFO is refused as not a regular file."""
    script, env, artifacts = filled
    sealed = [path for path in artifacts if path.suffix != ".py"]
    for path in sealed:
        path.unlink()
        os.mkfifo(path, 0o600)
    second = run_json(script, env, timeout=120)
    assert_expected(second["grads"])
    assert_each_named_once(second["warnings"], sealed)
    assert all(path.is_file() for path in sealed)  # replaced


@pytest.mark.slow
def test_numbas_own_files_replaced_by_folders_heal(tmp_path):
    """With Numba's public API only (SRCXFORM_NUMBA_INTERNALS=0), Numba reads its own
    files: a folder in place of one is removed before it looks."""
    script = tmp_path / "script.py"
    script.write_text(GRADS)
    env = checkout_env(tmp_path / "cache", SRCXFORM_NUMBA_INTERNALS="0")
    first = run_json(script, env, "f_nbi", "f_nbc")
    numba_files = [*(tmp_path / "cache" / "__pycache__").glob("f_nbi__*.nbi"),
                   *(tmp_path / "cache" / "__pycache__").glob("f_nbc__*.nbc")]
    assert len(numba_files) == 2
    for path in numba_files:
        _folder_in_place_of(path)
    second = run_json(script, env, "f_nbi", "f_nbc")
    assert second["grads"] == first["grads"]
    assert_each_named_once(second["warnings"], numba_files)
    assert run_json(script, env, "f_nbi", "f_nbc") == {"grads": first["grads"],
                                                       "warnings": []}


@pytest.mark.parametrize("content", quick_first([[1, 2], {"func_name": "f"}, "text", [None]]))
def test_a_sealed_index_entry_of_other_content_is_a_miss_that_heals(filled, content):
    script, env, artifacts = filled
    (entry,) = [path for path in artifacts if path.suffix == ".pkl"]
    cachefiles.write_sealed(str(entry), pickle.dumps(content))
    second = run_json(script, env)
    assert_expected(second["grads"])
    assert [(category, str(entry) in message) for category, message in second["warnings"]] \
        == [("CacheWarning", True)]
    assert run_json(script, env) == {"grads": second["grads"], "warnings": []}


@pytest.mark.skipif(IS_ROOT and not CAN_SETPRIV,
                    reason="root writes in a read-only folder; needs setpriv to be another")
def test_a_read_only_install_without_a_home_compiles_and_runs(tmp_path):
    """srcxform installed where its user cannot write, who has no home to write in either
    (a container's arbitrary user): its runtime helpers are cached in the process's cache
    folder, never beside the package."""
    root = Path(tempfile.mkdtemp(prefix="srcxform-install-"))
    try:
        package = root / "site" / "srcxform"
        shutil.copytree(Path(tf.__file__).parent, package,
                        ignore=shutil.ignore_patterns("__pycache__"))
        (root / "filling.py").write_text(FILLING)
        home = root / "home"
        home.mkdir()
        for folder, _, files in os.walk(root):
            os.chmod(folder, 0o555)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o444)
        env = {k: v for k, v in os.environ.items() if not k.startswith(
            ("SRCXFORM_CACHE", "XDG_", "NUMBA_CACHE")) and k not in ("HOME", "PYTHONPATH")}
        env.update(PYTHONPATH=str(root / "site"), SRCXFORM_TIERED="0")
        if not IS_ROOT:
            env["HOME"] = str(home)  # `nobody`'s is /nonexistent
        done = subprocess.run(
            [*(AS_NOBODY if IS_ROOT else ()), sys.executable, str(root / "filling.py"), "2"],
            env=env, cwd=root, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout.splitlines()[-1])
        for got, want in zip(out["grads"], _filling_expected(2), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12)
        assert out["package"] == str(package / "__init__.py")
        # One warning: the cache folder is a temporary one (and, on a loaded machine, a
        # SlowCompileWarning: every runtime helper compiles afresh here).
        warned = [w for w in out["warnings"] if w[0] != "SlowCompileWarning"]
        assert [category for category, _ in warned] == ["CacheWarning"]
        assert "removed when it exits" in warned[0][1]
        assert not any(name.endswith((".nbi", ".nbc")) for _, _, names in os.walk(root)
                       for name in names)
    finally:
        for folder, _, _ in os.walk(root):
            os.chmod(folder, 0o755)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("subfolder", cachefiles.SUBFOLDERS)
def test_a_file_in_place_of_a_cache_folder_heals(tmp_path, monkeypatch, subfolder):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / subfolder).write_text("a file where a folder of the cache should be")
    monkeypatch.setenv("SRCXFORM_CACHE_DIR", str(cache))
    with pytest.warns(CacheWarning, match=subfolder) as caught:
        assert cachefiles.cache_dir() == str(cache)  # not a temporary folder
    assert len(caught) == 1 and (cache / subfolder).is_dir()
