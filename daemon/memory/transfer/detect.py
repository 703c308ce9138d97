"""Which format a path is in, when ``wsd import`` is not told (``--from auto``): a folder or
a ``.md`` file is Markdown (Claude Code's auto memory, or plain); a file that starts as every
SQLite database does is claude-mem's; a JSON-lines file is ours or the MCP memory server's,
told apart by its first object."""

from __future__ import annotations

import os

from wsd.daemon.memory.transfer import mcp_memory, wsd_format
from wsd.daemon.memory.transfer.inputs import (
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    BadInput,
    Source,
    TooDeep,
    json_value,
    open_file,
)

FORMATS = ("wsd", "mcp-memory", "claude-code", "claude-mem")
SQLITE_MAGIC = b"SQLite format 3\x00"


def detect(source: Source) -> str:
    """The format of ``source`` (one of :data:`FORMATS`); :class:`BadInput` saying why not."""
    if source.is_dir or source.path.lower().endswith((".md", ".markdown")):
        return "claude-code"
    with os.fdopen(open_file(source.path, source.size + 1), "rb") as fh:
        head = fh.read(len(SQLITE_MAGIC))
        if head == SQLITE_MAGIC:
            return "claude-mem"
        if source.size > MAX_FILE_BYTES:
            raise BadInput(
                f"{source.path} is {source.size:,} bytes, over the {MAX_FILE_BYTES:,} byte limit"
            )
        raw = (head + fh.readline(MAX_LINE_BYTES)).lstrip(b"\xef\xbb\xbf")
        first = raw.strip()
        # The line it is on (the head read may have crossed blank lines before it).
        number = 1 + raw[: len(raw) - len(raw.lstrip())].count(b"\n")
        while not first:
            line = fh.readline(MAX_LINE_BYTES)
            if not line:
                return "wsd"  # empty: nothing to import, in any format
            first = line.strip()
            number += 0 if first else 1
    try:
        data = json_value(first.decode("utf-8"))
    except TooDeep as exc:  # no format nests so deep: said as it is on any other line
        raise BadInput(f"{os.path.basename(source.path)}:{number}: {exc}") from None
    except ValueError:  # not JSON, or not UTF-8
        data = None
    if isinstance(data, dict):
        if wsd_format.looks_like(data):
            return "wsd"
        if mcp_memory.looks_like(data):
            return "mcp-memory"
    raise BadInput(
        f"{os.path.basename(source.path)}: not a format wsd import knows (its first line is"
        " neither our JSON lines nor a memory.jsonl entity; a folder or .md is Markdown, a"
        " database claude-mem's): say which with --from"
    )
