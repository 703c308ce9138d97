"""A deterministic, rule-based curator for the demo and the tests.

It answers a curator request the way Haiku would, in the real response format,
from simple rules over the turns it is sent: a stated preference becomes a
PREFERENCE and a line in user.md, a correction a CORRECTION, a package install
a TOOL_INSTALL and a line in tools.md, a written file a FACT, a reminder an
ACTION, and the latest request the active task in context.md. Same input, same
output: rebuilding memory twice with it gives the same learnings.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from wsd.daemon.memory.files_md import split as split_files_md

_TURN = re.compile(r'<turn id="(\d+)"[^>]*>(.*?)</turn>', re.S)
_USER = re.compile(r"<user>(.*?)</user>", re.S)
_TOOL = re.compile(r'<tool name="([^"]*)"><input>(.*?)</input>', re.S)
_FILE = re.compile(r'<file name="([a-z]+\.md)"[^>]*>\n(.*?)\n</file>', re.S)

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
_INSTALL = re.compile(
    r"\b(pip3? install|python -m pip install|apt(?:-get)? install|npm install|"
    r"brew install|cargo install|uv pip install)\s+(?:-[-\w=]+\s+)*([\w.\-\[\]=<>@/]+)",
    re.I,
)


def _turns(text: str) -> list[tuple[int, str, list[tuple[str, Any]]]]:
    out = []
    for tid, body in _TURN.findall(text):
        user_match = _USER.search(body)
        user = html.unescape(user_match.group(1)) if user_match else ""
        tools: list[tuple[str, Any]] = []
        for name, raw in _TOOL.findall(body):
            tools.append((html.unescape(name), _fields(html.unescape(raw))))
        out.append((int(tid), user, tools))
    return out


def _fields(raw: str) -> dict[str, Any] | str:
    """A rendered tool input (``key=value; key=value``, or JSON) back into a dict."""
    try:
        value = json.loads(raw)
        return value if isinstance(value, dict) else raw
    except ValueError:
        pass
    out: dict[str, Any] = {}
    for part in raw.split("; "):
        key, sep, value = part.partition("=")
        if not sep:
            return raw
        out[key.strip()] = value
    return out


def _files(text: str) -> dict[str, list[str]]:
    return {
        name: [line for line in html.unescape(body).splitlines() if line.strip()]
        for name, body in _FILE.findall(text)
    }


def _sentence(fragment: str) -> str:
    fragment = re.sub(r"\s+", " ", fragment).strip(" ,;:-")
    return fragment[:1].upper() + fragment[1:] if fragment else ""


def curate(request_text: str) -> str:
    """The reply text for one curator request (the user content of the call)."""
    files = _files(request_text)
    lines: list[str] = []
    user_md = files.get("user.md") or ["# User"]
    tools_md = files.get("tools.md") or ["# Tools"]
    context_md = files.get("context.md") or ["# Context"]
    notes = split_files_md("\n".join(files.get("files.md", [])))[0]
    files_md = notes.splitlines() or ["# Files"]  # the notes part: the inventory is not ours
    changed: set[str] = set()
    last_request = ""

    def add(md: list[str], line: str, name: str) -> None:
        if line not in md:
            md.append(line)
            changed.add(name)

    for tid, user, tools in _turns(request_text):
        if user:
            last_request = user
        for match in _PREFERENCE.finditer(user):
            pref = _sentence(match.group(1))
            if pref:
                lines.append(
                    f"PREFERENCE: The user prefers {pref[0].lower() + pref[1:]} [turn {tid}]"
                )
                add(user_md, f"- Prefers {pref[0].lower() + pref[1:]}", "user.md")
        for match in _CORRECTION.finditer(user):
            fix = _sentence(match.group(1))
            if fix:
                lines.append(f"CORRECTION: {fix} [turn {tid}]")
                add(user_md, f"- Correction: {fix}", "user.md")
        for match in _REMIND.finditer(user):
            lines.append(f"ACTION: [normal] {_sentence(match.group(1))}")
        for name, inp in tools:
            data = inp if isinstance(inp, dict) else {}
            command = str(data.get("command", "")) if name == "Bash" else ""
            for tool, package in _INSTALL.findall(command):
                lines.append(
                    f"TOOL_INSTALL: {package} installed with `{tool} {package}` [turn {tid}]"
                )
                add(tools_md, f"- {package}: installed (`{tool} {package}`)", "tools.md")
            path = data.get("file_path") or data.get("path")
            if name in ("Write", "Edit", "MultiEdit") and isinstance(path, str):
                lines.append(f"FACT: The agent wrote {path} [turn {tid}]")
                add(files_md, f"- {path}: written by the agent", "files.md")
    if last_request:
        task = _sentence(last_request.splitlines()[0])[:160]
        header = context_md[:1] if context_md and context_md[0].startswith("#") else ["# Context"]
        new_context = [*header, f"- Latest request: {task}"]
        if new_context != context_md:
            context_md[:] = new_context
            changed.add("context.md")
    for name, md in (
        ("user.md", user_md),
        ("tools.md", tools_md),
        ("context.md", context_md),
        ("files.md", files_md),
    ):
        if name in changed:
            lines.append(f"{name[:-3].upper()}_MD_UPDATE:")
            lines.extend(md[-150:])
    return "\n".join(lines) if lines else "NONE"


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
