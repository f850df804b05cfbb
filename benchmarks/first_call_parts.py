"""Where a small program's blocking first call goes: the runtime's helpers, Numba's
first compile in a process, and the kernel's own compile (issue #28).

    python -m benchmarks.first_call_parts rows-10     a case of benchmarks/scaling.py

Each part is timed in a new process pinned to one core: the first call of
`value_and_grad` (CPU seconds) with a fresh cache folder, then with a folder fresh but
for `runtime/` (helpers an earlier process compiled, as on a user's machine after its
first program); in that second call, the kernel's own compile (Numba's `numba:compile`
event for it, wall seconds, which include the helpers it calls that Numba compiles for
it); and, in a third process, a 3-line `njit` function: Numba's first compile in a
process, paid once by every process that compiles anything.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchmarks import scaling, threads


def _first_call(case):
    from numba.core import event

    import srcxform as tf

    kind, n = scaling.CASES[case]
    args, wrt = scaling._inputs(kind, n)
    f = tf.differentiable(scaling._function(kind, n, tf), wrt=tuple(range(wrt)), wait=True)
    start = time.process_time()
    with event.install_recorder("numba:compile") as recorder:
        f.value_and_grad(*args)
    first = time.process_time() - start
    begun, kernel = {}, 0.0
    for at, ev in recorder.buffer:
        name = ev.data["dispatcher"].py_func.__name__
        if not name.endswith("__value_and_grad"):
            continue
        if ev.is_start:
            begun[name] = at
        else:
            kernel += at - begun.pop(name)
    return {"first call": first, "kernel": kernel}


def _numba_first():
    import numba
    import numpy as np

    start = time.process_time()
    numba.njit(lambda a: a.sum())(np.ones(3))
    return {"Numba's first compile": time.process_time() - start}


def _run(part, case, cache):
    env = dict(os.environ, SRCXFORM_CACHE_DIR=cache, OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-m", "benchmarks.first_call_parts", "--child",
                          part, case], env=env, capture_output=True, text=True, check=True,
                         cwd=scaling._ROOT).stdout
    return json.loads(out.splitlines()[-1])


def main(case):
    cache = tempfile.mkdtemp(prefix="first-call-")
    fresh = _run("first", case, cache)
    for name in os.listdir(cache):  # all but the runtime's helpers
        if name != "runtime":
            path = os.path.join(cache, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
    warm = _run("first", case, cache)
    numba_first = _run("numba", case, cache)["Numba's first compile"]
    shutil.rmtree(cache)
    print(f"{case}: first call, fresh cache {fresh['first call']:.2f} s CPU; runtime cached "
          f"{warm['first call']:.2f} s CPU, of which the kernel's compile {warm['kernel']:.2f}"
          f" s; Numba's first compile in a process {numba_first:.2f} s CPU")


def _child(part, case):
    threads.pin({max(os.sched_getaffinity(0))})
    print(json.dumps(_first_call(case) if part == "first" else _numba_first()))


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        _child(*sys.argv[2:4])
    else:
        main(sys.argv[1])
