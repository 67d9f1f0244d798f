"""Checks on an ONNX model before it is lowered: versions this onnx package can read.

A file that declares an IR version (or a default-domain opset) newer than the installed ``onnx``
knows is not read on trust: its fields or operator semantics may differ from what the importer
assumes, and a wrong graph would be a silent wrong answer.
"""
from __future__ import annotations

from typing import Any

from archsim.errors import WorkloadError


def check_versions(path: str, model: Any) -> None:
    """Raise :class:`WorkloadError` if ``model`` declares an IR version or an ai.onnx opset beyond this onnx's."""
    import onnx
    import onnx.defs

    ir = int(model.ir_version)
    if ir > onnx.IR_VERSION:
        raise WorkloadError(f"{path}: ONNX IR version {ir} is newer than this onnx {onnx.__version__} reads "
                            f"(up to {onnx.IR_VERSION}); export with an older IR version, or update onnx")
    if ir < 1:
        raise WorkloadError(f"{path}: ONNX IR version {ir}: expected a positive version (is the file an ONNX model?)")
    newest = onnx.defs.onnx_opset_version()
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version > newest:
            raise WorkloadError(f"{path}: ONNX opset {opset.version} is newer than this onnx {onnx.__version__} "
                                f"knows (up to {newest}); export with an older opset, or update onnx")


__all__ = ["check_versions"]
