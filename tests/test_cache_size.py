"""The cache is bounded (SRCXFORM_CACHE_MAX): past its limit, the entries used least
recently are removed, whole, while other processes use the cache; and `python -m
srcxform cache info|clear|prune` reports, clears and prunes it."""

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from cache_scripts import checkout_env
from srcxform import CacheWarning
from srcxform.jit import backend
from srcxform.numba_adapter import cachefiles, cachesize

ROOT = Path(__file__).parents[1]

# Compiles functions first..last-1 (one kernel each), checking each gradient.
COMPILING = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import srcxform as tf

    def make(k):
        def f(x):
            return tf.reduce_sum(tf.tanh(x * k) * x)
        f.__name__ = f"f{k:g}"
        return f

    x = np.linspace(-1.0, 1.0, 5)
    wrong = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(int(sys.argv[1]), int(sys.argv[2])):
            want = np.tanh(k * x) + k * x * (1 - np.tanh(k * x) ** 2)
            if not np.allclose(tf.differentiable(make(float(k))).grad(x), want, rtol=1e-12):
                wrong.append(k)
    print(json.dumps({"wrong": wrong, "warnings": [str(w.message) for w in caught]}))
    """)


def _start(tmp_path, cache, first, last, **env):
    script = tmp_path / "compiling.py"
    script.write_text(COMPILING)
    return subprocess.Popen([sys.executable, str(script), str(first), str(last)],
                            env=checkout_env(cache, **env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finished(process):
    out, err = process.communicate(timeout=900)
    assert process.returncode == 0, err
    result = json.loads(out.splitlines()[-1])
    assert result == {"wrong": [], "warnings": []}


def _size(cache):
    return _size_of(cachesize.measure(str(cache)))


def _size_of(entries):
    return sum(entry.size for entry in entries.values())


def _kernels(cache):
    return {name for kind, name in cachesize.measure(str(cache)) if kind == "kernel"}


@pytest.mark.parametrize("text, size", [("123", 123), ("4k", 4096), ("500M", 500 << 20),
                                         ("2G", 2 << 30), ("1.5G", 3 << 29), ("2GiB", 2 << 30),
                                         (" 3 mb ", 3 << 20), ("1T", 1 << 40)])
def test_a_size_is_a_number_of_bytes_or_of_k_m_g_t(text, size):
    assert cachesize.parse_size(text) == size


def test_a_limit_that_is_not_a_size_is_the_default_warned_once(monkeypatch):
    monkeypatch.setenv("SRCXFORM_CACHE_MAX", "lots")
    with pytest.warns(CacheWarning, match="SRCXFORM_CACHE_MAX='lots'") as caught:
        assert cachesize.limit() == cachesize.limit() == 1 << 30
    assert len(caught) == 1
    monkeypatch.delenv("SRCXFORM_CACHE_MAX")
    assert cachesize.limit() == 1 << 30


@pytest.mark.slow
def test_the_cache_stays_within_its_limit_with_processes_at_once(tmp_path):
    """Four processes, each making 200 kernels (as plain Python: SRCXFORM_JIT=0), half of
    them a neighbour's too, in a cache limited to about 50 kernels, while a fifth clears
    it three times: every result right, no warning, and the cache within its limit."""
    cache, limit, done = tmp_path / "cache", 512 << 10, tmp_path / "done"
    limited = {"SRCXFORM_JIT": "0", "SRCXFORM_CACHE_MAX": str(limit)}
    processes = [_start(tmp_path, cache, 100 * p, 100 * p + 200, **limited) for p in range(4)]
    clearer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, time
        from srcxform.numba_adapter import cachefiles, cachesize
        cleared = 0
        while cleared < 3 and not os.path.exists({str(done)!r}):
            kernels = [kind for kind, _ in cachesize.measure(cachefiles.cache_dir())
                       if kind == "kernel"]
            if len(kernels) >= 20:  # while the others load and write
                cachesize.clear()
                cleared += 1
            time.sleep(0.1)
        """)], env=checkout_env(cache))
    for process in processes:
        _finished(process)
    done.touch()
    assert clearer.wait(timeout=300) == 0
    assert _size(cache) <= limit
    _finished(_start(tmp_path, cache, 1000, 1020, **limited))
    assert 0 < _size(cache) <= limit
    assert len(_kernels(cache)) >= 10  # the recent ones are kept


@pytest.mark.slow
def test_a_cache_of_compiled_kernels_stays_within_its_limit(tmp_path):
    cache = tmp_path / "cache"
    _finished(_start(tmp_path, cache, 1, 4))  # three kernels, and the runtime's helpers
    limit = _size(cache) // 2
    _finished(_start(tmp_path, cache, 4, 10, SRCXFORM_CACHE_MAX=str(limit)))
    assert 0 < _size(cache) <= limit
    _finished(_start(tmp_path, cache, 1, 10, SRCXFORM_CACHE_MAX=str(limit)))  # loads or
    assert _size(cache) <= limit                                                # compiles


def _filled(tmp_path, monkeypatch, n):
    """A cache holding n kernels (as plain Python), each used a minute after the one
    before, and the other entries (index entries, code) before them: the kernels' module
    names, least recently used first."""
    cache = tmp_path / "cache"
    _finished(_start(tmp_path, cache, 0, n, SRCXFORM_JIT="0"))
    monkeypatch.setenv("SRCXFORM_CACHE_DIR", str(cache))
    entries = cachesize.measure(str(cache))
    kernels = [next(name for kind, name in entries if kind == "kernel" and
                    name.startswith(f"f{k}__")) for k in range(n)]
    for (kind, name), entry in entries.items():
        used = 1e9 + 60 * kernels.index(name) if kind == "kernel" else 1e9 - 60
        for path, _ in entry.files:
            os.utime(path, (used, used))
    return cache, kernels


def test_pruning_removes_whole_entries_least_recently_used_first(tmp_path, monkeypatch):
    cache, kernels = _filled(tmp_path, monkeypatch, 8)
    entries = cachesize.measure(str(cache))
    files = {name: sorted(p for p, _ in entries["kernel", name].files) for name in kernels}
    assert all(len(paths) == 2 for paths in files.values())  # the module, its code
    # A load marks what it reads as used now: the oldest kernel's code.
    (code,) = [p for p in files[kernels[0]] if "code" in p]
    assert cachefiles.read_sealed(code, bytes) is not None
    keep = sum(entries["kernel", name].size for name in [kernels[0], *kernels[-4:]])
    monkeypatch.setenv("SRCXFORM_CACHE_MAX", str(keep))
    others = sum(kind != "kernel" for kind, _ in entries)
    removed, freed = cachesize.prune()
    assert removed == others + 3 and freed == _size_of(entries) - keep
    left = cachesize.measure(str(cache))
    assert sorted(name for kind, name in left if kind == "kernel") == \
        sorted([kernels[0], *kernels[-4:]])
    assert all(sorted(p for p, _ in left["kernel", name].files) == files[name]
               for kind, name in left if kind == "kernel")  # whole
    assert _size(cache) <= cachesize.limit()


def test_a_cache_that_outgrows_its_limit_is_pruned_below_it(tmp_path, monkeypatch):
    cache, _ = _filled(tmp_path, monkeypatch, 6)
    before = cachesize.measure(str(cache))
    monkeypatch.setenv("SRCXFORM_CACHE_MAX", str(_size_of(before)))
    monkeypatch.setattr(cachefiles, "_WRITE_ERROR", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        backend.code("x = 1\n")  # a write: past the limit
    after = cachesize.measure(str(cache))
    assert _size_of(after) <= cachesize.PRUNED_TO * _size_of(before)
    removed = before.keys() - after.keys()
    assert removed and max(before[key].used for key in removed) <= \
        min(before[key].used for key in after.keys() & before.keys())


def _command(cache, *args, **env):
    done = subprocess.run([sys.executable, "-m", "srcxform", "cache", *args],
                          env=checkout_env(cache, **env), capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


@pytest.mark.slow
def test_the_cache_command_reports_prunes_and_clears(tmp_path, monkeypatch):
    cache, kernels = _filled(tmp_path, monkeypatch, 6)
    info = _command(cache, "info")
    assert str(cache) in info and "6 kernels" in info and "limit 1.0 GiB" in info, info
    assert "last used" in info and "ago" in info, info
    size = _size(cache)
    pruned = _command(cache, "prune", SRCXFORM_CACHE_MAX=str(size // 2))
    assert "removed" in pruned, pruned
    assert _size(cache) <= size // 2 and kernels[-1] in _kernels(cache)
    cleared = _command(cache, "clear")
    assert "removed" in cleared, cleared
    assert _size(cache) == 0
    assert sorted(p.name for p in cache.iterdir()) == sorted([*cachefiles.SUBFOLDERS,
                                                              cachesize.LEDGER])
    assert "0 kernels" in _command(cache, "info")


def test_the_cache_command_explains_itself(tmp_path):
    done = subprocess.run([sys.executable, "-m", "srcxform", "cache", "frobnicate"],
                          env=checkout_env(tmp_path), capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 2 and "info" in done.stderr and "prune" in done.stderr


def test_a_folder_in_place_of_the_ledger_heals(tmp_path, monkeypatch):
    cache, _ = _filled(tmp_path, monkeypatch, 2)
    ledger = cache / cachesize.LEDGER
    ledger.unlink()
    ledger.mkdir()
    monkeypatch.setattr(cachefiles, "_WRITE_ERROR", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        backend.code("y = 2\n")  # a write, counted
    assert ledger.is_file() and int(ledger.read_text()) == _size(cache)


@pytest.mark.parametrize("planted", ["link", "fifo"])
def test_a_link_or_a_fifo_in_place_of_the_ledger_heals(tmp_path, monkeypatch, planted):
    # A link to /dev/null swallowed every count (the limit never reached); a FIFO hung
    # the write that opened it (helper 80).
    cache, _ = _filled(tmp_path, monkeypatch, 2)
    ledger = cache / cachesize.LEDGER
    ledger.unlink()
    ledger.symlink_to(os.devnull) if planted == "link" else os.mkfifo(ledger)
    monkeypatch.setattr(cachefiles, "_WRITE_ERROR", None)
    backend.code(f"y = {planted!r}\n")  # a write, counted
    assert ledger.is_file() and not ledger.is_symlink()
    assert int(ledger.read_text()) == _size(cache)


def test_a_ledger_this_process_cannot_write_still_keeps_the_limit(tmp_path, monkeypatch):
    # A read-only ledger (another user's, in a shared cache) ended all pruning (helper 80).
    cache, _ = _filled(tmp_path, monkeypatch, 4)
    limit = _size(cache) + 500
    monkeypatch.setenv("SRCXFORM_CACHE_MAX", str(limit))
    monkeypatch.setattr(cachefiles, "_WRITE_ERROR", None)

    def refused(path, nbytes):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(cachesize, "_append", refused)
    for k in range(4):  # it measures the cache each tenth of the limit it writes
        backend.code(f"z = {'x' * (limit // 30) + str(k)!r}\n")
    assert _size(cache) <= limit


def test_a_ledger_rewritten_while_processes_append_keeps_every_count(tmp_path):
    # A rewrite (a prune's) reads the ledger and replaces it; an append in between used to
    # land in the replaced file and be lost, letting the cache outgrow its limit.
    ledger = tmp_path / cachesize.LEDGER
    ledger.write_text("0\n")
    append = (f"from srcxform.numba_adapter import cachesize\n"
              f"for _ in range(1000): cachesize._append({str(ledger)!r}, 1)")
    appenders = [subprocess.Popen([sys.executable, "-c", append], env=checkout_env(tmp_path))
                 for _ in range(2)]
    rewrites = 0
    while any(p.poll() is None for p in appenders) or not rewrites:
        counts = cachesize._ledger(str(ledger))
        cachesize._rewrite_ledger(str(ledger), sum(counts), len(counts))
        rewrites += 1
    assert all(p.returncode == 0 for p in appenders)
    assert sum(cachesize._ledger(str(ledger))) == 2000
