"""Turn one hook call into one sanitised event and write it once (or spool it).

This is the whole of what runs inside the agent process on every event, so it
imports only the standard library, apsw and ``schema``; it never touches the
network, never waits longer than the busy-timeout bound, and never raises to
its caller (the SDK callbacks and the command hook swallow what escapes).
"""

from __future__ import annotations

import os
import sys
import time

import apsw

from wsd import schema
from wsd.redact import DEFAULT_MAX_CHARS, clean_text, clean_value
from wsd.schema.errors import describe
from wsd.schema.fastjson import dumps
from wsd.schema.layout import DEFAULT_WORKSPACE, Layout
from wsd.schema.transcript import KNOWN_EVENTS, Event, record

# typing, dataclasses and collections.abc are left out at run time on purpose:
# each costs the command hook a measurable slice of its start-up budget.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

DEFAULT_SKIP_TOOLS = frozenset({"TodoWrite"})
#: Tools whose output is the memory itself (search results, pending actions):
#: capturing it would feed old memory back to the curator as new material.
DEFAULT_MEMORY_TOOL_PREFIX = "mcp__memory__"
MEMORY_OUTPUT_MARKER = "[memory tool output not captured]"
_SESSION_ID_MAX = 256


#: ``wsd`` subcommands whose output is memory itself (a Claude Code agent may run
#: them in a shell, as the boot context tells it).
MEMORY_COMMANDS = ("search", "boot-context", "pending")


#: The memory tools, whatever server name the host gives them: ``mcp__memory__search_memory``
#: (the SDK helper), ``mcp__plugin_workspace-memory_memory__search_memory`` (the plugin).
MEMORY_TOOLS = ("search_memory", "resolve_action")


def is_memory_call(name: str, tool_input: object, prefix: str = DEFAULT_MEMORY_TOOL_PREFIX) -> bool:
    """A memory tool call: ``mcp__memory__*`` (or a plugin's ``mcp__plugin_*_memory__*``), or a
    shell command running ``wsd search`` etc."""
    if prefix and name.startswith(prefix):
        return True
    if name.startswith("mcp__"):
        server, _, tool = name[5:].rpartition("__")
        if tool in MEMORY_TOOLS and (server == "memory" or server.endswith("_memory")):
            return True
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if name != "Bash" or not isinstance(command, str):
        return False
    words = command.split()
    for i, word in enumerate(words[:-1]):
        if word.rsplit("/", 1)[-1] != "wsd":
            continue
        rest = iter(words[i + 1 :])
        for arg in rest:
            if arg == "--workspace":
                next(rest, None)  # the option's value
            elif not arg.startswith("-"):
                return arg in MEMORY_COMMANDS
    return False


class InvalidInput(ValueError):
    """The hook input cannot become an event (the message says why)."""


class CaptureConfig:
    """Settings of the capture path (immutable); built from the environment by entry points."""

    __slots__ = (
        "busy_timeout_ms",
        "max_field_chars",
        "memory_tool_prefix",
        "skip_tools",
        "workspace",
    )

    def __init__(
        self,
        workspace: str = DEFAULT_WORKSPACE,
        max_field_chars: int = DEFAULT_MAX_CHARS,
        skip_tools: frozenset[str] = DEFAULT_SKIP_TOOLS,
        memory_tool_prefix: str = DEFAULT_MEMORY_TOOL_PREFIX,
        busy_timeout_ms: int = schema.HOOK_BUSY_TIMEOUT_MS,
    ) -> None:
        self.workspace = workspace
        self.max_field_chars = max_field_chars
        self.skip_tools = skip_tools
        self.memory_tool_prefix = memory_tool_prefix
        self.busy_timeout_ms = busy_timeout_ms

    def replace(self, **changes: Any) -> CaptureConfig:
        """A copy with some settings changed."""
        values = {name: getattr(self, name) for name in self.__slots__}
        values.update(changes)
        return CaptureConfig(**values)

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"CaptureConfig({inner})"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> CaptureConfig:
        """Read ``WSD_*`` settings; a bad value falls back to its default with a warning.

        A hook must never break the agent, so unlike the daemon it does not
        refuse to start on bad config: it says so on stderr and carries on.
        """

        def number(name: str, default: int, low: int) -> int:
            raw = env.get(name)
            if raw is None or raw == "":
                return default
            try:
                value = int(raw)
                if value < low:
                    raise ValueError
                return value
            except ValueError:
                warn(f"{name}={raw!r} is not an integer >= {low}; using {default}")
                return default

        skip = env.get("WSD_SKIP_TOOLS")
        return cls(
            workspace=env.get("WSD_WORKSPACE") or DEFAULT_WORKSPACE,
            max_field_chars=number("WSD_MAX_FIELD_CHARS", DEFAULT_MAX_CHARS, 64),
            skip_tools=(
                DEFAULT_SKIP_TOOLS
                if skip is None
                else frozenset(t.strip() for t in skip.split(",") if t.strip())
            ),
            memory_tool_prefix=env.get("WSD_MEMORY_TOOL_PREFIX") or DEFAULT_MEMORY_TOOL_PREFIX,
            busy_timeout_ms=number("WSD_HOOK_TIMEOUT_MS", schema.HOOK_BUSY_TIMEOUT_MS, 0),
        )


def warn(message: str) -> None:
    """Write ``message`` to stderr as the hook's (never to stdout, never raising)."""
    try:
        sys.stderr.write(f"wsd-hook: {message}\n")
    except Exception:  # stderr closed: nothing more we can do
        pass


def not_captured(exc: BaseException) -> str:
    """Why an event could not even be spooled, in one line: the OS's or SQLite's own words
    (no errno, no repr); the type's name only for what no one foresaw (a bug to report)."""
    if isinstance(exc, OSError | apsw.Error | schema.SchemaError):
        return describe(exc)[:200]
    return f"{type(exc).__name__}: {describe(exc)[:200]}"


def _text(value: object, limit: int) -> str:
    """Any field as clean text (non-strings are serialised first)."""
    if isinstance(value, str):
        return clean_text(value, limit)
    if value is None:
        return ""
    return clean_text(dumps(clean_value(value, limit)), limit)


def _json_kind(value: object) -> str:
    """A value's JSON type, as the person who wrote the input knows it (not Python's)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def build_event(data: object, config: CaptureConfig, now: float | None = None) -> Event | None:
    """Validate and sanitise one hook input; None when it is deliberately not captured.

    Raises :class:`InvalidInput` for input that is not a known hook event with
    a session id. Everything kept goes through hygiene (truncation, private
    spans, secrets) *before* it exists anywhere else.
    """
    if not isinstance(data, dict):
        raise InvalidInput(f"hook input must be a JSON object, got {_json_kind(data)}")
    kind = data.get("hook_event_name")
    if kind is None:
        raise InvalidInput("no hook_event_name in the hook input")
    if not isinstance(kind, str):
        raise InvalidInput(f"hook_event_name must be a string, got {_json_kind(kind)}")
    if kind not in KNOWN_EVENTS:
        shown = " ".join(clean_text(kind, 60).split())  # one line on stderr
        raise InvalidInput(f"unsupported hook_event_name: {shown}")
    raw_session = data.get("session_id")
    if isinstance(raw_session, int | float) and not isinstance(raw_session, bool):
        raw_session = str(raw_session)
    if not isinstance(raw_session, str) or not raw_session.strip():
        raise InvalidInput(f"{kind}: missing or invalid session_id")
    session_id = clean_text(raw_session.strip(), _SESSION_ID_MAX)
    limit = config.max_field_chars
    payload: dict[str, Any] = {}
    cwd = data.get("cwd")
    if isinstance(cwd, str):
        payload["cwd"] = clean_text(cwd, 1024)
    tool_name: str | None = None

    if kind == "UserPromptSubmit":
        payload["prompt"] = _text(data.get("prompt"), limit)
    elif kind in ("PostToolUse", "PostToolUseFailure"):
        tool_name = _text(data.get("tool_name"), 200) or "unknown"
        if tool_name in config.skip_tools:
            return None
        payload["tool_input"] = clean_value(data.get("tool_input"), limit)
        payload["tool_use_id"] = _text(data.get("tool_use_id"), 200)
        if kind == "PostToolUseFailure":
            payload["error"] = _text(data.get("error"), limit)
        elif is_memory_call(tool_name, data.get("tool_input"), config.memory_tool_prefix):
            payload["tool_response"] = MEMORY_OUTPUT_MARKER
        else:
            payload["tool_response"] = clean_value(data.get("tool_response"), limit)
    elif kind == "Stop":
        payload["last_assistant_message"] = _text(data.get("last_assistant_message"), limit)
    elif kind == "PreCompact":
        payload["trigger"] = _text(data.get("trigger"), 40)
        payload["custom_instructions"] = _text(data.get("custom_instructions"), limit)
    elif kind == "SessionStart":
        payload["source"] = _text(data.get("source"), 40)
    elif kind == "SessionEnd":
        payload["reason"] = _text(data.get("reason"), 200)

    return Event(
        uid=os.urandom(16).hex(),
        ts=time.time() if now is None else now,
        session_id=session_id,
        kind=kind,
        tool_name=tool_name,
        payload=payload,
    )


#: Seconds without an event after which an in-process capture closes its
#: connection: the agent then waits for the person with no SQLite file (and no
#: POSIX lock on its WAL index) open, which a CRIU freeze of the VM needs.
DEFAULT_IDLE_CLOSE_S = 2.0


class Capture:
    """Writes events into one workspace's transcript.db, spooling when it cannot.

    The command hook writes one event per process and closes at once. The
    in-process SDK path (``keep_open``) keeps its connection while events keep
    coming — opening costs ~0.5 ms, a write on an open connection ~0.05 ms —
    and a helper thread closes it after ``idle_close_s`` seconds of silence.
    """

    def __init__(
        self,
        config: CaptureConfig,
        *,
        keep_open: bool = False,
        idle_close_s: float = DEFAULT_IDLE_CLOSE_S,
    ) -> None:
        self.config = config
        self.layout = Layout(config.workspace)
        self.keep_open = keep_open
        self.idle_close_s = idle_close_s
        self._conn: apsw.Connection | None = None
        self._last_used = 0.0
        self._reaper_running = False
        if keep_open:
            import threading  # only the in-process path needs it

            self._lock: threading.Lock | None = threading.Lock()
            self._thread_cls = threading.Thread
        else:
            self._lock = None

    def handle(self, data: object) -> str:
        """Capture one hook input; returns what happened (for logs and tests).

        Outcomes: ``written``, ``duplicate``, ``skipped``, ``spooled``. Raises
        :class:`InvalidInput` for bad input and ``OSError`` only when even the
        spool could not be written (the caller reports it on stderr).
        """
        event = build_event(data, self.config)
        if event is None:
            return "skipped"
        return self.write(event)

    def write(self, event: Event) -> str:
        """Write ``event`` once, or append it to the spool if the database won't take it."""
        if self._lock is None:
            return self._write(event)
        with self._lock:
            outcome = self._write(event)
            self._last_used = time.monotonic()
            if self._conn is not None and not self._reaper_running:
                self._reaper_running = True
                self._thread_cls(target=self._reap, name="wsd-capture-reaper", daemon=True).start()
            return outcome

    def _write(self, event: Event) -> str:
        problem = self.layout.problem()
        if problem is not None:  # nothing is created outside a workspace, not even a spool
            warn(f"event not captured: {problem}")
            return "refused"
        try:
            conn = self._connection()
            try:
                return "written" if record(conn, event) else "duplicate"
            finally:
                if not self.keep_open:
                    self._close()
        except (apsw.Error, OSError, schema.SchemaError) as exc:
            self._close()
            from wsd.schema import spool  # only now: most hook runs never spool

            os.makedirs(self.layout.memory_dir, mode=0o700, exist_ok=True)
            spool.append(self.layout.spool, event.to_json())
            warn(f"transcript.db unavailable ({describe(exc)}); event spooled")
            return "spooled"

    def _connection(self) -> apsw.Connection:
        if self._conn is None:
            if not os.path.isdir(self.layout.memory_dir):  # .os/ is there: a workspace
                self.layout.ensure_system_dirs()
            conn = schema.connect(
                self.layout.transcript_db,
                "transcript",
                busy_timeout_ms=self.config.busy_timeout_ms,
            )
            try:
                # First event on a fresh workspace: the shared migration is
                # idempotent and race-safe, so the hook may apply it itself.
                schema.migrate(conn, "transcript", self.layout.transcript_db)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _reap(self) -> None:
        """Helper thread: close the connection once no event came for idle_close_s."""
        assert self._lock is not None
        while True:
            with self._lock:
                idle = time.monotonic() - self._last_used
                if self._conn is None or idle >= self.idle_close_s:
                    self._close()
                    self._reaper_running = False
                    return
                remaining = self.idle_close_s - idle
            time.sleep(remaining)

    def close(self) -> None:
        """Release the connection (and its file locks) if one is open."""
        if self._lock is None:
            self._close()
            return
        with self._lock:
            self._close()

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except apsw.Error:
                pass
