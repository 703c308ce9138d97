"""Where everything lives in a workspace (SPEC.md section 2).

Plain ``os.path`` strings rather than pathlib: the command hook builds a Layout
on every agent event and pathlib's import alone costs more than the write.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_WORKSPACE = "/workspace"
#: The four files the daemon curates (soul.md and os.md are deploy-managed).
CURATED_FILES = ("tools.md", "files.md", "user.md", "context.md")
DEPLOY_FILES = ("soul.md", "os.md")
USER_FOLDERS = ("documents", "ocr", "extractions", "artifacts")


@dataclass(frozen=True)
class Layout:
    """Paths of one workspace; nothing is touched until :meth:`ensure` is called."""

    root: str

    @property
    def os_dir(self) -> str:
        return os.path.join(self.root, ".os")

    @property
    def memory_dir(self) -> str:
        return os.path.join(self.root, ".os", "memory")

    @property
    def transcript_db(self) -> str:
        return os.path.join(self.memory_dir, "transcript.db")

    @property
    def memory_db(self) -> str:
        return os.path.join(self.memory_dir, "memory.db")

    @property
    def spool(self) -> str:
        """Append-only JSON lines of events that could not be written in time."""
        return os.path.join(self.memory_dir, "spool.jsonl")

    @property
    def version_file(self) -> str:
        return os.path.join(self.os_dir, "VERSION")

    def md(self, name: str) -> str:
        return os.path.join(self.memory_dir, name)

    def ensure_system_dirs(self) -> None:
        """Create ``.os/`` and ``.os/memory/`` with mode 0700 (tightening existing ones)."""
        for path in (self.os_dir, self.memory_dir):
            os.makedirs(path, mode=0o700, exist_ok=True)
            if os.stat(path).st_mode & 0o077:
                os.chmod(path, 0o700)
