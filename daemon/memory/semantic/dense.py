"""The daemon's dense search: the stored vectors nearest to a query's vector.

Two passes, so the daemon keeps only 48 bytes a memory in memory (5 MB at 100,000):

1. coarse: the sign bits of every stored vector, compared with the query's by Hamming
   distance (a popcount over 384 bits), keep the nearest :data:`COARSE`;
2. exact: their int8 vectors, read from memory.db by id (with the search's type and date
   filters), ranked by cosine.

Imports numpy: the daemon loads this module on its first semantic request or embedding.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from wsd.daemon.memory.semantic.model import DIMENSIONS, encoder, trim
from wsd.daemon.store import VECTOR_KINDS, Store

#: Candidates kept by the coarse pass for the exact one.
COARSE = 1000
TURN_TYPE = "turn"


def pack(vector: npt.NDArray[np.float32]) -> bytes:
    """A unit vector as 384 int8 (scaled by 127 / its largest |value|)."""
    peak = float(np.abs(vector).max()) or 1.0
    return bytes(np.round(vector * (127.0 / peak)).astype(np.int8).tobytes())


def unpack(data: bytes) -> npt.NDArray[np.float32]:
    """A stored vector back to a unit float vector."""
    vector = np.frombuffer(data, np.int8).astype(np.float32)
    norm = float(np.linalg.norm(vector)) or 1.0
    out: npt.NDArray[np.float32] = vector / norm
    return out


def embed_texts(texts: Sequence[str]) -> list[bytes]:
    """Vectors for storage, in order (loads the model on first use)."""
    packed = [pack(v) for v in encoder().embed(texts)]
    trim()  # the activations' pages go back to the system, not to the next step's peak
    return packed


class _Bits:
    """Sign bits of one kind's stored vectors, kept in id order."""

    def __init__(self) -> None:
        self.ids = np.zeros(0, np.int64)
        self.bits = np.zeros((0, DIMENSIONS // 8), np.uint8)

    def extend(self, rows: list[tuple[int, bytes]]) -> None:
        if not rows:
            return
        raw = np.frombuffer(b"".join(v for _, v in rows), np.int8).reshape(len(rows), -1)
        self.ids = np.concatenate([self.ids, np.array([i for i, _ in rows], np.int64)])
        self.bits = np.concatenate([self.bits, np.packbits(raw > 0, axis=1)])

    @property
    def last(self) -> int:
        return int(self.ids[-1]) if len(self.ids) else 0


class DenseIndex:
    """Nearest stored vectors to a query, for one workspace; safe across threads."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.lock = threading.Lock()
        self.kinds = {kind: _Bits() for kind in VECTOR_KINDS}
        self.epoch = ""

    def refresh(self) -> None:
        """Take in the vectors stored since the last look (all of them the first time)."""
        epoch, found = self.store.vectors.newer({k: b.last for k, b in self.kinds.items()})
        # Started afresh (a rebuild swapped in, another model): everything again. Deleted
        # rows may stay here meanwhile: the exact pass reads only rows that still exist.
        if epoch != self.epoch or any(top < self.kinds[k].last for k, (top, _) in found.items()):
            self.epoch = epoch
            self.kinds = {kind: _Bits() for kind in VECTOR_KINDS}
            epoch, found = self.store.vectors.newer({})
        for kind, (_top, rows) in found.items():
            self.kinds[kind].extend(rows)

    def search(
        self, query: str, type_: str | None, since: float | None, k: int
    ) -> list[tuple[str, int, float]]:
        """(kind, id, cosine) of the ``k`` nearest memories passing the filters."""
        q = encoder().embed([query])[0]
        qbits = np.packbits(q > 0)
        found: list[tuple[str, int, float]] = []
        with self.lock:
            self.refresh()
            kinds = [
                kind
                for kind in self.kinds
                if type_ is None or (kind == "T") == (type_ == TURN_TYPE)
            ]
            coarse = {kind: self._coarse(self.kinds[kind], qbits) for kind in kinds}
        for kind, ids in coarse.items():
            learning_type = type_ if kind == "L" and type_ != TURN_TYPE else None
            rows = self.store.vectors.fetch(kind, ids, learning_type, since)
            if rows:
                matrix = np.frombuffer(b"".join(v for _, v in rows), np.int8)
                matrix = matrix.reshape(len(rows), -1).astype(np.float32)
                cos = (matrix @ q) / np.maximum(np.linalg.norm(matrix, axis=1), 1e-9)
                found += [(kind, i, float(c)) for (i, _), c in zip(rows, cos, strict=True)]
        found.sort(key=lambda hit: -hit[2])
        return found[:k]

    @staticmethod
    def _coarse(bits: _Bits, qbits: npt.NDArray[np.uint8]) -> list[int]:
        if len(bits.ids) <= COARSE:
            return [int(i) for i in bits.ids]
        distance = np.bitwise_count(bits.bits ^ qbits).sum(axis=1, dtype=np.int32)
        nearest = np.argpartition(distance, COARSE)[:COARSE]
        return [int(i) for i in bits.ids[nearest]]
