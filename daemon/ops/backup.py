"""``wsd backup DEST``: a consistent online copy of a workspace's memory, daemon running or not.

Both databases through SQLite's backup API (each copy is one consistent snapshot), the six md
files and ``.os/VERSION``, and a ``manifest.json`` saying what was copied, into ``DEST``
(created 0700; the databases 0600). Restoring is described in the README.

An md file that is not a regular file (a link, a FIFO someone put there) is not copied: it
is named under ``skipped`` in the manifest, so a backup never blocks on it or copies what a
link points to.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from wsd.daemon.runtime.fsio import UnsafeFile, read_regular
from wsd.daemon.store import Store
from wsd.schema.layout import CURATED_FILES, DEPLOY_FILES, Layout

#: How a copy is created in DEST: never through a link someone left there.
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


class BackupRefused(ValueError):
    """A destination a backup will not write to; the message says why and what to do."""


def check_destination(layout: Layout, dest: str) -> None:
    """Raise :class:`BackupRefused` unless ``dest`` is a folder a backup may fill: outside the
    workspace (inside it, ``.os/memory`` gets the databases copied onto themselves and the
    live md files rewritten, a user folder gets transcript.db where the agent and files.md
    see it), and new, empty or an earlier backup (its files are replaced: anything else
    there named user.md or memory.db would be overwritten)."""
    real = os.path.realpath(dest)
    root = os.path.realpath(layout.root)
    if real == root or real.startswith(root + os.sep):
        raise BackupRefused(
            f"{dest} is inside the workspace {layout.root}: a backup there overwrites the live"
            " memory or lands in the person's own folders; choose a folder outside it"
        )
    if not os.path.lexists(dest):
        return
    if os.path.islink(dest) or not os.path.isdir(dest):
        raise BackupRefused(f"{dest} is not a folder; choose a new or empty folder")
    names = set(os.listdir(dest))
    if names and "manifest.json" not in names:
        raise BackupRefused(
            f"{dest} is not empty and holds no earlier backup (no manifest.json): its files"
            " could be overwritten; choose a new or empty folder"
        )


def backup(layout: Layout, dest: str) -> dict[str, Any]:
    """Copy ``layout``'s databases and memory files into ``dest``; returns the manifest.
    Raises :class:`BackupRefused` for a destination :func:`check_destination` refuses, and
    PauseRefused while a forget (or another backup) runs."""
    check_destination(layout, dest)
    from wsd.daemon.memory.forget import hold

    with hold.backing_up(layout):
        store = Store(layout)
        os.makedirs(dest, mode=0o700, exist_ok=True)
        # Recorded before a byte is copied, so that a forget reaches this copy (or names it
        # as out of its reach) however the backup ends. Found by the soak: recording it
        # after the copy failed (database locked), and the full copy left behind kept words
        # a later forget never looked for.
        store.erasure.record_backup(os.path.realpath(dest), time.time())
        return _backup(layout, store, dest)


def _backup(layout: Layout, store: Store, dest: str) -> dict[str, Any]:
    pages = store.maintenance.backup(dest)
    sources = {name: layout.md(name) for name in (*DEPLOY_FILES, *CURATED_FILES)}
    sources["VERSION"] = layout.version_file
    copied: list[str] = []
    skipped: dict[str, str] = {}
    for name, source in sources.items():
        try:
            data = read_regular(source)
        except FileNotFoundError:
            continue
        except UnsafeFile as exc:
            skipped[name] = str(exc)
            continue
        with os.fdopen(os.open(os.path.join(dest, name), _CREATE, 0o600), "wb") as fh:
            fh.write(data)
        copied.append(name)
    manifest = {
        "created_at": time.time(),
        "workspace": layout.root,
        "pages": pages,
        "md_files": [name for name in copied if name != "VERSION"],
        "skipped": skipped,
    }
    with open(os.path.join(dest, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
    return manifest
