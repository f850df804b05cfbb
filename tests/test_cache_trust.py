"""srcxform loads nothing from a cache folder it cannot trust: the folder, the subfolders it
uses and each file it loads must be owned by the user it runs as and writable by no one
else. An untrusted folder gives way to a private one with one CacheWarning; an untrusted
file is a miss, rebuilt with one. A shared cache is trusted only when asked for
(SRCXFORM_CACHE_TRUST=shared).

Another user is real where the test runs as root (chown, and setpriv to write as
`nobody`), and stood in for by cachefiles.current_user otherwise.
"""

import marshal
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import textwrap
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

import srcxform as tf
from cache_scripts import (GRADS, assert_each_named_once, assert_expected, checkout_env,
                           run_json, sealed_file)
from helpers import AS_NOBODY, CAN_SETPRIV, IS_ROOT, NOBODY
from srcxform import CacheWarning, numba_adapter
from srcxform.numba_adapter import cachefiles



def _other_user(monkeypatch):
    """Makes every file this process made look like another user's."""
    monkeypatch.setattr(cachefiles, "current_user", lambda: os.geteuid() + 1)


def _refused(monkeypatch, folder, reason, named=None):
    """cache_dir() with SRCXFORM_CACHE_DIR=folder: a private folder instead, and one
    CacheWarning naming the folder (or `named`, a subfolder) and the reason (none at a
    second call)."""
    monkeypatch.setenv("SRCXFORM_CACHE_DIR", str(folder))
    monkeypatch.delenv("SRCXFORM_CACHE_TRUST", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        used = cachefiles.cache_dir()
        assert cachefiles.cache_dir() == used
    assert [w.category for w in caught] == [CacheWarning], caught
    assert str(named or folder) in str(caught[0].message), caught[0].message
    assert reason in str(caught[0].message), caught[0].message
    assert not used.startswith(str(folder)) and os.stat(used).st_mode & 0o077 == 0
    return used


# ----- the folder -----

def test_a_cache_folder_owned_by_another_user_is_refused_with_one_warning(
        tmp_path, monkeypatch):
    (tmp_path / "cache").mkdir(mode=0o700)
    _other_user(monkeypatch)
    _refused(monkeypatch, tmp_path / "cache", "owned by user")


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777])
def test_a_cache_folder_writable_by_others_is_refused_with_one_warning(
        tmp_path, monkeypatch, mode):
    folder = tmp_path / "cache"
    folder.mkdir()
    folder.chmod(mode)
    _refused(monkeypatch, folder, "writable by")


@pytest.mark.parametrize("subfolder", ["index", "code", "__pycache__"])
def test_a_subfolder_writable_by_others_refuses_the_folder(tmp_path, monkeypatch, subfolder):
    folder = tmp_path / "cache"
    (folder / subfolder).mkdir(parents=True)
    (folder / subfolder).chmod(0o777)
    _refused(monkeypatch, folder, "writable by", named=folder / subfolder)


@pytest.mark.skipif(not IS_ROOT, reason="only root can give a folder to another user")
def test_a_cache_folder_of_a_real_other_user_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o755)
    os.chown(folder, NOBODY, NOBODY)
    _refused(monkeypatch, folder, f"owned by user {NOBODY}")


def test_a_folder_srcxform_makes_is_private(tmp_path, monkeypatch):
    monkeypatch.setenv("SRCXFORM_CACHE_DIR", str(tmp_path / "new" / "cache"))
    old = os.umask(0o002)  # a umask that lets the group write
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            folder = cachefiles.cache_dir()
        cachefiles.write_sealed(os.path.join(folder, "index", "entry.pkl"), b"payload")
    finally:
        os.umask(old)
    for path in [folder] + [os.path.join(folder, name) for name in os.listdir(folder)]:
        assert cachefiles.untrusted(path) is None, path
    assert cachefiles.read_sealed(os.path.join(folder, "index", "entry.pkl"), bytes) == \
        b"payload"


def test_a_shared_cache_is_trusted_when_asked_for(tmp_path, monkeypatch):
    folder = tmp_path / "team"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setenv("SRCXFORM_CACHE_DIR", str(folder))
    monkeypatch.setenv("SRCXFORM_CACHE_TRUST", "shared")
    _other_user(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cachefiles.cache_dir() == str(folder)
        path = str(folder / "entry")
        cachefiles.write_sealed(path, b"a teammate's")
        assert cachefiles.read_sealed(path, bytes) == b"a teammate's"


def test_the_compile_worker_compiles_into_the_private_folder_unwarned(
        tmp_path, monkeypatch, capfd):
    folder = tmp_path / "team"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setenv("SRCXFORM_TIERED", "1")
    used = _refused(monkeypatch, folder, "writable by")
    f = tf.differentiable(lambda x: tf.reduce_sum(tf.tanh(x) * 2.0))
    x = np.linspace(-1.0, 1.0, 5)
    f.grad(x)
    (job,) = f._compiling.values()
    assert job.wait(300) and job.lost is None
    np.testing.assert_allclose(f.grad(x), 2.0 * (1.0 - np.tanh(x) ** 2), rtol=1e-12)
    assert any(name.endswith(".nbi") for name in os.listdir(os.path.join(used, "__pycache__")))
    assert os.listdir(folder) == []
    assert "CacheWarning" not in capfd.readouterr().err  # the worker uses the same folder


# ----- a file in a trusted folder -----

def _sealed_file(tmp_path):
    path = str(tmp_path / "entry.pkl")
    cachefiles.write_sealed(path, pickle.dumps("sealed"))
    return path


def _read_refused(path, reason):
    parsed = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cachefiles.read_sealed(path, parsed.append) is None
        assert cachefiles.read_sealed(path, parsed.append) is None
    assert parsed == []  # never parsed
    assert [w.category for w in caught] == [CacheWarning]
    assert path in str(caught[0].message) and reason in str(caught[0].message)


def test_a_file_owned_by_another_user_is_not_loaded(tmp_path, monkeypatch):
    path = _sealed_file(tmp_path)
    _other_user(monkeypatch)
    _read_refused(path, "owned by user")


@pytest.mark.parametrize("mode", [0o666, 0o664, 0o646])
def test_a_file_writable_by_others_is_not_loaded(tmp_path, mode):
    path = _sealed_file(tmp_path)
    os.chmod(path, mode)
    _read_refused(path, "writable by")


# ----- planted payloads, end to end -----

# The artifacts a payload is planted in: a marshalled module, an index entry (a pickle),
# Numba's index and data files (pickles).
FUNCTIONS = ("f_code", "f_nbi", "f_nbc", "f_pkl")


class _Opens:
    """Unpickled, opens (creates) a file: what a planted pickle could run instead."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return open, (self.path, "w")


@pytest.fixture
def planted():
    """A cache a first process filled, in a folder another user can reach, and for each
    artifact: its path, and a payload sealed as srcxform seals (a valid checksum) that
    creates a marker file when loaded."""
    root = Path(tempfile.mkdtemp(prefix="srcxform-trust-"))
    root.chmod(0o755)
    cache, markers = root / "cache", root / "markers"
    markers.mkdir()
    script = root / "script.py"
    script.write_text(GRADS)
    env = checkout_env(cache)
    first = run_json(script, env, *FUNCTIONS)
    assert first["warnings"] == []
    os.chmod(cache, 0o755)  # another user may reach the files (not write in the folder)
    numba_files = cache / "__pycache__"
    code_of = next(cache.glob("f_code__*.py"))
    artifacts = {
        "code": sealed_file(cache / "code", lambda c: c.co_filename == str(code_of),
                        marshal.loads),
        "nbi": next(numba_files.glob("sx2-f_nbi__*.nbi")),
        "nbc": next(numba_files.glob("sx2-f_nbc__*.nbc")),
        "pkl": sealed_file(cache / "index", lambda specs: specs[0].func_name.startswith("f_pkl"),
                       pickle.loads),
    }
    for folder in {p.parent for p in artifacts.values()}:
        folder.chmod(0o755)
    payloads = {}
    for kind, artifact in artifacts.items():
        marker = str(markers / kind)
        payload = marshal.dumps(compile(f"open({marker!r}, 'w')", str(code_of), "exec")) \
            if kind == "code" else pickle.dumps(_Opens(marker))
        sealed = zlib.crc32(payload, zlib.crc32(artifact.name.encode()))  # as write_sealed
        payloads[artifact] = sealed.to_bytes(4, "big") + payload
    yield script, env, markers, payloads
    shutil.rmtree(root, ignore_errors=True)


def _as_nobody(code):
    subprocess.run([*AS_NOBODY, sys.executable, "-c", code], check=True, timeout=60)


def _write_payloads(payloads, how):
    """Puts each payload in its artifact's place as `how` says an attacker could."""
    if how == "writable by others":  # a file another user can write in, and did
        for path, payload in payloads.items():
            path.chmod(0o666)
            path.write_bytes(payload)
    elif how == "owned by another user":
        for path, payload in payloads.items():
            path.write_bytes(payload)
            os.chown(path, NOBODY, NOBODY)
    elif how == "written by another user":  # nobody rewrites a file open to everyone
        for path in payloads:
            path.chmod(0o666)
        _as_nobody(textwrap.dedent(f"""
            for path, payload in { {str(p): d for p, d in payloads.items()}!r}.items():
                with open(path, "r+b") as f:
                    f.truncate()
                    f.write(payload)
            """))
    elif how == "planted in a folder open to everyone":  # the team folder
        for path in payloads:
            path.parent.chmod(0o777)
            path.parent.parent.chmod(0o777)
        _as_nobody(textwrap.dedent(f"""
            import os
            for path, payload in { {str(p): d for p, d in payloads.items()}!r}.items():
                with open(path + ".new", "wb") as f:
                    f.write(payload)
                os.replace(path + ".new", path)
            """))
        assert all(os.stat(path).st_uid == NOBODY for path in payloads)


@pytest.mark.skipif(not numba_adapter.enabled(), reason="Numba's own cache files are read "
                    "by Numba: srcxform checks them with the Numba internals it uses")
@pytest.mark.parametrize("how", [  # two of the four in the quick tier
    "writable by others",
    pytest.param("owned by another user", marks=[pytest.mark.slow, pytest.mark.skipif(
        not IS_ROOT, reason="only root can give a file to another user")]),
    pytest.param("written by another user", marks=pytest.mark.skipif(
        not CAN_SETPRIV, reason="needs root and setpriv to run as another user")),
    pytest.param("planted in a folder open to everyone", marks=[pytest.mark.slow,
                 pytest.mark.skipif(not CAN_SETPRIV,
                                    reason="needs root and setpriv to run as another user")]),
])
def test_a_planted_payload_with_a_valid_checksum_is_never_loaded(planted, how):
    script, env, markers, payloads = planted
    _write_payloads(payloads, how)
    second = run_json(script, env, *FUNCTIONS)
    assert sorted(os.listdir(markers)) == []  # no payload ran
    assert_expected(second["grads"])
    messages = second["warnings"]
    if how == "planted in a folder open to everyone":  # the folder is refused, once
        assert [category for category, _ in messages] == ["CacheWarning"], messages
        assert env["SRCXFORM_CACHE_DIR"] in messages[0][1] and "writable by" in \
            messages[0][1], messages
    else:  # each file is refused, once, and rebuilt
        assert_each_named_once(messages, payloads)
        assert run_json(script, env, *FUNCTIONS) == {"grads": second["grads"], "warnings": []}


@pytest.mark.slow
def test_without_numba_internals_numba_reads_no_untrusted_file(tmp_path):
    """With Numba's public API only, Numba unpickles its own cache files: each of a
    kernel's that is not to be trusted is removed before Numba looks (one warning)."""
    cache, marker = tmp_path / "cache", tmp_path / "marker"
    script = tmp_path / "script.py"
    script.write_text(GRADS)
    env = checkout_env(cache, SRCXFORM_NUMBA_INTERNALS="0")
    assert run_json(script, env, "f_nbi")["warnings"] == []
    index = next((cache / "__pycache__").glob("f_nbi__*.nbi"))  # Numba's own name
    index.write_bytes(pickle.dumps(_Opens(str(marker))))
    index.chmod(0o666)
    second = run_json(script, env, "f_nbi")
    assert not marker.exists()
    assert_expected(second["grads"])
    assert [(category, str(index) in message and "writable by" in message)
            for category, message in second["warnings"]] == [("CacheWarning", True)]
    assert run_json(script, env, "f_nbi") == {"grads": second["grads"], "warnings": []}
