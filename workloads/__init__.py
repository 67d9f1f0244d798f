"""Workload graphs: the IR, a model zoo, ONNX / YAML / SCALE-Sim CSV import.

One import surface::

    import workloads
    g = workloads.load("gpt2-xl", phase="decode", kv_len=1023)
    g = workloads.load("model.onnx")
    g.total_macs(), g.total_params(), [op.kind for op in g.ops()]
"""
from __future__ import annotations

import os
from pathlib import Path

from archsim.errors import WorkloadError
from workloads.graph import Graph, shapes_fit
from workloads.ops import (Attention, Conv2d, Elementwise, Embedding, LayerNorm, MatMul, Op, Pool, RMSNorm,
                           ShapeOp, Softmax)
from workloads.zoo import build as build_zoo
from workloads.zoo import zoo_names

__all__ = [
    "Graph", "load", "zoo_names", "shapes_fit", "WorkloadError",
    "Op", "Conv2d", "MatMul", "Attention", "Softmax", "LayerNorm", "RMSNorm", "Elementwise", "Pool",
    "Embedding", "ShapeOp",
]

_FILE_SUFFIXES = (".onnx", ".yaml", ".yml", ".csv")


def load(source: str | Path, **params) -> Graph:
    """A Graph from a zoo name or a ``.onnx`` / ``.yaml`` / ``.yml`` / ``.csv`` file.

    ``params`` go to the zoo builder (``batch``, ``seq_len`` or ``seq``,
    ``phase``, ``kv_len``, ``image_size``, ``weight_precision``,
    ``act_precision``, ``acc_precision``, and model-specific ones) or to the
    file importer; an unknown one is a :class:`WorkloadError` naming it and the
    valid ones.
    """
    text = str(source)
    suffix = Path(text).suffix.lower()
    if suffix in _FILE_SUFFIXES:
        if not os.path.lexists(text):  # the readers say what is wrong with one that exists (FIFO, folder, ...)
            raise WorkloadError(f"{text}: no such workload file")
        if suffix == ".onnx":
            from workloads.onnx_import import load_onnx
            return _call(load_onnx, text, params)
        if suffix == ".csv":
            from workloads.scalesim import load_scalesim_csv
            return _call(load_scalesim_csv, text, params)
        from workloads.yaml_format import load_yaml
        return _call(load_yaml, text, params)
    return build_zoo(text, **params)


def _call(importer, path: str, params: dict) -> Graph:
    """Call a file importer, turning an unknown keyword into a WorkloadError."""
    import inspect

    valid = [p for p in inspect.signature(importer).parameters if p != "path"]
    for key in params:
        if key not in valid:
            raise WorkloadError(f"{path}: unknown parameter {key!r}; expected one of {', '.join(valid) or '(none)'}")
    return importer(path, **params)
