"""SpAtten's pruning step in RTL: the attention array (:class:`rtl.attention.engine.AttentionEngine`,
unchanged), an fp32 accumulator of the keys' attention probabilities and the top-k engine
(:class:`rtl.attention.topk.TopkEngine`) behind one host interface (:mod:`rtl.lib.host`).
The contract and the models are :mod:`archsim.templates.attention.pruning`.

Commands (``cmd`` payload: the array's command fields, then ``mode``, ``first``, ``offset``, ``k``,
``seed``), one at a time:

- ``mode 0`` (attention): the array runs the tile; the host reads its result rows afterwards;
- ``mode 1`` (probability pass): the array runs the tile (V one-hot on keys ``offset ..``), then the
  accumulator reads its ``q_rows`` result rows from the array, one request per cycle, and adds row
  ``i``'s element ``e`` into the sum of key ``offset + e`` (``e < head_dim``, ``offset + e < kv_len``);
- ``mode 2`` (select): the top-k engine keeps ``k`` of the ``kv_len`` sums (their fp32 bit patterns,
  ``topk_parallelism`` a cycle); ``kept`` holds the kept keys (bit ``j`` for key ``j``) after ``done``,
  ``sums`` the keys' probability sums (fp32, key ``j`` at bits ``[32j, 32j+32)``).

``first`` clears the sums and the step's cycle counter. ``error`` (sticky): the array refused a
command, or a select had ``k = 0``, ``k >= kv_len`` or more keys than the top-k engine holds (not
run). ``busy`` is high while the array or the
wrapper works; ``tile_cycles`` counts the busy cycles since the last ``first`` and is read after
``done`` (high in the select's last cycle): the step's cycles without the host's writes and reads.
The host's result reads (``rd_addr``/``rd_data``) reach the array while the wrapper is idle.
"""
from __future__ import annotations

from amaranth import Array, Cat, Module, Shape, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

from rtl.attention.design import AttentionRtlConfig
from rtl.attention.engine import AttentionEngine, attention_host_signature, command_layout
from rtl.attention.topk import TopkEngine
from rtl.lib import fp
from rtl.lib.host import host_members, payload_shape

MODE_ATTENTION, MODE_PROBABILITIES, MODE_SELECT = 0, 1, 2


def _bits(n: int) -> int:
    """Bits of an index into ``n`` things."""
    return max(1, (n - 1).bit_length())


def spatten_command_layout(c: AttentionRtlConfig) -> data.StructLayout:
    """The array's command fields, then the pruning step's (least significant first)."""
    fields = {name: f.shape for name, f in command_layout(c)}
    n_bits = max(1, c.flat_keys_max.bit_length())
    fields.update({"mode": 2, "first": 1, "offset": n_bits, "k": n_bits, "seed": 16})
    return data.StructLayout(fields)


def topk_capacity(c: AttentionRtlConfig, lanes: int) -> int:
    """Keys the top-k engine holds: ``flat_keys_max`` rounded up to whole rows of ``lanes``."""
    return -(-c.flat_keys_max // lanes) * lanes


def spatten_signature(c: AttentionRtlConfig, lanes: int) -> wiring.Signature:
    inner = attention_host_signature(c).members
    wr = payload_shape(inner["wr"])
    def width(shape) -> int:
        return Shape.cast(shape).width

    members = host_members(spatten_command_layout(c), buf_bits=width(wr["buf"].shape),
                           addr_bits=width(wr["addr"].shape), wr_data_bits=width(wr["data"].shape),
                           rd_data_bits=width(payload_shape(inner["rd_data"])),
                           rd_addr_bits=width(payload_shape(inner["rd_addr"])))
    members["kept"] = Out(topk_capacity(c, lanes))
    members["sums"] = Out(32 * topk_capacity(c, lanes))
    return wiring.Signature(members)


class SpattenEngine(wiring.Component):
    """The array, the probability accumulator and the top-k engine (see the module docstring)."""

    def __init__(self, config: AttentionRtlConfig, lanes: int):
        self.c, self.lanes = config, lanes
        self.capacity = topk_capacity(config, lanes)
        super().__init__(spatten_signature(config, lanes))

    def elaborate(self, platform):
        c, P, N = self.c, self.lanes, self.capacity
        D = c.head_dim_max
        m = Module()
        m.submodules.attention = eng = AttentionEngine(c)
        m.submodules.topk = tk = TopkEngine(P, N, 32)

        acc = Array(Signal(32, name=f"acc{j}") for j in range(N))
        kept = Signal(N)
        cycles = Signal(32)
        mode = Signal(2)
        offset = Signal(_bits(N + 1))
        q_rows = Signal.like(eng.cmd.payload.q_rows)
        n_keys = Signal.like(eng.cmd.payload.kv_len)
        head_dim = Signal.like(eng.cmd.payload.head_dim)
        k, seed = Signal.like(tk.k), Signal(16)
        req = Signal(_bits(c.rows + 1))   # result rows requested
        got = Signal(_bits(c.rows + 1))   # result rows added
        row = Signal(_bits(N // P + 1))   # top-k fill row

        cmd = self.cmd.payload
        busy = Signal()
        idle, reading = Signal(), Signal()
        select_error = Signal()  # sticky: a select with k = 0, k >= kv_len or kv_len above the top-k's capacity
        bad_select = (cmd.k == 0) | (cmd.k >= cmd.kv_len) | (cmd.kv_len > N)
        # array commands pass straight through in IDLE; a select waits for nothing
        is_select = cmd.mode == MODE_SELECT
        m.d.comb += self.cmd.ready.eq(idle & eng.cmd.ready)
        for name, _f in command_layout(c):
            m.d.comb += getattr(eng.cmd.payload, name).eq(getattr(cmd, name))
        with m.FSM(name="spatten_fsm"):
            with m.State("IDLE"):
                m.d.comb += idle.eq(1)
                m.d.comb += eng.cmd.valid.eq(self.cmd.valid & ~is_select)
                with m.If(self.cmd.valid & self.cmd.ready):
                    m.d.sync += [mode.eq(cmd.mode), offset.eq(cmd.offset), q_rows.eq(cmd.q_rows),
                                 n_keys.eq(cmd.kv_len), head_dim.eq(cmd.head_dim), k.eq(cmd.k), seed.eq(cmd.seed),
                                 req.eq(0), got.eq(0), row.eq(0)]
                    with m.If(cmd.first):
                        m.d.sync += [a.eq(0) for a in acc]
                    m.next = "ARRAY"
                    with m.If(is_select & bad_select):
                        m.d.sync += select_error.eq(1)
                        m.next = "IDLE"
                    with m.Elif(is_select):
                        m.next = "TOPK_START"
            with m.State("ARRAY"):  # the array is busy from the cycle after it took the command
                with m.If(~eng.busy):
                    with m.If(mode == MODE_PROBABILITIES):
                        m.next = "ACCUMULATE"
                    with m.Else():
                        m.next = "IDLE"
            with m.State("ACCUMULATE"):
                m.d.comb += [reading.eq(1),eng.rd_addr.valid.eq(req < q_rows), eng.rd_addr.payload.eq(req),
                             eng.rd_data.ready.eq(1)]
                with m.If(eng.rd_addr.valid & eng.rd_addr.ready):
                    m.d.sync += req.eq(req + 1)
                with m.If(eng.rd_data.valid):
                    word = eng.rd_data.payload
                    for e in range(D):
                        key = Signal(_bits(N + D + 1), name=f"acc_key{e}")
                        m.d.comb += key.eq(offset + e)
                        total = fp.fp32_add_finite(m, acc[key[:_bits(N)] if N > 1 else 0],
                                                   word[32 * e:32 * e + 32], f"acc_add{e}")
                        with m.If((e < head_dim) & (key < n_keys)):
                            m.d.sync += acc[key[:_bits(N)] if N > 1 else 0].eq(total)
                    m.d.sync += got.eq(got + 1)
                    dropped = self.dropped_row(got, q_rows)  # None: a seam for tests' planted bugs
                    if dropped is not None:
                        with m.If(dropped):
                            m.d.sync += [a.eq(a) for a in acc]
                    with m.If(got + 1 == q_rows):
                        m.next = "IDLE"
            with m.State("TOPK_START"):
                m.d.comb += [tk.start.eq(1), tk.n.eq(n_keys), tk.k.eq(k), tk.seed.eq(seed)]
                m.d.sync += kept.eq(0)
                m.next = "FILL"
            with m.State("FILL"):
                m.d.comb += [tk.in_valid.eq(1), tk.in_data.eq(Cat(*(acc[row * P + j] for j in range(P))))]
                m.d.sync += row.eq(row + 1)
                with m.If((row + 1) * P >= n_keys):
                    m.next = "SELECT"
            with m.State("SELECT"):
                with m.If(tk.out_valid):
                    for j in range(P):
                        with m.If(tk.out_mask[j]):
                            m.d.sync += kept.bit_select(tk.out_row * P + j, 1).eq(1)
                with m.If(tk.done):
                    m.d.comb += self.done.eq(1)
                    m.next = "IDLE"
        # the host's result reads reach the array while the wrapper does not read
        with m.If(~reading):
            m.d.comb += [eng.rd_addr.valid.eq(self.rd_addr.valid), eng.rd_addr.payload.eq(self.rd_addr.payload),
                         self.rd_addr.ready.eq(eng.rd_addr.ready), eng.rd_data.ready.eq(self.rd_data.ready),
                         self.rd_data.valid.eq(eng.rd_data.valid)]
        m.d.comb += busy.eq(~idle | eng.busy)
        m.d.comb += [self.rd_data.payload.eq(eng.rd_data.payload),
                     eng.wr.valid.eq(self.wr.valid & idle), self.wr.ready.eq(eng.wr.ready & idle),
                     eng.wr.payload.eq(self.wr.payload)]
        with m.If(self.cmd.valid & self.cmd.ready & cmd.first):
            m.d.sync += cycles.eq(0)
        with m.Elif(busy):
            m.d.sync += cycles.eq(cycles + 1)
        tiles = Signal(32)
        with m.If(self.done):
            m.d.sync += tiles.eq(tiles + 1)
        m.d.comb += [self.busy.eq(busy), self.tile_cycles.eq(cycles), self.tiles_done.eq(tiles),
                     self.error.eq(eng.error | select_error), self.kept.eq(kept), self.sums.eq(Cat(*acc))]
        return m

    def dropped_row(self, got, q_rows):
        """A condition under which result row ``got`` of a probability pass is not added: None, every
        row is (tests plant a bug by overriding this)."""
        return None
