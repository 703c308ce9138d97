"""README snippets a new user copies (issue 21): the by-hand ``.claude/settings.json`` wires
every event the plugin does, and no install line names a distribution that does not exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_by_hand_settings_hook_every_event_the_plugin_hooks() -> None:
    """Found by a new user: the by-hand settings had no PostToolUseFailure, so failed tool
    calls were lost (the plugin captures them). Both now list the same events."""
    block = re.search(r"```json\n(\{\n  \"hooks\".*?)\n```", README, re.S)
    assert block is not None
    by_hand = set(json.loads(block.group(1))["hooks"])
    plugin = json.loads((REPO / "deploy/claude-plugin/hooks/hooks.json").read_text())
    assert by_hand == set(plugin["hooks"]), by_hand ^ set(plugin["hooks"])


def test_install_lines_name_what_exists() -> None:
    """``pip install 'workspace-daemon[agent]'`` failed (no such distribution on the index the
    README implies); every pip line installs a path (a checkout) or names a published extra."""
    project = re.search(r'^name = "(.+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert project is not None
    for line in re.findall(r"pip install ([^`\n#]+)", README):
        assert not line.strip().strip("'\"").startswith(project.group(1)), line
