"""An ONNX model read without its large embedded weights (import memory, issue 21).

Counting MACs needs the weights' shapes and types, not their values; a
BERT-base export with embedded weights is 440 MB of ``raw_data``, which a
plain ``onnx.load`` holds twice (the file's bytes and the parsed copy).
:func:`load_model_lazily` scans the protobuf wire format of the file, reading only
the bytes it looks at (ModelProto field 7 = graph; GraphProto field 5 = initializer;
TensorProto field 9 = raw_data) and parses everything except the ``raw_data``
of the graph's large initializers, which become external data pointing into
the model file itself (``location`` = the file's name, ``offset`` /
``length`` of the bytes): what ``onnx.external_data_helper`` reads, when
onnxslim or onnxruntime need the values, and what :func:`read_lazy` reads
when one is evaluated. onnx has no such loader: ``onnx.load_model(...,
load_external_data=False)`` still parses embedded ``raw_data``.

Small initializers stay loaded. "Large" is exactly what shape inference
already leaves out of its skeleton (:data:`workloads.onnx_shapes.SKELETON_MIN_ELEMENTS`),
so inference sees the same model either way.
"""
from __future__ import annotations

import os
from math import prod

import onnx
from onnx import numpy_helper

__all__ = ["load_model_lazily", "is_lazy", "read_lazy", "load_lazy", "wire_fields", "WireError"]

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message (the caller falls back to a plain parse)."""


def _varint(buf, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise WireError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def wire_fields(buf, start: int = 0, end: int | None = None):
    """``(field_number, wire_type, field_start, value_start, value_end)`` of each field of the message in
    ``buf[start:end]``; for a length-delimited field the value is its payload (after the length)."""
    end = len(buf) if end is None else end
    pos = start
    while pos < end:
        field_start = pos
        tag, pos = _varint(buf, pos, end)
        field, wire = tag >> 3, tag & 7
        if field == 0:
            raise WireError("field number 0")
        if wire == _VARINT:
            _, value_end = _varint(buf, pos, end)
        elif wire == _I64:
            value_end = pos + 8
        elif wire == _I32:
            value_end = pos + 4
        elif wire == _LEN:
            length, pos = _varint(buf, pos, end)
            value_end = pos + length
        else:  # groups (3, 4) are not in onnx.proto
            raise WireError(f"wire type {wire}")
        if value_end > end:
            raise WireError("field runs past its message")
        yield field, wire, field_start, pos, value_end
        pos = value_end


def load_model_lazily(path: str, min_elements: int) -> onnx.ModelProto | None:
    """The ModelProto of ``path`` whose graph initializers with more than ``min_elements`` elements and
    embedded ``raw_data`` are external data into ``path`` itself; None when the file is not a model this
    reader follows (the caller parses it whole, and reports what is wrong with it)."""
    location = os.path.basename(path)
    with open(path, "rb") as f:
        try:
            return _parse(_FileBytes(f.fileno()), location, min_elements)
        except Exception:  # WireError, or protobuf's own types (DecodeError, RuntimeError)
            return None


class _FileBytes:
    """Bytes of an open file, read as indexed (``pread`` of a small window): only the bytes looked at
    are read. (An ``mmap`` would be simpler, but the kernel maps whole page-cache folios around each
    byte touched, which counts hundreds of MB of a weight file in the process's RSS.)"""

    WINDOW = 1 << 16

    def __init__(self, fd: int):
        self.fd = fd
        self.size = os.fstat(fd).st_size
        self.start, self.window = 0, b""

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, key):
        if isinstance(key, slice):
            return os.pread(self.fd, key.stop - key.start, key.start)
        if not self.start <= key < self.start + len(self.window):
            self.start, self.window = key, os.pread(self.fd, self.WINDOW, key)
            if not self.window:
                raise IndexError(key)
        return self.window[key - self.start]


def _parse(buf, location: str, min_elements: int) -> onnx.ModelProto | None:
    top, graphs = [], []
    for field, wire, fs, vs, ve in wire_fields(buf):
        (graphs if field == 7 and wire == _LEN else top).append((fs, vs, ve))
    if len(graphs) != 1:  # a repeated singular field merges: leave that to protobuf
        return None
    model = onnx.ModelProto.FromString(b"".join(buf[fs:ve] for fs, _, ve in top))
    _, gs, ge = graphs[0]
    rest, inits = [], []
    for field, wire, fs, vs, ve in wire_fields(buf, gs, ge):
        (inits if field == 5 and wire == _LEN else rest).append((fs, vs, ve))
    model.graph.MergeFromString(b"".join(buf[fs:ve] for fs, _, ve in rest))
    for _, ts, te in inits:
        parts, raws = [], []
        for field, wire, fs, vs, ve in wire_fields(buf, ts, te):
            if field == 9 and wire == _LEN:
                raws.append((vs, ve))
            else:
                parts.append(buf[fs:ve])
        t = model.graph.initializer.add()
        t.MergeFromString(b"".join(parts))
        if not raws:
            continue
        if len(raws) > 1:  # the last one wins in protobuf; not worth following
            return None
        vs, ve = raws[0]
        if prod(t.dims) > min_elements and t.data_location != onnx.TensorProto.EXTERNAL:
            t.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", location), ("offset", str(vs)), ("length", str(ve - vs))):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
        else:
            t.raw_data = buf[vs:ve]
    return model


def is_lazy(tensor, path: str) -> bool:
    """Whether ``tensor`` is an embedded initializer of the model file ``path`` left unread."""
    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        return False
    return any(e.key == "location" and e.value == os.path.basename(path) for e in tensor.external_data)


def _lazy_bytes(tensor) -> tuple[int, int]:
    info = {e.key: e.value for e in tensor.external_data}
    return int(info["offset"]), int(info["length"])


def read_lazy(tensor, path: str):
    """The value (numpy) of a lazy initializer, read from ``path``; ``tensor`` is left as it is."""
    offset, length = _lazy_bytes(tensor)
    with open(path, "rb") as f:
        f.seek(offset)
        raw = f.read(length)
    copy = onnx.TensorProto(name=tensor.name, data_type=tensor.data_type, dims=list(tensor.dims), raw_data=raw)
    return numpy_helper.to_array(copy)


def load_lazy(model, path: str) -> None:
    """Read every lazy initializer of ``model`` back in (as ``onnx.load`` would have left it)."""
    for t in model.graph.initializer:
        if is_lazy(t, path):
            offset, length = _lazy_bytes(t)
            with open(path, "rb") as f:
                f.seek(offset)
                t.raw_data = f.read(length)
            t.ClearField("data_location")  # as the file had it: embedded
            del t.external_data[:]
