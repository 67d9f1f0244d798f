"""Fast (closed-form) model of the systolic template.

:class:`SystolicModel` implements :class:`archsim.templates.base.TemplateModel`:
``tile_cycles`` is the closed form of the timing contract in
:mod:`archsim.templates.systolic.tile`, ``tile_values`` is a numpy matmul with
two's-complement wrap to the accumulator width, ``tile_actions`` counts energy
actions. :func:`gemm_fold_cycles` times a whole GEMM in SCALE-Sim's fold order
without a loop over folds, so whole networks and sweeps are fast.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from archsim.templates.systolic.params import PRECISION_BITS, SystolicParams
from archsim.templates.systolic.operands import ACC_DTYPES, check_operands, wrap  # noqa: F401 - re-exported
from archsim.templates.systolic.tile import GEOMETRY, SystolicTile
from archsim.templates.base import TemplateModel



def tile_cycles(tile: SystolicTile, params: SystolicParams) -> int:
    """Cycles of one tile (closed form of the timing contract)."""
    tile.check(params.rows, params.cols, params.preload)
    R, C, P = params.rows, params.cols, params.mult_pipeline_stages
    if tile.dataflow == "os":
        return R + C + tile.k - 2 + P
    preload = 0 if tile.preload_hidden else R
    return preload + R + C + tile.streamed() - 2 + P


def _ceil_div(a, b):
    return -(-a // b)


def gemm_fold_cycles(M, K, N, params: SystolicParams, dataflow: str | None = None):
    """Compute cycles of a whole GEMM ``out[M x N] = A[M x K] . W[K x N]``.

    The GEMM is cut into SCALE-Sim's folds (see :func:`gemm_tiles`), one tile
    per fold, each streaming the whole free dimension (M for WS, N for IS, K
    for OS). With ``preload="double_buffered"`` every fold but the first has
    its preload hidden. ``M``, ``K``, ``N`` may be numpy arrays (one GEMM per
    element); the result has their broadcast shape. Closed form, no loop.

    With ``preload="serial"`` and ``mult_pipeline_stages=0`` this is SCALE-Sim
    v3's per-fold sum; SCALE-Sim's reported "Total Cycles" is one less (see
    :func:`scalesim_total_cycles`).
    """
    df = dataflow or params.dataflow
    R, C, P = params.rows, params.cols, params.mult_pipeline_stages
    M, K, N = (np.asarray(x, dtype=np.int64) for x in (M, K, N))
    if df == "ws":
        folds, streamed, preload = _ceil_div(K, R) * _ceil_div(N, C), M, R
    elif df == "is":
        folds, streamed, preload = _ceil_div(K, R) * _ceil_div(M, C), N, R
    elif df == "os":
        folds, streamed, preload = _ceil_div(M, R) * _ceil_div(N, C), K, 0
    else:
        raise ValueError(f"dataflow: expected one of ws, os, is, got {df!r}")
    per_fold = R + C + streamed - 2 + P
    if params.preload == "double_buffered":
        total = folds * per_fold + preload  # only the first fold's preload shows
    else:
        total = folds * (per_fold + preload)
    return int(total) if total.ndim == 0 else total


def scalesim_total_cycles(M, K, N, params: SystolicParams, dataflow: str | None = None):
    """What SCALE-Sim v3 reports as a layer's "Total Cycles" (stall-free mode).

    SCALE-Sim reports the index of the cycle of the last output write, i.e.
    the number of cycles minus one: ``gemm_fold_cycles(...) - 1``.
    """
    return gemm_fold_cycles(M, K, N, params, dataflow) - 1


def gemm_tiles(M: int, K: int, N: int, params: SystolicParams, dataflow: str | None = None
               ) -> Iterator[tuple[SystolicTile, tuple[slice, slice, slice]]]:
    """Tiles of a GEMM in SCALE-Sim's fold order, with the (M, K, N) slices each covers.

    Fold order (SCALE-Sim v3): column folds outer, row folds inner, where
    WS folds (K by rows, N by cols), IS folds (K by rows, M by cols) and OS
    folds (M by rows, N by cols). Tiles after the first in a K-fold chain have
    ``accumulate=True``; with double-buffered preload all but the first tile
    have ``preload_hidden=True`` (WS/IS).
    """
    df = dataflow or params.dataflow
    R, C = params.rows, params.cols
    hide = params.preload == "double_buffered" and df != "os"
    first = True
    if df == "os":
        for n0 in range(0, N, C):
            for m0 in range(0, M, R):
                m, n = min(R, M - m0), min(C, N - n0)
                yield (SystolicTile("os", m, K, n),
                       (slice(m0, m0 + m), slice(0, K), slice(n0, n0 + n)))
        return
    col_dim = N if df == "ws" else M
    for c0 in range(0, col_dim, C):
        for k0 in range(0, K, R):
            k, c = min(R, K - k0), min(C, col_dim - c0)
            if df == "ws":
                tile = SystolicTile("ws", M, k, c, accumulate=k0 > 0, preload_hidden=hide and not first)
                sl = (slice(0, M), slice(k0, k0 + k), slice(c0, c0 + c))
            else:
                tile = SystolicTile("is", c, k, N, accumulate=k0 > 0, preload_hidden=hide and not first)
                sl = (slice(c0, c0 + c), slice(k0, k0 + k), slice(0, N))
            first = False
            yield tile, sl


def _pe_register_bits(p: SystolicParams) -> int:
    """Register bits of one PE: input and weight operand registers, the
    partial sum, the shadow of the stationary operand (double-buffered
    preload) and the product register (``mult_pipeline_stages=1``)."""
    in_b, w_b = PRECISION_BITS[p.input_precision], PRECISION_BITS[p.weight_precision]
    bits = in_b + w_b + PRECISION_BITS[p.acc_precision]
    if p.preload == "double_buffered":
        bits += max(in_b, w_b)
    return bits + (in_b + w_b) * p.mult_pipeline_stages


class SystolicModel(TemplateModel):
    """Fast model of one systolic array instance: ``SystolicModel(arch)``.

    ``arch`` is an :class:`archsim.spec.ArchSpec` whose ``params`` is a
    :class:`SystolicParams` (bare params: ``archsim.spec.arch_from_params(params)``).
    """

    units: ClassVar[dict[str, str]] = {"array": "compute", "vector": "vector", "dma": "dma"}

    def __init__(self, arch: Any):
        super().__init__(arch)
        self.params: SystolicParams = arch.params
        self.params.validate()
        self.acc_bits = PRECISION_BITS[self.params.acc_precision]
        self.acc_dtype = ACC_DTYPES[self.params.acc_precision]

    # -- TemplateModel --------------------------------------------------
    def peak_macs_per_cycle(self, precision: str | None = None, activations: str | None = None) -> int:
        """``rows * cols``: one MAC per PE per cycle at any precision the array
        runs (narrower operands are sign-extended into the same multipliers)."""
        return self.params.rows * self.params.cols

    def compute_formats(self, weights: str, activations: str) -> tuple[str, str]:
        """The array multiplies in its own ``weight_precision`` x ``input_precision``
        (``--weights/--activations`` set those); vector ops run the layer's format."""
        p = self.params
        return (p.weight_precision if weights else ""), (p.input_precision if weights else activations)

    def tile_pe_fraction(self, tile: SystolicTile) -> float:
        """PEs a tile maps over all PEs: the stationary (WS, IS) or output (OS) footprint."""
        p = self.params
        a, b, _streamed = GEOMETRY[tile.dataflow]
        return min(getattr(tile, a), p.rows) * min(getattr(tile, b), p.cols) / (p.rows * p.cols)

    def check_tile(self, tile: SystolicTile) -> None:
        tile.check(self.params.rows, self.params.cols, self.params.preload)

    def detailed_tile_cycles(self, tile: SystolicTile) -> int:
        """The detailed model's cycles, run on zero operands (a tile's cycles depend only on its shape)."""
        a = np.zeros((tile.m, tile.k), np.int64)
        w = np.zeros((tile.k, tile.n), np.int64)
        ops = {"input": a, "weight": w}
        if tile.accumulate:
            ops["psum"] = np.zeros((tile.m, tile.n), np.int64)
        return int(self.detailed_tile(tile, ops)[1])

    def area_inputs(self):
        """rows x cols MACs at the wider operand precision; per PE the operand,
        partial-sum and (optional) product registers."""
        from archsim.area import AreaInputs

        p = self.params
        wider = max(p.input_precision, p.weight_precision, key=lambda s: PRECISION_BITS[s])
        return AreaInputs(macs={wider: p.rows * p.cols}, register_bits=p.rows * p.cols * _pe_register_bits(p))

    def tile_cycles(self, tile: SystolicTile) -> int:
        return tile_cycles(tile, self.params)

    def tile_values(self, tile: SystolicTile, operands: dict[str, np.ndarray]) -> np.ndarray:
        """``wrap(psum + A @ W)`` in the accumulator width (int64 matmul, exact
        because the wrap is a ring homomorphism)."""
        tile.check(self.params.rows, self.params.cols, self.params.preload)
        a, w, psum = check_operands(tile, operands, self.params)
        out = a @ w
        if psum is not None:
            out = out + psum
        return wrap(out, self.acc_bits).astype(self.acc_dtype)

    def tile_actions(self, tile: SystolicTile) -> dict[str, int]:
        """Energy actions of one tile.

        - ``mac.<prec>``: useful MACs ``m*k*n`` (prec = the wider operand);
        - ``pe_reg_access``: PE register writes carrying useful data: per
          useful MAC the forwarded operand(s) and the partial sum / accumulator
          (WS, IS: 2; OS: 3) plus the product register when
          ``mult_pipeline_stages=1``; plus the preload shifts of the stationary
          operand (row r of it is written r+1 times on its way down);
        - ``sram_read_bytes.input`` / ``.weight``: each operand element read
          once per tile (weights at the tile's packed ``weight_bits`` when set);
          ``sram_write_bytes.output``: ``m*n`` accumulator-width results; ``sram_read_bytes.output``: the same when accumulating
          (partial sums read back).
        """
        p = self.params
        tile.check(p.rows, p.cols, p.preload)
        m, k, n = tile.m, tile.k, tile.n
        macs = m * k * n
        wider = max(p.input_precision, p.weight_precision, key=lambda s: PRECISION_BITS[s])
        per_mac = (3 if tile.dataflow == "os" else 2) + p.mult_pipeline_stages
        if tile.dataflow == "ws":
            preload = n * k * (k + 1) // 2
        elif tile.dataflow == "is":
            preload = m * k * (k + 1) // 2
        else:
            preload = 0
        in_b, w_b = PRECISION_BITS[p.input_precision] // 8, PRECISION_BITS[p.weight_precision] // 8
        acc_b = self.acc_bits // 8
        return {
            f"mac.{wider}": macs,
            "pe_reg_access": per_mac * macs + preload,
            "sram_read_bytes.input": m * k * in_b,
            "sram_read_bytes.weight": (-(-k * n * tile.weight_bits // 8) if tile.weight_bits  # packed codes
                                       else k * n * w_b),
            "sram_write_bytes.output": m * n * acc_b,
            "sram_read_bytes.output": m * n * acc_b if tile.accumulate else 0,
        }

    def detailed_tile(self, tile: SystolicTile, operands: dict[str, np.ndarray]
                      ) -> tuple[np.ndarray, int]:
        """Detailed model (cycle by cycle): see :mod:`archsim.templates.systolic.detailed`."""
        from archsim.templates.systolic.detailed import SystolicArrayDetailed

        return SystolicArrayDetailed(self.params).run_tile(tile, operands)
