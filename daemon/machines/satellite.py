"""A satellite's side of many machines (SPEC.md section 11): it captures as ever, curates
nothing, and each pass

* seals its settled turns (each gets the origin key home names it by, and never changes
  again: :func:`wsd.daemon.store.machines.seal`), which litestream then ships home;
* marks curated the turns home's memory says it curated (read from the followed copy of
  home's memory.db), so that what it shows as not curated yet (the boot context, search's
  tail, ``wsd status``) is what home has not curated;
* writes the person's files (user.md, context.md) as home's memory has them, and carries
  home a person's hand edit of one (:meth:`Satellite.person_files`);
* says how old its copy of the person's memory is: as old as home's newest word in it
  (home says one at least every :data:`wsd.daemon.machines.ingest.BEACON_SECONDS`).

A hand edit here is never reverted and never lost: the file on disk differs from every
version home had, so it is a person's; it is recorded (with the sha256 of the version this
machine last had from home, what the person started from) and shipped home like a turn, and
the file is left as the person wrote it until home answers: adopted (home's latest is then
the edit itself) or kept as a conflict beside home's version, with a pending action for the
person (``wsd memory conflicts``). Only then is home's latest written here again.
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
from wsd.daemon.machines.places import files_signature
from wsd.daemon.memory.forget import erase, hold
from wsd.daemon.memory.md import files as md_files
from wsd.daemon.runtime.config import Config
from wsd.daemon.runtime.heartbeat import StatusFile
from wsd.daemon.store import PERSON_FILES, Store, sha256
from wsd.schema.errors import describe

#: memory.db state: the digest of home's marks this satellite last applied.
MARKS_APPLIED = "machine_marks_applied"


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
    #: Forgets asked here whose marks home has not published yet (the window still open).
    forgets_waiting: int = 0


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
    #: The copy's and the person's files as the last full look left them.
    _seen: tuple[Any, ...] = field(default=(), init=False)
    #: The sha256 of home's version last written or found here, per file (the base of an
    #: edit; also kept in this machine's memory.db state, for after a restart).
    bases: dict[str, str] = field(default_factory=dict, init=False)
    #: A digest of home's marks last applied here (None: read it from the state first).
    applied_marks: str | None = field(default=None, init=False)

    def run(self, now: float) -> None:
        machines = self.store.machines
        self.view.unsealed = machines.unsealed()  # a read on a partial index
        if self.view.unsealed:  # the write only when it has work
            self.view.sealed += machines.seal(now - LATE_SETTLE_SECONDS, now)
            self.view.unsealed = machines.unsealed()
        path = places.home_copy(self.store.layout)
        # Nothing new to read when neither the copy nor the person's files here changed
        # since a look that read them: an idle pass costs a few stat calls.
        layout = self.store.layout
        seen = files_signature(path, path + "-wal", *(layout.md(n) for n in PERSON_FILES))
        if seen == self._seen:
            return
        try:
            keys, self.after_batch, said = machines.curated_in_copy(
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
        self.view.curated += machines.mark_curated(keys)
        self.view.state, self.view.error = "following", None
        self.person_files(path, now)
        self.forgets(path, now)
        self._read_word(said, now)
        self._report(now)
        # Taken before the look (a change litestream applies during it is looked at next
        # pass); a file the look wrote itself costs one more look.
        self._seen = seen

    def person_files(self, copy: str, now: float) -> None:
        """user.md and context.md written from home's latest (when the disk holds one of
        home's versions, or nothing); a person's edit recorded for home instead (see the
        module)."""
        machines = self.store.machines
        try:
            home = machines.home_files(copy, str(self.cfg.machine))
        except (apsw.Error, OSError):
            return
        waiting = machines.open_proposals()
        answered = [uid for uid, _ in waiting.values() if home.answered.get(uid) == "decided"]
        if answered:
            machines.settle_proposals(answered, now)
            waiting = {f: p for f, p in waiting.items() if p[0] not in answered}
        for name in PERSON_FILES:
            latest = home.latest.get(name)
            disk, why = md_files.look(md_files.curated_path(self.store.layout, name))
            if why is not None:
                continue  # something unreadable there: left alone (doctor names it)
            base_key = f"machine_base:{name}"
            if disk is not None and disk == latest:
                self._remember_base(base_key, latest, now)
                continue
            if name in waiting and disk == waiting[name][1]:
                continue  # the edit waits for home's answer, as the person left it
            edited = disk is not None and sha256(disk) not in home.known[name]
            if edited and (bool(disk and disk.strip()) or latest is not None):
                base = self.store.ledger.get_state(base_key)
                machines.propose(name, base, disk or "", now)
                self.log.info("hand_edit_proposed", file=name)
                continue
            if latest is None:
                continue
            try:
                if md_files.materialise(self.store.layout, {name: latest}):
                    self.log.info("md_from_home", file=name)
            except OSError as exc:
                self.log.warning("md_write_failed", file=name, error=describe(exc))
                continue
            self._remember_base(base_key, latest, now)

    def forgets(self, copy: str, now: float) -> None:
        """What home's memory says was forgotten (its marks, never the words), erased from
        this machine's own copies: each phrase a mark recognises in its transcript, as
        written there, forgotten here as ``wsd forget`` would (transcript, spool, logs,
        backups, its replica's newest state). Once per change of the marks."""
        machines = self.store.machines
        try:
            key, by_len = machines.marks_in_copy(copy)
        except (apsw.Error, OSError):
            return
        published = {d for digests in by_len.values() for d in digests}
        # A forget asked here stays open in wsd status until home has published its marks.
        self.view.forgets_waiting = sum(1 for d, _ in machines.marks_out() if d not in published)
        sig = sha256(json.dumps(sorted((n, sorted(d)) for n, d in by_len.items())))
        if self.applied_marks is None:
            self.applied_marks = self.store.ledger.get_state(MARKS_APPLIED) or ""
        if sig == self.applied_marks:
            return
        phrases = machines.transcript_marked(key, by_len) if by_len else []
        if phrases:
            with hold.no_backup(self.store.layout):
                done = erase.forget(self.store, phrases, by="conversation", all_matches=True)
            self.log.info("forget_from_home", phrases=len(phrases), **done.counts())
        self.store.ledger.set_state({MARKS_APPLIED: sig}, now)
        self.applied_marks = sig

    def _remember_base(self, key: str, content: str | None, now: float) -> None:
        if content is None:
            return
        sha = sha256(content)
        if self.bases.get(key) != sha:
            self.store.ledger.set_state({key: sha}, now)
            self.bases[key] = sha

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
        changed = any(  # a change is said at once
            before.get(k) != getattr(self.view, k) for k in ("state", "forgets_waiting")
        )
        self.status.update(home_copy=dict(vars(self.view)), force=changed)
