"""Tiered execution: no call waits for Numba.

A new kernel's first calls run at once on NumPy (tier 0: the kernel's traced program, run
by interpret.py, so that the function's Python runs once, when traced), while Numba
compiles the kernel in a worker process, which writes it into the on-disk cache; the first call after the worker is done loads it from there and runs it
natively, as every later call does. `SRCXFORM_TIERED=0` (or `differentiable(wait=True)`,
or `f.compile(*args)` ahead of the calls) compiles in the calling process instead.

The worker is a process, not a thread, because Numba's compiler is mostly Python and
would hold the GIL the tier-0 calls need. It is one long-lived interpreter per process,
started when the first tiered function is made (its imports, about a second of CPU, then
overlap the program's own work up to the first call; a program that calls none pays the
start of a process, and at exit its end): a new interpreter (subprocess), not a fork (the
caller may have threads), nor multiprocessing's spawn (which runs the user's __main__
again in the child). It imports the backend and Numba only (compile_worker.py).

Nothing the worker does decides a result: it only fills the cache. Where it dies or cannot
start, the kernel compiles in the calling process, with a TieredWarning; where it failed
to compile, the calling process compiles again and raises Numba's error as it would have.

A program that exits while the worker compiles (a short script's one call) hands the
worker the jobs it has (up to EXIT_WAIT seconds for their modules to be generated: tens
of milliseconds) and tells it to finish them into the cache after the program has gone,
so that the program's next run is native from its first call; it does not wait for them.
"""

import atexit
import itertools
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import warnings
import weakref
from multiprocessing.connection import Connection

import numpy as np

from srcxform import numba_adapter
from srcxform.core import settings, signature
from srcxform.jit import backend, compile_worker, index, interpret, slow_compile
from srcxform.runtime import calls
from srcxform.numba_adapter import cachefiles
from srcxform.numba_adapter.cachefiles import cache_dir
from srcxform.core.errors import PACKAGE_DIR, TieredWarning, user_frame, user_frame_object
from srcxform.core.tensor import Tensor, Updating, Value


def enabled(wait):
    """Whether a Differentiable made with `wait` runs new kernels' first calls on tier 0
    (not once this process writes to the cache no more: the worker would deliver nothing)."""
    return not wait and backend.jit_enabled() and cachefiles.writing() and \
        settings.switch("SRCXFORM_TIERED", default=True)


class Job:
    """One kernel on its way to native code: its module generated, then compiled in the
    worker, both from this process's tier-up thread once the job is handed off. `lost`
    says why that did not happen (None when it did: compiled into the cache, or failed to
    compile in the worker)."""

    def __init__(self, generate, task, folder):
        self._done = threading.Event()
        self.sent = threading.Event()  # its task has run: the worker has it, or it is lost
        self.lost = None
        self.generate = generate  # the kernel's module, as compiler.trace_kernel makes it
        self.folder = folder  # the cache folder it compiles into
        self._task = self._handed = task  # the second: a forked child hands it off again
        self.watch = None  # says so when the worker's compile takes long
        _UNFINISHED.add(self)

    def hand_off(self):
        """Queues the job for the tier-up thread, once. The first call hands it off as it
        returns, so that the work shares the GIL with the calls after it, not with it."""
        with _STARTING:
            task, self._task = self._task, None
        if task is not None:
            tasks = _tier_up()
            _UNSENT.add(self)
            tasks.put(task)

    def ready(self):
        return self._done.is_set()

    def wait(self, timeout=None):
        self.hand_off()
        return self._done.wait(timeout)

    def finish(self, lost=None):
        self.lost = lost
        if self.watch is not None:
            self.watch.stop()
        self._done.set()
        _UNFINISHED.discard(self)


_UNFINISHED = weakref.WeakSet()  # the jobs not finished yet


def _before_fork():
    """Notes whether a thread imports Numba or compiles as the process forks (asked, not
    waited for: a fork that waited could deadlock against another library's at-fork
    lock, logging's, which an import waits for)."""
    global _BUSY_AT_FORK
    _BUSY_AT_FORK = backend.LOADING.locked() or numba_adapter.compiling_elsewhere()


def _after_fork():
    """In a forked child: the parent's worker and reply thread finish the jobs it handed
    off in the parent only, so the child's calls of those kernels would run on NumPy for
    good; each is handed off again, to the child's own worker, by its next call. Not
    where the parent was importing Numba or compiling: the child holds those locks taken
    by a thread it does not have, and loading the kernel would wait for them forever (its
    calls stay on NumPy). The module locks a parent's thread may have held are new."""
    _STARTING._at_fork_reinit()
    _SPAWNING._at_fork_reinit()
    for job in [] if _BUSY_AT_FORK else list(_UNFINISHED):
        job._done, job.sent, job.watch = threading.Event(), threading.Event(), None
        job._task = job._handed


_BUSY_AT_FORK = False
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork)


def compile_later(kernel, generate, leaves):
    """A Job for `kernel`, traced but not generated (compiler.trace_kernel's kernel and
    function generating it), compiling in the worker for calls with these argument
    leaves once it is handed off."""
    arguments = [signature.described(a) for a in kernel.arguments(leaves)]
    # What the worker's compile depends on in the environment: the cache folder (read
    # now: tests and users change it), Numba's and srcxform's switches.
    env = {k: v for k, v in os.environ.items() if k.startswith(("SRCXFORM_", "NUMBA_"))}
    env["SRCXFORM_CACHE_DIR"] = cache_dir()
    where = user_frame()  # the call's line, for a slow compile's warning

    def task():
        try:
            send()
        finally:
            _UNSENT.discard(job)
            job.sent.set()

    def send():
        try:
            kernel.generated(generate())
        except Exception as err:  # noqa: BLE001 - the switching call generates it again
            job.finish(f"its module could not be generated ({type(err).__name__}: {err})")
            return
        spec = kernel.spec
        buffers = [("array", dtype.str, len(shape), "C", False)
                   for shape, dtype in (kernel.conv.outs[p] for p in kernel.conv.buffers)]
        payload = (env, spec.source, spec.func_name, spec.parallel, arguments + buffers)
        job.watch = slow_compile.Watch(
            f"{spec.func_name} (its calls run on the eager tape until it is done)", spec.source,
            where)
        try:
            _worker().submit(job, payload)
        except Exception as err:  # noqa: BLE001 - an OSError where it could not start
            job.finish(f"it could not start ({err})")

    job = Job(generate, task, env["SRCXFORM_CACHE_DIR"])
    return job


def start_worker():
    """Starts the worker, if it is not running, ahead of its first job: called when a
    tiered function is made, so that the worker's imports overlap the program's own work
    up to its first call. The tier-up thread starts it: the caller does not wait for the
    new process to run (tens of ms on a loaded machine). Where it cannot start, the job
    says so (compile_later)."""
    _tier_up().put(_start_worker)


def _start_worker():
    try:
        _worker()
    except OSError:
        pass


def prepare_native():
    """Gets this process's Numba ready for the switch to native code, once: imported, its
    CPU target initialized, the runtime helpers imported. Else the switching call would
    wait that long (half a second and more) itself. The tier-up thread does it after the
    job handed off before it (the worker needs that first); meanwhile the eager calls share
    the GIL with it."""
    global _NATIVE
    with _STARTING:
        if _NATIVE == os.getpid():
            return
        _NATIVE = os.getpid()
    _tier_up().put(compile_worker.start_numba)


_NATIVE = None  # the process whose Numba is (being) made ready


def _tier_up():
    """The queue of this process's tier-up thread, which runs its tasks in turn: the
    worker's start, handed-off jobs, Numba's start (made with the first tiered function,
    and again in a forked child, which has no threads but the forking one)."""
    global _TIER_UP
    with _STARTING:
        if _TIER_UP is None or _TIER_UP[0] != os.getpid():
            _UNSENT.clear()  # a forked child's: its parent's tier-up thread sends them
            tasks = queue.SimpleQueue()
            threading.Thread(target=_run_tasks, args=(tasks,), name="srcxform-tier-up",
                             daemon=True).start()
            tasks.put(index.digest_library)  # what the first call's index key reads
            _TIER_UP = os.getpid(), tasks
        return _TIER_UP[1]


def _run_tasks(tasks):
    while True:
        task = tasks.get()
        try:
            task()
        except Exception:  # noqa: BLE001, S110 - a job's task finishes its job whatever
            pass  # happens; the digest or Numba's start, failing, fails again where needed


_TIER_UP = None  # (pid, the queue of its tier-up thread)
_UNSENT = set()  # the jobs handed off whose task has not run yet
EXIT_WAIT = 1.0  # seconds the exit waits, at most, for them to reach the worker


def warn_lost(job, name):
    """The TieredWarning for a job the worker could not finish."""
    user = user_frame_object()  # the warning names the user's call
    level, frame = 1, sys._getframe()
    while frame is not None and frame is not user:
        level, frame = level + 1, frame.f_back
    warnings.warn(f"srcxform's compiler worker could not compile {name}'s kernel: "
                  f"{job.lost}; it compiles in this process instead", TieredWarning,
                  stacklevel=level)


# ----- tier 0: the traced program's results, as the kernel's call path returns them -----


def results(kernel, leaves):
    """What a call of the kernel's form returns while it compiles: its traced program run
    on NumPy (interpret.py), not the function, whose Python ran once, when traced. The
    Variables it assigns are updated as the kernel's call updates them (holding their
    locks), and its results made as the kernel's generated call path makes them
    (Convention.result_leaves)."""
    conv = kernel.conv
    written = [leaves[v] if isinstance(v, int) else v for v in conv.writes]
    with Updating(written):
        outputs = interpret.run(kernel.program, kernel.arguments(leaves))
        for variable, value in zip(written, outputs[len(outputs) - len(written):]):
            calls.assign(variable, value)
    return conv.results(conv.result_leaves(_Values(conv, leaves, outputs)))


class _Values:
    """Convention.result_leaves' maker of values: the call's argument leaves, and the
    traced program's outputs made what the kernel returns (an array; for rank 0 a
    Python number)."""

    asarray, tensor = staticmethod(np.asarray), staticmethod(Tensor._new)

    def __init__(self, conv, leaves, outputs):
        self.conv, self.arg, self.outputs = conv, leaves.__getitem__, outputs

    def const(self, k, value):
        return value

    def out(self, j):
        x = self.outputs[j]
        array = np.asarray(x._array if isinstance(x, Value) else x, self.conv.outs[j][1])
        return array if array.ndim else array.item()

    def scalar(self, x, dtype):
        return dtype.type(x)


# ----- the worker -----


def _worker():
    """The process's worker, started when first needed (again after one died, and in a
    forked child, which must not share its parent's pipes)."""
    global _WORKER
    with _SPAWNING:
        if _EXITING:  # a job handed off as the program ends starts none
            raise OSError("this process is exiting")
        if _WORKER is None or _WORKER.dead or _WORKER.pid != os.getpid():
            _WORKER = _Worker()
        return _WORKER


@atexit.register
def _at_exit():
    """Lets the jobs handed off reach the worker (for EXIT_WAIT seconds at most), then
    ends it: it finishes the jobs it has into the cache after this process has gone
    (where the cache outlasts the process), else it ends at once. Keeps the tier-up
    thread (a daemon: it may still run a job handed off as the program ended) from
    starting another."""
    global _EXITING
    deadline = time.monotonic() + EXIT_WAIT
    for job in list(_UNSENT):
        job.sent.wait(max(0.0, deadline - time.monotonic()))
    with _SPAWNING:
        _EXITING = True
        worker = _WORKER
    if worker is not None and worker.pid == os.getpid():  # not a forked child's parent's
        worker.close(finish=True)


_WORKER = None
_EXITING = False
_STARTING = threading.Lock()  # held briefly: making the threads, handing a job off
_SPAWNING = threading.Lock()  # held while the worker starts, which may take a while

# The child's first lines: srcxform importable from where this process imports it, and
# its package __init__ (ops, SciPy) not run: the worker needs the backend only.
_BOOT = """\
import sys, types
sys.path.insert(0, sys.argv[1])
package = types.ModuleType("srcxform")
package.__path__ = [sys.argv[1] + "/srcxform"]
sys.modules["srcxform"] = package
from srcxform.jit import compile_worker
compile_worker.serve(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
"""


class _Worker:
    """The compiler process, the pipes to it, and a thread reading its replies (blocked in
    a read, it holds no GIL)."""

    def __init__(self):
        self.pid, self.dead = os.getpid(), False
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        root = os.path.dirname(PACKAGE_DIR)  # what the child puts on sys.path
        # The child starts with FINISH blocked (it inherits this thread's signal mask):
        # sent however soon, it stays pending for the child to find (compile_worker).
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {compile_worker.FINISH})
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, root, str(to_child), str(from_child),
                 str(os.getpid())],
                pass_fds=(to_child, from_child), stdin=subprocess.DEVNULL)
        except BaseException:
            os.close(from_parent)
            os.close(to_parent)
            raise
        finally:  # the child's ends: the parent holding them would hide the child's exit
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(to_child)
            os.close(from_child)
        self._send = Connection(from_parent, readable=False)
        self._receive = Connection(to_parent, writable=False)
        self._jobs, self._numbers, self._lock = {}, itertools.count(), threading.Lock()
        threading.Thread(target=self._read, name="srcxform-compiler-replies",
                         daemon=True).start()

    def submit(self, job, payload):
        with self._lock:
            if self.dead:
                raise OSError("it has exited")
            number = next(self._numbers)
            self._jobs[number] = job
            try:
                self._send.send((number, payload))
            except OSError:
                del self._jobs[number]
                raise

    def _read(self):
        try:
            while True:
                number, _ = self._receive.recv()  # the compile error, if any: raised again
                with self._lock:                  # by the caller's own compile
                    job = self._jobs.pop(number)
                job.finish()
        except (EOFError, OSError):
            pass
        with self._lock:
            self.dead = True
            jobs, self._jobs = list(self._jobs.values()), {}
        code = self.process.wait()
        for job in jobs:
            job.finish(f"it exited (status {code})")

    def close(self, finish=False):
        """Ends the worker: the closed pipe is its signal to exit. With `finish` (this
        process exits), one with jobs for a cache folder that outlasts this process is
        told to FINISH them, and not waited for. Otherwise one still compiling is killed
        after a moment (the cache's files are written whole or not at all), one with no
        job at once (it may be importing Numba, not reading the pipe)."""
        with self._lock:
            idle = not self._jobs
            lasting = any(not cachefiles.temporary(job.folder) for job in self._jobs.values())
        if finish and lasting:
            self.process.send_signal(compile_worker.FINISH)
            self._send.close()
            return
        self._send.close()
        try:
            self.process.wait(timeout=0 if idle else 0.5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
