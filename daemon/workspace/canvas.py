"""Canvas cards mirrored into workspace files, from the agent's canvas tool calls.

The agent's canvas tools are seen as PostToolUse events in transcript.db.
:meth:`CanvasSync.sync` reads the events after its cursor and mirrors each
card's blocks, as markdown, into one workspace file: the path the card names,
else ``artifacts/canvas/<slug>.md``. The card <-> file map lives in memory.db.

Never clobber: a file that changed since the last sync is left alone and the
card's version is written beside it as a conflict copy, with a pending action.
A closed card leaves its file in place. The daemon never touches the canvas.

Confinement: every path is checked by :func:`confine` (relative, no ``..``, no
hidden component such as ``.os/`` or ``.git/``, a text suffix) and resolved by
:func:`resolve` (no symlink may lead outside the workspace or into a hidden
folder, the file itself may not be a symlink). A refused path is logged, turned
into a pending action, and the card goes to its default path instead.

Captured tool inputs went through hygiene first: every field is cut to 2,000
characters (head and tail kept around ``…[truncated N chars]…``), secrets are
redacted. A long card is therefore mirrored as captured, and the file says so
in a closing comment; the canvas keeps the full card.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from wsd.daemon.runtime.config import (
    DEFAULT_CANVAS_CLOSE_TOOL,
    DEFAULT_CANVAS_CREATE_TOOL,
    DEFAULT_CANVAS_FOLDER,
    DEFAULT_CANVAS_UPDATE_TOOL,
)
from wsd.daemon.runtime.fsio import UnsafeFile, atomic_write, read_regular
from wsd.daemon.runtime.log import get_logger
from wsd.daemon.store import ActionRequest, Card, Store, ToolEvent

TEXT_SUFFIXES = (".md", ".markdown", ".txt")
#: A mirror larger than this is not read: it cannot hold a card's text, so it was edited.
CARD_MAX_BYTES = 4 * 1024 * 1024
SLUG_BYTES = 80
TRUNCATION_NOTE = (
    "<!-- wsd: this card was mirrored from a truncated capture (tool inputs are cut to"
    " 2,000 characters per field before they are stored); the canvas card holds the full"
    " text. -->"
)
CONFLICT_MARK = "<!-- wsd: canvas conflict copy"
_TRUNCATED = re.compile(r"…\[truncated \d+ chars\]…|^\[… \d+ more items\]$|^…$")
_ID_IN_TEXT = re.compile(r"card[_ ]?id[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9_.:-]{1,200})", re.I)


@dataclass(frozen=True)
class CanvasTools:
    """Which tool names are canvas calls, and where unnamed cards go (configurable)."""

    canvas_create_tool: str = DEFAULT_CANVAS_CREATE_TOOL
    canvas_update_tool: str = DEFAULT_CANVAS_UPDATE_TOOL
    canvas_close_tool: str = DEFAULT_CANVAS_CLOSE_TOOL
    canvas_folder: str = DEFAULT_CANVAS_FOLDER

    def names(self) -> tuple[str, str, str]:
        return (self.canvas_create_tool, self.canvas_update_tool, self.canvas_close_tool)


class Refused(ValueError):
    """A path the daemon will not write; the message says why."""


def confine(rel: object) -> str:
    """Normalise a card's path, or raise Refused: relative, no ``..``, nothing hidden.

    A name without a text suffix gets ``.md`` (a card never becomes a script).
    """
    if not isinstance(rel, str) or not rel.strip():
        raise Refused("empty path")
    if any(not c.isprintable() for c in rel):
        raise Refused("control characters in path")
    if rel.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", rel):
        raise Refused("absolute path")
    if "\\" in rel:
        raise Refused("backslash in path")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Refused("'..' in path")
    if not parts:
        raise Refused("empty path")
    if parts[0] == ".os":
        raise Refused("inside .os/")
    if any(p.startswith(".") for p in parts):
        raise Refused("hidden folder or file")
    if not parts[-1].lower().endswith(TEXT_SUFFIXES):
        parts[-1] += ".md"
    if any(len(p.encode("utf-8")) > 255 for p in parts) or len(rel.encode("utf-8")) > 1024:
        raise Refused("path too long")
    return "/".join(parts)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def resolve(root: str, rel: str) -> str:
    """Absolute path of confined ``rel`` under ``root``; Refused if a symlink leads astray."""
    base = os.path.realpath(root)
    target = os.path.join(base, *rel.split("/"))
    parent = os.path.realpath(os.path.dirname(target))
    if not _inside(parent, base):
        raise Refused("a symlink leads outside the workspace")
    inner = os.path.relpath(parent, base)
    if inner != "." and any(p.startswith(".") for p in inner.split(os.sep)):
        raise Refused("a symlink leads into a hidden folder")
    if os.path.islink(target):
        raise Refused("the file is a symlink")
    return os.path.join(parent, os.path.basename(target))


def slug(title: str, card_id: str) -> str:
    """A file-name-safe slug of ``title`` (unicode letters kept), never empty."""
    text = unicodedata.normalize("NFKC", title).casefold()
    out = re.sub(r"[\W_]+", "-", text).strip("-")
    while len(out.encode("utf-8")) > SLUG_BYTES:
        out = out[:-1].rstrip("-")
    return out or "card-" + hashlib.sha256(card_id.encode("utf-8")).hexdigest()[:10]


def conflict_path(rel: str, card_id: str) -> str:
    """Where a card's version goes when its file was edited by hand (beside the file)."""
    folder, name = os.path.split(rel)
    stem = name.rsplit(".", 1)[0]
    tag = hashlib.sha256(card_id.encode("utf-8")).hexdigest()[:8]
    return os.path.join(folder, f"{stem}.conflict-{tag}.md").replace(os.sep, "/")


def card_markdown(blocks: object) -> tuple[str, bool]:
    """(markdown of a card's blocks, whether the capture was truncated)."""
    if isinstance(blocks, str):
        try:
            blocks = json.loads(blocks)
        except ValueError:
            blocks = [{"type": "text", "content": blocks}]
    parts: list[str] = []
    truncated = False
    for block in blocks if isinstance(blocks, list) else []:
        content = block.get("content", block.get("text")) if isinstance(block, dict) else block
        if content is None:
            continue
        if not isinstance(content, str):
            content = "```json\n" + json.dumps(content, ensure_ascii=False, indent=1) + "\n```"
        truncated = truncated or bool(_TRUNCATED.search(content))
        if content.strip() and not (_TRUNCATED.fullmatch(content.strip())):
            parts.append(content.strip("\n"))
    text = "\n\n".join(parts)
    if truncated:
        text = f"{text}\n\n{TRUNCATION_NOTE}" if text else TRUNCATION_NOTE
    return (text + "\n" if text else ""), truncated


def find_card_id(response: object) -> str | None:
    """The card id in a tool response: a field, JSON inside text, or MCP ``content`` items."""
    for keys in (("card_id", "cardId"), ("id",)):
        found = _find(response, keys, 0)
        if found:
            return found
    return None


def _find(value: object, keys: tuple[str, ...], depth: int) -> str | None:
    if depth > 8:
        return None
    if isinstance(value, dict):
        for key in keys:
            v = value.get(key)
            if isinstance(v, str | int) and not isinstance(v, bool) and str(v).strip():
                return _clean_id(str(v))
        children: list[Any] = [v for k, v in value.items() if k != "blocks"]
    elif isinstance(value, list):
        children = value
    elif isinstance(value, str):
        text = value.strip()
        if text[:1] in "{[":
            try:
                return _find(json.loads(text), keys, depth + 1)
            except ValueError:
                pass
        match = _ID_IN_TEXT.search(text) if "id" not in keys else None
        return _clean_id(match.group(1)) if match else None
    else:
        return None
    for child in children:
        found = _find(child, keys, depth + 1)
        if found:
            return found
    return None


def _clean_id(raw: str) -> str | None:
    out = "".join(c for c in raw.strip() if c.isprintable())[:200]
    return out or None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha(path: str, root: str) -> str | None:
    """sha256 of the regular file at ``path`` (None if missing); anything else (a FIFO, a
    device, a link, a folder, a huge file) raises UnsafeFile: never blocks, never spins."""
    try:
        return _sha(read_regular(path, CARD_MAX_BYTES, root))
    except FileNotFoundError:
        return None


def shown_title(title: str | None) -> str:
    """A card's title as an action shows it: printable, at most 80 characters, "…" where cut."""
    return clipped("".join(c for c in (title or "") if c.isprintable()).strip(), 80) or "(untitled)"


def clipped(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters; a cut one ends in "…", so it never reads as the
    whole name (a person would look for that title or path as it stands)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class CanvasSync:
    """Mirrors canvas tool events into files; one instance per daemon (single thread)."""

    def __init__(
        self,
        root: str,
        store: Store,
        tools: CanvasTools | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)  # resolve() answers under it
        self.store = store
        self.tools = tools or CanvasTools()
        self.clock = clock
        self.log = get_logger(component="canvas")

    def sync(self, limit: int = 200) -> list[str]:
        """Handle every new canvas event; returns the workspace paths written.

        One bad event is logged and skipped (the cursor moves past it), so it
        can never wedge the mirror.
        """
        known, last = self.store.workspace.canvas_cursor()
        identity, events, upto = self.store.workspace.tool_events(last, self.tools.names(), limit)
        if identity != known and last:  # transcript.db was replaced: its ids restarted
            identity, events, upto = self.store.workspace.tool_events(0, self.tools.names(), limit)
        written: list[str] = []
        while True:
            for event in events:
                try:
                    written += self.handle(event, cursor=(identity, event.id))
                except Exception as exc:
                    self.log.error("canvas_event_failed", event_id=event.id, error=repr(exc)[:300])
            if (identity, upto) != (known, last):
                self.store.workspace.set_canvas_cursor(identity, upto, self.clock())
                known, last = identity, upto
            if len(events) < limit:
                return written
            identity, events, upto = self.store.workspace.tool_events(
                upto, self.tools.names(), limit
            )

    def handle(self, event: ToolEvent, cursor: tuple[str, int] | None = None) -> list[str]:
        """Apply one canvas event; returns the paths written."""
        try:
            payload = json.loads(event.payload)
        except ValueError:
            payload = {}
        inp = payload.get("tool_input") if isinstance(payload, dict) else None
        inp = inp if isinstance(inp, dict) else {}
        response = payload.get("tool_response") if isinstance(payload, dict) else None
        now = self.clock()
        given = _clean_id(str(inp["card_id"])) if inp.get("card_id") else None
        if event.tool_name == self.tools.canvas_create_tool:  # the id comes back in the response
            card_id = find_card_id(response) or given
        else:
            card_id = given or find_card_id(response)
        if card_id is None:
            card_id = f"unidentified-{event.id}"
            self.log.warning("canvas_card_id_missing", event_id=event.id, tool=event.tool_name)
        card = self.store.workspace.card(card_id)
        if event.tool_name == self.tools.canvas_close_tool:
            if card is not None and card.status != "closed":
                self.store.workspace.save_card(replace(card, status="closed"), now, cursor)
            return []
        title = inp.get("title") if isinstance(inp.get("title"), str) else None
        has_blocks = "blocks" in inp
        text, truncated = card_markdown(inp.get("blocks")) if has_blocks else ("", False)
        if card is None:
            kind = inp.get("card_type")
            path = self._place(card_id, title or "", inp.get("path"), event.ts, text)
            if path is None:
                return []
            card = Card(card_id, title, kind if isinstance(kind, str) else None, path, "open",
                        None, None)  # fmt: skip
        elif title is not None:
            card = replace(card, title=title)
        if not has_blocks:  # a title-only update: the file does not change
            self.store.workspace.save_card(card, now, cursor)
            return []
        if truncated:
            self.log.info("canvas_card_truncated", card_id=card_id, path=card.path)
        return self._mirror(card, text, now, cursor)

    def _place(self, card_id: str, title: str, named: object, ts: float, text: str) -> str | None:
        """The path a new card mirrors to; a refused named path falls back to the default.

        A default path is never one another card maps or a file already holds,
        unless that file holds exactly this card's text (a replay after memory.db
        was rebuilt adopts its own earlier mirror instead of making a copy).
        """
        taken = self.store.workspace.card_paths()
        if named is not None:
            try:
                rel = confine(named)
                resolve(self.root, rel)
                if rel in taken:
                    raise Refused(f"already mirrors card {taken[rel]}")
                return rel
            except Refused as why:
                self._refused(card_id, title, named, str(why), ts)
        base = f"{self.tools.canvas_folder.strip('/')}/{slug(title, card_id)}"
        want = _sha(text.encode("utf-8"))
        for n in range(1, 1000):
            rel = f"{base}.md" if n == 1 else f"{base}-{n}.md"
            try:
                full = resolve(self.root, confine(rel))
            except Refused as why:
                self._refused(card_id, title, rel, str(why), ts)
                return None
            if rel in taken:
                continue
            if not os.path.lexists(full) or self._holds(full, want):
                return rel
        return None

    def _holds(self, full: str, want: str) -> bool:
        """Whether the regular file at ``full`` holds exactly the text hashed to ``want``."""
        try:
            return _file_sha(full, self.real_root) == want
        except UnsafeFile:
            return False

    def _refused(self, card_id: str, title: str, path: object, why: str, ts: float) -> None:
        shown = clipped(repr(path), 120)
        self.log.warning("canvas_path_refused", card_id=card_id, path=shown, reason=why)
        content = (
            f"Canvas card “{shown_title(title)}” asked to be saved at {shown}, which the daemon"
            f" refused ({why}); it is mirrored under {self.tools.canvas_folder}/ instead."
        )
        req = ActionRequest(f"canvas_refused:{card_id}", content, 1, ts)
        self.store.workspace.raise_actions([req], "canvas", self.clock())

    def _mirror(
        self, card: Card, text: str, now: float, cursor: tuple[str, int] | None
    ) -> list[str]:
        """Write ``text`` to the card's file unless that would lose a hand edit."""
        data = text.encode("utf-8")
        new_sha = _sha(data)
        try:
            full = resolve(self.root, confine(card.path))
        except Refused as why:
            self._refused(card.card_id, card.title or "", card.path, str(why), now)
            self.store.workspace.save_card(card, now, cursor)
            return []
        try:
            current = _file_sha(full, self.real_root)
        except UnsafeFile as why:  # a FIFO, a device, a huge file: neither read nor replaced
            self._refused(card.card_id, card.title or "", card.path, str(why), now)
            self.store.workspace.save_card(card, now, cursor)
            return []
        if current == new_sha or current is None or current == card.last_synced_sha256:
            written = [] if current == new_sha else [card.path]
            if written:
                os.makedirs(os.path.dirname(full), exist_ok=True)
                resolve(self.root, card.path)  # re-check: nothing swapped in meanwhile
                atomic_write(full, text, mode=0o644, root=self.real_root)
            synced = replace(card, last_synced_sha256=new_sha, last_synced_at=now)
            self.store.workspace.save_card(synced, now, cursor)
            return written
        return self._conflict(card, text, now, cursor)

    def _conflict(
        self, card: Card, text: str, now: float, cursor: tuple[str, int] | None
    ) -> list[str]:
        rel = conflict_path(card.path, card.card_id)
        full = resolve(self.root, confine(rel))
        try:
            ours = read_regular(full, CARD_MAX_BYTES, self.real_root).startswith(
                CONFLICT_MARK.encode()
            )
        except FileNotFoundError:
            ours = True
        except UnsafeFile:  # not ours to replace: the action below still tells the agent
            ours = False
        if ours:
            head = (
                f"{CONFLICT_MARK} of {card.path} (card {card.card_id.replace('--', '- -')}):"
                " the card changed after"
                " the file was edited by hand. Merge the two, then delete this file. -->\n\n"
            )
            atomic_write(full, head + text, mode=0o644, root=self.real_root)
        self.log.warning("canvas_conflict", card_id=card.card_id, path=card.path, copy=rel)
        content = (
            f"Canvas card “{shown_title(card.title)}” changed, but {card.path} was edited since the"
            f" last sync, so the card's version was written to {rel} instead. Merge them and"
            f" delete {rel} (or update the card from the file)."
        )
        req = ActionRequest(f"canvas_conflict:{card.card_id}", content, 1, now)
        self.store.workspace.raise_actions([req], "canvas", now)
        self.store.workspace.save_card(card, now, cursor)
        return [rel] if ours else []
