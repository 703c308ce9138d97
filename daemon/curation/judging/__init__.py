"""Judging a curator reply: what of it may reach memory, through one entry, :func:`judge`.

Every reply is untrusted text. :mod:`.reply` reads what it asks for; :mod:`.grounding`
decides whose words hold each item (a web page's words are not the person's);
:mod:`.guards` judge what the rest does to memory, through :mod:`.edits` (line-addressed
edits, loss and size bounds) and :mod:`.erosion` (what a file lost over a day). Nothing here
writes: :mod:`wsd.daemon.curation.commit` commits the verdict.
"""

from wsd.daemon.curation.judging.judge import Judged, judge

__all__ = ["Judged", "judge"]
