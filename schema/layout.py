"""Where everything lives in a workspace (SPEC.md section 2).

Plain ``os.path`` strings rather than pathlib: the command hook builds a Layout
on every agent event and pathlib's import alone costs more than the write.
"""

from __future__ import annotations

import os

DEFAULT_WORKSPACE = "/workspace"
#: The four files the daemon curates (soul.md and os.md are deploy-managed).
CURATED_FILES = ("tools.md", "files.md", "user.md", "context.md")
DEPLOY_FILES = ("soul.md", "os.md")
USER_FOLDERS = ("documents", "ocr", "extractions", "artifacts")


class Layout:
    """Paths of one workspace; nothing is touched until :meth:`ensure_system_dirs` is called.

    A plain class rather than a dataclass: ``dataclasses`` imports ``inspect``,
    which alone would cost the command hook a few milliseconds.
    """

    __slots__ = ("root",)

    def __init__(self, root: str) -> None:
        self.root = root

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"Layout(root={self.root!r})"

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
    def home_copy(self) -> str:
        """On a satellite (SPEC.md section 11): its followed copy of home's memory.db, the
        person's memory, written by litestream alone."""
        return os.path.join(self.root, ".os", "followed", "home", "memory.db")

    def reading(self) -> Layout:
        """The layout the person's memory is read from (the boot context, search): on a
        satellite with a copy of home's memory, one whose memory.db is that copy; else this."""
        if os.path.exists(self.home_copy):
            return FollowedLayout(self.root)
        return self

    @property
    def spool(self) -> str:
        """Append-only JSON lines of events that could not be written in time."""
        return os.path.join(self.memory_dir, "spool.jsonl")

    @property
    def version_file(self) -> str:
        return os.path.join(self.os_dir, "VERSION")

    def md(self, name: str) -> str:
        return os.path.join(self.memory_dir, name)

    def problem(self) -> str | None:
        """Why this is not a workspace, with the fix, in one line (None if it is one).

        A workspace has ``.os/``, made by ``wsd init`` or the deploy's bootstrap. Nothing
        else creates it: a mistyped or unset path must not grow a tree of its own. A path
        inside a workspace (its ``.os/``, a user folder) names the workspace instead of
        inviting a second one inside the first.
        """
        if os.path.lexists(self.os_dir):  # not a folder yet (a volume mounting): retried later
            return None
        outer = self.enclosing()
        if outer is not None:
            return self.inside(outer)
        if os.path.isdir(self.root):
            what = "is not a workspace (no .os/)"
        elif os.path.lexists(self.root):
            what = "is not a folder"
        else:
            what = "does not exist"
        return (
            f"{self.root} {what}: run `wsd --workspace {quoted(self.root)} init` (or the deploy"
            " bootstrap) to make it one, or set WSD_WORKSPACE to the workspace"
        )

    def enclosing(self) -> str | None:
        """The workspace this path lies inside (a folder above it with ``.os/``), or None."""
        path = os.path.abspath(self.root)
        while True:
            parent = os.path.dirname(path)
            if parent == path:
                return None
            path = parent
            if os.path.isdir(os.path.join(path, ".os")):
                return path

    def inside(self, outer: str) -> str:
        """The one line that refuses this path for lying inside the workspace ``outer``."""
        return (
            f"{self.root} is inside the workspace {outer}: did you mean"
            f" `--workspace {quoted(outer)}`?"
        )

    def ensure_system_dirs(self) -> None:
        """Create ``.os/`` and ``.os/memory/`` with mode 0700 (tightening existing ones)."""
        for path in (self.os_dir, self.memory_dir):
            os.makedirs(path, mode=0o700, exist_ok=True)
            if os.stat(path).st_mode & 0o077:
                os.chmod(path, 0o700)


class FollowedLayout(Layout):
    """A satellite's workspace as its readers see it: memory.db is the followed copy of
    home's (read-only: litestream writes it), transcript.db and the md files its own."""

    __slots__ = ()

    @property
    def memory_db(self) -> str:
        return self.home_copy


def quoted(path: str) -> str:
    """``path`` as a shell word to paste (quoted only when it needs it)."""
    import shlex  # imports re: only on the paths that print a command, never a hook's

    return shlex.quote(path)
