"""``search_memory``: ranked full-text search over learnings and past turns (read-only)."""

from wsd.daemon.memory.search.core import TYPES, Hit, format_hits, search_memory

__all__ = ["TYPES", "Hit", "format_hits", "search_memory"]
