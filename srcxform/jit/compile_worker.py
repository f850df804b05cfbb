"""The compiler worker's side of tiered execution (tiered.py): compiles each kernel it is
sent for the signature it is sent, into the on-disk cache, and replies when done.

It runs in an interpreter of its own, started with srcxform's package __init__ skipped:
only the backend, the runtime helpers and Numba are imported. It exits when the pipe
from its parent closes (the parent exited, or ended it), and soon after its parent dies;
but a parent that exits in order with jobs in flight tells it to FINISH them first, into
the cache, so that the parent's next run finds them native.
"""

import importlib
import os
import signal
import sys
import threading
import time
import types
import warnings
from multiprocessing.connection import Connection

import numpy as np

from srcxform.core.errors import CacheWarning

PARENT_CHECK_INTERVAL = 0.1  # seconds between two looks at whether the parent lives
# The parent's word, as it exits in order, that the jobs it sent are to be finished. The
# worker starts with it blocked (tiered.py starts it so), so that it stays pending until
# the watch on the parent finds it (exit_with), however soon it was sent.
FINISH = signal.SIGURG


def serve(inbox_fd, outbox_fd, parent):
    """Compiles the jobs read from the pipe inbox_fd, replying on outbox_fd, for the
    process `parent` (its pid)."""
    # Ctrl-C reaches the terminal's whole process group: the parent decides what ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A write to the cache that fails here fails in the parent too, which warns.
    warnings.filterwarnings("ignore", "srcxform could not write", CacheWarning)
    exit_with(parent)
    inbox = Connection(inbox_fd, writable=False)
    outbox = Connection(outbox_fd, readable=False)
    scipy_linalg_on_demand()
    start_numba()  # while the parent runs up to its first call
    while True:
        try:
            number, (env, source, func_name, parallel, signature) = inbox.recv()
        except EOFError:
            _exit()
        try:
            _compile(env, source, func_name, parallel, signature)
            error = None
        except Exception as err:  # noqa: BLE001 - the parent compiles again and raises it
            error = f"{type(err).__name__}: {err}"
        try:
            outbox.send((number, error))
        except BrokenPipeError:  # the parent has gone (a process pool's worker, ended)
            if not _FINISHING:
                _exit()


def exit_with(parent):
    """Ends this process soon after `parent` dies. A parent killed by a signal runs no
    exit handler, and its pipe's closing reaches the worker only once it reads the pipe
    again (after its start, or the compile it is in), or never while a child the parent
    forked (a process pool's worker) holds the pipe open. A compile in progress is
    abandoned (the cache's files are written whole or not at all), unless the parent
    said FINISH: then the jobs it sent are finished, and the pipe's end ends the worker."""

    def watch():
        while os.getppid() == parent and FINISH not in signal.sigpending():
            time.sleep(PARENT_CHECK_INTERVAL)
        if FINISH not in signal.sigpending():
            _exit()
        global _FINISHING
        _FINISHING = True
        # Its output nowhere: a program reading the parent's waits for the parent alone.
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            os.dup2(devnull, fd)

    threading.Thread(target=watch, name="srcxform-parent-watch", daemon=True).start()


_FINISHING = False  # the parent said FINISH: it may be gone, and reads no replies


def _exit():
    """Ends the worker at once: it has nothing to flush or clean up, and the interpreter's
    own finalization, with Numba loaded, takes half a second."""
    os._exit(0)


def start_numba():
    """What every compile needs first, and what loading a kernel from the cache needs too:
    Numba imported, its CPU target initialized, the runtime helpers' modules imported.
    The worker does it as it starts, while its parent runs up to its first call; the
    parent (tiered.prepare_native) after that call, while its calls run eagerly."""
    from srcxform.jit import backend

    # Numba's modules import one another in cycles: imported by two threads at once, one
    # can meet a module the other has half run (an ImportError). backend.load imports
    # them under this lock, as a call that compiles here while this runs does.
    with backend.LOADING:
        from srcxform.numba_adapter import jit

        backend.import_runtime()
    jit.refresh_cpu_target()


def scipy_linalg_on_demand():
    """Registers scipy.linalg as a package whose __init__ runs only when something asks it
    for a name. Numba's CPU target imports scipy.linalg.cython_blas and cython_lapack (the
    BLAS and LAPACK it calls), and Python runs the package's __init__ first: all of
    scipy.linalg and SciPy's array API layer, much of the worker's start, which compiling
    never uses. The two extension modules then load alone."""
    import scipy

    name = "scipy.linalg"
    if name in sys.modules:
        return
    package = types.ModuleType(name)
    package.__path__ = [os.path.join(os.path.dirname(scipy.__file__), "linalg")]

    def __getattr__(attribute):  # the real package, for anything else (PEP 562)
        if sys.modules.get(name) is package:
            del sys.modules[name]
        return getattr(importlib.import_module(name), attribute)

    package.__getattr__ = __getattr__
    sys.modules[name] = package


def _compile(env, source, func_name, parallel, signature):
    from srcxform.jit import backend

    for name in [k for k in os.environ if k.startswith(("SRCXFORM_", "NUMBA_"))]:
        del os.environ[name]
    os.environ.update(env)
    with backend.gc_paused():
        compiled = backend.load(source, func_name, jit=True, parallel=parallel)
        compiled.dispatcher.compile(tuple(_numba_type(arg) for arg in signature))


def _numba_type(described):
    """The Numba type of an argument signature.described describes: numba.typeof's."""
    import numba

    from srcxform.numba_adapter import jit

    if described[0] == "array":
        _, dtype, ndim, layout, readonly = described
        return numba.types.Array(numba.from_dtype(np.dtype(dtype)), ndim, layout,
                                 readonly=readonly)
    return jit.argument_type(described[1])
