"""The operator's settings file, ``.os/settings.env``, read one way by both of its readers:
the deployed program (``wsd run --settings``, before the daemon starts) and ``wsd doctor``.

It used to be sourced by ``/bin/sh``, so a slip in it became a spawn error that nothing
explained (issue 30): ``WSD_DAILY_BUDGET_USD="5`` stopped sh at a syntax error, a line with no
``=`` ran as a command, a link or a FIFO was skipped without a word. Now each problem is
caught here and said with the file, the line and what is wrong.

The syntax is the part of sh's that means the same without a shell, one setting a line::

    # a comment, and blank lines
    NAME=value
    export NAME=value
    NAME='a value with spaces'    # single quotes: every character as written
    NAME="a value with spaces"    # double quotes: \\" \\\\ \\$ \\` escape; no $ or `

Refused, each with its line: a line that is not ``NAME=value``, a space around ``=``, more
than one word (sh would run the second as a command), an unterminated quote (a value ends on
its line), anything sh would expand (``$``, a backquote, ``~``) or read as the end of the
command (``; & | < > ( )``) unless quoted, a control character, bytes that are not UTF-8 (a
byte order mark and Windows line ends are taken as an editor writes them); and
for the whole file, anything but a regular file (a link, a FIFO: not followed, never blocked
on) and more than :data:`MAX_BYTES`. A value the daemon's configuration refuses is named with
its line too. A later line wins over an earlier one, as in sh; ``WSD_WORKSPACE`` is ignored
(the workspace is the one the program was deployed for).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from wsd.daemon.runtime.config import RENAMED, Config, ConfigError, bridge_url_problem
from wsd.daemon.runtime.fsio import UnsafeFile, kind_of, read_regular

#: A settings file is a few lines; anything this large is not one.
MAX_BYTES = 64 * 1024
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPACED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\s+=")
#: Unquoted, these mean something else to sh than the character itself.
_SPECIAL = {
    "$": "an expansion",
    "`": "a command to run",
    "~": "the home folder",
    ";": "the end of the command",
    "&": "the end of the command",
    "|": "a pipe",
    "<": "a redirection",
    ">": "a redirection",
    "(": "a subshell",
    ")": "a subshell",
}
_CONTROL_NAMES = {"\x00": "a NUL byte", "\r": "a carriage return", "\x1b": "an escape (ESC)"}


class SettingsError(ConfigError):
    """The settings file cannot be used: the message names the file, the line (0: the
    file as a whole) and what is wrong."""

    def __init__(self, path: str, line: int, problem: str) -> None:
        where = f"{path} line {line}" if line else path
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


@dataclass(frozen=True)
class Setting:
    """One ``NAME=value`` of the file, with the line it is on."""

    name: str
    value: str
    line: int


def shown(value: str) -> str:
    """A value as it would be written in the file, on one line (JSON escapes when it holds
    what cannot be shown)."""
    return shlex.quote(value) if value.isprintable() else json.dumps(value)


def read(path: str) -> list[Setting]:
    """The settings of the file at ``path`` (none when nothing is there); raises
    :class:`SettingsError` for its first problem, syntax or value."""
    settings, problems = examine(path)
    if problems:
        raise problems[0]
    return settings


def examine(path: str) -> tuple[list[Setting], list[SettingsError]]:
    """The file's settings and every problem found in it, line by line (``wsd doctor``)."""
    data = _read_bytes(path)
    if data is None:
        return [], []
    settings: list[Setting] = []
    problems: list[SettingsError] = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        if raw.endswith(b"\r"):  # a file saved with Windows line ends means the same
            raw = raw[:-1]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(
                SettingsError(
                    path,
                    number,
                    f"not UTF-8 text (the byte 0x{raw[exc.start]:02x} at column"
                    f" {exc.start + 1}): write the value in UTF-8",
                )
            )
            continue
        if number == 1 and text.startswith("\ufeff"):  # a byte order mark some editors write
            text = text[1:]
        try:
            found = _parse_line(text)
        except ValueError as exc:
            problems.append(SettingsError(path, number, str(exc)))
            continue
        if found is not None:
            setting = Setting(found[0], found[1], number)
            refused = value_problem(setting)
            if refused:
                problems.append(SettingsError(path, number, refused))
            settings.append(setting)
    return settings, problems


def environment(path: str, env: Mapping[str, str], workspace: str) -> dict[str, str]:
    """``env`` with the file's settings on top (a value there wins) and ``WSD_WORKSPACE``
    set to ``workspace`` whatever the file says; raises :class:`SettingsError`."""
    merged = dict(env)
    merged.update((s.name, s.value) for s in read(path))
    merged["WSD_WORKSPACE"] = workspace
    return merged


def value_problem(setting: Setting) -> str | None:
    """What the daemon's configuration says against this value (None: it takes it)."""
    try:
        Config.from_env({setting.name: setting.value})
    except ConfigError as exc:
        if exc.name is None:  # pragma: no cover - from_env names every variable it refuses
            return str(exc)
        return f"{exc.name}={shown(setting.value)}: expected {exc.expected}"
    url = setting.name == "ANTHROPIC_BASE_URL" and setting.value
    if url and bridge_url_problem(url):
        return f"ANTHROPIC_BASE_URL={shown(url)}: expected an http(s) URL"
    return None


def ignored(settings: list[Setting]) -> Iterator[tuple[Setting, str]]:
    """The file's WSD_* settings the daemon does not take, each with why (a typo, mostly),
    and those it takes by an old name."""
    known = known_names()
    for setting in settings:
        if setting.name == "WSD_WORKSPACE":
            yield setting, "ignored here: the daemon's workspace is the one it was deployed for"
        elif setting.name in RENAMED:
            yield setting, f"now {RENAMED[setting.name]} (the old name is still read; rename it)"
        elif setting.name.startswith("WSD_") and setting.name not in known:
            yield setting, "not a setting of the daemon (a typo? README: Settings)"


class _Recorder(Mapping[str, str]):
    """An empty environment that remembers every name looked up in it."""

    def __init__(self) -> None:
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def known_names() -> set[str]:
    """Every variable the daemon's configuration reads (asked of it, not listed by hand)."""
    recorder = _Recorder()
    Config.from_env(recorder)
    return recorder.asked


def _read_bytes(path: str) -> bytes | None:
    """The file's bytes; None when nothing is there. Never follows a link, never blocks on
    a FIFO."""
    try:
        return read_regular(path, MAX_BYTES)
    except FileNotFoundError:
        return None
    except UnsafeFile:
        try:
            found = os.lstat(path)
        except FileNotFoundError:  # gone meanwhile
            return None
        if stat.S_ISREG(found.st_mode):
            raise SettingsError(
                path,
                0,
                f"{found.st_size:,} bytes, more than a settings file holds"
                f" ({MAX_BYTES:,} at most): is it the right file?",
            ) from None
        raise SettingsError(
            path,
            0,
            f"is {kind_of(found.st_mode)}, not a regular file: the daemon reads only a regular"
            " file here (replace it with the file itself)",
        ) from None
    except OSError as exc:
        raise SettingsError(path, 0, f"cannot be read: {exc.strerror or exc}") from None


def _parse_line(text: str) -> tuple[str, str] | None:
    """(name, value) of one line; None for a comment or a blank line; ValueError: why not."""
    body = text.lstrip(" \t")
    if not body or body.startswith("#"):
        return None
    for char in body:
        if char != "\t" and (char < " " or "\x7f" <= char <= "\x9f"):
            name = _CONTROL_NAMES.get(char, f"the control character U+{ord(char):04X}")
            raise ValueError(f"{name}: a settings line holds printable text only")
    if body.startswith("export") and body[6:7] in (" ", "\t"):
        body = body[6:].lstrip(" \t")
    match = _NAME.match(body)
    if match is None or body[match.end() : match.end() + 1] != "=":
        if _SPACED.match(body):
            raise ValueError("a space around =: write NAME=value, with no spaces")
        if "=" not in body:
            raise ValueError("not a NAME=value line (a comment starts with #)")
        raise ValueError(
            "not a NAME=value line: a name is letters, digits and _, and does not start"
            " with a digit"
        )
    name = match.group()
    rest = body[match.end() + 1 :]
    if rest[:1] in (" ", "\t") and rest.strip(" \t") and not rest.lstrip(" \t").startswith("#"):
        raise ValueError(f"{name}: a space after =: write NAME=value, with no spaces")
    return name, _value(name, rest)


def _value(name: str, rest: str) -> str:
    """The value of ``NAME=rest`` as sh would assign it, or ValueError."""
    out: list[str] = []
    i, end = 0, len(rest)
    while i < end:
        char = rest[i]
        if char in " \t":  # the word ends: a comment may follow, nothing else
            tail = rest[i:].lstrip(" \t")
            if tail and not tail.startswith("#"):
                raise ValueError(
                    f"{name}: more than one word after = (sh would run the next as a command):"
                    " quote a value with spaces"
                )
            break
        if char == "'":
            close = rest.find("'", i + 1)
            if close < 0:
                raise ValueError(
                    f"{name}: unterminated single quote (a value must end on its own line)"
                )
            out.append(rest[i + 1 : close])
            i = close + 1
        elif char == '"':
            i = _double_quoted(name, rest, i + 1, out)
        elif char == "\\":
            if i + 1 >= end:
                raise ValueError(f"{name}: a \\ ends the line (a value must end on its own line)")
            out.append(rest[i + 1])
            i += 2
        elif char in _SPECIAL:
            raise ValueError(
                f"{name}: an unquoted {char}, which sh reads as {_SPECIAL[char]}: put the value"
                " in single quotes"
            )
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _double_quoted(name: str, rest: str, i: int, out: list[str]) -> int:
    """Read a double-quoted part of a value from ``rest[i]`` into ``out``; the index after
    its closing quote."""
    while i < len(rest):
        char = rest[i]
        if char == '"':
            return i + 1
        if char == "\\" and rest[i + 1 : i + 2] in ("$", "`", '"', "\\"):
            out.append(rest[i + 1])
            i += 2
            continue
        if char in "$`":
            raise ValueError(
                f"{name}: a {char} inside double quotes, which sh reads as {_SPECIAL[char]}:"
                " put the value in single quotes"
            )
        out.append(char)
        i += 1
    raise ValueError(f"{name}: unterminated double quote (a value must end on its own line)")
