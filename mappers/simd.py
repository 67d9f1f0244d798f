"""Mapper of the simd template: precision per layer, GEMM buffer tiles, emission.

For each op (:mod:`mappers.lower`):

1. **Precision.** A layer's (weights, activations, group size) are its own
   formats when the datapath runs that pair, else the arch's
   ``weight_format`` x ``activation_format`` (``SimdModel.compute_formats``);
   a precision policy (option ``precision_policy``, :mod:`mappers.precision_policy`)
   then overrides them by layer name pattern or op kind. Activation x
   activation GEMMs (attention's QK^T and AV, batched matmuls) run at
   activations x activations with no group scale. A pair the datapath cannot
   run is a one-line :class:`~archsim.errors.MappingError`.
2. **Tiles.** Every GEMM is cut into buffer tiles ``tm x tk x tn`` (``tk`` a
   multiple of the group size so scale groups never straddle tiles); one
   :class:`~archsim.templates.simd.tile.SimdTile` per buffer tile, accumulating
   over k tiles. Candidates (:func:`mappers.tiling.dim_candidates`, loop orders
   ``mnk`` / ``nmk``) are scored in closed form: compute cycles from the timing
   contract, DRAM bytes from :func:`mappers.tiling.traffic`, estimate
   ``max(compute, dram / bandwidth)``; the least ``objective`` wins.
3. Vector work and gathers go to the vector unit / DMA as in every template.
4. **Fusion** (:mod:`mappers.fusion`, the arch spec's ``output_ops``): a GEMM's
   element-wise chain (bias, ReLU/GELU, residual add, requant) runs in its output
   path as it drains; the result and a residual tile are stored / read in the
   layer's activation format, and the tile search counts the residual tiles' room.

Buffer bytes use the layer's formats (an int4 weight tile takes half the bytes
of an int8 one); outputs and partial sums are 32-bit. With a group size, every
weight tile load also carries its fp32 scales (4 bytes per G weights of a column;
the plan search's estimates leave them out).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from archsim.errors import MappingError
from archsim.program import LayerProgram, Load, Store
from archsim.templates.simd.options import SimdOptions
from archsim.templates.simd.tile import SimdTile
from mappers.emit import BufferLayout, Emitter, emit_gather, emit_vector
from mappers.fusion import with_epilogue
from mappers.lower import Gather, Gemm, VectorWork, lower_op
from mappers.precision_policy import load_policy
from mappers.registry import Mapper
from mappers.tiling import TilePlan, class_sum, dim_candidates, emit_gemm, occupancy, traffic
from archsim.numerics import bits_of, get_format


class SimdMapper(Mapper):
    """``make_mapper(arch, options)`` result: call it with an op."""

    def __init__(self, arch, options):
        self.arch = arch
        self.params = arch.params
        self.model = arch.model()
        self.options = options
        own = options.template or SimdOptions()
        self.policy = load_policy(own.precision_policy) if own.precision_policy is not None else None
        self.layout = BufferLayout.from_arch(arch)
        self.conv_lowering = options.conv_lowering or "im2col_padded"
        self.objective = options.objective
        bw = float(arch.dram.bytes_per_cycle)
        self.inv_bw = 0.0 if bw == float("inf") else 1.0 / bw
        tech = arch.tech
        try:
            self.e_dram = 8.0 * tech.energy("dram_bit")
        except (KeyError, AttributeError):
            self.e_dram = 160.0
        try:
            self.e_sram = float(tech.sram_pj_per_byte(max(b.bytes for b in arch.buffers.values())))
        except (KeyError, AttributeError, ValueError):
            self.e_sram = 2.5
        #: element-wise classes the array's output path runs after a GEMM (mappers.fusion)
        self.output_ops = tuple(arch.output_ops or ())

    # -- precision -------------------------------------------------------------
    def layer_formats(self, op) -> tuple[str, str, int]:
        """(weights, activations, group size) the layer runs at."""
        p = self.params
        w = str(getattr(op, "weight_precision", "") or "")
        a = str(getattr(op, "act_precision", "") or "")
        w, a = self.model.compute_formats(w, a)
        g = p.group_size
        if self.policy is not None:
            w, a, g = self.policy.resolve(op.name, op.kind, w, a, g)
        return w, a, g

    def gemm_formats(self, op, g: Gemm) -> tuple[str, str, int]:
        w, a, gs = self.layer_formats(op)
        if not g.b_is_param:
            w, gs = a, 0
        why = self.params.pair_problem(w, a)
        if why:
            runs = ", ".join(f"{x}/{y}" for x, y in self.params.pairs())
            raise MappingError(f"{op.name}: the simd array cannot run {w} x {a} ({why}); "
                               f"it runs weights/activations {runs}")
        return w, a, gs

    # -- one op ------------------------------------------------------------------
    def __call__(self, op, epilogue=None) -> LayerProgram:
        """Map ``op``; ``epilogue`` (:class:`mappers.fusion.Epilogue`): element-wise
        ops run in the output path as the op's GEMM drains."""
        low = with_epilogue(lower_op(op, self.conv_lowering), epilogue)
        em = Emitter(self.layout)
        mappings = []
        layer_w, layer_a = "", ""
        plans = []
        for part in low.parts:
            start = len(em.commands)
            if isinstance(part, Gemm):
                wf, af, gs = self.gemm_formats(op, part)
                if part.b_is_param or not layer_w:
                    layer_w, layer_a = wf, af
                g = self._typed(part, wf, af)
                plan, est = self.choose(g, wf, af, gs, op.name)
                plans.append((plan, wf, af, gs))
                mp = plan.as_mapping(g)
                mp.update(role=part.role, m=g.m, k=g.k, n=g.n, weight_format=wf, activation_format=af,
                          group_size=gs, **est)
                if part.epilogue:  # the fused layers name this one (mapping["fused_into"])
                    mp["epilogue"] = list(part.epilogue)
                mappings.append(mp)

                def split(sm, sk, sn, acc, wf=wf, af=af, gs=gs):
                    return [SimdTile(int(sm), int(sk), int(sn), wf, af, gs, bool(acc))]

                emit_gemm(em, g, plan, split)
                if gs and part.b_is_param:
                    self._add_scale_bytes(em, start, bits_of(wf), gs)
            elif isinstance(part, VectorWork):
                emit_vector(em, part, self.layout)
            elif isinstance(part, Gather):
                emit_gather(em, part, self.layout)
            stores = [c.id for c in em.commands[start:] if isinstance(c, Store)]
            em.after_input = (stores[-1],) if stores else ()
        mapping: dict = dict(mappings[0]) if mappings else {}
        if len(mappings) > 1:
            mapping["gemms"] = mappings
        signature = ("simd", low, tuple(plans))
        return LayerProgram(op.name, op.kind, op.macs(), em.commands, signature, mapping, repeat=low.repeat,
                            weight_format=layer_w, activation_format=layer_a)

    @staticmethod
    def _add_scale_bytes(em, start: int, weight_bits: int, group_size: int) -> None:
        """Each weight tile load also brings its fp32 group scales: 4 bytes per ``G`` weights of a column
        (exact for tiles whose k extent is a multiple of G, which the plans keep but for the last)."""
        for i in range(start, len(em.commands)):
            c = em.commands[i]
            if isinstance(c, Load) and c.operand == "weight":
                weights = c.nbytes * 8 // weight_bits
                em.commands[i] = dataclasses.replace(c, nbytes=c.nbytes + 4 * -(-weights // group_size))

    @staticmethod
    def _typed(g: Gemm, wf: str, af: str) -> Gemm:
        """The GEMM with its operands in the layer's formats and 32-bit partial sums; its
        result (and a fused residual tile) in the activation format."""
        acc = "int32" if get_format(wf).kind == "int" and get_format(af).kind == "int" else "fp32"
        return dataclasses.replace(g, a_precision=af, b_precision=wf, acc_precision=acc, out_precision=af)

    # -- search ------------------------------------------------------------------
    def _steps(self, sk, wf: str, af: str, gs: int):
        """Lane steps (cycles) per output for a k extent ``sk`` (int or array), per the timing contract."""
        p = self.params
        L = p.lanes(wf, af)
        serial = bits_of(wf) if p.multiplier == "bit_serial" else 1
        if gs == 0 or p.dequant:
            return -(-sk // L) * serial
        return ((sk // gs) * -(-gs // L) + -(-(sk % gs) // L)) * serial

    def choose(self, g: Gemm, wf: str, af: str, gs: int, name: str = ""):
        """The best buffer-tile plan and its estimates."""
        p = self.params
        kstep = gs if gs else p.lanes(wf, af)
        rows = []
        for tk in dim_candidates(g.k, kstep):
            for tm in dim_candidates(g.m, 8):
                for tn in dim_candidates(g.n, 8):
                    rows.append((tm, tk, tn))
        arr = np.array(rows, dtype=np.int64)
        tm, tk, tn = arr[:, 0], arr[:, 1], arr[:, 2]
        fits = np.array([self.layout.fits(occupancy(g, int(a), int(b), int(c), 2)) for a, b, c in rows])
        if not fits.any():
            raise MappingError(f"{name}: a {g.m}x{g.k}x{g.n} GEMM at {wf} x {af} does not fit the buffers of "
                               f"{self.arch.name} (no tile fits)")
        tm, tk, tn = tm[fits], tk[fits], tn[fits]
        P, pipe = p.pes, p.pipeline_cycles

        def cycles(sm, sk, sn):
            return -(-(sm * sn) // P) * self._steps(sk, wf, af, gs) + pipe

        compute = class_sum(g, tm, tk, tn, cycles)
        best = None
        for code, order in ((0, "mnk"), (1, "nmk")):
            dram = traffic(g, tm, tk, tn, np.full(tm.shape, code), np.zeros(tm.shape, bool)).total
            est = np.maximum(compute, dram * self.inv_bw)
            energy = dram * self.e_dram
            primary, secondary = (est, energy) if self.objective == "cycles" else (energy, est)
            steps = (-(-g.m // tm)) * (-(-g.k // tk)) * (-(-g.n // tn))
            i = int(np.lexsort((steps, secondary, primary))[0])
            key = (float(primary[i]), float(secondary[i]), int(steps[i]))
            if best is None or key < best[0]:
                best = (key, order, i, est, energy, compute, dram)
        _, order, i, est, energy, compute, dram = best
        plan = TilePlan("os", int(tm[i]), int(tk[i]), int(tn[i]), order, False)
        return plan, {"est_cycles": int(est[i]), "est_compute_cycles": int(compute[i]),
                      "est_dram_bytes": int(dram[i])}


def make_mapper(arch, options) -> SimdMapper:
    return SimdMapper(arch, options)
