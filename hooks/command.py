"""``wsd-hook``: the Claude Code command hook (also usable through the SDK's ``settings=``).

Reads one hook event as JSON on stdin and captures it. Whatever happens it
prints nothing on stdout (Claude Code would show it to the agent) and exits 0
(a non-zero exit can block the agent); problems go to stderr.
"""

from __future__ import annotations

import os
import sys

from wsd.hooks.capture import Capture, CaptureConfig, InvalidInput, not_captured
from wsd.schema.fastjson import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

#: Beyond this the input is not read into memory at all (fields are cut to
#: ~2,000 characters anyway); the event is reported as rejected.
MAX_STDIN_BYTES = 64 * 1024 * 1024


def _read_stdin() -> bytes:
    stream = sys.stdin.buffer if sys.stdin is not None else None
    if stream is None:
        return b""
    data = stream.read(MAX_STDIN_BYTES + 1)
    if len(data) > MAX_STDIN_BYTES:
        while stream.read(1 << 20):  # drain so the writer never blocks on a full pipe
            pass
        raise InvalidInput(f"hook input larger than {MAX_STDIN_BYTES} bytes")
    return data


def run(raw: bytes, env: Mapping[str, str]) -> str:
    """Capture one raw stdin payload; returns the outcome or raises InvalidInput/OSError."""
    if not raw.strip():
        raise InvalidInput("empty input on stdin")
    try:
        data = loads(raw.decode("utf-8", "replace"))
    except RecursionError:  # said as Python says it, cut mid-word (issue 45)
        raise InvalidInput("input is JSON nested too deeply to read") from None
    except ValueError as exc:
        raise InvalidInput(f"input is not valid JSON ({str(exc)[:80]})") from None
    capture = Capture(CaptureConfig.from_env(env))
    try:
        return capture.handle(data)
    finally:
        capture.close()


USAGE = """usage: wsd-hook [--workspace PATH] < EVENT.json

The Claude Code command hook: reads one hook event (JSON, as Claude Code sends it)
on stdin and records it in the workspace's transcript.db. It prints nothing on
stdout and always exits 0; problems are one line on stderr. The workspace is
--workspace PATH, else $WSD_WORKSPACE, else /workspace.
"""


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point: always returns 0. ``--workspace PATH`` (the Claude Code
    plugin passes it) overrides ``$WSD_WORKSPACE``; ``--help`` prints the usage."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "-h" in args or "--help" in args:
        # A person at a terminal, not Claude Code: usage, and stdin is not read (it would
        # wait on the terminal).
        try:
            sys.stdout.write(USAGE)
            sys.stdout.flush()
        except BaseException:
            pass
        return 0
    env: Mapping[str, str] = os.environ
    workspace, problems = _workspace_of(args)
    if workspace is not None:
        env = {**os.environ, "WSD_WORKSPACE": workspace}
    for problem in problems:  # reported; the event still goes to the workspace named
        _report(problem)
    try:
        run(_read_stdin(), env)
    except InvalidInput as exc:
        _report(f"ignored invalid hook input: {exc}")
    except BaseException as exc:
        _report(f"event NOT captured: {not_captured(exc)}")
    return 0


def _workspace_of(args: list[str]) -> tuple[str | None, list[str]]:
    """``--workspace PATH`` or ``--workspace=PATH`` (the last one wins), and one line for
    each argument that could not be used."""
    workspace: str | None = None
    ignored: list[str] = []
    problems: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--workspace":
            if i + 1 < len(args):
                workspace = args[i + 1]
                i += 2
                continue
            problems.append("--workspace needs a path (--workspace PATH); it was ignored")
        elif arg.startswith("--workspace="):
            workspace = arg[len("--workspace=") :]
        else:
            ignored.append(arg)
        i += 1
    if ignored:
        shown = " ".join(a[:60] for a in ignored[:3]) + (" ..." if len(ignored) > 3 else "")
        problems.append(f"ignored arguments: {shown} (the only option is --workspace PATH)")
    if workspace is not None and not workspace.strip():
        problems.append("--workspace was given an empty path; $WSD_WORKSPACE is used")
        workspace = None
    return workspace, problems


def _report(message: str) -> None:
    try:
        sys.stderr.write(f"wsd-hook: {message}\n")
        sys.stderr.flush()
    except BaseException:
        pass


if __name__ == "__main__":
    sys.exit(main())
