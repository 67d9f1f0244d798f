"""Amaranth design of the systolic template: the top component wiring PE array, buffers and controller.

The design executes :class:`~archsim.templates.systolic.tile.SystolicTile`
commands with exactly the cycles of the timing contract in
``archsim/templates/systolic/tile.py`` (see ``docs/rtl.md`` for the port list
and the buffer layout the host writes).

Structure (``R = rows``, ``C = cols``, ``P = mult_pipeline_stages``)::

            top buffer: C lanes (one per array column), lane c address a
                 |  |  |        WS: W[a, c]   IS: A[c, a]   OS: W[a, c]
                 v  v  v
   left    -> PE PE PE ...   left buffer: R lanes (one per array row), lane r address a
   buffer  -> PE PE PE ...      WS: A[a, r]   IS: W[r, a]   OS: A[r, a]
   R lanes -> PE PE PE ...
                 |  |  |
                 v  v  v     column results -> output buffer: C lanes, lane c address a
                                WS: out[a, c]   IS: out[c, a]   OS: out[a, c]

Components: :class:`~rtl.systolic.controller.TileController` (command stream, tile FSM, operand
fetch), :class:`~rtl.systolic.buffers.LaneBuffer` (left and top operand lanes),
:class:`~rtl.systolic.array.SystolicArray` of :class:`~rtl.systolic.pe.ProcessingElement`, and
:class:`~rtl.systolic.buffers.OutputBuffer`. The controller's *fetch* level (the command FSM)
issues the buffer reads; ``FETCH_LATENCY`` cycles later the operands sit in the array's edge
registers, and one cycle after that the partial sums take the registered products. Tile-local
cycle ``x`` of the contract is the cycle ``FETCH_LATENCY + 1 - P`` after the fetch-level cycle
in which the FSM counter equals ``x`` (with ``P = 0`` the operands run one cycle ahead and the
product register is hidden). ``tile_start`` is high in tile cycle 0, ``done`` (the controller's ``tile_done``) in the cycle
the tile's last output is presented at the bottom of the array. All arithmetic is two's
complement and wraps at the accumulator width, like archsim's models.
"""
from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from rtl.lib.host import host_members, serve_result_reads
from rtl.systolic.array import SystolicArray
from rtl.systolic.buffers import LaneBuffer, OutputBuffer
from rtl.systolic.config import (  # noqa: F401 - re-exported: the public names of the design
    BUFFER_CODES,
    DATAFLOW_CODES,
    FETCH_LATENCY,
    MULTIPLIERS,
    PRECISION_BITS,
    RAM_STYLES,
    SystolicConfig,
    SystolicRtlOptions,
    command_layout,
    command_signature,
    read_signature,
    write_signature,
)
from rtl.systolic.controller import TileController


def systolic_signature(cfg: SystolicConfig) -> wiring.Signature:
    """The top module's interface (besides ``clk`` and ``rst``): the host signature of
    :mod:`rtl.lib.host` (command payload: :func:`command_layout`; ``wr`` buffers: 0 = left,
    1 = top, 2 = out) plus ``tile_start``, a debug port the host interface does not need."""
    members = host_members(command_layout(cfg), buf_bits=2, addr_bits=cfg.addr_bits,
                           wr_data_bits=cfg.wr_data_bits, rd_data_bits=cfg.rd_data_bits)
    members["tile_start"] = Out(1)
    return wiring.Signature(members)


class SystolicAccelerator(wiring.Component):
    """Systolic array with local tile buffers and a tile-command controller.

    Parameters
    ----------
    cfg : SystolicConfig
        Built by :meth:`SystolicConfig.from_params` from ``SystolicParams``.
    """

    def __init__(self, cfg: SystolicConfig):
        self.cfg = cfg
        super().__init__(systolic_signature(cfg))

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        m.submodules.controller = ctrl = TileController(cfg)
        m.submodules.left_buf = left = LaneBuffer(cfg, "left", cfg.rows, cfg.left_depth)
        m.submodules.top_buf = top = LaneBuffer(cfg, "top", cfg.cols, cfg.top_depth)
        m.submodules.array = array = SystolicArray(cfg)
        m.submodules.out_buf = out = OutputBuffer(cfg)

        wiring.connect(m, wiring.flipped(self.cmd), ctrl.cmd)
        wr = self.wr.payload
        m.d.comb += self.wr.ready.eq(1)  # a write takes one cycle, always (out: only while busy is low)
        for buf in (left.wr, top.wr, out.wr):
            m.d.comb += [buf.en.eq(self.wr.valid), buf.buf.eq(wr.buf), buf.addr.eq(wr.addr), buf.data.eq(wr.data)]
        # result reads: the output buffer answers one cycle after the request
        serve_result_reads(m, self.rd_addr, self.rd_data, en=out.rd.en, addr=out.rd.addr, fresh=out.rd.valid,
                           data=out.rd.data)
        m.d.comb += [
            left.addr.eq(ctrl.left_addr), top.addr.eq(ctrl.top_addr),
            array.left_data.eq(left.data), array.top_data.eq(top.data),
            array.left_ok.eq(ctrl.left_ok), array.top_ok.eq(ctrl.top_ok),
            array.shift.eq(ctrl.shift), array.swap.eq(ctrl.swap), array.os.eq(ctrl.os), array.os_acc.eq(ctrl.os_acc),
            out.token.eq(ctrl.out_token), out.value.eq(array.col_q), ctrl.out_busy.eq(out.busy),
            self.busy.eq(ctrl.busy), self.tile_start.eq(ctrl.tile_start), self.done.eq(ctrl.tile_done),
            self.tile_cycles.eq(ctrl.tile_cycles), self.tiles_done.eq(ctrl.tiles_done), self.error.eq(ctrl.error),
        ]
        if cfg.has_os:
            m.d.comb += [array.first.eq(ctrl.first), array.last.eq(ctrl.last)]
        return m
