"""Keep freed memory in the process: glibc's `mallopt`, set once when a fit or reproduction starts.

A CPU training step at batch size 1 (paper 1) allocates and frees weight-sized tensors every step:
each use of a 1536 x 512 weight gets its own 3 MB gradient, then a sum. With glibc's defaults such
a block comes from `mmap` (or from a heap top that is trimmed back to the system once freed), so
every new one first page-faults all its pages; that made about half of paper 1's backward pass
(`make bench`: the same steps with and without). PyTorch's CPU performance guide recommends
jemalloc or tcmalloc (`LD_PRELOAD`) for this; neither comes with the platform, so the suite sets
glibc's own two knobs instead, which torch's allocator does not expose:

- `M_MMAP_THRESHOLD` = 32 MiB (glibc's maximum): blocks below it come from the heap;
- `M_TRIM_THRESHOLD` = 1 GiB: freed heap is kept for reuse unless that much sits unused at its top.

The process keeps its peak heap until it exits; values computed are unchanged. Elsewhere than
glibc (macOS, musl) nothing is set.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h>
MMAP_THRESHOLD_BYTES = 32 * 2**20
TRIM_THRESHOLD_BYTES = 2**30


def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (it has `mallopt` and `gnu_get_libc_version`), else None."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    if libc is None or not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):
        return None
    return libc


@functools.cache
def keep_freed_memory() -> bool:
    """Set glibc's thresholds (module docstring) once per process; whether they were set."""
    libc = _glibc()
    if libc is None:
        return False
    return bool(
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        and libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )
