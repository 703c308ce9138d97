"""Redaction and text hygiene, below both the hooks and the daemon: what they import.

The public face is this module's ``__all__``; hooks and daemon import only these names
(``tests/test_architecture.py`` checks it):

* :func:`clean_text` / :func:`clean_bytes`: one field made safe (UTF-8, no control
  characters), without ``<private>`` and boot-context spans, secrets redacted, bounded;
* :func:`clean_value`: the same for a JSON-like value (a tool's input or response);
* :func:`redact`: secrets replaced by ``[REDACTED:<kind>]``, nothing else changed (the
  daemon's log processor);
* :data:`DEFAULT_MAX_CHARS` and :data:`BOOT_CONTEXT_TAG`.

The modules, each importing only those below it (calls go one way, down; the one exception
is :func:`redact` handed down to the rules as a callback, for a secret hidden in base64):

* ``text``, ``value``: the hygiene above (the public functions);
* ``engine``: the redactor, which reads and judges the matches of the table and merges the
  rules' spans;
* ``table``: the redactor's own table, one combined regex, and its prefilter;
* ``rules``: running the provider rules and the entropy net (``find``, ``kind_of``; ``RULES``
  for tests and tools), and ``checks``, how issue 20's forms are judged;
* ``gitleaks``, ``forms``: the rule data (gitleaks' default rule set; the forms beyond it and
  the entropy net), and ``shape``, what a secret's value and name look like.

Standard library only, and nothing heavy at import: ``re`` is imported and each table compiled
only when some text could hold what it matches (every ``wsd-hook`` run imports this package).
"""

from __future__ import annotations

from wsd.redact.engine import redact
from wsd.redact.text import BOOT_CONTEXT_TAG, DEFAULT_MAX_CHARS, clean_bytes, clean_text
from wsd.redact.value import clean_value

__all__ = [
    "BOOT_CONTEXT_TAG",
    "DEFAULT_MAX_CHARS",
    "clean_bytes",
    "clean_text",
    "clean_value",
    "redact",
]
