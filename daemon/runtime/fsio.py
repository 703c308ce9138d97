"""Files the daemon writes or reads: whole or not at all, regular files only, never through a link.

Used for every file the daemon writes (the curated md files, files.md's inventory, canvas
mirrors, the heartbeat, deploy's templates) and for the files it reads back or hashes in
places another user of the workspace can reach (canvas mirrors, checks, md files).

Writing (:func:`atomic_write`): a temp file beside the target (same file system, so the
rename is atomic) is created exclusively (``O_EXCL|O_NOFOLLOW``) under an unpredictable name
(:data:`TEMP_PREFIX`, the target's name, the writer's pid, a random token), so a link planted
at a temp name can neither be written through nor renamed into place. The folder is opened
once and every step goes through its descriptor; with ``root`` every folder from ``root``
down is opened without following links, so a confined caller stays confined even if a
folder on the way is swapped for a link after its checks. A target that exists and is not a
regular file (a link, a FIFO, a device, a folder) is refused with :class:`UnsafeFile`.

Reading (:func:`read_regular`): ``O_NOFOLLOW|O_NONBLOCK``, then ``fstat``: a FIFO, a device
or a link is refused at once (never blocks, never spins), a file over ``limit`` bytes too.
The watcher never indexes temp files; start-up repair removes the abandoned ones
(:func:`abandoned_temp`): never one a live process is about to rename into place.
"""

from __future__ import annotations

import contextlib
import os
import stat

from wsd.schema.errors import describe

TEMP_PREFIX = ".wsd-tmp-"
#: Reads of workspace and memory files stop here unless a caller says otherwise.
DEFAULT_READ_LIMIT = 16 * 1024 * 1024
_NAME_BYTES = 200  # of the target's name kept in a temp name (255 bytes at most in all)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
#: A temp file this old is abandoned even if a process with its writer's pid runs (the pid
#: was reused): a write takes milliseconds.
ABANDONED_AFTER_SECONDS = 3600.0


class UnsafeFile(OSError):
    """A path the daemon will not write or read: not a regular file, a link on the way, or
    too large. The message says which and why."""


def _open_folder(folder: str, root: str | None) -> int:
    """A descriptor of ``folder``; with ``root``, every component below it opened without
    following a link (so the folder is inside ``root`` when the descriptor is used)."""
    if root is None:
        return os.open(folder, _DIR_FLAGS)
    rel = os.path.relpath(folder, root)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        raise UnsafeFile(f"{folder} is outside {root}")
    fd = os.open(root, _DIR_FLAGS)
    for part in [] if rel == os.curdir else rel.split(os.sep):
        try:
            inner = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as exc:
            os.close(fd)
            if isinstance(exc, FileNotFoundError):
                raise
            raise UnsafeFile(f"{folder}: {part!r} is not a folder (a link?)") from exc
        os.close(fd)
        fd = inner
    return fd


def _check_target(name: str, dir_fd: int, path: str) -> None:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFile(f"{path} is {kind_of(st.st_mode)}, not a regular file: not replaced")


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words (for messages)."""
    for test, words in (
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return words
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def atomic_write(
    path: str, text: str, mode: int = 0o600, durable: bool = True, root: str | None = None
) -> None:
    """Replace ``path`` with ``text`` atomically (and, if ``durable``, fsynced).

    Raises :class:`UnsafeFile` if ``path`` exists and is not a regular file, or (with
    ``root``) if a folder between ``root`` and ``path`` is a link or outside it.
    """
    folder, name = os.path.split(path)
    dir_fd = _open_folder(folder or os.curdir, root)
    try:
        _check_target(name, dir_fd, path)
        stem = name.encode("utf-8", "surrogateescape")[:_NAME_BYTES].decode("utf-8", "ignore")
        # Unpredictable; the pid tells start-up repair whether its writer still runs.
        tmp = f"{TEMP_PREFIX}{stem}.{os.getpid()}.{os.urandom(8).hex()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, mode, dir_fd=dir_fd)
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
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        os.close(fd)
        try:
            _check_target(name, dir_fd, path)  # again: nothing planted while we wrote
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        if durable:
            os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def overwrite_in_place(path: str, text: str) -> bool:
    """Rewrite the regular file ``path`` with ``text`` where it lies, only if ``text`` fits
    in the blocks it already holds (so a full disk cannot stop it half way); False if it
    does not fit or the file is not there or not regular. Not atomic: a reader may see a
    torn write, so it is for a file whose reader treats garbage as absent (the heartbeat),
    when :func:`atomic_write` cannot make its temp file (issue 45: on a full disk the
    heartbeat stood still, and status said "idle" while every pass failed)."""
    data = text.encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or len(data) > found.st_blocks * 512:
            return False
        if os.pwrite(fd, data, 0) != len(data):
            return False
        os.ftruncate(fd, len(data))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def abandoned_temp(folder: str, name: str, now: float) -> bool:
    """True if ``name`` in ``folder`` is a temp file no write in progress will rename into
    place: its writer's pid is gone (or unreadable in the name), or it is older than
    :data:`ABANDONED_AFTER_SECONDS`. Removing one a live write still holds would make that
    write fail: the daemon's start-up repair once raced its own watcher's first files.md
    render that way, and files.md went without its inventory until the next rescan."""
    if not name.startswith(TEMP_PREFIX):
        return False
    parts = name[len(TEMP_PREFIX) :].rsplit(".", 2)
    pid = parts[1] if len(parts) == 3 else ""
    if not (pid.isascii() and pid.isdigit()) or not _alive(int(pid)):
        return True
    try:
        return now - os.lstat(os.path.join(folder, name)).st_mtime > ABANDONED_AFTER_SECONDS
    except FileNotFoundError:
        return False  # renamed into place meanwhile


def _alive(pid: int) -> bool:
    """True if a process with this pid exists (ours or another user's)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except (ProcessLookupError, OverflowError, ValueError):
        return False
    return True


def read_regular(
    path: str, limit: int = DEFAULT_READ_LIMIT, root: str | None = None, head: bool = False
) -> bytes:
    """The bytes of the regular file at ``path``; never follows a link, never blocks.

    Raises FileNotFoundError if nothing is there, :class:`UnsafeFile` for a link, a FIFO, a
    device, a folder or (unless ``head``: then its first ``limit`` bytes are returned) a file
    over ``limit`` bytes; with ``root``, for a link on the way too.
    """
    folder, name = os.path.split(path)
    dir_fd = _open_folder(folder or os.curdir, root) if root is not None else None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        try:
            fd = os.open(name if dir_fd is not None else path, flags, dir_fd=dir_fd)
        except OSError as exc:
            if isinstance(exc, FileNotFoundError | NotADirectoryError):
                raise FileNotFoundError(exc.errno, exc.strerror, path) from None
            try:
                st = os.stat(name if dir_fd is not None else path, dir_fd=dir_fd,
                             follow_symlinks=False)  # fmt: skip
            except OSError:
                raise exc from None
            if stat.S_ISREG(st.st_mode):  # a file we may not read (mode 000): say that
                raise type(exc)(exc.errno, exc.strerror, path) from None
            raise UnsafeFile(f"{path} is {kind_of(st.st_mode)}: not read") from exc
    finally:
        if dir_fd is not None:
            os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(f"{path} is {kind_of(st.st_mode)}: not read")
        if st.st_size > limit and not head:
            raise UnsafeFile(f"{path} is {st.st_size} bytes, over the {limit} byte limit")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit and not head:  # grew while we read
            raise UnsafeFile(f"{path} grew past the {limit} byte limit while read")
        return b"".join(chunks)[:limit]
    finally:
        os.close(fd)


def why_not_read(path: str, exc: OSError) -> str:
    """Why :func:`read_regular` raised ``exc`` for ``path``, in a few words without the path
    ("permission denied", "it is a FIFO", "it is 9000000 bytes, over the 4194304 byte
    limit"), for a line that names the file itself."""
    if isinstance(exc, UnsafeFile):
        text = str(exc).removeprefix(path).removeprefix(" ").removesuffix(": not read")
        return f"it {text}" if text.startswith("is ") else text
    return describe(exc).removeprefix(f"{path}: ")


def read_text(
    path: str, limit: int = DEFAULT_READ_LIMIT, root: str | None = None, head: bool = False
) -> str | None:
    """:func:`read_regular` decoded (invalid UTF-8 replaced); None when nothing is there."""
    try:
        return read_regular(path, limit, root, head).decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def read_small(path: str, limit: int = 1 << 20) -> str | None:
    """The text of a small file the daemon keeps for itself (VERSION, a pid, the heartbeat):
    None when nothing is there, "" when it cannot be read or is not a regular file (a FIFO
    there must not block the loop that reads it every pass)."""
    try:
        return read_text(path, limit)
    except OSError:
        return ""
