"""The spool: where an event goes when transcript.db cannot take it in time.

Hooks append one JSON line per event; the daemon takes the whole file (an
atomic rename under the same lock) and records each line with the same verb
the hooks use. Lines carry the event's uid, so ingesting a file twice after a
crash records nothing twice.

Damage is contained to the line it is on. A writer killed mid-line leaves a torn line
without its newline: the next writer ends it first, and the reader, finding a torn line
fused with a whole event (a file damaged before), keeps the event and rejects only the torn
part. A line that cannot be parsed, or holds an event that can never be recorded (``"ts":
"NaN"``, a constraint it breaks), is moved to ``spool.rejected.jsonl`` beside it: kept for a
human (``wsd doctor`` counts it), never silently dropped, never retried for ever. Only a
transient failure (the database busy, the disk full) leaves the file for the next pass.

The spool is read and written like every file in user space: never through a link, never
blocking. Something that is not a regular file at the spool's path (a link out of the
workspace, a FIFO that would block a hook's write and the daemon's read) is renamed aside
unread, to ``spool.jsonl.<ns>.refused`` (``wsd doctor`` names it), and a fresh spool takes its
place. A line longer than any event a hook writes is rejected without being held whole.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time

import apsw

from wsd.schema.transcript import Event

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

INGESTING_SUFFIX = ".ingesting"
REFUSED_SUFFIX = ".refused"
#: A spool line longer than this is damage, not an event: hook fields are capped far below it
#: (WSD_MAX_FIELD_CHARS), and reading it whole could exhaust the daemon's memory.
MAX_LINE_BYTES = 16 << 20
#: How much of an over-long line the rejected file keeps (enough to tell what it was).
_REJECTED_HEAD = 4096
REJECTED_NAME = "spool.rejected.jsonl"
#: How every spool line starts (Event.to_json): where a whole event may begin in a torn line.
_EVENT_START = '{"uid":'
#: Errors of ``record`` that the same line would raise again on every attempt.
PERMANENT_ERRORS = (
    ValueError,
    TypeError,
    KeyError,
    OverflowError,
    apsw.ConstraintError,
    apsw.MismatchError,
    apsw.TooBigError,
)


class IngestReport:
    """What ingesting one spool file did."""

    __slots__ = ("duplicates", "reasons", "recorded", "rejected")

    def __init__(
        self, recorded: int, duplicates: int, rejected: int, reasons: list[str] | None = None
    ) -> None:
        self.recorded = recorded
        self.duplicates = duplicates
        self.rejected = rejected
        #: Why each rejected line was rejected (not compared by ==).
        self.reasons = reasons if reasons is not None else []

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


class NotRegular(OSError):
    """A path that must be a regular file is something else (a link, a FIFO, a device)."""


def _open_regular(path: str, flags: int, mode: int = 0o600) -> int:
    """``os.open`` that never follows a link and never blocks; NotRegular for a special file."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link
            raise NotRegular(errno.ELOOP, "a symbolic link, not a regular file", path) from None
        if exc.errno == errno.EISDIR:  # opened for writing
            raise NotRegular(errno.EISDIR, "a folder, not a regular file", path) from None
        raise
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        raise NotRegular(errno.EINVAL, f"not a regular file (mode {stat.filemode(kind)})", path)
    return fd


def refuse(path: str) -> None:
    """Rename the special file at ``path`` aside, unread (see the module docstring)."""
    with contextlib.suppress(FileNotFoundError):  # gone already: nothing to set aside
        # Renames the link or FIFO itself, never what it points to.
        os.rename(path, f"{path}.{time.time_ns()}{REFUSED_SUFFIX}")


def refused_files(path: str) -> list[str]:
    """Special files found where the spool, a taken part of it or the rejected file belongs,
    and set aside (their names all start as the spool's does: ``spool.``)."""
    folder, base = os.path.split(path)
    return _siblings(os.path.join(folder, base.split(".")[0]), REFUSED_SUFFIX)


def append(path: str, line: str) -> None:
    """Append one line durably enough for a hook (no fsync), safe against concurrent writers.

    flock serialises writers with the daemon's rotation; if the file was
    renamed between our open and our lock we reopen, so no line lands in a
    file the daemon has already read. A write cut short (disk full) is rolled
    back so the next line does not fuse with a torn one.
    """
    data = (line.replace("\n", " ") + "\n").encode("utf-8", "replace")
    for _attempt in range(5):
        try:  # read as well: to see a torn end
            fd = _open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        except NotRegular:
            refuse(path)  # then create a regular spool in its place on the next attempt
            continue
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
            # A writer killed mid-line left it without its newline: end it, so this event
            # stays a line of its own instead of being fused with (and lost with) it.
            torn = start > 0 and os.pread(fd, 1, start - 1) != b"\n"
            try:
                view = memoryview(b"\n" + data if torn else data)
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
    """Atomically move the spool aside for ingestion; None when there is nothing to take
    (a special file at its path is refused aside instead: nothing in it is an event)."""
    try:
        fd = _open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except NotRegular:
        refuse(path)
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
    return _siblings(path, INGESTING_SUFFIX)


def _siblings(path: str, suffix: str) -> list[str]:
    folder, base = os.path.split(path)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return sorted(
        os.path.join(folder, n) for n in names if n.startswith(base + ".") and n.endswith(suffix)
    )


def to_ingest(path: str) -> list[str]:
    """Taken files a crash left half-ingested (oldest first), then the live spool, taken now
    if it holds anything: what an ingester records, in this order."""
    return [f for f in [*pending_files(path), take(path)] if f]


def waiting(path: str) -> bool:
    """True while spooled events wait to be recorded: in the spool or a taken part of it."""
    with contextlib.suppress(OSError):
        found = os.lstat(path)  # a special file holds no event: the next take refuses it
        if stat.S_ISREG(found.st_mode) and found.st_size > 0:  # a failed append leaves it empty
            return True
    return bool(pending_files(path))


def ingest_file(
    taken: str,
    record: Callable[[Event], bool],
    should_stop: Callable[[], bool] | None = None,
) -> IngestReport:
    """Record every event of a taken spool file, then delete it.

    ``record`` writes one event and returns False for a duplicate uid. A line that does not
    parse, or whose event ``record`` refuses for good (:data:`PERMANENT_ERRORS`), goes to the
    rejected file. If ``record`` fails otherwise (database busy, disk full), or
    ``should_stop`` says so, the file stays for the next attempt (uids make re-reading it
    harmless).
    """
    report = IngestReport(0, 0, 0)
    rejected_path = os.path.join(os.path.dirname(taken), REJECTED_NAME)

    def reject(text: str, why: str) -> None:
        append(rejected_path, text)
        report.rejected += 1
        report.reasons.append(why)

    try:
        fd = _open_regular(taken, os.O_RDONLY)
    except NotRegular as exc:  # someone put a link or FIFO where a taken file was: not ours
        refuse(taken)
        report.rejected += 1
        report.reasons.append(f"{os.path.basename(taken)}: {exc.strerror}; set aside unread")
        return report
    with os.fdopen(fd, "rb") as fh:
        while raw := fh.readline(MAX_LINE_BYTES + 1):
            if should_stop is not None and should_stop():
                return report
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                size = len(raw) + _skip_line(fh)
                head = raw[:_REJECTED_HEAD].decode("utf-8", "replace")
                reject(head, f"a line of {size} bytes, over {MAX_LINE_BYTES}: only its start kept")
                continue
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if not line.strip():
                continue
            torn, event, why = parse_line(line)
            if torn:
                reject(torn, why or "torn line")
            if event is None:
                continue
            try:
                fresh = record(event)
            except PERMANENT_ERRORS as exc:
                reject(line[len(torn) :], f"not recordable: {type(exc).__name__}: {exc}"[:200])
                continue
            if fresh:
                report.recorded += 1
            else:
                report.duplicates += 1
    os.unlink(taken)
    return report


def _skip_line(fh: BinaryIO) -> int:
    """Read past the rest of the current line without holding it; returns its byte count."""
    skipped = 0
    while chunk := fh.readline(1 << 20):
        skipped += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return skipped


def parse_line(line: str) -> tuple[str, Event | None, str | None]:
    """(torn text to reject, the event, why the torn text is rejected) of one spool line.

    A whole event is ``("", event, None)``; a line that is no event at all is
    ``(line, None, why)``; a torn line fused with a whole event (the event starting at one
    of its later ``{"uid":``) is ``(torn part, event, why)``.
    """
    try:
        return "", Event.from_json(line), None
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        why = f"{type(exc).__name__}: {exc}"[:200]
    start = line.find(_EVENT_START, 1)
    while start > 0:
        try:
            return line[:start], Event.from_json(line[start:]), f"torn line ({why})"
        except (ValueError, TypeError, KeyError, RecursionError):
            start = line.find(_EVENT_START, start + 1)
    return line, None, why
