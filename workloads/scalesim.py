"""SCALE-Sim v3 topology CSVs as workload graphs.

Two forms, told apart by the header row (which SCALE-Sim itself skips):

- conv: ``Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width,
  Channels, Num Filter, Strides,`` -> one :class:`Conv2d` per row, batch 1,
  no padding at the top and left, one stride for both directions.
  SCALE-Sim's output height is ``ceil((H - Fh + S) / S)``, one more than a
  valid convolution's ``(H - Fh) // S + 1`` when ``S`` does not divide
  ``H - Fh`` (224, 7, 2 gives 110, not 109); that extra row and column are
  reproduced with ``pad_bottom`` / ``pad_right`` of ``(-(H - Fh)) mod S``, so
  ``out_h``, ``out_w``, ``macs()`` and ``gemm_dims()`` equal SCALE-Sim's.
- GEMM (``-i gemm``): ``Layer, M, N, K,`` -> one :class:`MatMul`
  ``[M, K] x [K, N]`` per row. SCALE-Sim runs it as a conv with an
  ``M x K`` ifmap, a ``1 x K`` filter of one channel and ``N`` filters.

Every row ends in a comma (SCALE-Sim drops the last field); blank lines are
skipped. Layers are independent (SCALE-Sim does not chain them), so the graph
has no edges and keeps file order. Each op's ``source`` is
``"scalesim:<file>:<line>"``; ``Conv2d.gemm_dims()`` is
SCALE-Sim's operand-matrix view: ``M`` = Sr (ofmap pixels), ``K`` = T
(``Fh * Fw * C``), ``N`` = Sc (filters).
"""
from __future__ import annotations

from pathlib import Path

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.ops import Conv2d, MatMul

CONV_COLUMNS = ["Layer name", "IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width", "Channels",
                "Num Filter", "Strides"]
GEMM_COLUMNS = ["Layer", "M", "N", "K"]


def _fields(line: str) -> list[str]:
    fields = [f.strip() for f in line.strip().split(",")]
    if fields and fields[-1] == "":
        fields.pop()  # the trailing comma
    return fields


def _form(header: list[str], where: str) -> str:
    norm = [h.lower().replace(" ", "") for h in header]
    if norm[1:4] == ["m", "n", "k"]:
        return "gemm"
    if len(norm) >= 8 and norm[1] == "ifmapheight":
        return "conv"
    raise WorkloadError(f"{where}: header: expected the conv form ({', '.join(CONV_COLUMNS)},) "
                        f"or the GEMM form ({', '.join(GEMM_COLUMNS)},), got {_quote(', '.join(header))}")


def _quote(text: str) -> str:
    """A header as typed when short, else an excerpt (the file may be anything, e.g. a password file)."""
    from archsim.inputs import excerpt

    return repr(text) if len(text) <= 48 and text.isprintable() else excerpt(text, 48)


def load_scalesim_csv(path: str, *, weight_precision: str = "int8", act_precision: str = "int8",
                      acc_precision: str = "int32") -> Graph:
    """A graph of the layers of a SCALE-Sim topology file."""
    name = Path(path).name
    from archsim.inputs import excerpt, read_input_text

    lines = read_input_text(path, what="SCALE-Sim topology", error=WorkloadError).splitlines()
    rows = [(i, _fields(line)) for i, line in enumerate(lines, start=1) if line.strip()]
    if not rows:
        raise WorkloadError(f"{path}: empty file; expected a SCALE-Sim topology header and layer rows")
    form = _form(rows[0][1], f"{path}:{rows[0][0]}")
    columns = CONV_COLUMNS if form == "conv" else GEMM_COLUMNS
    graph = Graph(Path(path).stem)
    precision = dict(weight_precision=weight_precision, act_precision=act_precision, acc_precision=acc_precision)
    if len(rows) == 1:
        raise WorkloadError(f"{path}: no layers after the header; expected one row per layer")
    for lineno, fields in rows[1:]:
        where = f"{path}:{lineno}"
        if len(fields) < len(columns):
            raise WorkloadError(f"{where}: expected {len(columns)} fields ({', '.join(columns)}), "
                                f"got {len(fields)}")
        layer = fields[0]
        if not layer:
            raise WorkloadError(f"{where}: {columns[0]}: expected a layer name")
        values = []
        for column, text in zip(columns[1:], fields[1:len(columns)]):
            if not (text.isascii() and text.isdigit()) or len(text) > 30 or int(text) < 1:  # ASCII only
                shown = repr(text) if len(text) <= 32 else excerpt(text)
                raise WorkloadError(f"{where}: {column}: expected a positive integer, got {shown}")
            values.append(int(text))
        source = f"scalesim:{name}:{lineno}"
        if form == "conv":
            h, w, fh, fw, c, nf, s = values
            for what, f, size in (("Filter Height", fh, h), ("Filter Width", fw, w)):
                if f > size:
                    raise WorkloadError(f"{where}: {what}: expected at most the IFMAP's {size}, got {f}")
            op = Conv2d(name=layer, batch=1, in_channels=c, out_channels=nf, in_h=h, in_w=w, kernel_h=fh,
                        kernel_w=fw, stride_h=s, stride_w=s, pad_bottom=(fh - h) % s, pad_right=(fw - w) % s,
                        source=source, **precision)
        else:
            m, n, k = values
            op = MatMul(name=layer, batch=1, m=m, k=k, n=n, weight_is_param=True, source=source, **precision)
        try:
            graph.add(op)
        except WorkloadError as err:
            raise WorkloadError(f"{where}: {err}") from None
    return graph
