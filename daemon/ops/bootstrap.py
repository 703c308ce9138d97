"""Create or repair a workspace's system layout and migrate both databases.

Idempotent: the first boot of a new Sprite and every later boot run the same
steps, and a step that finds things already right does nothing. Returns a
human-readable list of what it changed, which ``wsd init`` prints.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from wsd import schema
from wsd.daemon.runtime.fsio import atomic_write
from wsd.daemon.store import Store
from wsd.schema.layout import DEPLOY_FILES, USER_FOLDERS, Layout

#: The deploy-managed templates a workspace starts with (bootstrap installs its own).
TEMPLATES = Path(__file__).resolve().parent.parent.parent / "deploy" / "templates"
#: Written in a template where the workspace's own path belongs (rendered at install).
WORKSPACE_TOKEN = "@WORKSPACE@"


def render_template(text: str, layout: Layout) -> str:
    """A soul.md or os.md template with this workspace's path in place of its token."""
    return text.replace(WORKSPACE_TOKEN, os.path.abspath(layout.root).rstrip("/"))


def init_workspace(
    layout: Layout, *, user_folders: bool = True, templates: Path | None = TEMPLATES
) -> list[str]:
    """Ensure ``.os/`` (0700), the user folders, both databases (0600, migrated), and
    soul.md and os.md from ``templates`` where missing (never replaced: deploy-managed)."""
    done: list[str] = []
    for path in (layout.os_dir, layout.memory_dir):
        if not os.path.isdir(path):
            os.makedirs(path, mode=0o700, exist_ok=True)
            done.append(f"created {path}")
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode != 0o700:
            os.chmod(path, 0o700)
            done.append(f"chmod 0700 {path} (was {mode:04o})")
    if user_folders:
        for name in USER_FOLDERS:
            path = os.path.join(layout.root, name)
            if not os.path.isdir(path):
                os.makedirs(path, exist_ok=True)
                done.append(f"created {path}")
    databases: tuple[tuple[schema.Kind, str], ...] = (
        ("transcript", layout.transcript_db),
        ("memory", layout.memory_db),
    )
    existed = {path: os.path.exists(path) for _kind, path in databases}
    versions = Store(layout).migrate()
    for kind, path in databases:
        before, after = versions[kind]
        if not existed[path]:
            done.append(f"created {path} (schema v{after})")
        elif before != after:
            done.append(f"migrated {path} from v{before} to v{after}")
        for suffix in ("", "-wal", "-shm"):
            target = path + suffix
            try:  # one look: a -wal or -shm goes when a running daemon's last connection closes
                mode = stat.S_IMODE(os.stat(target).st_mode)
                if mode != 0o600:
                    os.chmod(target, 0o600)
                    done.append(f"chmod 0600 {target} (was {mode:04o})")
            except FileNotFoundError:
                continue
    for name in DEPLOY_FILES:
        target = layout.md(name)
        if templates is None or os.path.exists(target):
            continue
        if (templates / name).is_file():
            text = (templates / name).read_text(encoding="utf-8")
            atomic_write(target, render_template(text, layout))
            done.append(f"installed {target}")
    return done
