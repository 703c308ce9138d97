"""A satellite's side of many machines (SPEC.md section 11): it captures as ever, curates
nothing, and each pass

* seals its settled turns (each gets the origin key home names it by, and never changes
  again: :func:`wsd.daemon.store.machines.seal`), which litestream then ships home;
* marks curated the turns home's memory says it curated (read from the followed copy of
  home's memory.db), so that what it shows as not curated yet (the boot context, search's
  tail, ``wsd status``) is what home has not curated;
* says how old its copy of the person's memory is: as old as home's newest word in it
  (home says one at least every :data:`wsd.daemon.machines.ingest.BEACON_SECONDS`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import apsw

from wsd.daemon.curation.request.batch import LATE_SETTLE_SECONDS
from wsd.daemon.machines import places
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.store import Store
from wsd.schema.errors import describe


@dataclass
class CopyView:
    """What a satellite knows of its copy of home's memory."""

    state: str = "no copy yet"
    #: Home's newest word in the copy (home's clock), and its age by this machine's.
    home_said_at: float | None = None
    age_seconds: float | None = None
    #: This machine's turns home curated (as the copy says), sealed, not yet sealed.
    curated: int = 0
    sealed: int = 0
    unsealed: int = 0
    error: str | None = None
    #: What home says it ingested of this machine.
    home_ingested: int | None = None


@dataclass(eq=False)
class Satellite:
    """Seals, marks and reports once a pass (see the module)."""

    cfg: Config
    store: Store
    log: Any
    status: StatusFile
    clock: Callable[[], float]
    view: CopyView = field(default_factory=CopyView)
    #: The newest of home's batches whose turns were marked (0: read them all again).
    after_batch: int = field(default=0, init=False)
    _logged: str | None = field(default=None, init=False)

    def run(self, now: float) -> None:
        machines = self.store.machines
        self.view.sealed += machines.seal(now - LATE_SETTLE_SECONDS, now)
        self.view.unsealed = machines.unsealed()
        path = places.home_copy(self.store.layout)
        try:
            keys, newest, said = machines.curated_in_copy(
                path, str(self.cfg.machine), self.after_batch
            )
        except (apsw.Error, OSError) as exc:
            self.view.state = "no copy yet" if not os.path.exists(path) else "unreadable"
            self.view.error = describe(exc)
            if self._logged != self.view.error:
                self._logged = self.view.error
                self.log.info("home_copy_unreadable", state=self.view.state, error=self.view.error)
            self._report(now)
            return
        if self._logged is not None:
            self._logged = None
            self.log.info("home_copy_recovered")
        if newest < self.after_batch:  # home's memory.db made again (a rebuild): read all
            self.after_batch = 0
        else:
            self.after_batch = newest
        self.view.curated += machines.mark_curated(keys)
        self.view.state, self.view.error = "following", None
        self._read_word(said, now)
        self._report(now)

    def _read_word(self, said: dict[str, str], now: float) -> None:
        try:
            at = float(said.get("home_beacon", ""))
        except ValueError:
            at = None
        self.view.home_said_at = at
        # A clock behind home's gives a negative age: said as 0, never as "from the future".
        self.view.age_seconds = None if at is None else max(0.0, now - at)
        try:
            word = json.loads(said.get("home_machines", "{}"))
            mine = word.get(self.cfg.machine) if isinstance(word, dict) else None
            ingested = mine.get("ingested") if isinstance(mine, dict) else None
            self.view.home_ingested = int(ingested) if isinstance(ingested, int) else None
        except ValueError:
            self.view.home_ingested = None

    def _report(self, now: float) -> None:
        before = self.status.data.get("home_copy") or {}
        changed = before.get("state") != self.view.state  # a change is said at once
        self.status.update(home_copy=dict(vars(self.view)), force=changed)
