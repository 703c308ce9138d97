"""The weights of the pinned ONNX file, read without onnx or onnxruntime.

The model ships as an ONNX graph whose matrices are stored as int8 with one float scale per
output column (a ``Cast`` and a ``Mul`` before each ``MatMul``). onnxruntime folds those
into float32 matrices when it loads the graph (~90 MB resident, ~270 MB at the peak of the
load); read here, the matrices stay int8 (22 MB) and each is widened only while it is used.

An ONNX file is one protocol-buffers message; the few fields read here are those of
``ModelProto.graph``: ``node`` (op type, inputs, outputs) and ``initializer`` (name, shape,
type, raw bytes). The file is pinned by its sha256 before anything here reads it, so the
layout checked below is that of one known export of all-MiniLM-L6-v2.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

#: ONNX TensorProto data types used by the file.
_DTYPES: dict[int, type[np.generic]] = {1: np.float32, 3: np.int8, 7: np.int64, 9: np.bool_}
LAYERS = 6
HIDDEN = 384


class ModelFileError(ValueError):
    """The file is not the export this reader knows (wrong or damaged)."""


def _varint(data: memoryview, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _fields(data: memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value or start, end) of each field of a message."""
    i = start
    while i < end:
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            yield number, wire, value, i
        elif wire == 2:
            size, i = _varint(data, i)
            yield number, wire, i, i + size
            i += size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            yield number, wire, i, i + width
            i += width
        else:
            raise ModelFileError(f"unsupported protobuf wire type {wire}")


def _text(data: memoryview, start: int, end: int) -> str:
    return bytes(data[start:end]).decode("utf-8")


def _tensor(data: memoryview, start: int, end: int) -> tuple[str, npt.NDArray[np.generic]]:
    dims: list[int] = []
    kind, name, raw = 0, "", (0, 0)
    for number, wire, a, b in _fields(data, start, end):
        if number == 1 and wire == 0:
            dims.append(a)
        elif number == 1:  # packed dims
            i = a
            while i < b:
                dim, i = _varint(data, i)
                dims.append(dim)
        elif number == 2:
            kind = a
        elif number == 8:
            name = _text(data, a, b)
        elif number == 9:
            raw = (a, b)
    if kind not in _DTYPES:
        raise ModelFileError(f"initializer {name!r} has data type {kind}")
    count = int(np.prod(dims)) if dims else 1
    array = np.frombuffer(data, _DTYPES[kind], count=count, offset=raw[0]).reshape(dims)
    return name, array.copy()  # a copy, so the file's bytes can be freed


@dataclass(frozen=True)
class Linear:
    """``x @ W + b`` with W stored int8 and one scale per output column."""

    q: npt.NDArray[np.int8]
    scale: npt.NDArray[np.float32]
    bias: npt.NDArray[np.float32]

    def __call__(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        out: npt.NDArray[np.float32] = (x @ self.q.astype(np.float32)) * self.scale + self.bias
        return out


@dataclass(frozen=True)
class Layer:
    """One transformer layer of the encoder."""

    query: Linear
    key: Linear
    value: Linear
    output: Linear
    norm1: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]
    intermediate: Linear
    down: Linear
    norm2: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]


@dataclass(frozen=True)
class Weights:
    """Everything the encoder needs: embeddings (int8 rows, one scale each) and layers."""

    words: npt.NDArray[np.int8]
    word_scale: npt.NDArray[np.float32]
    positions: npt.NDArray[np.float32]
    token_type: npt.NDArray[np.float32]
    norm: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]
    layers: tuple[Layer, ...]


def read_weights(data: bytes) -> Weights:
    """The encoder's weights from the bytes of the pinned ONNX file."""
    view = memoryview(data)
    graph = next((a, b) for n, w, a, b in _fields(view, 0, len(view)) if n == 7 and w == 2)
    tensors: dict[str, npt.NDArray[np.generic]] = {}
    nodes: list[tuple[str, list[str], list[str]]] = []
    for number, _wire, a, b in _fields(view, *graph):
        if number == 5:
            name, array = _tensor(view, a, b)
            tensors[name] = array
        elif number == 1:
            ins, outs, op = [], [], ""
            for n, _w, c, d in _fields(view, a, b):
                if n == 1:
                    ins.append(_text(view, c, d))
                elif n == 2:
                    outs.append(_text(view, c, d))
                elif n == 4:
                    op = _text(view, c, d)
            nodes.append((op, ins, outs))
    return _assemble(tensors, nodes)


def _assemble(
    tensors: dict[str, npt.NDArray[np.generic]], nodes: list[tuple[str, list[str], list[str]]]
) -> Weights:
    """Name each quantised matrix by the bias its ``MatMul`` feeds (``...query.bias``)."""
    adds = {ins[0]: ins[1] for op, ins, _ in nodes if op == "Add" and len(ins) == 2}
    linears: dict[str, Linear] = {}
    for op, ins, outs in nodes:
        if op == "MatMul" and ins[1] + "_q" in tensors and outs[0] in adds:
            bias = adds[outs[0]]
            linears[bias.removesuffix(".bias")] = Linear(
                _get(tensors, ins[1] + "_q", np.int8),
                _get(tensors, ins[1] + "_scale", np.float32).reshape(-1),
                _get(tensors, bias, np.float32),
            )
    p = "inner."

    def norm(name: str) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        return _get(tensors, name + ".weight", np.float32), _get(
            tensors, name + ".bias", np.float32
        )

    layers = []
    for i in range(LAYERS):
        at = f"{p}encoder.layer.{i}."
        try:
            layers.append(
                Layer(
                    linears[at + "attention.self.query"],
                    linears[at + "attention.self.key"],
                    linears[at + "attention.self.value"],
                    linears[at + "attention.output.dense"],
                    norm(at + "attention.output.LayerNorm"),
                    linears[at + "intermediate.dense"],
                    linears[at + "output.dense"],
                    norm(at + "output.LayerNorm"),
                )
            )
        except KeyError as exc:
            raise ModelFileError(f"layer {i}: no matrix for {exc}") from None
    positions = _get(tensors, p + "embeddings.position_embeddings.weight_q", np.int8)
    weights = Weights(
        _get(tensors, p + "embeddings.word_embeddings.weight_q", np.int8),
        _get(tensors, p + "embeddings.word_embeddings.weight_scale", np.float32),
        positions.astype(np.float32)
        * _get(tensors, p + "embeddings.position_embeddings.weight_scale", np.float32),
        _get(tensors, p + "embeddings.token_type_embeddings.weight", np.float32),
        norm(p + "embeddings.LayerNorm"),
        tuple(layers),
    )
    if weights.words.shape[1] != HIDDEN or weights.layers[0].query.q.shape != (HIDDEN, HIDDEN):
        raise ModelFileError("unexpected matrix shapes")
    return weights


def _get(tensors: dict[str, npt.NDArray[np.generic]], name: str, kind: type[np.generic]) -> Any:
    array = tensors.get(name)
    if array is None or array.dtype != kind:
        raise ModelFileError(f"no {np.dtype(kind).name} tensor {name!r}")
    return array
