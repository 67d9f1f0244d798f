"""Amaranth design of the SIMD PE array: ``P`` PEs, each a ``lane_bits``-wide SIMD
dot-product unit whose lane count follows the command's precision mode.

The design runs :class:`~archsim.templates.simd.tile.SimdTile` commands with
the cycles and values of the contract in ``archsim/templates/simd/tile.py``.
A *mode* is one (weight format, activation format) pair of
:meth:`SimdParams.pairs` (``cmd_mode`` = its index in :func:`modes`); the
lanes ``L`` follow the pair. Lane ``j`` of a buffer word holds an element at
bits ``[j*b, (j+1)*b)`` (``b`` = the format's width), so one word is one lane
step, whatever the mode.

Datapath of one PE (a five-stage pipeline, shared control)::

  0 issue    counters (round, group, step in group, weight bit) -> operand buffer address
  1 lanes    decode both operands of every lane (per format, muxed by mode), multiply
             (array: a multiplier; shift_add: one shifted add per weight bit; bit_serial:
             one weight bit per cycle into a per-lane register), round each product to fp32,
             pairwise fp32 tree (a node passes its left child through when the mode has no
             right one), exact integer sum beside it
  2 group    acc_g = rne(acc_g + cycle_sum) (fp32), exact int64 group sum
  3 output   at group end: group result (x scale, int64 -> fp32 for int x int with G > 0),
             out = rne(out + group_result), or out += group sum (int x int, G = 0)
  4 write    at round end: the P outputs go to the output buffer

so a tile's last output is written ``4`` cycles after its last step is issued;
``tile_done`` is raised ``pipeline_cycles - 1`` cycles after that issue (the
contract's ``ceil(M*N/P) * steps + pipeline_cycles``); the design needs
``pipeline_cycles >= 4``.

At ``pipeline_cycles = 4`` stage 1 (decode, multiply, product rounding, the whole
tree) and stage 3 (int64 -> fp32, x scale, output add) are each one cycle, which
bounds the clock (ECP5: ~6 MHz). Each cycle beyond 4 adds one register stage
(:attr:`SimdConfig.cuts`, in :data:`CUT_ORDER`): after the lane products, after the
group sum's int64 -> fp32 conversion, after the scale multiply, after the operand
decode, then between tree levels (middle first); the shared control delays the
later stages' valid / group / round bits (and the scale and output-buffer reads) to
match, so values and the cycle contract are unchanged. The loops that cannot be cut
are the group accumulator (stage 2) and the output accumulator (one fp32 add each).

Buffers (two banks each, :mod:`rtl.simd.buffers`: the host writes one through ``wr_*`` while a tile
runs on the other, the command's ``bank``):

- operands: entry ``round * steps + step``: the round's distinct activation rows (their words) from
  slot 0 up, its distinct weight columns (the weight word and, in a ``dequant`` build, one fp32 scale
  per lane after it) from the last slot down, then each PE's (row, column) select
  (:mod:`rtl.simd.broadcast`: shared operands are read once and broadcast to the PEs);
- scales (G > 0): entry ``round * groups + group``, PE ``p``'s fp32 scale at ``[32p, 32p+32)``;
- outputs: entry ``round``, PE ``p``'s result at ``[p*OW, p*OW + OW)`` (int64, or fp32 in the
  low 32 bits); read back through ``rd_*``; with ``cmd_accumulate`` the tile adds into it.

``dequant`` builds dequantize each weight in stage 1: ``w' = round_to(dequant_format,
rne(decode(w) * scale))`` (the host puts 1.0 as the scale of a tile without groups),
then the lane multiplies ``w'`` by the activation; the whole K is one group.
"""
from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.simd.buffers import SimdBuffers, host_addr_bits, read_addr_bits
from rtl.simd.config import (BUF_CODES, CUT_ORDER, DATAPATH_STAGES, DIM_BITS, Mode, SimdConfig,  # noqa: F401
                             SimdRtlOptions, _bits, modes)
from rtl.simd.controller import PE_CONTROL, SimdController
from rtl.simd.pe import PE_TOP, SimdPE, pe_signature, pe_verilog  # noqa: F401

#: the components (each a ``wiring.Component`` with its own test): rtl/simd/config.py (SimdConfig),
#: controller.py (SimdController), buffers.py (SimdBuffers), pe.py (SimdPE; pipelined.py and
#: accumulate.py for accumulators > 1), host.py (SimdEngine: the host-interface top)


def simd_signature(cfg: SimdConfig) -> dict:
    return {
        "cmd_valid": In(1), "cmd_ready": Out(1), "cmd_mode": In(_bits(len(cfg.modes))),
        "cmd_m": In(DIM_BITS), "cmd_n": In(DIM_BITS), "cmd_k": In(DIM_BITS), "cmd_g": In(DIM_BITS),
        "cmd_accumulate": In(1),
        "wr_en": In(1), "wr_buf": In(2), "wr_addr": In(host_addr_bits(cfg)), "wr_data": In(cfg.data_bits),
        "wr_ready": Out(1), "rd_en": In(1), "rd_addr": In(read_addr_bits(cfg)),
        "rd_data": Out(cfg.pes * cfg.out_bits), "rd_valid": Out(1), "rd_ready": Out(1), "bank": In(1),
        "busy": Out(1), "tile_start": Out(1), "tile_done": Out(1), "tile_cycles": Out(32), "tiles_done": Out(32),
    }


class SimdArray(wiring.Component):
    """The SIMD PE array: the controller, the buffers and ``P`` PEs, wired (plain datapath ports;
    :class:`rtl.simd.host.SimdEngine` puts the host interface around it).

    ``pe_instances=True`` (the Verilog build): the PEs are instances of the separately converted
    module ``archsim_simd_pe`` (:func:`pe_verilog`), so a large array converts in the time of one PE.
    """

    def __init__(self, cfg: SimdConfig, pe_instances: bool = True):
        self.cfg = cfg
        self.pe_instances = pe_instances
        super().__init__(simd_signature(cfg))

    def elaborate(self, platform):
        from amaranth.hdl import ClockSignal, Instance, ResetSignal

        cfg = self.cfg
        P, EW, OW = cfg.pes, cfg.entry_bits, cfg.out_bits
        m = Module()
        ctl = m.submodules.controller = SimdController(cfg)
        buf = m.submodules.buffers = SimdBuffers(cfg, cfg.operand_layout)  # shared operands broadcast
        m.d.comb += [getattr(ctl, k).eq(getattr(self, k)) for k in
                     ("cmd_valid", "cmd_mode", "cmd_m", "cmd_n", "cmd_k", "cmd_g", "cmd_accumulate")]
        m.d.comb += [getattr(self, k).eq(getattr(ctl, k)) for k in
                     ("cmd_ready", "busy", "tile_start", "tile_done", "tile_cycles", "tiles_done")]
        m.d.comb += [getattr(buf, k).eq(getattr(self, k)) for k in ("wr_en", "wr_buf", "wr_addr", "wr_data",
                                                                    "rd_en", "rd_addr", "bank")]
        m.d.comb += [self.rd_data.eq(buf.rd_data), self.rd_valid.eq(buf.rd_valid), self.wr_ready.eq(buf.wr_ready),
                     self.rd_ready.eq(buf.rd_ready), buf.busy.eq(ctl.busy | ctl.take)]
        m.d.comb += [getattr(buf, k).eq(getattr(ctl, k)) for k in ("op_addr", "sc_addr", "old_addr", "wb_en",
                                                                   "wb_addr")]
        control = {k: getattr(ctl, k) for k in PE_CONTROL}
        if cfg.accumulators > 1:
            from rtl.simd.pipelined import STEP_FLAGS

            control.update({k: getattr(ctl, k) for k in STEP_FLAGS})
        outs = []
        for p in range(P):
            out = Signal(OW, name=f"pe{p}_out")
            ports = dict(control, mode=self.cmd_mode, entry=buf.op_data[p * EW:(p + 1) * EW],
                         scale=buf.sc_data[32 * p:32 * (p + 1)], old=buf.old_data[p * OW:(p + 1) * OW])
            if self.pe_instances:
                m.submodules[f"pe{p}"] = Instance(
                    PE_TOP, i_clk=ClockSignal(), i_rst=ResetSignal(), o_out=out,
                    **{f"i_{k}": v for k, v in ports.items()})
            else:
                pe = m.submodules[f"pe{p}"] = SimdPE(cfg)
                m.d.comb += [getattr(pe, k).eq(v) for k, v in ports.items()] + [out.eq(pe.out)]
            outs.append(out)
        m.d.comb += buf.wb_data.eq(Cat(*outs))
        return m
