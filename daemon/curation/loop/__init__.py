"""The loop that decides when: ``wsd run``'s worker.

:mod:`.worker` (``run()`` is ``while not stopped: run_once()``; a pass decides: trigger,
lane, budget, take, curate), :mod:`.chores` (what a pass does between batches, one ordered
list), :mod:`.trigger` (why to curate now, which lane), :mod:`.outcome` (what a pass did),
:mod:`.after_commit` (what follows each commit, the parked batches, ``wsd retry``),
:mod:`.intake` (the spool), :mod:`.failures` (a pass's failures, rate-limited),
:mod:`.wake` (a frozen VM noticed) and :mod:`.shedding` (the SDK's memory given back).
"""
