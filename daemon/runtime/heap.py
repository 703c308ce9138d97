"""Freed heap given back to the system (glibc's ``malloc_trim``), after a pass that worked.

CPython frees a pass's objects, but glibc keeps the pages they sat in: a daemon curating a
5,000-turn backlog on the economy lane ended at 123 MB resident, its Python objects ~11 MB
(tracemalloc), and rose ~1 MB with each Message Batch. Trimming after each pass that worked
ended it at 108 MB and kept the peak at 119 MB (issue 45; ``make bench`` daemon_peak). A
trim costs ~5 ms when it has pages to return and ~10 µs when not.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        fn = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def trim() -> bool:
    """Give the heap's free pages back to the system; whether any were (False also where
    the C library cannot)."""
    fn = _malloc_trim()
    return bool(fn(0)) if fn is not None else False
