"""A deterministic, rule-based curator for the demo and the tests.

It answers a curator request the way Haiku would, in the real response format,
from simple rules over the turns it is sent: a stated preference becomes a
PREFERENCE and a line added to user.md, a correction a CORRECTION, a package
install a TOOL_INSTALL and a line in tools.md, a written file a FACT, a reminder
an ACTION, "forget X" a FORGET, and the latest request replaces the active task in
context.md. md
files are changed with line-addressed edits (``user.md +$: ...``, ``context.md
~2: ...``) against the numbered lines of the request, as the real curator is
asked to. Same input, same output: rebuilding memory twice with it gives the
same learnings.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

_TURN = re.compile(r"^\[turn (\d+) [^\]]*\]$", re.M)
_USER = re.compile(r"^user: (.*)$", re.M)
_TOOL = re.compile(r"^tool ([^:]*): (.*?)(?: → .*)?$", re.M)
_FILE = re.compile(r'<file name="([a-z]+\.md)"[^>]*>\n(.*?)</file>', re.S)
_NUMBERED = re.compile(r"^(\d+)\| (.*)$")
_NAMED = re.compile(r"^(\w+)=")

# A sentence ends at "." or "!" followed by a space or the end, or at a line break: a dot
# inside "report.pdf" or "v2.1" is not an end (it cut "reports in report.pdf" short).
_END = r"(?:[.!](?=\s|$)|\n|$)"

_PREFERENCE = re.compile(
    r"\b(?:i (?:always |really )?(?:prefer|like|want|need)|please always|always use|"
    r"from now on|i'd rather)\b(.{3,200}?)" + _END,
    re.I,
)
_CORRECTION = re.compile(
    r"\b(?:no[,.]|not quite|that'?s (?:wrong|not right)|actually[,]?|wrong[,.])\s*(.{3,200}?)"
    + _END,
    re.I,
)
_REMIND = re.compile(
    r"\b(?:remind me to|don't forget to|todo:|follow up on)\s+(.{3,200}?)" + _END,
    re.I,
)
#: An abbreviation's or an initial's dot ends no sentence: "forget Dr. Okafor" names Dr.
#: Okafor, not "Dr" (issue 44: the stand-in's cut erased every "Dr" of five turns).
_NOT_AN_END = (
    "".join(
        f"(?<!\\b{a})"
        for a in (
            "Dr",
            "Mr",
            "Mrs",
            "Ms",
            "Prof",
            "St",
            "Jr",
            "Sr",
            "Mt",
            "vs",
            "No",
            "e\\.g",
            "i\\.e",
        )
    )
    + "(?<!\\b[A-Z])"
)
#: "Please forget Lincoln Elementary." (not "don't forget to ...": a reminder).
_FORGET = re.compile(
    r"(?:^|[.!?]\s+|please\s+)forget\s+(?:about\s+)?(?!to\b)(.{2,200}?)"
    + rf"(?:{_NOT_AN_END}[.!](?=\s|$)|\n|$)",
    re.I | re.M,
)
_INSTALL = re.compile(
    r"\b(pip3? install|python -m pip install|apt(?:-get)? install|npm install|"
    r"brew install|cargo install|uv pip install)\s+(?:-[-\w=]+\s+)*([\w.\-\[\]=<>@/]+)",
    re.I,
)


def _turns(text: str) -> list[tuple[int, str, list[tuple[str, Any]]]]:
    start, end = text.find("<turns"), text.rfind("</turns>")
    body = text[start:end] if start >= 0 else ""
    heads = list(_TURN.finditer(body))
    out = []
    for i, head in enumerate(heads):
        part = body[head.end() : heads[i + 1].start() if i + 1 < len(heads) else len(body)]
        user_match = _USER.search(part)
        user = html.unescape(user_match.group(1)) if user_match else ""
        tools: list[tuple[str, Any]] = []
        for name, raw in _TOOL.findall(part):
            tools.append((html.unescape(name), _fields(html.unescape(raw))))
        out.append((int(head.group(1)), user, tools))
    return out


def _fields(raw: str) -> dict[str, Any] | str:
    """A rendered tool input back into a dict: its first field is shown bare (the command,
    the path: key ``""``), the others as ``key=value``, all joined by ``; ``; or JSON."""
    try:
        value = json.loads(raw)
        return value if isinstance(value, dict) else raw
    except ValueError:
        pass
    out: dict[str, Any] = {}
    key = ""
    for part in raw.split("; "):
        named = _NAMED.match(part)
        if named:
            key = named.group(1)
            out[key] = part[named.end() :]
        else:  # the bare first field, or a "; " inside a field's value
            out[key] = f"{out[key]}; {part}" if key in out else part
    return out


def _files(text: str) -> dict[str, list[str]]:
    """Each file of the request as its lines (numbered 1.. in the request)."""
    out: dict[str, list[str]] = {}
    for name, body in _FILE.findall(text):
        lines = []
        for raw in body.splitlines():
            numbered = _NUMBERED.match(raw)
            if numbered:
                lines.append(html.unescape(numbered.group(2)))
        out[name] = lines
    return out


def _sentence(fragment: str) -> str:
    fragment = re.sub(r"\s+", " ", fragment).strip(" ,;:-")
    return fragment[:1].upper() + fragment[1:] if fragment else ""


class _File:
    """One md file of the request and the edits the rules make to it."""

    def __init__(self, name: str, lines: list[str], header: str) -> None:
        self.name, self.lines, self.header = name, lines, header
        self.edits: list[str] = []

    def add(self, line: str) -> None:
        if line in self.lines:
            return
        if not self.lines and not self.edits:
            self.edits.append(f"{self.name} +0: {self.header}")
        self.edits.append(f"{self.name} +$: {line}")
        self.lines.append(line)

    def set_line(self, prefix: str, line: str) -> None:
        """Replace the line starting with ``prefix`` (or add it)."""
        for n, old in enumerate(self.lines, start=1):
            if old.startswith(prefix):
                if old != line:
                    self.edits.append(f"{self.name} ~{n}: {line}")
                    self.lines[n - 1] = line
                return
        self.add(line)


def curate(request_text: str) -> str:
    """The reply text for one curator request (the user content of the call)."""
    given = _files(request_text)
    files = {
        name: _File(name, given.get(name, []), header)
        for name, header in (
            ("user.md", "# User"),
            ("tools.md", "# Tools"),
            ("context.md", "# Context"),
            ("files.md", "# Files"),
        )
    }
    lines: list[str] = []
    last_request = ""
    for tid, user, tools in _turns(request_text):
        if user:
            last_request = user
        for match in _PREFERENCE.finditer(user):
            pref = _sentence(match.group(1))
            if pref:
                pref = pref[0].lower() + pref[1:]
                lines.append(f"PREFERENCE: The user prefers {pref} [turn {tid}]")
                files["user.md"].add(f"- Prefers {pref}")
        for match in _CORRECTION.finditer(user):
            fix = _sentence(match.group(1))
            if fix:
                lines.append(f"CORRECTION: {fix} [turn {tid}]")
                files["user.md"].add(f"- Correction: {fix}")
        for match in _REMIND.finditer(user):
            lines.append(f"ACTION: [normal] {_sentence(match.group(1))}")
        for match in _FORGET.finditer(user):
            lines.append(f"FORGET: {match.group(1).strip()} [turn {tid}]")
        for name, inp in tools:
            data = inp if isinstance(inp, dict) else {}
            command = str(data.get("command", data.get("", ""))) if name == "Bash" else ""
            for tool, package in _INSTALL.findall(command):
                lines.append(
                    f"TOOL_INSTALL: {package} installed with `{tool} {package}` [turn {tid}]"
                )
                files["tools.md"].add(f"- {package}: installed (`{tool} {package}`)")
            path = data.get("file_path") or data.get("path") or data.get("")
            if name in ("Write", "Edit", "MultiEdit") and isinstance(path, str):
                lines.append(f"FACT: The agent wrote {path} [turn {tid}]")
                files["files.md"].add(f"- {path}: written by the agent")
    if last_request:
        task = _sentence(last_request.splitlines()[0])[:160]
        files["context.md"].set_line("- Latest request:", f"- Latest request: {task}")
    lines = _once(lines)  # a fact stated in several turns is one learning
    for md in files.values():
        lines += md.edits
    return "\n".join(lines) if lines else "NONE"


def _once(lines: list[str]) -> list[str]:
    """The lines without a repeat of an earlier one's text (its [turn N] aside)."""
    seen: set[str] = set()
    out = []
    for line in lines:
        text = re.sub(r" \[turn \d+\]$", "", line)
        if text not in seen:
            seen.add(text)
            out.append(line)
    return out


def responder_text(body: dict[str, Any]) -> str:
    """Extract the curator request text from a Messages API body and curate it."""
    parts: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(b.get("text", "") for b in content if isinstance(b, dict))
    return curate("\n".join(parts))


def responder(body: dict[str, Any]) -> Any:
    """A :class:`wsd.daemon.standin.bridge.BridgeStandin` responder using these rules."""
    from wsd.daemon.standin.bridge import Reply

    return Reply.text(responder_text(body))
