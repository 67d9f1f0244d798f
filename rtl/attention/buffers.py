"""The attention array's operand buffers (:class:`OperandBuffers`): Q (one bank per array row,
entry = pass), K and V (one bank per array column, entry = key block); an entry is a head-dim
vector of bf16 codes. One write port shared by all banks, combinational reads (one address per
buffer, every bank of that buffer reads it).

Every bank holds two *sets* of entries (the set is the memory address's top bit): the running tile
reads Q from set ``q_set`` and K, V from set ``kv_set``; the host writes set ``wr_set``. So the next
tile's operands go in while a tile computes (issue 23 item 8), as the mapper lays them out
(mappers/attention.py): heads alternate two slot sets (K, V and Q in the other set), and the query
runs of one head alternate their Q slots over the same resident K and V (only Q in the other set).
:class:`rtl.attention.engine.AttentionEngine` keeps writes out of the sets the running tile reads."""
from __future__ import annotations

from amaranth import Cat, Module
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

#: operand sets: the running tile's and the one the host fills
SETS = 2


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


class OperandBuffers(wiring.Component):
    """``rows`` Q banks of ``passes_max`` entries, ``cols`` K and V banks of ``key_blocks_max``, each
    entry in both sets."""

    def __init__(self, rows: int, cols: int, head_dim_max: int, passes_max: int, key_blocks_max: int):
        self.rows, self.cols, self.D = rows, cols, head_dim_max
        self.q_depth, self.kv_depth = max(2, passes_max), max(2, key_blocks_max)
        w = 16 * head_dim_max
        super().__init__({
            "wr_en": In(1), "wr_buf": In(2), "wr_bank": In(_bits(max(rows, cols))),
            "wr_addr": In(_bits(max(passes_max, key_blocks_max))), "wr_data": In(w), "wr_set": In(1),
            "q_set": In(1), "kv_set": In(1),
            "q_addr": In(_bits(self.q_depth)), "kv_addr_k": In(_bits(self.kv_depth)),
            "kv_addr_v": In(_bits(self.kv_depth)),
            "q_data": Out(w).array(rows), "k_data": Out(w).array(cols), "v_data": Out(w).array(cols),
        })

    def elaborate(self, platform):
        m = Module()
        w = 16 * self.D
        for name, banks, depth, buf, addr, rd_set, out in (
                ("q", self.rows, self.q_depth, 0, self.q_addr, self.q_set, self.q_data),
                ("k", self.cols, self.kv_depth, 1, self.kv_addr_k, self.kv_set, self.k_data),
                ("v", self.cols, self.kv_depth, 2, self.kv_addr_v, self.kv_set, self.v_data)):
            bits = _bits(depth)  # set 1's entries from 1 << bits on
            for b in range(banks):
                m.submodules[f"{name}mem{b}"] = mem = memory.Memory(shape=w, depth=(1 << bits) + depth, init=[])
                wp = mem.write_port()
                rp = mem.read_port(domain="comb")
                m.d.comb += [wp.addr.eq(Cat(self.wr_addr[:bits], self.wr_set)), wp.data.eq(self.wr_data),
                             wp.en.eq(self.wr_en & (self.wr_buf == buf) & (self.wr_bank == b)),
                             rp.addr.eq(Cat(addr, rd_set)), out[b].eq(rp.data)]
        return m
