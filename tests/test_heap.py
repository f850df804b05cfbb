"""With a process's first kernel, srcxform sets glibc's malloc to keep arrays below 16 MiB
in its heap (srcxform/jit/heap.py), so a kernel's temporaries are reused between calls
instead of being mapped and faulted in afresh; the user's own malloc settings and
SRCXFORM_MALLOC_TUNING=0 leave malloc as it was. Each case runs in a new process."""

import os
import subprocess
import sys

import pytest

from srcxform.jit import heap

pytestmark = pytest.mark.skipif(not heap._glibc(), reason="glibc's mallopt")

# After a first kernel, whether a new 4 MiB array (above glibc's own mmap threshold, 128
# KiB) was served from the heap, as /proc/self/maps names it.
_IN_HEAP = """
import numpy as np
import srcxform as tf
tf.differentiable(lambda x: tf.reduce_sum(x * x), wait=True).grad(np.ones(3))
address = np.empty(1 << 19).ctypes.data
heap = [line.split()[0] for line in open("/proc/self/maps") if line.rstrip().endswith("[heap]")]
print(any(int(s, 16) <= address < int(e, 16) for s, e in (h.split("-") for h in heap)))
"""


@pytest.mark.parametrize("setting, in_heap", [
    ({}, True),
    ({"SRCXFORM_MALLOC_TUNING": "0"}, False),
    ({"MALLOC_TOP_PAD_": "0"}, False),  # the user's own malloc variable
])
def test_a_first_kernel_keeps_arrays_below_16_mib_in_the_heap(setting, in_heap, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in heap._USERS_OWN}
    env.update(setting, SRCXFORM_CACHE_DIR=str(tmp_path), SRCXFORM_TIERED="0")
    out = subprocess.run([sys.executable, "-c", _IN_HEAP], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.split()[-1] == str(in_heap)
