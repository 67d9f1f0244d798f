"""Amaranth design of the systolic template: PE grid, tile buffers and controller.

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

The controller is split in two pipeline levels: a *fetch* level (the command
FSM; it issues the buffer reads) and the *array* level one cycle later (the
read data, the PE grid and the output writes). Tile-local cycle ``x`` of the
contract is the array-level cycle in which the FSM counter generated at fetch
level equals ``x``. ``tile_start`` is high in tile cycle 0, ``tile_done`` in
the cycle the tile's last output is presented at the bottom of the array.

PE(r, c) holds ``x`` (left operand, moving right), ``sh`` (shadow / moving
operand, moving down), ``w`` (active stationary operand, double-buffered
builds only), ``psum`` (partial sum moving down in WS/IS; the accumulator in
OS) and, with ``P = 1``, ``prod`` (registered product). All arithmetic is
two's complement and wraps at the accumulator width, like archsim's models.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from rtl.systolic.ecp5 import mult18x18d

PRECISION_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
DATAFLOW_CODES = {"ws": 0, "os": 1, "is": 2}
BUFFER_CODES = {"left": 0, "top": 1, "out": 2}
#: cycles from the fetch level (buffer read issued) to the array level (operand in the edge register)
FETCH_LATENCY = 3
MULTIPLIERS = ("inferred", "ecp5_dsp")
RAM_STYLES = ("auto", "block", "distributed")


@dataclass(frozen=True)
class SystolicRtlOptions:
    """RTL-only options (not part of the arch spec's timing).

    Attributes
    ----------
    multiplier : str
        ``"inferred"`` (default): ``a * b`` and a fabric product register, for any
        target. ``"ecp5_dsp"``: one ``MULT18X18D`` primitive per PE with its input
        registers (duplicating the PE's operand registers) and, with
        ``mult_pipeline_stages=1``, its output register as the product register;
        WS/IS builds, operands up to 18 bits. Simulation uses the behavioural model
        :func:`rtl.systolic.ecp5.mult18x18d_sim_model`.
    out_ram : str
        ``"auto"`` (the synthesizer chooses), ``"block"`` or ``"distributed"``: a
        ``ram_style`` hint for the output buffer. ECP5 block RAM has no output
        register in yosys' mapping (5.8 ns clock-to-out), so the ECP5 target uses
        ``"distributed"``.
    left_depth, top_depth, out_depth : int
        Entries per lane of the local tile buffers. ``0`` (default) picks
        ``max(64, 4 * max(rows, cols))`` rounded up to a power of two. A tile
        needs ``m`` (WS) / ``n`` (IS) / ``k`` (OS) left entries, ``R`` (WS/IS) or
        ``k`` (OS) top entries, and ``m`` / ``n`` / ``R`` output entries, from
        its base addresses.
    """

    left_depth: int = 0
    top_depth: int = 0
    out_depth: int = 0
    multiplier: str = "inferred"
    out_ram: str = "auto"

    def resolved(self, rows: int, cols: int) -> "SystolicRtlOptions":
        default = 1 << ceil_log2(max(64, 4 * max(rows, cols)))
        for key in ("left_depth", "top_depth", "out_depth"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{key}: expected a positive integer, got {v!r}")
        if self.multiplier not in MULTIPLIERS:
            raise ValueError(f"multiplier: expected one of {', '.join(MULTIPLIERS)}, got {self.multiplier!r}")
        if self.out_ram not in RAM_STYLES:
            raise ValueError(f"out_ram: expected one of {', '.join(RAM_STYLES)}, got {self.out_ram!r}")
        return SystolicRtlOptions(
            left_depth=self.left_depth or default,
            top_depth=self.top_depth or default,
            out_depth=self.out_depth or default,
            multiplier=self.multiplier,
            out_ram=self.out_ram,
        )


@dataclass(frozen=True)
class SystolicConfig:
    """Everything the hardware is built from: the template's params plus RTL options."""

    rows: int
    cols: int
    dataflow: str  # ws | os | is | auto
    input_bits: int
    weight_bits: int
    acc_bits: int
    double_buffered: bool
    mult_pipeline_stages: int
    left_depth: int
    top_depth: int
    out_depth: int
    multiplier: str = "inferred"
    out_ram: str = "auto"

    @classmethod
    def from_params(cls, params, options: SystolicRtlOptions | None = None) -> "SystolicConfig":
        options = (options or SystolicRtlOptions()).resolved(params.rows, params.cols)
        return cls(
            rows=params.rows,
            cols=params.cols,
            dataflow=params.dataflow,
            input_bits=PRECISION_BITS[params.input_precision],
            weight_bits=PRECISION_BITS[params.weight_precision],
            acc_bits=PRECISION_BITS[params.acc_precision],
            double_buffered=params.preload == "double_buffered" and params.dataflow != "os",
            mult_pipeline_stages=int(params.mult_pipeline_stages),
            left_depth=options.left_depth,
            top_depth=options.top_depth,
            out_depth=options.out_depth,
            multiplier=options.multiplier,
            out_ram=options.out_ram,
        )

    # ---- derived sizes -------------------------------------------------
    def __post_init__(self):
        if self.multiplier == "ecp5_dsp":
            if self.dataflow in ("os", "auto"):
                raise ValueError(f"multiplier: ecp5_dsp needs a ws or is build, got dataflow {self.dataflow!r}")
            if max(self.input_bits, self.weight_bits) > 18:
                raise ValueError("multiplier: ecp5_dsp needs operands of at most 18 bits")

    @property
    def has_os(self) -> bool:
        return self.dataflow in ("os", "auto")

    @property
    def has_wsis(self) -> bool:
        return self.dataflow != "os"

    @property
    def dataflows(self) -> tuple[str, ...]:
        """Tile dataflows this build executes (WS and IS share one datapath)."""
        return tuple(d for d in ("ws", "os", "is") if (d == "os" and self.has_os) or (d != "os" and self.has_wsis))

    @property
    def lane_bits(self) -> int:
        """Width of a left/top buffer lane: both operands fit (WS/IS swap them)."""
        return max(self.input_bits, self.weight_bits)

    @property
    def addr_bits(self) -> int:
        return max(1, ceil_log2(max(self.left_depth, self.top_depth, self.out_depth)))

    @property
    def dim_bits(self) -> int:
        return max(self.left_depth, self.top_depth, self.out_depth, self.rows, self.cols).bit_length()

    @property
    def wr_data_bits(self) -> int:
        return max(max(self.rows, self.cols) * self.lane_bits, self.cols * self.acc_bits)

    @property
    def rd_data_bits(self) -> int:
        return self.cols * self.acc_bits

    def tile_cycles(self, dataflow: str, m: int, k: int, n: int, preload_hidden: bool = False) -> int:
        """Cycles the hardware takes for one tile (equals the contract's formula)."""
        streamed = {"ws": m, "is": n, "os": k}[dataflow]
        preload = 0 if (dataflow == "os" or (preload_hidden and self.double_buffered)) else self.rows
        return preload + streamed + self.rows + self.cols - 2 + self.mult_pipeline_stages

    def as_dict(self) -> dict:
        return asdict(self)


def systolic_signature(cfg: SystolicConfig) -> dict:
    """The top module's ports (besides ``clk`` and ``rst``), in documented order."""
    aw, dw = cfg.addr_bits, cfg.dim_bits
    return {
        # command (valid/ready handshake; one pending command is queued)
        "cmd_valid": In(1),
        "cmd_ready": Out(1),
        "cmd_dataflow": In(2),
        "cmd_m": In(dw),
        "cmd_k": In(dw),
        "cmd_n": In(dw),
        "cmd_accumulate": In(1),
        "cmd_preload_hidden": In(1),
        "cmd_left_base": In(aw),
        "cmd_top_base": In(aw),
        "cmd_out_base": In(aw),
        # buffer write port (host -> left / top / out buffer, all lanes at once)
        "wr_en": In(1),
        "wr_buf": In(2),
        "wr_addr": In(aw),
        "wr_data": In(cfg.wr_data_bits),
        # output buffer read port (data one cycle after rd_en)
        "rd_en": In(1),
        "rd_addr": In(aw),
        "rd_data": Out(cfg.rd_data_bits),
        "rd_valid": Out(1),
        # status
        "busy": Out(1),
        "tile_start": Out(1),
        "tile_done": Out(1),
        "tile_cycles": Out(32),
        "tiles_done": Out(32),
        "error": Out(1),
    }


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

    # -----------------------------------------------------------------
    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        R, C, P = cfg.rows, cfg.cols, cfg.mult_pipeline_stages
        lw, ab, aw, dw = cfg.lane_bits, cfg.acc_bits, cfg.addr_bits, cfg.dim_bits
        # cycle counters, with a spare bit so that "boundary - 1" of a zero boundary is never reached
        cw = 1 + max(dw + 1, (max(cfg.left_depth, cfg.top_depth, cfg.out_depth) + 2 * R + C + 2).bit_length())

        # ---------------- buffers ----------------
        def lane_mems(prefix, lanes, depth, shape, style="auto"):
            mems = []
            for i in range(lanes):
                attrs = {} if style == "auto" else {"ram_style": style}
                mem = Memory(shape=shape, depth=depth, init=[], attrs=attrs)
                m.submodules[f"{prefix}{i}"] = mem
                mems.append(mem)
            return mems

        left_mem = lane_mems("left_buf", R, cfg.left_depth, signed(lw))
        top_mem = lane_mems("top_buf", C, cfg.top_depth, signed(lw))
        out_mem = lane_mems("out_buf", C, cfg.out_depth, signed(ab), cfg.out_ram)
        left_rp = [mem.read_port() for mem in left_mem]
        top_rp = [mem.read_port() for mem in top_mem]
        out_wp = [mem.write_port() for mem in out_mem]
        out_rp = [mem.read_port(transparent_for=(wp,)) for mem, wp in zip(out_mem, out_wp)]
        for mems, code in ((left_mem, "left"), (top_mem, "top")):
            for i, mem in enumerate(mems):
                wp = mem.write_port()
                m.d.comb += [
                    wp.en.eq(self.wr_en & (self.wr_buf == BUFFER_CODES[code])),
                    wp.addr.eq(self.wr_addr),
                    wp.data.eq(self.wr_data[i * lw:(i + 1) * lw]),
                ]

        # ---------------- command queue (two pending entries: nxt = head, q1) ----------------
        # an entry holds the command and its decoded schedule (computed once, on accept, so
        # that launching a tile is a plain register copy)
        DERIVED = dict(os=1, L=cw, S=cw, last=cw, last_m1=cw, stream_end=cw, out_start=cw, out_len=cw,
                       out_end=cw, S_m1=cw, out_len_m1=cw, pre_skip=cw, lim_left=dw, lim_top=dw, lim_out=dw,
                       end0=1, pre0=1, top_last=aw, stream_end_m1=cw, out_start_m1=cw, out_end_m1=cw,
                       str0=1, ow0=1)

        def cmd_fields(prefix):
            fields = dict(
                valid=Signal(name=f"{prefix}_valid"),
                df=Signal(2, name=f"{prefix}_dataflow"),
                m=Signal(dw, name=f"{prefix}_m"),
                k=Signal(dw, name=f"{prefix}_k"),
                n=Signal(dw, name=f"{prefix}_n"),
                acc=Signal(name=f"{prefix}_accumulate"),
                hidden=Signal(name=f"{prefix}_hidden"),
                left_base=Signal(aw, name=f"{prefix}_left_base"),
                top_base=Signal(aw, name=f"{prefix}_top_base"),
                out_base=Signal(aw, name=f"{prefix}_out_base"),
            )
            for key, width in DERIVED.items():
                fields[key] = Signal(width, name=f"{prefix}_{key}")
            return fields

        def decode(c):
            """The schedule of a command (see the timing contract): expressions of its fields."""
            is_os = c["df"] == DATAFLOW_CODES["os"]
            is_is = c["df"] == DATAFLOW_CODES["is"]
            L = Mux(c["hidden"] | is_os, 0, R)
            S = Mux(is_os, c["k"], Mux(is_is, c["n"], c["m"]))
            out_start = Mux(is_os, c["k"] - 1 + P, L + (R - 1 + P))
            out_len = Mux(is_os, R, S)
            last = L + S + (R + C - 3 + P)
            return dict(
                os=is_os, L=L, S=S, last=last, last_m1=last - 1, stream_end=L + S, out_start=out_start,
                out_len=out_len, out_end=out_start + out_len, S_m1=S - 1, out_len_m1=out_len - 1,
                pre_skip=R - c["k"], lim_left=Mux(is_os, c["m"], c["k"]), lim_top=Mux(is_is, c["m"], c["n"]),
                lim_out=Mux(is_is, c["m"], c["n"]), end0=last == 0, pre0=L != 0,
                top_last=(c["top_base"] + (R - 1))[:aw], stream_end_m1=L + S - 1,
                out_start_m1=out_start - 1, out_end_m1=out_start + out_len - 1, str0=L == 0, ow0=out_start == 0,
            )

        def assign(dst, src, valid):
            return [dst[k].eq(src[k]) for k in dst if k != "valid"] + [dst["valid"].eq(valid)]

        nxt = cmd_fields("nxt")
        q1 = cmd_fields("q1")
        nxt_loaded = Signal()
        launch = Signal()
        error = Signal()
        m.d.comb += [self.cmd_ready.eq(~q1["valid"]), self.error.eq(error)]

        incoming = dict(
            df=self.cmd_dataflow, m=self.cmd_m, k=self.cmd_k, n=self.cmd_n, acc=self.cmd_accumulate,
            hidden=self.cmd_preload_hidden & (self.cmd_dataflow != DATAFLOW_CODES["os"]) & int(cfg.double_buffered),
            left_base=self.cmd_left_base, top_base=self.cmd_top_base, out_base=self.cmd_out_base,
        )
        incoming.update(decode(incoming))
        accept = self.cmd_valid & self.cmd_ready
        with m.If(launch):
            m.d.sync += nxt_loaded.eq(0)
            with m.If(q1["valid"]):
                m.d.sync += assign(nxt, q1, 1)
                m.d.sync += assign(q1, incoming, accept)
            with m.Else():
                m.d.sync += assign(nxt, incoming, accept)
        with m.Elif(accept):
            with m.If(nxt["valid"]):
                m.d.sync += assign(q1, incoming, 1)
            with m.Else():
                m.d.sync += assign(nxt, incoming, 1)
                m.d.sync += nxt_loaded.eq(0)

        supported = Signal()
        m.d.comb += supported.eq(
            Cat(*[self.cmd_dataflow == DATAFLOW_CODES[d] for d in cfg.dataflows]).any()
        )
        with m.If(accept):
            bad_hidden = self.cmd_preload_hidden & ((self.cmd_dataflow == DATAFLOW_CODES["os"])
                                                    | int(not cfg.double_buffered))
            zero_dim = (self.cmd_m == 0) | (self.cmd_k == 0) | (self.cmd_n == 0)
            with m.If(~supported | bad_hidden | zero_dim):
                m.d.sync += error.eq(1)

        # ---------------- fetch-level FSM (current tile) ----------------
        run = Signal()
        cnt = Signal(cw)
        cur_os = Signal()
        cur_L = Signal(cw)  # preload length (R or 0)
        cur_S = Signal(cw)  # streamed length
        cur_last = Signal(cw)  # tile cycles - 1
        cur_last_m1 = Signal(cw)
        cur_out_start = Signal(cw)
        cur_out_len = Signal(cw)
        cur_stream_end = Signal(cw)  # L + S
        cur_out_end = Signal(cw)  # out_start + out_len
        cur_S_m1 = Signal(cw)
        cur_out_len_m1 = Signal(cw)
        cur_pre_skip = Signal(cw)  # preload shifts before the first real row (R - k)
        scnt = Signal(cw)  # streamed items so far
        top_ptr = Signal(aw)  # top buffer address: counts down in a preload, up in an OS stream
        left_ptr = Signal(aw)  # left buffer address of the next streamed item
        ld_ptr = Signal(aw)  # loader's top buffer address (counts down)
        orow = Signal(cw)  # output rows presented at column 0 so far
        cur_k = Signal(dw)
        cur_m = Signal(dw)
        cur_lim_left = Signal(dw)
        cur_lim_top = Signal(dw)
        cur_lim_out = Signal(dw)
        cur_acc = Signal()
        cur_left_base = Signal(aw)
        cur_top_base = Signal(aw)
        cur_out_base = Signal(aw)

        # loader of the shadow bank for the queued head command when it has preload_hidden:
        # R shifts, the first in the cycle it starts (ld_go), while the chain is free
        ld_run = Signal()
        ld_cnt = Signal(range(max(R, 2)))
        ld_go = Signal()
        ld_idx = Mux(ld_run, ld_cnt, 0)
        ld_addr = Mux(ld_run, ld_ptr, nxt["top_last"])

        # ld_last: the loader's last shift is in this cycle (for R > 1 it is always a running loader)
        ld_last = (ld_run & (ld_cnt == R - 1)) if R > 1 else ld_go
        nxt_ready = nxt["valid"] & (~nxt["hidden"] | nxt_loaded | ld_last)
        # registered flags keep the launch decision (which fans out to the whole queue) shallow
        at_end = Signal()  # run and cnt == cur_last
        pre_r = Signal()  # run and in the serial preload (cnt < R)
        stream_r = Signal()  # run and L <= cnt < L + S
        outwin_r = Signal()  # run and out_start <= cnt < out_start + out_len
        cur_stream_end_m1 = Signal(cw)
        cur_out_start_m1 = Signal(cw)
        cur_out_end_m1 = Signal(cw)
        m.d.comb += launch.eq(nxt_ready & (~run | at_end))

        with m.If(launch):
            m.d.sync += [
                run.eq(1),
                cnt.eq(0),
                at_end.eq(nxt["end0"]),
                pre_r.eq(nxt["pre0"]),
                stream_r.eq(nxt["str0"]),
                outwin_r.eq(nxt["ow0"]),
                cur_stream_end_m1.eq(nxt["stream_end_m1"]),
                cur_out_start_m1.eq(nxt["out_start_m1"]),
                cur_out_end_m1.eq(nxt["out_end_m1"]),
                cur_last_m1.eq(nxt["last_m1"]),
                scnt.eq(0),
                orow.eq(0),
                top_ptr.eq(Mux(nxt["os"], nxt["top_base"], nxt["top_last"])),
                left_ptr.eq(nxt["left_base"]),
                cur_stream_end.eq(nxt["stream_end"]),
                cur_out_end.eq(nxt["out_end"]),
                cur_S_m1.eq(nxt["S_m1"]),
                cur_out_len_m1.eq(nxt["out_len_m1"]),
                cur_pre_skip.eq(nxt["pre_skip"]),
                cur_os.eq(nxt["os"]),
                cur_L.eq(nxt["L"]),
                cur_S.eq(nxt["S"]),
                cur_last.eq(nxt["last"]),
                cur_out_start.eq(nxt["out_start"]),
                cur_out_len.eq(nxt["out_len"]),
                cur_k.eq(nxt["k"]),
                cur_m.eq(nxt["m"]),
                cur_lim_left.eq(nxt["lim_left"]),
                cur_lim_top.eq(nxt["lim_top"]),
                cur_lim_out.eq(nxt["lim_out"]),
                cur_acc.eq(nxt["acc"]),
                cur_left_base.eq(nxt["left_base"]),
                cur_top_base.eq(nxt["top_base"]),
                cur_out_base.eq(nxt["out_base"]),
            ]
        with m.Elif(at_end):
            m.d.sync += [run.eq(0), at_end.eq(0), pre_r.eq(0), stream_r.eq(0), outwin_r.eq(0)]
        with m.Elif(run):
            m.d.sync += [cnt.eq(cnt + 1), at_end.eq(cnt == cur_last_m1)]
            with m.If(pre_r & (cnt == R - 1)):
                m.d.sync += [pre_r.eq(0), stream_r.eq(1)]
            with m.If(cnt == cur_stream_end_m1):
                m.d.sync += stream_r.eq(0)
            with m.If(cnt == cur_out_start_m1):
                m.d.sync += outwin_r.eq(1)
            with m.If(cnt == cur_out_end_m1):
                m.d.sync += outwin_r.eq(0)

        # phases: comparisons of the counter with boundaries computed at launch (no adders here)
        preload = run & pre_r
        stream = stream_r
        outwin = outwin_r
        with m.If(~launch & stream):
            m.d.sync += [scnt.eq(scnt + 1), left_ptr.eq(left_ptr + 1)]
        with m.If(~launch & (preload | (stream & cur_os))):
            m.d.sync += top_ptr.eq(Mux(cur_os, top_ptr + 1, top_ptr - 1))
        with m.If(~launch & outwin):
            m.d.sync += orow.eq(orow + 1)
        prow = Signal(cw)  # preload row presented at the top: R-1-s
        m.d.comb += prow.eq(R - 1 - cnt)
        ld_row = Signal(cw)
        m.d.comb += ld_row.eq(R - 1 - ld_idx)

        chain_free = ~run | (~cur_os & ~pre_r)
        if cfg.double_buffered:
            m.d.comb += ld_go.eq(ld_run | (nxt["valid"] & nxt["hidden"] & ~nxt_loaded & chain_free))
            with m.If(ld_go):
                with m.If(ld_last):
                    m.d.sync += [ld_run.eq(0), ld_cnt.eq(0)]
                    with m.If(~launch):
                        m.d.sync += nxt_loaded.eq(1)
                with m.Else():
                    m.d.sync += [ld_run.eq(1), ld_cnt.eq(ld_idx + 1), ld_ptr.eq(ld_addr - 1)]

        # ---- fetch-level tokens ----
        # top lane 0 token: preload / shadow loader / OS stream
        t_valid = Signal()
        t_addr = Signal(aw)
        t_lim = Signal(dw)
        with m.If(ld_go):
            m.d.comb += [t_valid.eq(ld_idx >= nxt["pre_skip"]), t_addr.eq(ld_addr),
                         t_lim.eq(nxt["lim_top"])]
        with m.Elif(preload):
            m.d.comb += [t_valid.eq(cnt >= cur_pre_skip), t_addr.eq(top_ptr), t_lim.eq(cur_lim_top)]
        with m.Elif(stream & cur_os):
            m.d.comb += [t_valid.eq(1), t_addr.eq(top_ptr), t_lim.eq(cur_lim_top)]
        shift_f = ld_go | preload | (run & cur_os)
        swap_f = Signal()
        if cfg.double_buffered:
            m.d.comb += swap_f.eq((preload & (cnt == R - 1)) | (launch & nxt["hidden"]))

        # left lane 0 token: the stream
        l_valid = stream
        l_addr = Signal(aw)
        m.d.comb += l_addr.eq(left_ptr)
        l_first = scnt == 0
        l_last = scnt == cur_S_m1

        # output column 0 token
        o_present = outwin
        o_we = Mux(cur_os, orow < cur_m, 1)
        o_last = orow == cur_out_len_m1

        # ---- skew pipelines (fetch level: lane i = lane 0 delayed by i) ----
        def delay_line(name, sig, n, shape=None):
            out = [sig]
            for i in range(1, n):
                s = Signal(shape if shape is not None else len(sig), name=f"{name}_{i}")
                m.d.sync += s.eq(out[-1])
                out.append(s)
            return out

        # token stage: the lane-0 tokens (address, valid, lane limit) leave the FSM through a
        # register; the RAM addresses and the lane masks come from there (the read is issued
        # one cycle after fetch: data +2, edge register +3 = FETCH_LATENCY)
        def treg(name, sig):
            q = Signal(len(sig), name=name)
            m.d.sync += q.eq(sig)
            return q

        lq_addr = delay_line("left_addr", treg("left_addr_0", l_addr), R)
        lq_valid = delay_line("left_valid", treg("left_valid_0", l_valid), R, 1)
        lq_lim = delay_line("left_lim", treg("left_lim_0", cur_lim_left), R)
        lf = delay_line("left_first", l_first, R, 1) if cfg.has_os else None
        ll = delay_line("left_last", l_last, R, 1) if cfg.has_os else None
        left_ok_t = []
        for r in range(R):
            m.d.comb += left_rp[r].addr.eq(lq_addr[r])
            left_ok_t.append(lq_valid[r] & (r < lq_lim[r]))

        tq_addr = treg("top_addr_0", t_addr)
        tq_valid = treg("top_valid_0", t_valid)
        tq_lim = treg("top_lim_0", t_lim)
        os_q = treg("top_skew", run & cur_os)
        if cfg.has_os:
            ta = delay_line("top_addr", tq_addr, C)
            tv = delay_line("top_valid", tq_valid & os_q, C, 1)
            tl = delay_line("top_lim", tq_lim, C)
        top_ok_t = []
        for c in range(C):
            if cfg.has_os and cfg.has_wsis:
                addr = Mux(os_q, ta[c], tq_addr)
                ok = Mux(os_q, tv[c] & (c < tl[c]), tq_valid & (c < tq_lim))
            elif cfg.has_os:
                addr, ok = ta[c], tv[c] & (c < tl[c])
            else:
                addr, ok = tq_addr, tq_valid & (c < tq_lim)
            m.d.comb += top_rp[c].addr.eq(addr)
            top_ok_t.append(ok)

        # ---------------- array level (FETCH_LATENCY cycles after fetch) ----------------
        # fetch computes addresses; +1 they are registered at the RAMs; +2 the read data
        # appears; +3 it sits in the edge registers (left_in / top_in) that feed the PEs,
        # so no PE path starts at a RAM and no RAM address comes from the FSM's logic.
        def reg(name, sig, shape=None):
            s = Signal(shape if shape is not None else len(sig), name=name)
            m.d.sync += s.eq(sig)
            return s

        def late(name, sig, shape=None, stages=FETCH_LATENCY):
            for i in range(stages):
                sig = reg(f"{name}_d{i + 1}" if i < stages - 1 else name, sig, shape)
            return sig

        f_start = run & (cnt == 0)
        run_d = [run]
        for i in range(FETCH_LATENCY):
            run_d.append(reg(f"run_d{i + 1}", run_d[-1]))
        a_tile_start = late("a_tile_start", f_start, 1)
        a_os = late("a_os", cur_os)
        a_lim_out = late("a_lim_out", cur_lim_out)
        a_acc = late("a_acc", cur_acc)
        a_shift = late("a_shift", shift_f, 1)
        a_swap = late("a_swap", swap_f, 1)
        if cfg.has_os:
            a_first = [late(f"a_first_{r}", lf[r], 1) for r in range(R)]
            a_lastf = [late(f"a_last_{r}", ll[r], 1) for r in range(R)]
        a_o = [(late("a_o_present_0", o_present, 1), late("a_o_we_0", o_we, 1),
                late("a_o_addr_0", (cur_out_base + orow)[:aw], aw), late("a_o_last_0", o_last, 1))]
        for c in range(1, C):
            a_o.append(tuple(reg(f"a_o_{nm}_{c}", s) for nm, s in zip(("present", "we", "addr", "last"), a_o[-1])))

        # edge registers: read data masked with the (one cycle late) lane-valid, then registered
        left_in, left_in_d = [], []
        for r in range(R):
            ok = late(f"left_ok_{r}", left_ok_t[r], 1, FETCH_LATENCY - 2)
            left_in_d.append(Mux(ok, left_rp[r].data, 0))
            left_in.append(reg(f"left_in_{r}", left_in_d[-1], signed(lw)))
        top_in = []
        for c in range(C):
            ok = late(f"top_ok_{c}", top_ok_t[c], 1, FETCH_LATENCY - 2)
            top_in.append(reg(f"top_in_{c}", Mux(ok, top_rp[c].data, 0), signed(lw)))

        # ---------------- PE grid ----------------
        x = [[None] * C for _ in range(R)]
        fl = [[None] * C for _ in range(R)]
        sh = [[Signal(signed(lw), name=f"pe_{r}_{c}_sh") for c in range(C)] for r in range(R)]
        psum = [[Signal(signed(ab), name=f"pe_{r}_{c}_psum") for c in range(C)] for r in range(R)]
        col_out = [Signal(signed(ab), name=f"col_out_{c}") for c in range(C)]
        use_dsp = cfg.multiplier == "ecp5_dsp"
        a_of = [[None] * C for _ in range(R)]  # operand of PE(r, c) (a register's output)
        for c in range(C):
            bus_terms = []
            for r in range(R):
                a_in = left_in[r] if c == 0 else x[r][c - 1]
                a_of[r][c] = a_in
                # the value a_in takes in the next cycle (its register's D input)
                a_next = left_in_d[r] if c == 0 else a_of[r][c - 1]
                if c < C - 1:
                    x[r][c] = reg(f"pe_{r}_{c}_x", a_in, signed(lw))
                if cfg.has_os:
                    f_in = Cat(a_first[r], a_lastf[r]) if c == 0 else fl[r][c - 1]
                    if c < C - 1:
                        fl[r][c] = reg(f"pe_{r}_{c}_flags", f_in, 2)
                sh_d = top_in[c] if r == 0 else sh[r - 1][c]
                with m.If(a_shift):
                    m.d.sync += sh[r][c].eq(sh_d)
                sh_next = Mux(a_shift, sh_d, sh[r][c])
                if cfg.double_buffered:
                    w_act = Signal(signed(lw), name=f"pe_{r}_{c}_w")
                    with m.If(a_swap):
                        m.d.sync += w_act.eq(sh_next)
                    w_next = Mux(a_swap, sh_next, w_act)
                else:
                    w_act = sh[r][c]
                    w_next = sh_next
                if cfg.has_os and cfg.has_wsis:
                    w = Mux(a_os, sh_d, w_act)
                elif cfg.has_os:
                    w = sh_d
                else:
                    w = w_act
                f_u = None
                if use_dsp:
                    # MULT18X18D: its input registers load a_next / w_next, so they hold a_in / w
                    # (duplicates of the PE's operand registers); with P = 1 its output register
                    # is the product register
                    p_out = Signal(36, name=f"pe_{r}_{c}_dsp_p")
                    m.submodules[f"pe_{r}_{c}_dsp"] = mult18x18d(a_next, w_next, p_out, output_reg=bool(P))
                    prod_u = Signal(signed(2 * lw), name=f"pe_{r}_{c}_prod")
                    m.d.comb += prod_u.eq(p_out[:2 * lw])
                else:
                    prod = Signal(signed(2 * lw), name=f"pe_{r}_{c}_mul")
                    m.d.comb += prod.eq(a_in * w)
                    if P:
                        prod_u = reg(f"pe_{r}_{c}_prod", prod, signed(2 * lw))
                        f_u = reg(f"pe_{r}_{c}_flags_p", f_in, 2) if cfg.has_os else None
                    else:
                        prod_u = prod
                        f_u = f_in if cfg.has_os else None
                add_ws = Const(0, signed(ab)) if r == 0 else psum[r - 1][c]
                if cfg.has_os:
                    add_os = Mux(f_u[0], 0, psum[r][c])
                    addend = Mux(a_os, add_os, add_ws) if cfg.has_wsis else add_os
                else:
                    addend = add_ws
                total = Signal(signed(ab), name=f"pe_{r}_{c}_sum")
                m.d.comb += total.eq(addend + prod_u)
                m.d.sync += psum[r][c].eq(total)
                if cfg.has_os:
                    bus_terms.append(Mux(f_u[1], total, 0))
                if r == R - 1:
                    bottom = total
            if cfg.has_os:
                bus = Signal(signed(ab), name=f"os_bus_{c}")
                acc = bus_terms[0]
                for t in bus_terms[1:]:
                    acc = acc | t
                m.d.comb += bus.eq(acc)
                m.d.comb += col_out[c].eq(Mux(a_os, bus, bottom) if cfg.has_wsis else bus)
            else:
                m.d.comb += col_out[c].eq(bottom)

        # ---------------- output buffer: read-modify-write over four stages ----------------
        # t: value presented, buffer read issued (transparent to this cycle's write); t+1: RAM
        # data; t+2: data registered, new value computed; t+3: new value registered and written.
        # The two entries whose writes a read in t cannot see (written at the ends of t+1 and
        # t+2) are forwarded, so back-to-back accumulation onto the same rows is exact.
        any_write = []
        host_we = self.wr_en & (self.wr_buf == BUFFER_CODES["out"])
        for c in range(C):
            present, we_row, addr, _last = a_o[c]  # addr: absolute output buffer address
            we = present & we_row & (c < a_lim_out)
            b_we, b_addr = reg(f"out_b_we_{c}", we, 1), reg(f"out_b_addr_{c}", addr, aw)
            b_val, b_acc = reg(f"out_b_val_{c}", col_out[c], signed(ab)), reg(f"out_b_acc_{c}", a_acc, 1)
            c_we, c_addr = reg(f"out_c_we_{c}", b_we, 1), reg(f"out_c_addr_{c}", b_addr, aw)
            c_val, c_acc = reg(f"out_c_val_{c}", b_val, signed(ab)), reg(f"out_c_acc_{c}", b_acc, 1)
            c_old = reg(f"out_c_old_{c}", out_rp[c].data, signed(ab))
            new = Signal(signed(ab), name=f"out_new_{c}")
            d_we, d_addr, d_new = reg(f"out_d_we_{c}", c_we, 1), reg(f"out_d_addr_{c}", c_addr, aw), \
                reg(f"out_d_new_{c}", new, signed(ab))
            e_new = reg(f"out_e_new_{c}", d_new, signed(ab))  # only the value: fwd_e is decided from D
            # forwarding selects, decided one cycle ahead (entry in B vs the entries in C and D)
            fwd_d = reg(f"out_fwd_d_{c}", b_we & c_we & (b_addr == c_addr), 1)
            fwd_e = reg(f"out_fwd_e_{c}", b_we & d_we & (b_addr == d_addr), 1)
            old = Mux(fwd_d, d_new, Mux(fwd_e, e_new, c_old))
            m.d.comb += new.eq(c_val + Mux(c_acc, old, 0))
            any_write += [we, b_we, c_we, d_we]
            m.d.comb += out_rp[c].addr.eq(Mux(present, addr, self.rd_addr))
            m.d.comb += [
                out_wp[c].en.eq(d_we | host_we),
                out_wp[c].addr.eq(Mux(d_we, d_addr, self.wr_addr)),
                out_wp[c].data.eq(Mux(d_we, d_new, self.wr_data[c * ab:(c + 1) * ab])),
            ]
        m.d.comb += self.rd_data.eq(Cat(*[rp.data for rp in out_rp]))
        m.d.sync += self.rd_valid.eq(self.rd_en)

        # ---------------- status ----------------
        present_l, _, _, last_l = a_o[C - 1]
        tile_done = present_l & last_l
        cyc = Signal(32)
        cyc_now = Mux(a_tile_start, 0, cyc)
        tiles = Signal(32)
        last_cycles = Signal(32)
        m.d.sync += cyc.eq(cyc_now + 1)
        with m.If(tile_done):
            m.d.sync += [last_cycles.eq(cyc_now + 1), tiles.eq(tiles + 1)]
        m.d.comb += [
            self.tile_start.eq(a_tile_start),
            self.tile_done.eq(tile_done),
            self.tile_cycles.eq(last_cycles),
            self.tiles_done.eq(tiles),
            self.busy.eq(nxt["valid"] | q1["valid"] | ld_run | Cat(*run_d).any() | Cat(*any_write).any()),
        ]
        return m
