"""Writing a file so that a reader or a crash sees the old content or the new, never half.

Used for every file the daemon writes: the curated md files, files.md's inventory, canvas
mirrors, the heartbeat and deploy's templates. Temp files live beside their target (same
file system, so the rename is atomic) and carry :data:`TEMP_PREFIX`, which the watcher never
indexes and start-up repair removes.
"""

from __future__ import annotations

import contextlib
import os

TEMP_PREFIX = ".wsd-tmp-"


def atomic_write(path: str, text: str, mode: int = 0o600, durable: bool = True) -> None:
    """Replace ``path`` with ``text`` atomically (and, if ``durable``, fsynced)."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f"{TEMP_PREFIX}{name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        data = text.encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)
    if not durable:
        return
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
