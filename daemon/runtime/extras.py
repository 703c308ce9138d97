"""The package's optional extras, as an operator installs them."""

from __future__ import annotations

import sys


def install_command(extra: str) -> str:
    """The command that installs ``extra`` into this very environment: its own pip, and the
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
    return f"{shlex.quote(pip)} install {shlex.quote(source + f'[{extra}]')}"
