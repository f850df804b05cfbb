"""What the harness claims about threads, enforced and measured.

A thread-count setting is only a request: JAX's CPU runtime, for one, ignores the XLA
flags that were meant to hold it to one thread. So the serial table pins the whole
process to one core (`pin`) before any library starts a pool, and every table records,
for each system, the threads that actually ran during its timed blocks (`CpuMeter`):
each thread listed in /proc/self/task, read through its own CPU clock.
"""

import os
import threading
import time
from pathlib import Path

SERIAL, ALL_CORES = "serial", "all-cores"  # the two tables

# The pools that read their size from the environment when they start.
POOL_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS")

# A thread counts as having run when its CPU time in the timed blocks is at least this
# share of their wall time: a pool thread that only woke to check for work does not.
RAN_SHARE = 0.01

_TASKS = Path("/proc/self/task")
_TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 1e7


def tids():
    """The ids of this process's threads."""
    try:
        return [int(t) for t in os.listdir(_TASKS)]
    except OSError:  # not Linux
        return [threading.get_native_id()]


def pin(cores):
    """Restricts every thread of this process, and so every thread it starts later, to
    `cores`. (sched_setaffinity(0) alone moves only the calling thread.)"""
    for tid in tids():
        try:
            os.sched_setaffinity(tid, cores)
        except ProcessLookupError:  # the thread ended meanwhile
            pass


def affinity():
    """The cores any thread of this process may run on."""
    cores = set()
    for tid in tids():
        try:
            cores |= os.sched_getaffinity(tid)
        except ProcessLookupError:
            pass
    return sorted(cores)


def limit_pools(n):
    """Asks OpenMP, the BLAS libraries and Numba for n threads. Read when each pool
    starts, so this runs before NumPy or any peer is imported; `pin` is what enforces it."""
    for var in POOL_VARS:
        os.environ[var] = str(n)


def _thread_clock(tid):
    """The clock id of a thread's CPU time (Linux's encoding, as glibc's
    pthread_getcpuclockid makes it: CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD on ~tid)."""
    return ((~tid) << 3) | 6


def _cpu_ns(tid):
    """A thread's CPU time in ns: its CPU clock, exact even while it runs (schedstat and
    stat lag a running thread by up to a scheduler tick), else stat's clock ticks."""
    try:
        return time.clock_gettime_ns(_thread_clock(tid))
    except (OSError, AttributeError):  # the thread ended, or no such clock here
        pass
    try:
        fields = (_TASKS / str(tid) / "stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * _TICK_NS  # utime, stime
    except (OSError, ValueError, IndexError):
        return None


def snapshot():
    """{thread id: CPU ns so far} for every thread of this process."""
    out = {}
    for tid in tids():
        ns = _cpu_ns(tid)
        if ns is not None:
            out[tid] = ns
    return out


class CpuMeter:
    """Accumulates, over one system's timed blocks, each thread's CPU time and the blocks'
    wall time: `add(before, after, wall_ns)` with snapshots taken around a block."""

    def __init__(self):
        self.cpu = {}  # thread id -> CPU ns inside the blocks
        self.wall_ns = 0.0

    def add(self, before, after, wall_ns):
        self.wall_ns += wall_ns
        for tid, ns in after.items():
            spent = ns - before.get(tid, 0)  # a thread started in the block counts whole
            if spent > 0:
                self.cpu[tid] = self.cpu.get(tid, 0) + spent

    def threads(self):
        """How many threads ran at least RAN_SHARE of the blocks' wall time."""
        floor = RAN_SHARE * self.wall_ns
        return sum(1 for ns in self.cpu.values() if ns >= floor)

    def cores_busy(self):
        """CPU time of all threads ÷ wall time: 1.0 is one core busy throughout."""
        return sum(self.cpu.values()) / self.wall_ns if self.wall_ns else None

    def summary(self):
        return {"threads": self.threads(), "cores_busy": self.cores_busy(),
                "thread_cpu_ms": sorted((round(ns / 1e6, 2) for ns in self.cpu.values()),
                                        reverse=True)}
