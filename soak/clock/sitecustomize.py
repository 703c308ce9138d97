"""Soak only: the clock seam of ``wsd run``. Python imports this module at start-up when
its folder is on PYTHONPATH (the soak puts it there for supervisord and its children).

In the daemon (``wsd run``) and nowhere else, ``time.time`` returns the real wall clock
plus the offset written in ``$SOAK_CLOCK_FILE`` (re-read at most every 0.2 s), so the
fault scheduler can jump the daemon's wall clock forward (a VM thawed hours later) and
back (an NTP step) while it runs. ``time.monotonic`` is left alone: it never jumps.
"""

from __future__ import annotations

import os
import sys
import time

_FILE = os.environ.get("SOAK_CLOCK_FILE")

if _FILE and os.path.basename(sys.argv[0]) == "wsd" and sys.argv[1:2] == ["run"]:
    _real_time = time.time
    _monotonic = time.monotonic
    _state = {"offset": 0.0, "next_read": 0.0}

    def _shifted_time() -> float:
        now = _monotonic()
        if now >= _state["next_read"]:
            _state["next_read"] = now + 0.2
            try:
                with open(_FILE, encoding="ascii") as fh:
                    _state["offset"] = float(fh.read().strip() or 0)
            except (OSError, ValueError):
                _state["offset"] = 0.0
        return _real_time() + _state["offset"]

    time.time = _shifted_time
