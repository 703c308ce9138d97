"""Freed memory goes back to the system after a pass that worked (issue 45: the daemon's
peak memory under a backlog)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from wsd.daemon.curation.loop.outcome import PassResult, Step
from wsd.daemon.curation.loop.shedding import LOOKED, SPACING, HeapKeeper
from wsd.daemon.runtime import heap

CHILD = textwrap.dedent(
    """
    import gc
    from wsd.daemon.runtime import heap

    def rss():
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmRSS:")) / 1024

    # 3,000 blocks of 40 KB (under glibc's mmap threshold: they sit in the heap), all freed
    # but the last, which pins the heap's top: glibc keeps the pages below it.
    blocks = [bytes(40_000) for _ in range(3000)]
    last = blocks[-1]
    del blocks
    gc.collect()
    before = rss()
    gave = heap.trim()
    print(before, rss(), gave)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_a_trim_gives_the_pages_of_freed_objects_back() -> None:
    """heap.trim returns the pages of ~120 MB of freed blocks that glibc kept below a live
    one: the process's resident size falls by most of it."""
    if heap._malloc_trim() is None:
        pytest.skip("this C library has no malloc_trim")
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    before, after, gave = float(out[0]), float(out[1]), out[2]
    assert gave == "True"
    assert before - after > 80, (before, after)


def test_the_heap_keeper_gives_back_after_work_only_and_spaces_its_cost() -> None:
    """A pass that worked is followed by a collection and a trim; a pass that only looked is
    not; the next give-back waits SPACING times the last one's cost (~2% of the loop)."""
    now = [100.0]
    done: list[str] = []

    def collect() -> int:
        done.append("collect")
        now[0] += 0.04  # a full collection with the SDK loaded
        return 0

    def trim() -> bool:
        done.append("trim")
        return True

    keeper = HeapKeeper(lambda: now[0], trim=trim, collect=collect)
    for step in LOOKED:
        keeper(PassResult(step))
    assert done == []
    keeper(PassResult(Step.SUBMITTED))
    assert done == ["collect", "trim"]
    now[0] += SPACING * 0.04 - 0.01
    keeper(PassResult(Step.CURATED))
    assert done == ["collect", "trim"]
    now[0] += 0.02
    keeper(PassResult(Step.AWAITING))  # a Message Batch's results applied in its chores
    assert done == ["collect", "trim"] * 2
