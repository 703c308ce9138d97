"""Workspace files a forget took out of the daemon's listings (issue 44).

A file whose name holds words the person asked to forget stays on disk (it is theirs), and
leaves everything the daemon keeps or shows: the erasure drops it from the file index and
cuts its line from files.md's inventory; this keeps the watcher from listing it again. The
forgotten phrases are known only as keyed hashes (the forget's marks, ``store.erasure``),
so each path's words are hashed and compared; the answer is cached per path until a new
forget changes the marks (a workspace of 100,000 files is tokenized once, not every render).
"""

from __future__ import annotations

from typing import Any

from wsd.daemon.store import Marks, Store, path_words
from wsd.daemon.workspace.inventory import Tree


class Unnamed:
    """Which paths the forgets' marks hold: what the watcher neither lists nor indexes."""

    def __init__(self) -> None:
        self._marks: Marks | None = None
        self._seen: Any = None
        self._cache: dict[str, bool] = {}

    def refresh(self, store: Store) -> None:
        """Reload the marks when a forget finished since the last look (one read)."""
        last = store.erasure.last_forget()
        seen = None if last is None else last["id"]
        if seen != self._seen or self._marks is None:
            self._marks = Marks(*store.erasure.marks())
            self._seen = seen
            self._cache.clear()

    def hides(self, path: str) -> bool:
        """Whether ``path``'s name (a folder's included) holds a forgotten phrase."""
        if not self._marks:
            return False
        hit = self._cache.get(path)
        if hit is None:
            hit = self._cache[path] = self._marks.holds(path_words(path))
        return hit

    def tree(self, tree: Tree) -> Tree:
        """``tree`` without the files (and folders) whose names a forget took."""
        if not self._marks:
            return tree
        out: Tree = {}
        for folder, files in tree.items():
            if folder and self.hides(folder):
                continue
            kept = {
                n: v for n, v in files.items() if not self.hides(f"{folder}/{n}" if folder else n)
            }
            if kept:
                out[folder] = kept
        return out
