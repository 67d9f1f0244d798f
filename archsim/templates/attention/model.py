"""Fast model of the attention template (closed form per tile) and the model protocol.

Tiles: :class:`~archsim.templates.attention.tile.AttentionTile` (attention
passes and their phases, units ``array2d`` / ``array1d``) and, for every other
GEMM (projections, FFN), the systolic template's
:class:`~archsim.templates.systolic.tile.SystolicTile` on the same 2D array,
weight stationary with double-buffered preload (its timing contract,
``docs/systolic_timing.md``). Vector work (norms, GELU, residual adds) runs on
the 1D array (``pe1d`` lanes).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from archsim.templates.attention.params import AttentionParams
from archsim.templates.attention import pruning, topk
from archsim.templates.attention.pruning import PruneTile
from archsim.templates.attention.tile import AttentionTile, tile_cycles, tile_work
from archsim.templates.attention.topk import TopkTile
from archsim.templates.attention.values import fusemax_values, flat_values, operands_f32
from archsim.templates.systolic.fast import tile_cycles as systolic_tile_cycles
from archsim.templates.systolic.params import SystolicParams
from archsim.templates.systolic.tile import SystolicTile
from archsim.templates.base import TemplateModel


def gemm_params(p: AttentionParams) -> SystolicParams:
    """The 2D array seen as a weight-stationary systolic array (timing of GEMM folds)."""
    return SystolicParams(rows=p.rows, cols=p.cols, dataflow="ws", input_precision="int16",
                          weight_precision="int16", acc_precision="int32", preload="double_buffered")


class AttentionModel(TemplateModel):
    """``AttentionModel(arch)``: fast model + protocol of one attention-array instance."""

    units = {"array2d": "compute", "array1d": "vector", "topk": "compute", "dma": "dma"}

    def __init__(self, arch: Any):
        super().__init__(arch)
        self.params: AttentionParams = arch.params
        self.params.validate()
        self.gemm = gemm_params(self.params)
        self._gemm = None  # its systolic model, built on the first GEMM tile (_gemm_model)

    # -- protocol ----------------------------------------------------------------
    def peak_macs_per_cycle(self, precision: str | None = None, activations: str | None = None) -> float:
        return self.params.rows * self.params.cols

    def check_tile(self, tile) -> None:
        if isinstance(tile, PruneTile):
            if self.params.topk_parallelism < 1:
                raise ValueError("tile: a pruning step needs a top-k engine (params.topk_parallelism >= 1)")
            tile.check(self.params)
        elif isinstance(tile, TopkTile):
            if self.params.topk_parallelism < 1:
                raise ValueError("tile: a top-k tile needs a top-k engine (params.topk_parallelism >= 1)")
            tile.check(self.params.topk_parallelism)
        elif isinstance(tile, AttentionTile):
            tile.check(self.params)
        elif isinstance(tile, SystolicTile):
            tile.check(self.params.rows, self.params.cols, "double_buffered")
        else:
            raise ValueError(f"tile: expected an AttentionTile, a TopkTile, a PruneTile or a SystolicTile, "
                             f"got {type(tile).__name__}")

    def tile_cycles(self, tile) -> int:
        if isinstance(tile, PruneTile):  # SpAtten's pruning step (rtl.attention.spatten)
            return pruning.fast_cycles(self, tile)
        if isinstance(tile, TopkTile):
            return topk.tile_cycles(tile, self.params.topk_parallelism)
        if isinstance(tile, SystolicTile):
            return systolic_tile_cycles(tile, self.gemm)
        return tile_cycles(tile, self.params)

    def tile_values(self, tile, operands: dict) -> np.ndarray:
        if isinstance(tile, PruneTile):  # outputs' and sums' fp32 bits, then the kept keys
            self.check_tile(tile)
            return pruning.step_values(pruning.run(self, tile, operands, detailed=False))
        if isinstance(tile, TopkTile):  # the kept indices do not depend on the pivots
            self.check_tile(tile)
            return topk.kept_indices(np.asarray(operands["scores"]), tile.k)
        if isinstance(tile, SystolicTile):
            return self._gemm_model().tile_values(tile, operands)
        tile.check(self.params)
        if tile.phase != "all" or not (tile.first and tile.last):
            raise ValueError("operands: values are modelled for whole tiles (phase all, first and last)")
        q, k, v = operands_f32(operands)
        if tile.mapping == "fusemax":
            return fusemax_values(q, k, v, self.params.cols, self.params.exp_macs, tile.passes,
                                  self.params.latency2d_add + 1)
        return flat_values(q, k, v, self.params.cols, self.params.exp_macs)

    def _gemm_model(self):
        """The 2D array's systolic model (values of GEMM tiles), built once from :func:`gemm_params`."""
        model = self._gemm
        if model is None:
            from archsim.spec.from_params import arch_from_params
            from archsim.templates.systolic.fast import SystolicModel

            model = self._gemm = SystolicModel(arch_from_params(self.gemm, tech=self.arch.tech))
        return model

    def detailed_tile(self, tile, operands):
        """Detailed run of ``tile``; a top-k tile without ``{"scores": ...}`` operands charges its
        expected cycles (the fast model's), with them the exact run on those scores; likewise a pruning
        step's top-k."""
        if isinstance(tile, PruneTile):
            if operands is None:
                return np.arange(tile.k), self.tile_cycles(tile)
            self.check_tile(tile)
            res = pruning.run(self, tile, operands, detailed=True)
            return pruning.step_values(res), res.cycles
        if isinstance(tile, TopkTile):
            if operands is None:
                return np.arange(tile.k), self.tile_cycles(tile)
            run = topk.select(np.asarray(operands["scores"]), tile.k, self.params.topk_parallelism, tile.seed)
            return run.indices, run.cycles
        if isinstance(tile, SystolicTile):
            from archsim.templates.systolic.detailed import SystolicArrayDetailed

            return SystolicArrayDetailed(self.gemm).run_tile(tile, operands)
        from archsim.templates.attention.detailed import AttentionDetailed

        return AttentionDetailed(self.params).run_tile(tile, operands)

    def detailed_cycles_range(self, tile) -> tuple[int, int]:
        """A top-k tile's cycles depend on its scores (:func:`topk.cycles_range`), so do a pruning
        step's; the rest do not."""
        if isinstance(tile, PruneTile):
            self.check_tile(tile)
            return pruning.cycles_range(self, tile)
        if isinstance(tile, TopkTile):
            self.check_tile(tile)
            return topk.cycles_range(tile, self.params.topk_parallelism)
        return super().detailed_cycles_range(tile)

    def detailed_tile_cycles(self, tile) -> int:
        if isinstance(tile, SystolicTile):
            zeros = {"input": np.zeros((tile.m, tile.k), np.int64), "weight": np.zeros((tile.k, tile.n), np.int64)}
            if tile.accumulate:
                zeros["psum"] = np.zeros((tile.m, tile.n), np.int64)
            return int(self.detailed_tile(tile, zeros)[1])
        return int(self.detailed_tile(tile, None)[1])

    def tile_pe_fraction(self, tile) -> float:
        p = self.params
        _not_in_programs(tile)
        if isinstance(tile, TopkTile):
            return 0.0  # no 2D-array PE works on it
        if isinstance(tile, SystolicTile):
            return min(tile.k, p.rows) * min(tile.n, p.cols) / (p.rows * p.cols)
        if tile.unit == "array1d":
            return 1.0
        cols = min(tile.kv_len, p.cols)
        return tile.q_rows * cols / (p.rows * p.cols)  # every pass of a tile maps the same PEs

    def tile_actions(self, tile) -> dict[str, int]:
        """MACs (``mac.bf16``: QK, AV and the 2D exps), 1D ops (``vector.op``), PE register
        writes (one per MAC), SRAM bytes of the operands each tile reads / writes (FLAT's
        and unfused's scores: written by Q.K^T, read and written by the softmax, read by P.V)."""
        _not_in_programs(tile)
        p = self.params
        if isinstance(tile, TopkTile):  # a comparator is a subtractor: priced as a 32-bit add
            return {"add.int32": c for c in topk.tile_actions(tile, p.topk_parallelism).values()}
        if isinstance(tile, SystolicTile):
            macs = tile.m * tile.k * tile.n
            return {"mac.bf16": macs, "pe_reg_access": 2 * macs, "sram_read_bytes.input": 2 * tile.m * tile.k,
                    "sram_read_bytes.weight": 2 * tile.k * tile.n, "sram_write_bytes.output": 4 * tile.m * tile.n}
        w = tile_work(tile, p)
        macs = w["macs"] + w["exp2d_macs"]
        out = {"mac.bf16": macs, "pe_reg_access": macs, "vector.op": w["ops1d"]}
        if tile.mapping == "flat" and tile.phase in ("qk", "all") and p.flat_scale_on == "array2d":
            out["mult.fp32"] = tile.q_rows * tile.kv_len  # the edge multiplier scaling each score by c
        if tile.mapping == "flat":  # two passes: the scores go through the buffer
            q, d, kv = tile.q_rows, tile.head_dim, tile.kv_len * tile.head_dim * 2
            scores = q * tile.kv_len * 2
            ph = {"qk", "softmax", "av"} if tile.phase == "all" else {tile.phase}
            rd = {"input": q * d * 2 if "qk" in ph else 0, "weight": kv * len(ph & {"qk", "av"}),
                  "scores": scores * len(ph & {"softmax", "av"})}
            wr = {"scores": scores * len(ph & {"qk", "softmax"}), "output": q * d * 4 if "av" in ph else 0}
            out.update({f"sram_read_bytes.{k}": v for k, v in rd.items() if v})
            out.update({f"sram_write_bytes.{k}": v for k, v in wr.items() if v})
        elif tile.unit == "array2d":
            kv = tile.kv_len * tile.head_dim * 2
            n = tile.passes
            out["sram_read_bytes.input"] = n * tile.q_rows * tile.head_dim * 2
            out["sram_read_bytes.weight"] = n * 2 * kv
            out["sram_write_bytes.output"] = n * tile.q_rows * tile.head_dim * 4
        return out

    def area_inputs(self):
        from archsim.area import AreaInputs

        p = self.params
        # per 2D PE: two operand registers, a score and a second score (slot pipeline), an fp32 accumulator
        regs = p.rows * p.cols * (16 + 16 + 32 + 32 + 32) + p.pe1d * 4 * 32
        components = {}
        if p.topk_parallelism:  # comparators (32-bit subtractors) and a pipeline register each
            components["add.int32"] = p.topk_parallelism
            regs += p.topk_parallelism * 32
        return AreaInputs(macs={"bf16": p.rows * p.cols, "fp32": p.pe1d}, register_bits=regs, components=components)

    def report_extras(self, result) -> dict:
        attn = [l for l in result.layers if l.op == "attention"]
        if not attn:
            return {}
        cyc = sum(l.cycles for l in attn)
        macs = sum(l.macs for l in attn)
        return {"attention_cycles": cyc,
                "attention_array2d_mac_utilization": macs / (self.peak_macs_per_cycle() * cyc) if cyc else 0.0}


def _not_in_programs(tile) -> None:
    """A pruning step is a tile of the composed RTL's co-simulation (values and cycles); programs run
    its parts (attention tiles, a top-k tile), so it has no utilization or actions of its own."""
    if isinstance(tile, PruneTile):
        raise ValueError("tile: a PruneTile (SpAtten's composed pruning step) is for co-simulation; programs run "
                         "its attention tiles and its TopkTile, whose utilization and actions are modelled")

