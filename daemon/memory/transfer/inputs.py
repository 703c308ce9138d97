"""Reading what a person points ``wsd import`` at, as hostile as anything in user space: a
link is not followed, a FIFO or a device is not opened for reading (it could hold the
command forever), a huge file or line is refused before it is read, JSON nested deeper than
any of the formats nests is refused (Python's parser meets its recursion limit at ~1,000
levels: a traceback), a date is a time between 1970 and 5138, and every refusal is a
:class:`BadInput` naming the file (and the line)."""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from wsd.daemon.runtime.fsio import kind_of

#: A JSON-lines file larger than this is refused (100,000 learnings of ours are ~40 MB).
MAX_FILE_BYTES = 512 * 1024 * 1024
#: One line of it (a learning is at most 4,000 characters; an md file line of an export can
#: carry a whole file of 200 lines).
MAX_LINE_BYTES = 4 * 1024 * 1024
#: One Markdown file of a memory folder.
MAX_MD_BYTES = 1024 * 1024
#: Files one folder import reads at most (and how deep it goes).
MAX_FOLDER_FILES = 10_000
MAX_DEPTH = 8
#: JSON nesting a line may have: ours nests 3 deep (a learning, its sources, a source), the
#: MCP server's 2 (an entity, its observations); an old-format ``ref`` may be any JSON, so
#: room is left, far below the ~1,000 levels where json.loads (and json.dumps or repr of
#: what it gave) raise RecursionError.
MAX_JSON_DEPTH = 32
#: Dates are Unix seconds below this (the year 5138): past it a number is milliseconds or
#: no date at all. The store dates anything after the import's own time as that time.
MAX_EPOCH = 1e11


class BadInput(ValueError):
    """The input cannot be imported as it is: the message names the file and, where there
    is one, the line or row (``memory.jsonl:12: ...``). Nothing of the file is imported."""


class TooDeep(ValueError):
    """JSON nested deeper than :data:`MAX_JSON_DEPTH` (said as any other bad line is)."""

    def __init__(self) -> None:
        super().__init__(f"nested deeper than {MAX_JSON_DEPTH} levels")


@dataclass(frozen=True)
class Source:
    """A path given to ``wsd import``: what it is, after checking it is safe to read."""

    path: str
    is_dir: bool
    size: int
    mtime: float


def examine(path: str) -> Source:
    """What ``path`` is; :class:`BadInput` for a link, a FIFO, a device, a socket or a
    missing path (never followed, never opened)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file or folder") from None
    except OSError as exc:
        raise BadInput(f"{path}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path)
        raise BadInput(f"{path} is a link (to {target}): not followed; give the real path")
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise BadInput(f"{path} is {kind_of(st.st_mode)}: not read")
    return Source(path, stat.S_ISDIR(st.st_mode), st.st_size, st.st_mtime)


def open_file(path: str, limit: int) -> int:
    """A read descriptor of the regular file at ``path`` (no link followed, no blocking
    open); :class:`BadInput` if it is something else or over ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if os.path.islink(path):
            raise BadInput(f"{path} is a link: not followed") from None
        raise BadInput(f"{path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(f"{path} is {kind_of(st.st_mode)}: not read")
        if st.st_size > limit:
            raise BadInput(f"{path} is {st.st_size:,} bytes, over the {limit:,} byte limit")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def lines(path: str, limit: int = MAX_FILE_BYTES) -> Iterator[tuple[int, str]]:
    """(line number, text without its end) of a UTF-8 text file; :class:`BadInput` for a
    line over :data:`MAX_LINE_BYTES` or one that is not UTF-8."""
    with os.fdopen(open_file(path, limit), "rb") as fh:
        yield from stream_lines(fh, os.path.basename(path), limit)


def stream_lines(fh: BinaryIO, name: str, limit: int = MAX_FILE_BYTES) -> Iterator[tuple[int, str]]:
    """:func:`lines` of an open binary stream (standard input: never copied to a file, where
    a killed import would leave the person's words), ``name`` in messages."""
    number = 0
    size = 0
    while True:
        raw = fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        size += len(raw)
        if len(raw) > MAX_LINE_BYTES:
            raise BadInput(f"{name}:{number}: a line over {MAX_LINE_BYTES:,} bytes")
        if size > limit:
            raise BadInput(f"{name}: over the {limit:,} byte limit")
        try:
            yield number, raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            raise BadInput(f"{name}:{number}: not valid UTF-8") from None


def read_text(path: str, limit: int = MAX_MD_BYTES) -> str:
    """The whole of a small UTF-8 file; :class:`BadInput` as :func:`open_file`, or if it is
    not UTF-8."""
    with os.fdopen(open_file(path, limit), "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise BadInput(f"{path} grew over the {limit:,} byte limit while read")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not valid UTF-8 (at byte {exc.start})") from None


def walk(folder: str) -> Iterator[tuple[str, str | None]]:
    """(path relative to ``folder``, why it is skipped or None) of every entry below it,
    sorted, never through a link; hidden entries (``.git``) are passed over unsaid."""
    count = 0

    def inner(rel: str, depth: int) -> Iterator[tuple[str, str | None]]:
        nonlocal count
        here = os.path.join(folder, rel) if rel else folder
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError as exc:
            yield rel or ".", f"cannot be listed ({exc.strerror})"
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = os.path.join(rel, entry.name) if rel else entry.name
            if entry.is_symlink():
                yield path, "a link: not followed"
            elif entry.is_dir(follow_symlinks=False):
                if depth >= MAX_DEPTH:
                    yield path, f"deeper than {MAX_DEPTH} folders: not read"
                else:
                    yield from inner(path, depth + 1)
            else:
                count += 1
                if count > MAX_FOLDER_FILES:
                    yield path, f"over {MAX_FOLDER_FILES:,} files: not read"
                else:
                    yield path, None

    yield from inner("", 0)


def json_value(text: str) -> Any:
    """One line's JSON, nested at most :data:`MAX_JSON_DEPTH` deep; ValueError saying what is
    wrong (for the caller to name the line)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise TooDeep from None
    # Fewer brackets than the bound cannot nest past it: a line of ours is never walked.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(data) > MAX_JSON_DEPTH:
        raise TooDeep
    return data


def _depth(value: Any) -> int:
    """How deep ``value``'s lists and objects nest (without recursion: it may be ~1,000)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth <= MAX_JSON_DEPTH:
                inner = item.values() if isinstance(item, dict) else item
                stack.extend((v, depth + 1) for v in inner)
    return deepest


def json_object(text: str, what: str = "a JSON object") -> dict[str, Any]:
    """One line's JSON object (see :func:`json_value`); ValueError saying what is wrong."""
    data = json_value(text)
    if not isinstance(data, dict):
        raise ValueError(f"expected {what}")
    return data


def epoch(value: float, key: str) -> float:
    """``value`` (Unix seconds) if it is a time from 1970 to :data:`MAX_EPOCH`; ValueError
    naming ``key`` otherwise (NaN, an infinity or a negative number was stored, or failed
    the database's NOT NULL, before)."""
    if not math.isfinite(value) or not 0 <= value < MAX_EPOCH:
        raise ValueError(f"{key} {value!r:.24} is not a date from 1970 to 5138")
    return float(value)
