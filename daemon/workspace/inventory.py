"""files.md's inventory: what counts as a workspace file, read from the disk, and rendered.

The watcher keeps the inventory part of files.md (see :mod:`wsd.daemon.memory.md.files_md` for
how the two parts share the file). What is never indexed is :func:`is_noise`: any path with a
hidden component such as ``.os/`` or ``.git/``, :data:`NOISE_DIRS`, editor and daemon temp
files. :func:`scan` reads the tree without following links; :func:`render_inventory` turns
it into at most a given number of lines: grouped by folder, newest first, rolled up when the
folders do not fit, and every file counted, always.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from wsd.daemon.memory.md.files_md import HEADING, MARKER
from wsd.daemon.runtime.fsio import TEMP_PREFIX

#: Display cap of one name (middle elided); a line stays readable whatever the disk holds.
NAME_CHARS = 120
#: One directory of the index: file name -> (size, mtime_ns).
DirFiles = Mapping[str, tuple[int, int]]

NOISE_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})
_NOISE_NAME = re.compile(r"(\.sw[a-p]|~)$|^(\.#|#.*#$|4913$|\.goutputstream-)")
Files = dict[str, tuple[int, int]]  # name -> (size, mtime_ns)
Tree = dict[str, Files]  # folder relative to the root ("" = top level) -> its files


def is_noise(rel: str) -> bool:
    """True for paths never indexed: hidden components, noise folders, editor temp files."""
    parts = rel.split("/")
    if any(p.startswith(".") or p in NOISE_DIRS for p in parts):
        return True
    return bool(_NOISE_NAME.search(parts[-1])) or parts[-1].startswith(TEMP_PREFIX)


def scan(root: str, rel: str = "") -> tuple[Tree, int]:
    """(files under ``root/rel`` by folder, number of folders), symlinks not followed."""
    tree: Tree = {}
    folders = 0
    stack = [rel]
    while stack:
        d = stack.pop()
        files: Files = {}
        try:
            with os.scandir(os.path.join(root, d) if d else root) as it:
                for entry in it:
                    sub = f"{d}/{entry.name}" if d else entry.name
                    if is_noise(sub):
                        continue
                    with contextlib.suppress(OSError):
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(sub)
                        elif entry.is_file(follow_symlinks=False):
                            st = entry.stat(follow_symlinks=False)
                            files[entry.name] = (st.st_size, st.st_mtime_ns)
        except OSError:  # gone meanwhile, or unreadable: nothing to index there
            continue
        folders += 1
        if files:
            tree[d] = files
    return tree, folders


def diff(old: Tree, new: Tree) -> tuple[list[tuple[str, int, int]], list[str]]:
    """(upserts as (path, size, mtime_ns), deleted paths) turning ``old`` into ``new``."""
    ups: list[tuple[str, int, int]] = []
    gone: list[str] = []
    for d, files in new.items():
        before = old.get(d, {})
        pre = f"{d}/" if d else ""
        ups += [(pre + n, *v) for n, v in files.items() if before.get(n) != v]
    for d, files in old.items():
        after = new.get(d, {})
        pre = f"{d}/" if d else ""
        gone += [pre + n for n in files if n not in after]
    return ups, gone


# -- rendering ---------------------------------------------------------------------------


@dataclass
class _Group:
    """One inventory section: a folder, or a folder with its sub-folders rolled up."""

    key: str
    label: str
    dirs: list[str] = field(default_factory=list)
    count: int = 0
    newest: int = 0
    shown: int = 0


def _clean(name: str) -> str:
    safe = "".join(c if c.isprintable() else "?" for c in name)
    if len(safe) > NAME_CHARS:
        half = NAME_CHARS // 2 - 1
        safe = f"{safe[:half]}…{safe[-half:]}"
    return safe


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value, unit = n / 1024, "KB"
    for bigger in ("MB", "GB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}"


def _when(mtime_ns: int) -> str:
    try:
        return datetime.fromtimestamp(mtime_ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return "?"


def _label(key: str) -> str:
    return "./ (top level)" if key == "" else f"{_clean(key)}/"


def _groups(dirs: Mapping[str, DirFiles], room: int) -> list[_Group]:
    """Sections for ``dirs``, rolled up to shallower folders until at most ``room`` remain."""
    stats = {d: (len(f), max((v[1] for v in f.values()), default=0)) for d, f in dirs.items() if f}
    depth = max((d.count("/") + 1 for d in stats if d), default=0)
    while True:
        groups: dict[str, _Group] = {}
        for d, (count, newest) in stats.items():
            parts = d.split("/") if d else []
            key = "/".join(parts[:depth]) if len(parts) > depth else d
            g = groups.setdefault(key, _Group(key, _label(key)))
            g.dirs.append(d)
            g.count += count
            g.newest = max(g.newest, newest)
        if len(groups) <= room or depth <= 1:
            break
        depth -= 1
    return sorted(groups.values(), key=lambda g: (-g.newest, g.label))


def _cost(g: _Group, shown: int) -> int:
    shown = min(shown, g.count)
    return shown + (1 if 0 < shown < g.count else 0)


def _allocate(groups: list[_Group], room: int) -> None:
    """Give each group a number of file lines: an even share, then the rest to the newest."""
    lo, hi = 0, max((g.count for g in groups), default=0)
    while lo < hi:  # the largest even quota that fits
        mid = (lo + hi + 1) // 2
        if sum(_cost(g, mid) for g in groups) <= room:
            lo = mid
        else:
            hi = mid - 1
    for g in groups:
        g.shown = min(lo, g.count)
    left = room - sum(_cost(g, g.shown) for g in groups)
    for g in groups:  # newest groups first
        while g.shown < g.count:
            extra = _cost(g, g.shown + 1) - _cost(g, g.shown)
            if extra > left:
                break
            g.shown += 1
            left -= extra


def render_inventory(dirs: Mapping[str, DirFiles], budget: int) -> list[str]:
    """The inventory lines (at most ``budget``) for ``dirs``: folder ("" = top level) -> files.

    Sections are folders ordered by their newest file; inside, files newest
    first. When every folder cannot have its own header line, sub-folders are
    rolled up into their parents; when even the top-level folders do not fit,
    the oldest are summarised in one line. Every file is counted, always.
    """
    total = sum(len(f) for f in dirs.values())
    if total == 0:
        return [MARKER, f"{HEADING}: none yet"][:budget]
    nonempty = sum(1 for f in dirs.values() if f)
    counts = f"{total:,} file{'s' * (total != 1)} in {nonempty:,} folder{'s' * (nonempty != 1)}"
    lines = [MARKER, f"{HEADING}: {counts} (newest first, times UTC)"]
    room = budget - len(lines)
    groups = _groups(dirs, room)
    hidden: list[_Group] = []
    if len(groups) > room:
        keep = max(room - 1, 0)
        groups, hidden = groups[:keep], groups[keep:]
        room = 0
    else:
        room -= len(groups)
    _allocate(groups, room)
    for g in groups:
        extra = f" in {len(g.dirs):,} folders" if len(g.dirs) > 1 else ""
        noun = "file" if g.count == 1 else "files"
        lines.append(f"### {g.label} — {g.count:,} {noun}{extra}, newest {_when(g.newest)}")
        if g.shown:
            cut = len(g.key) + 1 if g.key else 0
            prefix_of = {d: f"{d[cut:]}/" if d != g.key else "" for d in g.dirs}
            newest = heapq.nlargest(
                g.shown,
                ((v[1], prefix_of[d] + n, v[0]) for d in g.dirs for n, v in dirs[d].items()),
            )
            lines += [f"- {_clean(name)} ({_size(size)}, {_when(m)})" for m, name, size in newest]
            if g.shown < g.count:
                lines.append(f"- … {g.count - g.shown:,} older")
    if hidden:
        files = sum(g.count for g in hidden)
        lines.append(f"### … {len(hidden):,} more folders with {files:,} files (oldest activity)")
    return lines[:budget]
