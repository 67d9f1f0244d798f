"""Command side of the systolic controller: the command register, the schedule decode and the
two-entry queue whose head the tile sequencer launches.

A taken command is registered as it arrives (with its streamed length and dataflow flags: one mux
level from the ports), then decoded into its schedule (:func:`decode_schedule`, one adder deep) on
its way into the queue, so no logic hangs off the command ports and launching a tile is a register
copy of the head entry (:func:`entry_layout`). The queue also keeps whether the head's preload has
been loaded into the shadow bank (:class:`~rtl.systolic.sequencer.ShadowLoader`) and a registered
``head_ready`` computed from its next state, so the launch decision reads registers.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from rtl.systolic.config import DATAFLOW_CODES, SystolicConfig, command_signature

#: the command fields an entry keeps (command layout names -> entry names)
COMMAND_FIELDS = {"dataflow": "df", "m": "m", "k": "k", "n": "n", "accumulate": "acc", "left_base": "left_base",
                  "top_base": "top_base", "out_base": "out_base"}


def entry_layout(cfg: SystolicConfig) -> data.StructLayout:
    """A queue entry: the command's fields and its decoded schedule (tile-local cycle numbers).

    ``L`` preload length (R or 0), ``S`` streamed length, ``last`` the tile's last cycle,
    ``stream_end`` = L + S, ``out_start`` / ``out_len`` / ``out_end`` the output window, ``*_m1``
    those minus one, ``pre_skip`` = R - k (preload shifts before the first real row), ``lim_*`` the
    lane limits, ``end0`` / ``pre0`` / ``str0`` / ``ow0`` the phase flags of cycle 0, ``top_last``
    the top buffer address of the preload's first row (it counts down).
    """
    aw, dw, cw = cfg.addr_bits, cfg.dim_bits, cfg.counter_bits
    return data.StructLayout({
        "df": 2, "m": dw, "k": dw, "n": dw, "acc": 1, "hidden": 1, "left_base": aw, "top_base": aw, "out_base": aw,
        "os": 1, "L": cw, "S": cw, "last": cw, "last_m1": cw, "stream_end": cw, "out_start": cw, "out_len": cw,
        "out_end": cw, "S_m1": cw, "out_len_m1": cw, "pre_skip": cw, "lim_left": dw, "lim_top": dw, "lim_out": dw,
        "end0": 1, "pre0": 1, "top_last": aw, "stream_end_m1": cw, "out_start_m1": cw, "out_end_m1": cw,
        "str0": 1, "ow0": 1,
    })


def entry_registers(cfg: SystolicConfig, prefix: str) -> dict[str, Signal]:
    """One register per field of :func:`entry_layout` (not one wide register: synthesis removes a
    field nothing reads, with the logic feeding it, only when the field is a signal of its own)."""
    return {name: Signal(field.shape, name=f"{prefix}_{name}") for name, field in entry_layout(cfg)}


def decode_schedule(cfg: SystolicConfig, c: dict) -> dict:
    """The schedule fields of a registered command ``c`` (see the timing contract).

    Every field is the streamed length ``S`` (or one other field) plus a constant chosen by two
    flags (OS; no preload), so the decode is one adder deep: ``L`` is ``R`` or 0,
    ``last = L + S + R + C - 3 + P + D``, and the output window starts at ``S - 1 + P + D`` (OS)
    or ``L + R - 1 + P + D`` (WS / IS) and lasts ``R`` (OS) or ``S`` rows.
    """
    R, C, P, D, aw = cfg.rows, cfg.cols, cfg.mult_pipeline_stages, cfg.drain_cycles, cfg.addr_bits
    is_os, L0, S = c["is_os"], c["no_preload"], c["S"]

    def s_plus(base):  # L + S + base, L = R unless no preload
        return Mux(L0, S + base, S + (base + R))

    def s_eq(base):  # L + S + base == 0
        return Mux(L0, S == -base, S == -(base + R))

    lag = R + C - 3 + P + D
    win_os = P + D - 1  # OS window start: S - 1 + P (+ D)
    win = R - 1 + P + D  # WS / IS window start: L + R - 1 + P (+ D; a constant per L)
    return dict(
        os=is_os, L=Mux(L0, 0, R), S=S, last=s_plus(lag), last_m1=s_plus(lag - 1), stream_end=s_plus(0),
        out_start=Mux(is_os, S + win_os, Mux(L0, win, win + R)),
        out_len=Mux(is_os, R, S), out_end=s_plus(R - 1 + P + D), S_m1=S - 1, out_len_m1=Mux(is_os, R - 1, S - 1),
        pre_skip=R - c["k"], lim_left=Mux(is_os, c["m"], c["k"]), lim_top=Mux(c["is_is"], c["m"], c["n"]),
        lim_out=Mux(c["is_is"], c["m"], c["n"]), end0=s_eq(lag), pre0=~L0,
        top_last=(c["top_base"] + (R - 1))[:aw], stream_end_m1=s_plus(-1),
        out_start_m1=Mux(is_os, S + (win_os - 1), Mux(L0, win - 1, win + R - 1)),
        out_end_m1=s_plus(R - 2 + P + D), str0=L0,
        ow0=Mux(is_os, S == -win_os, Mux(L0, int(win == 0), int(win + R == 0))),
    )


def command_queue_signature(cfg: SystolicConfig) -> wiring.Signature:
    return wiring.Signature({
        "cmd": In(command_signature(cfg)),
        "launch": In(1),       # the sequencer takes the head this cycle
        "loaded_now": In(1),   # the shadow loader finishes the head's preload this cycle (and no launch)
        "head": Out(entry_layout(cfg)), "head_valid": Out(1),
        "head_loaded": Out(1),  # the head's preload is already in the shadow bank
        "head_ready": Out(1),   # registered: head valid and (not hidden or loaded)
        "pending": Out(1),      # a command is registered or queued (for busy)
        "error": Out(1),        # sticky: a command was refused (unsupported dataflow, bad hidden, zero dim)
    })


class CommandQueue(wiring.Component):
    """Command register, schedule decode and two-entry queue (head and ``q1``) of tile commands."""

    def __init__(self, cfg: SystolicConfig):
        self.cfg = cfg
        super().__init__(command_queue_signature(cfg))

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        aw, dw = cfg.addr_bits, cfg.dim_bits
        cmd = self.cmd.payload

        # ---- command register: no path starts at cmd.payload and ends past it, so a host driving
        # the payload from its own registers (the AXI wrapper) adds no logic depth
        raw = dict(
            valid=Signal(name="cr_valid"), df=Signal(2, name="cr_dataflow"), m=Signal(dw, name="cr_m"),
            k=Signal(dw, name="cr_k"), n=Signal(dw, name="cr_n"), acc=Signal(name="cr_accumulate"),
            preload_hidden=Signal(name="cr_preload_hidden"), hidden=Signal(name="cr_hidden"),
            left_base=Signal(aw, name="cr_left_base"), top_base=Signal(aw, name="cr_top_base"),
            out_base=Signal(aw, name="cr_out_base"), is_os=Signal(name="cr_os"), is_is=Signal(name="cr_is"),
            no_preload=Signal(name="cr_no_preload"), S=Signal(dw, name="cr_S"),
        )
        in_os = cmd.dataflow == DATAFLOW_CODES["os"]
        in_is = cmd.dataflow == DATAFLOW_CODES["is"]
        in_hidden = cmd.preload_hidden & ~in_os & int(cfg.double_buffered)
        taken = {entry: getattr(cmd, field) for field, entry in COMMAND_FIELDS.items()}
        taken.update(preload_hidden=cmd.preload_hidden, hidden=in_hidden, is_os=in_os, is_is=in_is,
                     no_preload=in_hidden | in_os, S=Mux(in_os, cmd.k, Mux(in_is, cmd.n, cmd.m)))

        nxt, q1 = entry_registers(cfg, "nxt"), entry_registers(cfg, "q1")
        nxt_valid, q1_valid, nxt_loaded = Signal(name="nxt_valid"), Signal(name="q1_valid"), Signal()
        launch = self.launch
        # the register takes a command while it is empty or moving into the queue (q1 empty)
        m.d.comb += self.cmd.ready.eq(~raw["valid"] | ~q1_valid)
        take = self.cmd.valid & self.cmd.ready
        accept = raw["valid"] & ~q1_valid  # the registered command moves into the queue
        with m.If(take):
            m.d.sync += [raw[k].eq(v) for k, v in taken.items()]
        m.d.sync += raw["valid"].eq(take | (raw["valid"] & ~accept))

        # ---- queue: the entry decoded from the register; q1 loads on every accept (the register
        # moves only into an empty q1), so only the valid bits and the head's enable depend on launch
        incoming = dict(decode_schedule(cfg, raw))
        incoming.update({k: raw[k] for k in ("df", "m", "k", "n", "acc", "hidden", "left_base", "top_base", "out_base")})
        with m.If(accept):
            m.d.sync += [q1[k].eq(v) for k, v in incoming.items()]
        nxt_load = launch | (accept & ~nxt_valid)
        with m.If(nxt_load):
            m.d.sync += [nxt[k].eq(Mux(q1_valid, q1[k], v)) for k, v in incoming.items()]
        nxt_valid_n = Mux(launch, q1_valid | accept, nxt_valid | accept)
        q1_valid_n = Mux(launch, 0, q1_valid | (accept & nxt_valid))
        m.d.sync += [nxt_valid.eq(nxt_valid_n), q1_valid.eq(q1_valid_n)]

        # ---- the head's shadow-bank state and the registered ready flag (from the next state)
        loaded_n = Mux(self.loaded_now, 1, Mux(nxt_load, 0, nxt_loaded))
        hidden_n = Mux(nxt_load, Mux(q1_valid, q1["hidden"], incoming["hidden"]), nxt["hidden"])
        m.d.sync += [nxt_loaded.eq(loaded_n), self.head_ready.eq(nxt_valid_n & (~hidden_n | loaded_n))]

        # ---- refused commands (sticky error)
        supported = Signal()
        m.d.comb += supported.eq(Cat(*[raw["df"] == DATAFLOW_CODES[d] for d in cfg.dataflows]).any())
        with m.If(accept):
            bad_hidden = raw["preload_hidden"] & (raw["is_os"] | int(not cfg.double_buffered))
            zero_dim = (raw["m"] == 0) | (raw["k"] == 0) | (raw["n"] == 0)
            with m.If(~supported | bad_hidden | zero_dim):
                m.d.sync += self.error.eq(1)

        m.d.comb += [getattr(self.head, k).eq(v) for k, v in nxt.items()]
        m.d.comb += [self.head_valid.eq(nxt_valid), self.head_loaded.eq(nxt_loaded),
                     self.pending.eq(raw["valid"] | nxt_valid | q1_valid)]
        return m
