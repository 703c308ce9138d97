"""The spool: where an event goes when transcript.db cannot take it in time.

Hooks append one JSON line per event; the daemon takes the whole file (an
atomic rename under the same lock) and records each line with the same verb
the hooks use. Lines carry the event's uid, so ingesting a file twice after a
crash records nothing twice. A line that cannot be parsed is moved to
``spool.rejected.jsonl`` beside it: kept for a human, never silently dropped.
"""

from __future__ import annotations

import fcntl
import os
import time

from wsd.schema.transcript import Event

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

INGESTING_SUFFIX = ".ingesting"


class IngestReport:
    """What ingesting one spool file did."""

    __slots__ = ("duplicates", "recorded", "rejected")

    def __init__(self, recorded: int, duplicates: int, rejected: int) -> None:
        self.recorded = recorded
        self.duplicates = duplicates
        self.rejected = rejected

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IngestReport) and (
            (self.recorded, self.duplicates, self.rejected)
            == (other.recorded, other.duplicates, other.rejected)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"IngestReport(recorded={self.recorded}, duplicates={self.duplicates},"
            f" rejected={self.rejected})"
        )


def append(path: str, line: str) -> None:
    """Append one line durably enough for a hook (no fsync), safe against concurrent writers.

    flock serialises writers with the daemon's rotation; if the file was
    renamed between our open and our lock we reopen, so no line lands in a
    file the daemon has already read. A write cut short (disk full) is rolled
    back so the next line does not fuse with a torn one.
    """
    data = (line.replace("\n", " ") + "\n").encode("utf-8", "replace")
    for _attempt in range(5):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            mine = os.fstat(fd)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                continue
            if (current.st_ino, current.st_dev) != (mine.st_ino, mine.st_dev):
                continue
            start = mine.st_size
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            except OSError:
                try:
                    os.ftruncate(fd, start)
                except OSError:
                    pass
                raise
            return
        finally:
            os.close(fd)
    raise OSError(f"spool {path} kept being rotated while appending")


def take(path: str) -> str | None:
    """Atomically move the spool aside for ingestion; None when there is nothing to take."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_size == 0:
            return None
        target = f"{path}.{time.time_ns()}{INGESTING_SUFFIX}"
        os.rename(path, target)
        return target
    finally:
        os.close(fd)


def pending_files(path: str) -> list[str]:
    """Spool files taken but not fully ingested (a crash mid-ingest leaves them)."""
    folder, base = os.path.split(path)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return sorted(
        os.path.join(folder, n)
        for n in names
        if n.startswith(base + ".") and n.endswith(INGESTING_SUFFIX)
    )


def ingest_file(
    taken: str,
    record: Callable[[Event], bool],
    should_stop: Callable[[], bool] | None = None,
) -> IngestReport:
    """Record every event of a taken spool file, then delete it.

    ``record`` writes one event and returns False for a duplicate uid. If it
    raises (database busy, disk full), or ``should_stop`` says so, the file
    stays for the next attempt (uids make re-reading it harmless).
    """
    recorded = duplicates = rejected = 0
    rejected_path = os.path.join(os.path.dirname(taken), "spool.rejected.jsonl")
    with open(taken, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if should_stop is not None and should_stop():
                return IngestReport(recorded, duplicates, rejected)
            if not line.strip():
                continue
            try:
                event = Event.from_json(line)
            except (ValueError, TypeError, KeyError):
                append(rejected_path, line.rstrip("\n"))
                rejected += 1
                continue
            if record(event):
                recorded += 1
            else:
                duplicates += 1
    os.unlink(taken)
    return IngestReport(recorded, duplicates, rejected)
