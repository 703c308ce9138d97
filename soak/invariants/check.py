"""What an invariant check is (a :class:`Check`: a name, whether it held, its counts) and how
the checks read the workspace's databases (:func:`query`: read-only, patient with a busy one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def query(path: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(10_000)
    try:
        return [tuple(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()
