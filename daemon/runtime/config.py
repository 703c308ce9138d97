"""Daemon configuration: one frozen dataclass, built from an environment mapping.

Only the entry point reads ``os.environ``; everything else receives a Config.
A bad value stops the daemon at start with a message naming the variable and
the value (supervisord shows it in the log), instead of running half-broken.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from wsd.schema.layout import DEFAULT_WORKSPACE

DEFAULT_MODEL = "claude-haiku-4-5"
DEFAULT_BATCH_TURNS = 25
#: Characters of rendered turns per curator call; one huge turn is cut to fit.
DEFAULT_BATCH_CHARS = 60_000
DEFAULT_POLL_SECONDS = 2.0
#: A turn with no Stop is closed after this much silence (agent crashed, killed).
DEFAULT_ORPHAN_SECONDS = 900.0
#: Idle trigger: the oldest pending turn is this old ...
DEFAULT_IDLE_SECONDS = 300.0
#: ... and no session has had an event for this long.
DEFAULT_QUIET_SECONDS = 120.0
DEFAULT_REQUEST_TIMEOUT = 60.0
DEFAULT_MAX_TOKENS = 4096
#: Attempts of one curator call on transient failures, and their total time.
DEFAULT_RETRY_ATTEMPTS = 4
DEFAULT_RETRY_SECONDS = 90.0
#: After a call exhausts its retries, the next try waits this long, doubling.
DEFAULT_OUTAGE_BACKOFF = 30.0
DEFAULT_OUTAGE_BACKOFF_MAX = 900.0
DEFAULT_HEARTBEAT_SECONDS = 10.0
#: Wall clock ahead of the monotonic clock by more than this means we slept.
DEFAULT_WAKE_JUMP_SECONDS = 60.0
#: Prices of Claude Haiku 4.5 in USD per million tokens.
#: Raw events folded into processed turns are kept this long, then pruned.
DEFAULT_RETENTION_DAYS = 30.0
#: Curated turns older than this many days are erased from the transcript (issue 33); 0 keeps
#: them for ever (the default: what a person said is theirs to erase).
DEFAULT_TRANSCRIPT_RETENTION_DAYS = 0.0
#: How often retention, vacuum and WAL truncation run (checkpoints run each idle pass).
DEFAULT_MAINTENANCE_SECONDS = 3600.0
#: Seconds with nothing to curate after which a daemon that has loaded the anthropic SDK
#: re-executes itself (same PID) to give its ~55 MB back; 0 disables. Short, because an
#: idle daemon must stay under 80 MB on a small VM; the price is one SDK import (~0.8 s of
#: CPU, done in the background as soon as turns are pending again) per pause in the work.
DEFAULT_SHED_MEMORY_SECONDS = 60.0
#: Replication (WSD_REPLICA_URL): litestream looks at the WAL and ships what is new this often.
#: The loss window at kill -9 is about this long (``make bench``): measured worst of 3 rounds
#: 0.98 s at 1 s (litestream's default; a run saw 1.98 s), 0.48 s at 0.5 s, 0.24 s at 0.25 s;
#: litestream's idle CPU 0.1 % of a core at 1 s, 0.27 % at 0.5 s. Target: 1 s.
DEFAULT_REPLICA_SYNC_SECONDS = 0.5
#: How long the replica keeps history (snapshots and the changes between them): the reach of
#: a restore ``--at`` a past time, and how long it can still hold words a person forgot.
DEFAULT_REPLICA_RETENTION_HOURS = 24.0
#: ``wsd doctor`` fails when a database's newest change has waited longer than this to reach
#: the replica.
DEFAULT_REPLICA_MAX_LAG_SECONDS = 300.0
#: Semantic matching (the [semantic] extra): the daemon embeds new memories and answers
#: search_memory's semantic half. Without the extra installed it stays off whatever this says.
DEFAULT_SEMANTIC = True
#: How long `wsd search` waits for the daemon's semantic half before ranking by words alone
#: (the agent's tool uses the same default).
DEFAULT_SEMANTIC_TIMEOUT = 0.3
#: How curator requests go to the Bridge (issue 23): ``economy`` sends them as Message Batches
#: (billed at half price, answered within minutes to hours; PreCompact and ``wsd flush`` still
#: go at once), ``prompt`` makes every call a direct Messages call.
DEFAULT_CURATION = "economy"
#: First look at a Message Batch after creating it, and the longest wait between looks (the
#: wait doubles from one to the other: most batches end within minutes, some take hours).
DEFAULT_ECONOMY_POLL_SECONDS = 30.0
DEFAULT_ECONOMY_POLL_MAX_SECONDS = 300.0
#: What a request in a Message Batch costs beside a direct call (Anthropic: half).
DEFAULT_ECONOMY_PRICE_FACTOR = 0.5
#: Requests in one Message Batch at most (a backlog after an outage goes in one).
DEFAULT_ECONOMY_MAX_REQUESTS = 100
#: A Message Batch still unanswered this long is named by ``wsd doctor`` (the API's ceiling is
#: 24 h, after which its requests come back expired and go through the prompt lane).
DEFAULT_ECONOMY_WAIT_LIMIT_SECONDS = 25 * 3600.0
DEFAULT_PRICE_INPUT = 1.0
DEFAULT_PRICE_OUTPUT = 5.0
#: Curator spend per UTC day after which curation pauses (turns wait; nothing is lost).
DEFAULT_DAILY_BUDGET_USD = 1.0
#: Share of a curated file's lines one batch may lose, deleted or replaced (SPEC.md section 5).
DEFAULT_MAX_LOSS = 0.25
#: Share of the lines a curated file had a day ago it may lose before removals wait (0: off).
DEFAULT_EROSION = 0.5
#: Byte budget of each curated file (files.md: of its notes), documented as ~12 KB.
DEFAULT_FILE_CHARS = 12_000
#: Workspace watcher: a full reconciling rescan this often (events are hints, not truth) ...
DEFAULT_RESCAN_SECONDS = 300.0
#: ... the polling interval when inotify is unavailable, the proactive checks' period ...
DEFAULT_WATCH_POLL_MS = 1000
DEFAULT_CHECK_SECONDS = 60.0
#: ... a document with no ocr/ or extractions/ output after this long is flagged ...
DEFAULT_UNPROCESSED_SECONDS = 3600.0
#: ... and the canvas tools whose cards are mirrored into files, and where unnamed ones go.
DEFAULT_CANVAS_CREATE_TOOL = "mcp__canvas__create_card"
DEFAULT_CANVAS_UPDATE_TOOL = "mcp__canvas__update_card"
DEFAULT_CANVAS_CLOSE_TOOL = "mcp__canvas__close_card"
DEFAULT_CANVAS_FOLDER = "artifacts/canvas"

#: How often a follower looks for new changes (``litestream restore -f -follow-interval``).
#: Each look lists the nine levels of the followed replica: at 1 s that was 32,400 LIST
#: requests an idle hour per follower on S3 (measured, ``make bench machines_idle``: about
#: $0.16 an hour); at 60 s, 540. A turn waits on two follows to reach another machine,
#: beside a curation trigger of five minutes (WSD_IDLE_SECONDS): a minute each is the price
#: of a fleet's storage bill.
DEFAULT_FOLLOW_SECONDS = 60.0

T = TypeVar("T")
S = TypeVar("S")


class ConfigError(ValueError):
    """A setting has an unusable value; the message names the variable and the value.

    ``name`` and ``expected`` (when one variable is at fault) let a caller say it its own
    way: ``wsd doctor`` names the line of .os/settings.env that set it."""

    def __init__(self, message: str, name: str | None = None, expected: str = "") -> None:
        super().__init__(message)
        self.name = name
        self.expected = expected


def _get(
    env: Mapping[str, str], name: str, default: T, parse: Callable[[str], T], check: str = ""
) -> T:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    expected = check or parse.__name__
    try:
        value = parse(raw.strip())
    except ValueError:
        raise ConfigError(f"{name}={raw!r}: expected {expected}", name, expected) from None
    return value


DAY = 86_400.0
MONTH = 30 * DAY


def _number(
    kind: Callable[[str], T], low: float, high: float, *, above: bool = False
) -> Callable[[str], T]:
    """A parser of ``kind`` values from ``low`` (excluded when ``above``) to ``high``: finite,
    within bounds a setting can mean. Found by an attack: ``WSD_DAILY_BUDGET_USD=nan`` (also
    ``inf``, ``1e400``) was accepted and silently meant no cap; an infinite wait overflows."""

    def parse(raw: str) -> T:
        value = kind(raw)
        number = float(value)  # type: ignore[arg-type]
        if not math.isfinite(number) or number > high or number < low or (above and number == low):
            raise ValueError(raw)
        return value

    noun = "an integer" if kind is int else "a number"
    lo, hi = _figure(low), _figure(high)
    bounds = f"above {lo} and at most {hi}" if above else f"from {lo} to {hi}"
    parse.__name__ = f"{noun} {bounds}"
    return parse


OFF = " (0 turns it off)"
FOR_EVER = " (0 keeps every turn for ever)"


#: Settings renamed, old name to new. An old name is still read when the new one is not
#: set, and ``wsd run`` logs a line naming both (:func:`renamed_in`): an operator's settings
#: file keeps working across the rename. The Message Batch settings were ``WSD_BATCH_*``,
#: which also named a curator call's turns (``WSD_BATCH_TURNS``).
RENAMED = {
    "WSD_BATCH_POLL_SECONDS": "WSD_ECONOMY_POLL_SECONDS",
    "WSD_BATCH_POLL_MAX_SECONDS": "WSD_ECONOMY_POLL_MAX_SECONDS",
    "WSD_BATCH_PRICE_FACTOR": "WSD_ECONOMY_PRICE_FACTOR",
    "WSD_BATCH_MAX_REQUESTS": "WSD_ECONOMY_MAX_REQUESTS",
    "WSD_BATCH_WAIT_LIMIT_SECONDS": "WSD_ECONOMY_WAIT_LIMIT_SECONDS",
}


def renamed_in(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """The old setting names ``env`` sets, each with its new name, in :data:`RENAMED`'s order;
    one whose new name is set too is listed as well (the new one wins)."""
    return [(old, new) for old, new in RENAMED.items() if env.get(old) is not None]


class _Reader:
    """Numeric settings of one environment, each parsed and bounded (see :func:`_number`)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env

    def _source(self, name: str) -> str:
        """The variable a setting is read from: its old name when only that one is set (an
        error then names what the operator wrote)."""
        if self.env.get(name) is None:
            for old, new in RENAMED.items():
                if new == name and self.env.get(old) is not None:
                    return old
        return name

    def number(
        self,
        name: str,
        default: T,
        kind: Callable[[str], T],
        low: float,
        high: float,
        *,
        above: bool = False,
        note: str = "",
    ) -> T:
        parse = _number(kind, low, high, above=above)
        return _get(self.env, self._source(name), default, parse, parse.__name__ + note)

    def seconds(self, name: str, default: float, high: float = MONTH) -> float:
        """A duration: more than 0, at most ``high`` (a month unless said)."""
        return self.number(name, default, float, 0, high, above=True)

    def days(
        self, name: str, default: float = 0.0, *, above: bool = False, note: str = ""
    ) -> float:
        """A number of days, at most a century (more than 0 with ``above``)."""
        return self.number(name, default, float, 0, 36_500, above=above, note=note)


def _figure(x: float) -> str:
    return f"{int(x):,}" if x == int(x) else f"{x:g}"


def _curation(raw: str) -> str:
    if raw not in ("economy", "prompt"):
        raise ValueError(raw)
    return raw


def _log_format(raw: str) -> str:
    if raw not in ("auto", "json", "console"):
        raise ValueError(raw)
    return raw


@dataclass(frozen=True)
class Config:
    """Everything the daemon can be told. Field docs live beside the DEFAULT_* constants."""

    workspace: str = DEFAULT_WORKSPACE
    bridge_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    auth_token: str | None = field(default=None, repr=False)
    model: str = DEFAULT_MODEL
    batch_turns: int = DEFAULT_BATCH_TURNS
    batch_chars: int = DEFAULT_BATCH_CHARS
    poll_seconds: float = DEFAULT_POLL_SECONDS
    orphan_seconds: float = DEFAULT_ORPHAN_SECONDS
    idle_seconds: float = DEFAULT_IDLE_SECONDS
    quiet_seconds: float = DEFAULT_QUIET_SECONDS
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    max_tokens: int = DEFAULT_MAX_TOKENS
    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    retry_seconds: float = DEFAULT_RETRY_SECONDS
    outage_backoff: float = DEFAULT_OUTAGE_BACKOFF
    outage_backoff_max: float = DEFAULT_OUTAGE_BACKOFF_MAX
    heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS
    wake_jump_seconds: float = DEFAULT_WAKE_JUMP_SECONDS
    curation: str = DEFAULT_CURATION
    economy_poll_seconds: float = DEFAULT_ECONOMY_POLL_SECONDS
    economy_poll_max_seconds: float = DEFAULT_ECONOMY_POLL_MAX_SECONDS
    economy_price_factor: float = DEFAULT_ECONOMY_PRICE_FACTOR
    economy_max_requests: int = DEFAULT_ECONOMY_MAX_REQUESTS
    economy_wait_limit_seconds: float = DEFAULT_ECONOMY_WAIT_LIMIT_SECONDS
    price_input: float = DEFAULT_PRICE_INPUT
    price_output: float = DEFAULT_PRICE_OUTPUT
    daily_budget_usd: float = DEFAULT_DAILY_BUDGET_USD
    max_loss: float = DEFAULT_MAX_LOSS
    erosion: float = DEFAULT_EROSION
    file_chars: int = DEFAULT_FILE_CHARS
    retention_days: float = DEFAULT_RETENTION_DAYS
    transcript_retention_days: float = DEFAULT_TRANSCRIPT_RETENTION_DAYS
    maintenance_seconds: float = DEFAULT_MAINTENANCE_SECONDS
    shed_memory_seconds: float = DEFAULT_SHED_MEMORY_SECONDS
    log_format: str = "auto"
    watch: bool = True
    semantic: bool = DEFAULT_SEMANTIC
    semantic_timeout: float = DEFAULT_SEMANTIC_TIMEOUT
    # Workspace watcher (daemon/workspace/): full rescans, polling fallback,
    # proactive checks, and the canvas tools whose cards are mirrored to files.
    rescan_seconds: float = DEFAULT_RESCAN_SECONDS
    watch_polling: bool = False
    watch_poll_ms: int = DEFAULT_WATCH_POLL_MS
    check_seconds: float = DEFAULT_CHECK_SECONDS
    unprocessed_seconds: float = DEFAULT_UNPROCESSED_SECONDS
    canvas_create_tool: str = DEFAULT_CANVAS_CREATE_TOOL
    canvas_update_tool: str = DEFAULT_CANVAS_UPDATE_TOOL
    canvas_close_tool: str = DEFAULT_CANVAS_CLOSE_TOOL
    canvas_folder: str = DEFAULT_CANVAS_FOLDER
    #: Where the daemon writes its metrics each pass (Prometheus text, for node_exporter's
    #: textfile collector); None: no file (``wsd metrics`` prints them whatever this says).
    metrics_file: str | None = None
    #: Continuous replication of both databases with litestream (daemon/replica/); None: off.
    replica_url: str | None = None
    replica_endpoint: str | None = None
    replica_region: str | None = None
    replica_access_key_id: str | None = field(default=None, repr=False)
    replica_secret_access_key: str | None = field(default=None, repr=False)
    replica_sftp_key_path: str | None = None
    replica_sftp_host_key: str | None = None
    replica_sync_seconds: float = DEFAULT_REPLICA_SYNC_SECONDS
    replica_retention_hours: float = DEFAULT_REPLICA_RETENTION_HOURS
    replica_max_lag_seconds: float = DEFAULT_REPLICA_MAX_LAG_SECONDS
    #: A backlog's Message Batch grows its shared prefix over the model's caching floor when
    #: that pays (daemon/curation/caching.py); false sends every request plain.
    cache_shared_prefix: bool = True
    #: One memory on many machines (SPEC.md section 11, daemon/machines/): the person's
    #: storage root, this machine's name, its role (home curates, a satellite captures and
    #: reads), and on home the satellites it curates. All None/empty: one machine, as ever.
    home_url: str | None = None
    machine: str | None = None
    role: str | None = None
    machines: tuple[str, ...] = ()
    #: How often a follower (``litestream restore -f``) looks for new changes.
    follow_seconds: float = DEFAULT_FOLLOW_SECONDS

    def section(self, cls: type[S]) -> S:
        """A settings object of dataclass ``cls`` built from this config: each of its fields
        that is a setting of the same name, the rest at ``cls``'s defaults (the one place the
        daemon's settings are copied into a part's own)."""
        mine = {f.name for f in dataclasses.fields(self)}
        wanted = dataclasses.fields(cls)  # type: ignore[arg-type]
        return cls(**{f.name: getattr(self, f.name) for f in wanted if f.name in mine})

    def reported(self) -> dict[str, object]:
        """The settings as the daemon reports them in its heartbeat (``wsd status``): every
        field but the credentials, which never leave the process."""
        hidden = {"api_key", "auth_token", "replica_access_key_id", "replica_secret_access_key"}
        out = {k: v for k, v in self.__dict__.items() if k not in hidden}
        for name in (
            "bridge_url",
            "replica_url",
            "home_url",
        ):  # a URL's user:password stays here too
            url = out.get(name)
            if isinstance(url, str) and "@" in url:
                scheme, _, rest = url.partition("://")
                out[name] = f"{scheme}://" + rest.rpartition("@")[2]
        return out

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Config:
        """Build the config from ``WSD_*`` and ``ANTHROPIC_*`` variables; raise ConfigError."""

        read = _Reader(env)
        number, seconds, days = read.number, read.seconds, read.days
        return cls(
            workspace=env.get("WSD_WORKSPACE") or DEFAULT_WORKSPACE,
            bridge_url=env.get("ANTHROPIC_BASE_URL") or None,
            # The Bridge holds the real key; what lives on the Sprite is a
            # Sprite-scoped token, sent as x-api-key or as a bearer token.
            api_key=env.get("WSD_BRIDGE_TOKEN") or env.get("ANTHROPIC_API_KEY") or None,
            auth_token=env.get("ANTHROPIC_AUTH_TOKEN") or None,
            model=env.get("WSD_MODEL") or DEFAULT_MODEL,
            # Large counts are legitimate ("curate everything at once"): a batch's size
            # is bounded by WSD_BATCH_CHARS whatever this says.
            batch_turns=number("WSD_BATCH_TURNS", DEFAULT_BATCH_TURNS, int, 1, 100_000),
            batch_chars=number("WSD_BATCH_CHARS", DEFAULT_BATCH_CHARS, int, 1000, 2_000_000),
            poll_seconds=seconds("WSD_POLL_SECONDS", DEFAULT_POLL_SECONDS, 3600),
            orphan_seconds=seconds("WSD_ORPHAN_SECONDS", DEFAULT_ORPHAN_SECONDS),
            idle_seconds=seconds("WSD_IDLE_SECONDS", DEFAULT_IDLE_SECONDS),
            quiet_seconds=seconds("WSD_QUIET_SECONDS", DEFAULT_QUIET_SECONDS),
            request_timeout=seconds("WSD_REQUEST_TIMEOUT", DEFAULT_REQUEST_TIMEOUT, 3600),
            max_tokens=number("WSD_MAX_TOKENS", DEFAULT_MAX_TOKENS, int, 1, 128_000),
            retry_attempts=number("WSD_RETRY_ATTEMPTS", DEFAULT_RETRY_ATTEMPTS, int, 1, 100),
            retry_seconds=seconds("WSD_RETRY_SECONDS", DEFAULT_RETRY_SECONDS, DAY),
            outage_backoff=seconds("WSD_OUTAGE_BACKOFF", DEFAULT_OUTAGE_BACKOFF, DAY),
            outage_backoff_max=seconds(
                "WSD_OUTAGE_BACKOFF_MAX", DEFAULT_OUTAGE_BACKOFF_MAX, 7 * DAY
            ),
            heartbeat_seconds=seconds("WSD_HEARTBEAT_SECONDS", DEFAULT_HEARTBEAT_SECONDS, 3600),
            wake_jump_seconds=seconds("WSD_WAKE_JUMP_SECONDS", DEFAULT_WAKE_JUMP_SECONDS, DAY),
            curation=_get(env, "WSD_CURATION", DEFAULT_CURATION, _curation, "economy or prompt"),
            economy_poll_seconds=seconds(
                "WSD_ECONOMY_POLL_SECONDS", DEFAULT_ECONOMY_POLL_SECONDS, DAY
            ),
            economy_poll_max_seconds=seconds(
                "WSD_ECONOMY_POLL_MAX_SECONDS", DEFAULT_ECONOMY_POLL_MAX_SECONDS, DAY
            ),
            economy_price_factor=number(
                "WSD_ECONOMY_PRICE_FACTOR", DEFAULT_ECONOMY_PRICE_FACTOR, float, 0, 1, above=True
            ),
            economy_max_requests=number(
                "WSD_ECONOMY_MAX_REQUESTS", DEFAULT_ECONOMY_MAX_REQUESTS, int, 1, 10_000
            ),
            economy_wait_limit_seconds=seconds(
                "WSD_ECONOMY_WAIT_LIMIT_SECONDS", DEFAULT_ECONOMY_WAIT_LIMIT_SECONDS, 7 * DAY
            ),
            price_input=number("WSD_PRICE_INPUT", DEFAULT_PRICE_INPUT, float, 0, 1000, above=True),
            price_output=number(
                "WSD_PRICE_OUTPUT", DEFAULT_PRICE_OUTPUT, float, 0, 1000, above=True
            ),
            daily_budget_usd=number(
                "WSD_DAILY_BUDGET_USD", DEFAULT_DAILY_BUDGET_USD, float, 0, 1e6, note=OFF
            ),
            max_loss=number("WSD_MAX_LOSS", DEFAULT_MAX_LOSS, float, 0, 1),
            erosion=number("WSD_EROSION", DEFAULT_EROSION, float, 0, 1, note=OFF),
            file_chars=number("WSD_FILE_CHARS", DEFAULT_FILE_CHARS, int, 100, 1_000_000),
            retention_days=days("WSD_RETENTION_DAYS", DEFAULT_RETENTION_DAYS, above=True),
            transcript_retention_days=days("WSD_TRANSCRIPT_RETENTION_DAYS", note=FOR_EVER),
            maintenance_seconds=seconds("WSD_MAINTENANCE_SECONDS", DEFAULT_MAINTENANCE_SECONDS),
            shed_memory_seconds=number(
                "WSD_SHED_MEMORY_SECONDS", DEFAULT_SHED_MEMORY_SECONDS, float, 0, MONTH, note=OFF
            ),
            log_format=_get(env, "WSD_LOG_FORMAT", "auto", _log_format, "auto, json or console"),
            watch=_get(env, "WSD_WATCH", True, _bool, "true or false"),
            semantic=_get(env, "WSD_SEMANTIC", DEFAULT_SEMANTIC, _bool, "true or false"),
            semantic_timeout=seconds("WSD_SEMANTIC_TIMEOUT", DEFAULT_SEMANTIC_TIMEOUT, 60),
            rescan_seconds=seconds("WSD_RESCAN_SECONDS", DEFAULT_RESCAN_SECONDS),
            watch_polling=_get(env, "WSD_WATCH_POLLING", False, _bool, "true or false"),
            watch_poll_ms=number("WSD_WATCH_POLL_MS", DEFAULT_WATCH_POLL_MS, int, 1, 3_600_000),
            check_seconds=seconds("WSD_CHECK_SECONDS", DEFAULT_CHECK_SECONDS),
            unprocessed_seconds=seconds(
                "WSD_UNPROCESSED_SECONDS", DEFAULT_UNPROCESSED_SECONDS, 365 * DAY
            ),
            canvas_create_tool=env.get("WSD_CANVAS_CREATE_TOOL") or DEFAULT_CANVAS_CREATE_TOOL,
            canvas_update_tool=env.get("WSD_CANVAS_UPDATE_TOOL") or DEFAULT_CANVAS_UPDATE_TOOL,
            canvas_close_tool=env.get("WSD_CANVAS_CLOSE_TOOL") or DEFAULT_CANVAS_CLOSE_TOOL,
            canvas_folder=env.get("WSD_CANVAS_FOLDER") or DEFAULT_CANVAS_FOLDER,
            **_operations(env, read),
        )

    def machines_problem(self) -> str | None:
        """What is wrong with the settings of many machines taken together (None: nothing,
        or one machine). Each setting alone is checked by :meth:`from_env`."""
        if not self.home_url:
            stray = [
                n
                for n, v in (("WSD_MACHINE", self.machine), ("WSD_ROLE", self.role))
                if v is not None
            ] + (["WSD_MACHINES"] if self.machines else [])
            if stray:
                return f"{', '.join(stray)} set without WSD_HOME_URL: set it, or unset them"
            return None
        if self.machine is None:
            return "WSD_HOME_URL is set but WSD_MACHINE is not: name this machine"
        if self.role is None:
            return "WSD_HOME_URL is set but WSD_ROLE is not: set it to home or satellite"
        if self.replica_url != f"{self.home_url}/machines/{self.machine}":
            return (
                "WSD_REPLICA_URL and WSD_HOME_URL are both set: with a home, each database's one"
                " replica is under WSD_HOME_URL (machines/NAME/); unset WSD_REPLICA_URL"
            )
        if self.role == "satellite" and self.machines:
            return "WSD_MACHINES is set on a satellite: only home curates other machines"
        if self.machine in self.machines:
            return f"WSD_MACHINES lists this machine ({self.machine}): list the satellites"
        return None

    @property
    def satellite(self) -> bool:
        """This machine captures and reads; home curates (SPEC.md section 11)."""
        return self.role == "satellite" and bool(self.home_url)

    @property
    def home(self) -> bool:
        """This machine is the person's home: it curates itself and the listed satellites."""
        return self.role == "home" and bool(self.home_url)

    def validate_for_run(self) -> None:
        """Checks only ``wsd run`` needs: the machines' settings taken together, where the
        Bridge is and a token to present (a satellite calls no Bridge)."""
        problem = self.machines_problem()
        if problem:
            raise ConfigError(problem)
        if self.satellite:
            return
        if not self.bridge_url:
            raise ConfigError("ANTHROPIC_BASE_URL is not set: the daemon needs the Bridge URL")
        bad_url = bridge_url_problem(self.bridge_url)
        if bad_url:
            raise ConfigError(bad_url, "ANTHROPIC_BASE_URL", "an http(s) URL")
        if not (self.api_key or self.auth_token):
            raise ConfigError(
                "no Bridge token: set WSD_BRIDGE_TOKEN (or ANTHROPIC_API_KEY/ANTHROPIC_AUTH_TOKEN)"
            )


def _operations(env: Mapping[str, str], read: _Reader) -> dict[str, Any]:
    """The operator's settings, by field name: the metrics file, replication, caching."""
    number, seconds = read.number, read.seconds
    out = dict(
        cache_shared_prefix=_get(env, "WSD_CACHE_SHARED_PREFIX", True, _bool, "true or false"),
        metrics_file=_get(env, "WSD_METRICS_FILE", None, _metrics_path, PROM_PATH),
        replica_url=_get(env, "WSD_REPLICA_URL", None, _replica_url, REPLICA_URL),
        replica_endpoint=_get(env, "WSD_REPLICA_ENDPOINT", None, _endpoint, "an http(s) URL"),
        replica_region=env.get("WSD_REPLICA_REGION") or None,
        replica_access_key_id=env.get("WSD_REPLICA_ACCESS_KEY_ID") or None,
        replica_secret_access_key=env.get("WSD_REPLICA_SECRET_ACCESS_KEY") or None,
        replica_sftp_key_path=_get(
            env, "WSD_REPLICA_SFTP_KEY_PATH", None, _absolute, "an absolute path"
        ),
        replica_sftp_host_key=_get(
            env, "WSD_REPLICA_SFTP_HOST_KEY", None, _host_key, "a public key: TYPE BASE64"
        ),
        replica_sync_seconds=number(
            "WSD_REPLICA_SYNC_SECONDS", DEFAULT_REPLICA_SYNC_SECONDS, float, 0.1, 3600
        ),
        replica_retention_hours=number(
            "WSD_REPLICA_RETENTION_HOURS",
            DEFAULT_REPLICA_RETENTION_HOURS,
            float,
            0.01,
            24 * 365,
        ),
        replica_max_lag_seconds=seconds(
            "WSD_REPLICA_MAX_LAG_SECONDS", DEFAULT_REPLICA_MAX_LAG_SECONDS, 7 * DAY
        ),
    )
    out.update(_machines(env, read))
    return out


MACHINE_NAME = "a name of 1-40 lowercase letters, digits and dashes"
_MACHINE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?")


def _machine(raw: str) -> str:
    if not _MACHINE.fullmatch(raw):
        raise ValueError(raw)
    return raw


def _machine_list(raw: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    if not names or len(set(names)) != len(names) or any(not _MACHINE.fullmatch(n) for n in names):
        raise ValueError(raw)
    return names


def _role(raw: str) -> str:
    if raw not in ROLES:
        raise ValueError(raw)
    return raw


ROLES = ("home", "satellite")
_NO_MACHINES: tuple[str, ...] = ()


def _machines(env: Mapping[str, str], read: _Reader) -> dict[str, Any]:
    """The settings of one memory on many machines (SPEC.md section 11). With a home, each
    database's one litestream replica is under WSD_HOME_URL (litestream 0.5 takes one replica
    per database): ``machines/NAME/`` is this machine's, and its backup."""
    home_url = _get(env, "WSD_HOME_URL", None, _replica_url, REPLICA_URL)
    machine = _get(env, "WSD_MACHINE", None, _machine, MACHINE_NAME)
    out: dict[str, Any] = dict(
        home_url=home_url,
        machine=machine,
        role=_get(env, "WSD_ROLE", None, _role, "home or satellite"),
        machines=_get(
            env,
            "WSD_MACHINES",
            _NO_MACHINES,
            _machine_list,
            f"a comma-separated list of {MACHINE_NAME}s",
        ),
        follow_seconds=read.number("WSD_FOLLOW_SECONDS", DEFAULT_FOLLOW_SECONDS, float, 0.1, 3600),
    )
    if home_url and machine and not env.get("WSD_REPLICA_URL", "").strip():
        out["replica_url"] = f"{home_url}/machines/{machine}"
    return out


def bridge_url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as the Bridge's (None: nothing)."""
    if url.startswith(("http://", "https://")):
        return None
    return f"ANTHROPIC_BASE_URL={url!r}: expected an http(s) URL"


PROM_PATH = "an absolute path ending in .prom"


def _metrics_path(raw: str) -> str | None:
    """WSD_METRICS_FILE: an absolute path of a ``.prom`` file (the textfile collector reads
    only those), or empty for none."""
    if not raw:
        return None
    if not os.path.isabs(raw) or not raw.endswith(".prom") or "\0" in raw:
        raise ValueError(raw)
    return os.path.normpath(raw)


REPLICA_URL = "an s3://bucket/path, sftp://user@host/path or file:///absolute/path URL"


def _replica_url(raw: str) -> str | None:
    """WSD_REPLICA_URL: where litestream ships the databases; the scheme is one litestream
    speaks and the daemon has tested (s3, sftp, file), with somewhere after it."""
    scheme, sep, rest = raw.partition("://")
    if not sep or scheme not in ("s3", "sftp", "file") or not rest.strip("/") or "\0" in raw:
        raise ValueError(raw)
    if any(c.isspace() for c in raw):
        raise ValueError(raw)
    if scheme == "file" and not rest.startswith("/"):
        raise ValueError(raw)
    return raw.rstrip("/")


def _endpoint(raw: str) -> str:
    if not raw.startswith(("http://", "https://")) or any(c.isspace() for c in raw):
        raise ValueError(raw)
    return raw


def _host_key(raw: str) -> str:
    """WSD_REPLICA_SFTP_HOST_KEY: the SFTP server's public key as a known_hosts line has it
    (``ssh-ed25519 AAAA...``; a leading host name is dropped)."""
    words = raw.split()
    if words and not words[0].startswith(("ssh-", "ecdsa-", "sk-")):
        words = words[1:]
    if len(words) < 2 or not words[0].startswith(("ssh-", "ecdsa-", "sk-")):
        raise ValueError(raw)
    return " ".join(words[:2])


def _absolute(raw: str) -> str:
    if not os.path.isabs(raw) or "\0" in raw:
        raise ValueError(raw)
    return os.path.normpath(raw)


def _bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)
