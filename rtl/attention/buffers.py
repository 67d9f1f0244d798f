"""The attention array's operand buffers (:class:`OperandBuffers`): Q (one bank per array row,
entry = pass), K and V (one bank per array column, entry = key block); an entry is a head-dim
vector of bf16 codes. One write port shared by all banks, combinational reads (one address per
buffer, every bank of that buffer reads it)."""
from __future__ import annotations

from amaranth import Module
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


class OperandBuffers(wiring.Component):
    """``rows`` Q banks of ``passes_max`` entries, ``cols`` K and V banks of ``key_blocks_max``."""

    def __init__(self, rows: int, cols: int, head_dim_max: int, passes_max: int, key_blocks_max: int):
        self.rows, self.cols, self.D = rows, cols, head_dim_max
        self.q_depth, self.kv_depth = max(2, passes_max), max(2, key_blocks_max)
        w = 16 * head_dim_max
        super().__init__({
            "wr_en": In(1), "wr_buf": In(2), "wr_bank": In(_bits(max(rows, cols))),
            "wr_addr": In(_bits(max(passes_max, key_blocks_max))), "wr_data": In(w),
            "q_addr": In(_bits(self.q_depth)), "kv_addr_k": In(_bits(self.kv_depth)),
            "kv_addr_v": In(_bits(self.kv_depth)),
            "q_data": Out(w).array(rows), "k_data": Out(w).array(cols), "v_data": Out(w).array(cols),
        })

    def elaborate(self, platform):
        m = Module()
        w = 16 * self.D
        for name, banks, depth, buf, addr, out in (
                ("q", self.rows, self.q_depth, 0, self.q_addr, self.q_data),
                ("k", self.cols, self.kv_depth, 1, self.kv_addr_k, self.k_data),
                ("v", self.cols, self.kv_depth, 2, self.kv_addr_v, self.v_data)):
            for b in range(banks):
                m.submodules[f"{name}mem{b}"] = mem = memory.Memory(shape=w, depth=depth, init=[])
                wp = mem.write_port()
                rp = mem.read_port(domain="comb")
                m.d.comb += [wp.addr.eq(self.wr_addr), wp.data.eq(self.wr_data),
                             wp.en.eq(self.wr_en & (self.wr_buf == buf) & (self.wr_bank == b)),
                             rp.addr.eq(addr), out[b].eq(rp.data)]
        return m
