"""How an error is said to a person: one line, in words, never Python's own spelling.

``str(OSError)`` is ``[Errno 2] No such file or directory: 'nope.jsonl'``: the errno, a
repr of the path, and capitals from C's table. A person running ``wsd`` or reading a hook's
stderr line wants ``nope.jsonl: no such file or directory``. Every message that carries an
exception to a person (the CLI, the hooks, doctor, the boot context) goes through
:func:`describe`; logs keep the exception's type beside it for the operator.
"""

from __future__ import annotations


def describe(exc: BaseException) -> str:
    """``exc`` as one line for a person: an OSError as ``PATH: what went wrong`` (the
    strerror in lower case, no errno, no quotes around the path), anything else as its
    message (its type's name when it has none), newlines folded."""
    if isinstance(exc, OSError) and exc.strerror:
        what = exc.strerror[:1].lower() + exc.strerror[1:]
        names = [n for n in (exc.filename, exc.filename2) if n is not None]
        text = f"{' -> '.join(_name(n) for n in names)}: {what}" if names else what
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _name(path: object) -> str:
    if isinstance(path, bytes):
        return path.decode("utf-8", "replace")
    return str(path)
