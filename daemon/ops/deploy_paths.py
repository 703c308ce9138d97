"""Which workspace and venv paths a deploy can hold, checked before anything is made.

The paths go into supervisord's ini files and into the shebangs pip writes, and each has its
own rules. Everything the deploy can write correctly is accepted (spaces, non-ASCII, quotes,
``%``, ``;`` and ``#`` are: :mod:`wsd.daemon.ops.deploy` escapes and quotes them); the rest is
refused here, with one line naming the path and why, instead of a deploy that never starts:

* not UTF-8 (supervisord's config is text) or a control character (a newline ends an ini
  value; a tab is taken for a separator);
* a space before ``;`` or ``#``: supervisord's ini parser cuts the value there, as a comment,
  and has no escape for it;
* whitespace in a deploy under the system's supervisord: its ``[include] files =`` is split
  at whitespace (a stand-alone deploy's own supervisord.conf names no path to include);
* a venv path that pip gives ``/bin/sh`` trampolines (a space in it, or a shebang over 127
  bytes) holding ``"``, ``$``, a backquote or ``\\``: pip writes the path between double
  quotes unescaped, and wsd, wsd-hook and supervisord then fail to start;
* a supervisord socket path longer than a Unix socket can have.

Standard library only: deploy/bootstrap.sh runs this file with the system's Python before it
creates the virtual environment, so a refused path leaves nothing behind.
"""

from __future__ import annotations

import os
import shlex
import sys
import unicodedata

#: The longest path a Unix socket may have on Linux (sun_path is 108 bytes with its NUL).
MAX_SOCKET_PATH = 107
#: Linux reads at most this much of a shebang line; distlib (pip) falls back to a /bin/sh
#: trampoline for longer interpreter paths (and for any with a space).
MAX_SHEBANG = 127
#: What the trampoline's double quotes do not keep literal.
TRAMPOLINE_UNSAFE = '"$`\\'


def shell_word(path: str) -> str:
    """``path`` as one word a person can paste into bash, on one line: shell-quoted, or as
    ``$'...'`` with escapes when it holds a control character or bytes that are not UTF-8."""
    if path.isprintable():
        return shlex.quote(path)
    out = []
    for char in path:
        if "\udc80" <= char <= "\udcff":  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        elif char in "\\'":
            out.append("\\" + char)
        elif char in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[char])
        elif char.isprintable():
            out.append(char)
        else:
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
    return "$'" + "".join(out) + "'"


def _control(path: str) -> str | None:
    for char in path:
        if unicodedata.category(char) == "Cc":
            name = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab"}.get(char)
            return name or f"the control character U+{ord(char):04X}"
    return None


def problem(
    what: str, path: str, *, standalone: bool, venv: bool = False, socket: bool = True
) -> str | None:
    """Why ``path`` (the ``what``: workspace or venv) cannot be deployed, or None."""
    shown = f"{what} path {shell_word(path)}"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return f"{shown} is not UTF-8 text, which supervisord's config must be: rename it"
    control = _control(path)
    if control:
        return f"{shown} holds {control}, which supervisord's config cannot hold: rename it"
    for i, char in enumerate(path[1:], 1):
        if char in ";#" and path[i - 1].isspace():
            return (
                f"{shown} has a space before a {char}, where supervisord's config starts a"
                " comment (it has no escape for it): rename it"
            )
    if not standalone and what == "workspace" and any(c.isspace() for c in path):
        return (
            f"{shown} has whitespace, at which the system supervisord's [include] files ="
            " splits: deploy with --standalone (the workspace's own supervisord), or use a"
            " path without whitespace"
        )
    if venv:
        python = os.path.join(path, "bin", "python")
        trampoline = " " in python or len(python.encode("utf-8")) + 3 > MAX_SHEBANG
        bad = sorted({c for c in python if c in TRAMPOLINE_UNSAFE})
        if trampoline and bad:
            return (
                f"{shown} has a space (or is too long for a shebang) and holds"
                f" {' '.join(f'`{c}`' for c in bad)}: pip's console scripts (wsd, wsd-hook)"
                " cannot start from it (pip puts it in double quotes, unescaped): choose another"
            )
    if standalone and socket and what == "workspace":
        sock = os.path.join(path, ".os", "run", "supervisor.sock")
        size = len(sock.encode("utf-8"))
        if size > MAX_SOCKET_PATH:
            return (
                f"socket path {shell_word(sock)} is {size} bytes, longer than the"
                f" {MAX_SOCKET_PATH} a Unix socket allows: choose a shorter workspace path"
            )
    return None


def deploy_problem(workspace: str, venv: str, *, standalone: bool) -> str | None:
    """Why a deploy of ``workspace`` with ``venv`` would not start, or None. A workspace
    whose stand-alone supervisord.conf is there is stand-alone whatever this run says (a
    bare ``wsd bootstrap`` keeps it)."""
    workspace, venv = os.path.abspath(workspace), os.path.abspath(venv)
    standalone = standalone or os.path.exists(
        os.path.join(workspace, ".os", "supervisor", "supervisord.conf")
    )
    return problem("workspace", workspace, standalone=standalone) or problem(
        "venv", venv, standalone=standalone, venv=True
    )


def main(argv: list[str]) -> int:
    """``deploy_paths.py WORKSPACE VENV [bootstrap's options]``: exit 2 with one line on
    stderr when the deploy cannot hold these paths."""
    if len(argv) < 2:
        print("usage: deploy_paths.py WORKSPACE VENV [--standalone]", file=sys.stderr)
        return 2
    found = deploy_problem(argv[0], argv[1], standalone="--standalone" in argv[2:])
    if found:
        print(f"wsd bootstrap: {found}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
