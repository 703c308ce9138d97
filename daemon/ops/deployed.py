"""The deployed settings, for an operator's command run from a shell that has none of them.

supervisord starts the daemon with the Sprite's ``ANTHROPIC_BASE_URL``, ``WSD_BRIDGE_TOKEN`` and
``WSD_*`` settings; an operator's login shell usually has none. ``wsd rebuild`` and ``wsd
retry`` call the Bridge as the daemon does, so they take what the shell lacks from the
environment of the running daemon (or of the supervisord that started it): the same user's
process, read through ``/proc``, never printed or logged. What the shell sets wins.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from wsd.daemon.runtime.fsio import read_small
from wsd.daemon.runtime.heartbeat import pid_alive, read_status
from wsd.schema.layout import Layout

#: The variables a deployed daemon is configured by.
PREFIXES = ("WSD_", "ANTHROPIC_")
#: An environ larger than this is not read (a process's is a few KB).
MAX_ENVIRON = 1 << 20


def deployed_env(layout: Layout, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` completed with the daemon's (or its supervisord's) WSD_* and ANTHROPIC_*
    settings it lacks; ``env`` unchanged when neither process can be read."""
    for pid in _candidates(layout):
        theirs = _environ(pid)
        if theirs and any(k.startswith(PREFIXES) for k in theirs):
            extra = {k: v for k, v in theirs.items() if k.startswith(PREFIXES) and k not in env}
            extra.pop("WSD_WORKSPACE", None)  # the workspace is the one asked for here
            return {**env, **extra}
    return dict(env)


def _candidates(layout: Layout) -> list[int]:
    out = []
    pid = (read_status(layout) or {}).get("pid")
    if isinstance(pid, int) and pid_alive(pid):
        out.append(pid)
    try:
        text = read_small(os.path.join(layout.os_dir, "run", "supervisord.pid")) or ""
        sup = int(text.strip())
    except (OSError, ValueError):
        return out
    if sup > 0 and pid_alive(sup):
        out.append(sup)
    return out


def _environ(pid: int) -> dict[str, str]:
    """The environment ``pid`` started with, if this user may read it."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            if os.fstat(fh.fileno()).st_uid != os.getuid():
                return {}
            raw = fh.read(MAX_ENVIRON)
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        key, eq, value = item.partition(b"=")
        if eq:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out
