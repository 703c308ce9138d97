"""``wsd backup DEST``: a consistent online copy of a workspace's memory, daemon running or not.

Both databases through SQLite's backup API (each copy is one consistent snapshot), the six md
files and ``.os/VERSION``, and a ``manifest.json`` saying what was copied, into ``DEST``
(created 0700; the databases 0600). Restoring is described in the README.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from typing import Any

from wsd.daemon.store.ledger import Store
from wsd.daemon.store.maintenance import Maintenance
from wsd.schema.layout import CURATED_FILES, DEPLOY_FILES, Layout


def backup(layout: Layout, dest: str) -> dict[str, Any]:
    """Copy ``layout``'s databases and memory files into ``dest``; returns the manifest."""
    os.makedirs(dest, mode=0o700, exist_ok=True)
    pages = Maintenance(Store(layout)).backup(dest)
    copied = []
    for name in (*DEPLOY_FILES, *CURATED_FILES):
        if os.path.exists(layout.md(name)):
            shutil.copy2(layout.md(name), os.path.join(dest, name))
            copied.append(name)
    if os.path.exists(layout.version_file):
        shutil.copy2(layout.version_file, os.path.join(dest, "VERSION"))
    manifest = {
        "created_at": time.time(),
        "workspace": layout.root,
        "pages": pages,
        "md_files": copied,
    }
    with open(os.path.join(dest, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1)
    return manifest
