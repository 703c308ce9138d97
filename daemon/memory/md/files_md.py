"""files.md: the curator's notes on top, the daemon's disk inventory below, never mixed.

files.md has two owners. The curator writes the *notes* (``FILES_MD_UPDATE``:
what the important files are for); the watcher writes the *inventory* (every
file, grouped by folder, newest first, with counts, rolled up when the whole
file would pass its line limit; see :mod:`wsd.daemon.workspace.inventory`). The
inventory starts at :data:`MARKER`; whatever a curator reply carries from that
line on (an echoed inventory) is dropped by :func:`notes_of`, so the notes can
never overwrite the inventory.

Both parts are written through :func:`write_notes` and :func:`write_inventory`,
which hold one process-wide lock around read-compose-write, so the curator's
thread and the watcher's thread cannot interleave and lose each other's part.
The composed file never exceeds :data:`LINE_LIMIT` lines: notes are clipped to
:data:`NOTES_LINE_LIMIT`, the inventory gets the rest (at least
:data:`MIN_INVENTORY_LINES`). When the notes change, the watcher notices (it
compares the notes on disk with those it last rendered under) and re-renders the
inventory to the new budget; until then the old inventory is trimmed to fit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from wsd.daemon.runtime.fsio import atomic_write, read_text

LINE_LIMIT = 200
#: The curator's notes may use this many lines (tell it so in the prompt).
NOTES_LINE_LIMIT = 150
MIN_INVENTORY_LINES = LINE_LIMIT - NOTES_LINE_LIMIT - 1
MARKER = "<!-- wsd:inventory: kept by the daemon from the disk; edits below are replaced -->"
HEADING = "## Workspace files"
#: files.md is read back before each write; one larger than this was not written by us.
READ_LIMIT = 4 * 1024 * 1024

_LOCK = threading.Lock()


def split(text: str) -> tuple[str, str]:
    """(notes, inventory) of a files.md text; the inventory part starts at the marker."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == MARKER or line.startswith(f"{HEADING}:"):
            notes = "\n".join(lines[:i]).strip("\n")
            return notes, "\n".join(lines[i:])
    return text.strip("\n"), ""


def notes_of(text: str) -> str:
    """The notes part of ``text`` (an echoed inventory dropped), within its line limit."""
    notes = split(text)[0].rstrip()
    lines = notes.splitlines()
    if len(lines) > NOTES_LINE_LIMIT:
        lines = [*lines[: NOTES_LINE_LIMIT - 1], "… (notes cut to fit files.md)"]
    return "\n".join(lines)


def inventory_budget(notes: str) -> int:
    """Lines left for the inventory under ``notes`` (one blank line separates them)."""
    used = len(notes.splitlines()) + 1 if notes else 0
    return max(MIN_INVENTORY_LINES, LINE_LIMIT - used)


def compose(notes: str, inventory: list[str]) -> str:
    """The whole file: notes, a blank line, the inventory."""
    head = f"{notes}\n\n" if notes else ""
    return head + "\n".join(inventory) + "\n"


def read(path: str) -> str:
    """files.md as text ("" when missing); UnsafeFile for a FIFO, a link, a huge file."""
    return read_text(path, READ_LIMIT) or ""


def _write_if_changed(path: str, old: str, new: str, durable: bool) -> bool:
    if old == new:
        return False
    atomic_write(path, new, durable=durable)
    return True


def write_notes(path: str, revision: str) -> bool:
    """Materialise the curator's latest ``files.md`` revision; the inventory on disk stays.

    This is what the curated-file materialiser calls for files.md. The
    inventory is trimmed to the new budget at once and re-rendered properly by
    the watcher. Returns True if the file was written.
    """
    notes = notes_of(revision)
    with _LOCK:
        old = read(path)
        inventory = split(old)[1].splitlines() or [MARKER, f"{HEADING}: not indexed yet"]
        budget = inventory_budget(notes)
        if len(inventory) > budget:
            inventory = [*inventory[: budget - 1], "- … (inventory being refreshed)"]
        return _write_if_changed(path, old, compose(notes, inventory), durable=True)


def write_inventory(path: str, render: Callable[[int], list[str]]) -> str:
    """Re-render the inventory under the notes on disk; returns those notes.

    ``render(budget)`` returns the inventory lines (at most ``budget``). Not
    fsynced: the inventory is derived and re-rendered at every start.
    """
    with _LOCK:
        old = read(path)
        notes = notes_of(old)
        _write_if_changed(path, old, compose(notes, render(inventory_budget(notes))), False)
        return notes


def inventory_lines(text: str) -> list[str]:
    """The listed file lines of a composed files.md (for tests and diagnostics)."""
    return [ln for ln in split(text)[1].splitlines() if ln.startswith("- ") and ln[2:4] != "… "]
