"""Shared fixtures: real workspaces with real SQLite files under tmp_path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from daemon.bootstrap import init_workspace
from schema.layout import Layout

VENV_BIN = Path(sys.executable).parent


def venv_script(name: str) -> str:
    """Path of a console script installed next to the running interpreter."""
    path = VENV_BIN / name
    if not path.exists():
        pytest.fail(f"{name} is not installed next to {sys.executable}; run `make install`")
    return str(path)


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    """An initialised workspace (both databases migrated) in a temporary folder."""
    root = tmp_path / "ws"
    root.mkdir()
    lay = Layout(str(root))
    init_workspace(lay)
    return lay


@pytest.fixture
def hook_env(layout: Layout) -> dict[str, str]:
    """Environment for a `wsd-hook` subprocess writing into ``layout``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WSD_")}
    env["WSD_WORKSPACE"] = layout.root
    return env
