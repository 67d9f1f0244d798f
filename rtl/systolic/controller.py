"""Tile-command controller of the systolic design: command queue, tile FSM, operand fetch.

Commands arrive on a ``lib.stream`` (valid/ready) into a command register, then a two-entry
queue. A taken command is registered as it arrives and decoded into its schedule (preload length,
streamed length, window boundaries, last cycle; one adder deep) on its way from that register into
the queue, so no logic hangs off the command ports and launching a tile is a register copy. On an
idle engine a tile's fetch starts ``COMMAND_LATENCY_CYCLES`` after its command is taken; behind a
running tile the decode overlaps it (tiles run back to back, as the models count them).

Pipeline levels: the *fetch* level (the FSM; it issues the buffer reads), the operand side
``FETCH_LATENCY`` cycles later (the read data in the array's edge registers; shift / swap / os),
and the partial-sum side one cycle after that (the registered products meet the partial sums;
OS flags). Tile-local cycle ``x`` of the
timing contract is ``FETCH_LATENCY + 1 - P`` cycles after the fetch-level cycle in which the
FSM counter equals ``x`` (output tokens, ``tile_start``, ``tile_done``): with ``P = 0`` the
operands run one cycle ahead of the contract and the product register is hidden.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from rtl.systolic.config import (
    DATAFLOW_CODES,
    FETCH_LATENCY,
    SystolicConfig,
    command_signature,
    out_token_layout,
)


def controller_signature(cfg: SystolicConfig) -> wiring.Signature:
    R, C, aw = cfg.rows, cfg.cols, cfg.addr_bits
    members = {
        "cmd": In(command_signature(cfg)),
        # fetch level: buffer read addresses, one per lane
        "left_addr": Out(data.ArrayLayout(aw, R)), "top_addr": Out(data.ArrayLayout(aw, C)),
        # array level: lane valid bits (with the read data), array controls, output tokens
        "left_ok": Out(R), "top_ok": Out(C),
        "shift": Out(1), "swap": Out(1), "os": Out(1), "os_acc": Out(1),
        "out_token": Out(data.ArrayLayout(out_token_layout(cfg), C)),
        "out_busy": In(1),
        # status
        "busy": Out(1), "tile_start": Out(1), "tile_done": Out(1),
        "tile_cycles": Out(32), "tiles_done": Out(32), "error": Out(1),
    }
    if cfg.has_os:
        members.update({"first": Out(R), "last": Out(R)})
    return wiring.Signature(members)


class TileController(wiring.Component):
    """Runs tile commands with exactly the cycles of the timing contract (see the module docstring)."""

    def __init__(self, cfg: SystolicConfig):
        self.cfg = cfg
        super().__init__(controller_signature(cfg))

    def elaborate(self, platform):
        cfg = self.cfg
        m = Module()
        R, C, P = cfg.rows, cfg.cols, cfg.mult_pipeline_stages
        D = cfg.drain_cycles  # output side only: values reach the port D cycles later (pipelined edge adder)
        aw, dw = cfg.addr_bits, cfg.dim_bits
        cw = cfg.counter_bits
        cmd = self.cmd.payload

        # ---------------- command queue (two pending entries: nxt = head, q1) ----------------
        # an entry holds the command and its decoded schedule (computed once, as the command moves
        # in from the command register, so that launching a tile is a plain register copy)
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

        # ---------------- command register (the port side of the decode pipeline) ----------------
        # a taken command is registered as it arrives (with its streamed length and dataflow
        # flags: one mux level from the ports); its schedule is decoded from this register into
        # the queue a cycle later. No path starts at cmd.payload and ends past this register, so
        # a host driving the payload from its own registers (the AXI wrapper) adds no logic depth.
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
        taken = dict(
            df=cmd.dataflow, m=cmd.m, k=cmd.k, n=cmd.n, acc=cmd.accumulate, preload_hidden=cmd.preload_hidden,
            hidden=in_hidden, left_base=cmd.left_base, top_base=cmd.top_base, out_base=cmd.out_base,
            is_os=in_os, is_is=in_is, no_preload=in_hidden | in_os,
            S=Mux(in_os, cmd.k, Mux(in_is, cmd.n, cmd.m)),
        )

        def decode(c):
            """The schedule of a registered command (see the timing contract).

            Every field is the streamed length ``S`` (or one other field) plus a constant chosen by
            two flags (OS; no preload), so the decode is one adder deep: ``L`` is ``R`` or 0,
            ``last = L + S + R + C - 3 + P``, and the output window starts at ``S - 1 + P`` (OS)
            or ``L + R - 1 + P`` (WS / IS) and lasts ``R`` (OS) or ``S`` rows.
            """
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

        nxt = cmd_fields("nxt")
        q1 = cmd_fields("q1")
        nxt_loaded = Signal()
        launch = Signal()
        error = Signal()
        # the register takes a command while it is empty or moving into the queue (q1 empty)
        m.d.comb += [self.cmd.ready.eq(~raw["valid"] | ~q1["valid"]), self.error.eq(error)]
        take = self.cmd.valid & self.cmd.ready
        accept = raw["valid"] & ~q1["valid"]  # the registered command moves into the queue
        with m.If(take):
            m.d.sync += [raw[k].eq(v) for k, v in taken.items()]
        m.d.sync += raw["valid"].eq(take | (raw["valid"] & ~accept))

        incoming = {k: raw[k] for k in ("df", "m", "k", "n", "acc", "hidden", "left_base", "top_base", "out_base")}
        incoming.update(decode(raw))
        # q1's fields load on every accept (the register moves only into an empty q1), so only the
        # valid bits and the head's enable depend on launch
        fields = [k for k in nxt if k != "valid"]
        with m.If(accept):
            m.d.sync += [q1[k].eq(incoming[k]) for k in fields]
        nxt_load = launch | (accept & ~nxt["valid"])
        with m.If(nxt_load):
            m.d.sync += [nxt[k].eq(Mux(q1["valid"], q1[k], incoming[k])) for k in fields]
            m.d.sync += nxt_loaded.eq(0)
        nxt_valid_n = Mux(launch, q1["valid"] | accept, nxt["valid"] | accept)
        q1_valid_n = Mux(launch, 0, q1["valid"] | (accept & nxt["valid"]))
        m.d.sync += [nxt["valid"].eq(nxt_valid_n), q1["valid"].eq(q1_valid_n)]

        supported = Signal()
        m.d.comb += supported.eq(
            Cat(*[raw["df"] == DATAFLOW_CODES[d] for d in cfg.dataflows]).any()
        )
        with m.If(accept):
            bad_hidden = raw["preload_hidden"] & (raw["is_os"] | int(not cfg.double_buffered))
            zero_dim = (raw["m"] == 0) | (raw["k"] == 0) | (raw["n"] == 0)
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

        # ld_last: the loader's last shift is in this cycle (for R > 1 it is always a running loader;
        # ld_cnt == R - 1 is kept in a register, computed from the counter's next value)
        ld_cnt_next = Signal.like(ld_cnt)
        m.d.comb += ld_cnt_next.eq(ld_cnt)
        ld_cnt_last = Signal()
        m.d.sync += [ld_cnt.eq(ld_cnt_next), ld_cnt_last.eq(ld_cnt_next == R - 1)]
        ld_last = (ld_run & ld_cnt_last) if R > 1 else ld_go
        # nxt_ready = nxt valid & (not hidden | already loaded | loader's last shift now); the first
        # part is a register computed from the queue's next state
        nxt_rdy_r = Signal()
        nxt_ready = nxt_rdy_r | ld_last if cfg.double_buffered else nxt_rdy_r
        # registered flags keep the launch decision (which fans out to the whole queue) shallow
        at_end = Signal()  # run and cnt == cur_last
        pre_r = Signal()  # run and in the serial preload (cnt < R)
        stream_r = Signal()  # run and L <= cnt < L + S
        outwin_r = Signal()  # run and out_start <= cnt < out_start + out_len
        cur_stream_end_m1 = Signal(cw)
        cur_out_start_m1 = Signal(cw)
        cur_out_end_m1 = Signal(cw)
        free_r = Signal(init=1)  # ~run | at_end: the array is free for a launch in this cycle
        m.d.sync += free_r.eq(Mux(launch, nxt["end0"], ~run | at_end | (cnt == cur_last_m1)))
        m.d.comb += launch.eq(nxt_ready & free_r)

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
                    m.d.sync += ld_run.eq(0)
                    m.d.comb += ld_cnt_next.eq(0)
                    with m.If(~launch):
                        m.d.sync += nxt_loaded.eq(1)
                with m.Else():
                    m.d.sync += [ld_run.eq(1), ld_ptr.eq(ld_addr - 1)]
                    m.d.comb += ld_cnt_next.eq(ld_idx + 1)
        loaded_n = Mux(ld_go & ld_last & ~launch, 1, Mux(nxt_load, 0, nxt_loaded))
        hidden_n = Mux(nxt_load, Mux(q1["valid"], q1["hidden"], incoming["hidden"]), nxt["hidden"])
        m.d.sync += nxt_rdy_r.eq(nxt_valid_n & (~hidden_n | loaded_n))

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
            m.d.comb += self.left_addr[r].eq(lq_addr[r])
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
            m.d.comb += self.top_addr[c].eq(addr)
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

        # The operand side (edge registers, shift / swap, the operand os select) is FETCH_LATENCY
        # cycles after fetch. Every PE registers its product, and the partial sums run one cycle
        # after the operands (+1: flags, adds). Contract cycle x is at fetch + CONTRACT_LAG: with
        # P = 0 the operands run one cycle ahead of the contract and the product register is
        # hidden; with P = 1 it is the contract's +1.
        contract_lag = FETCH_LATENCY + 1 - P
        f_start = run & (cnt == 0)
        run_d = [run]
        for i in range(FETCH_LATENCY + 1):
            run_d.append(reg(f"run_d{i + 1}", run_d[-1]))
        a_tile_start = late("a_tile_start", f_start, 1, contract_lag)
        a_os = late("a_os", cur_os)
        # carry-save PEs accumulate in the cycle their operands arrive (no product register): the
        # partial-sum controls come with the operands, one cycle before the contract's add
        early = int(cfg.carry_save)
        a_os_acc = late("a_os_acc", cur_os, 1, contract_lag - early)
        # the output lane masks (c < lim) are registered: compared one stage before contract_lag
        lim_pre = late("a_lim_out", cur_lim_out, None, contract_lag - 1)
        out_lane_ok = [reg(f"out_lane_ok_{c}", c < lim_pre, 1) for c in range(C)]
        a_acc = late("a_acc", cur_acc, None, contract_lag)
        a_shift = late("a_shift", shift_f, 1)
        a_swap = late("a_swap", swap_f, 1)
        if cfg.has_os:
            flag_lag = FETCH_LATENCY + 1 - early
            a_first = [late(f"a_first_{r}", lf[r], 1, flag_lag) for r in range(R)]
            a_lastf = [late(f"a_last_{r}", ll[r], 1, flag_lag) for r in range(R)]
        a_o = [(late("a_o_present_0", o_present, 1, contract_lag), late("a_o_we_0", o_we, 1, contract_lag),
                late("a_o_addr_0", (cur_out_base + orow)[:aw], aw, contract_lag),
                late("a_o_last_0", o_last, 1, contract_lag))]
        for c in range(1, C):
            a_o.append(tuple(reg(f"a_o_{nm}_{c}", s) for nm, s in zip(("present", "we", "addr", "last"), a_o[-1])))

        # lane valid bits, aligned with the read data (one cycle after the registered addresses)
        for r in range(R):
            m.d.comb += self.left_ok[r].eq(late(f"left_ok_{r}", left_ok_t[r], 1, FETCH_LATENCY - 2))
        for c in range(C):
            m.d.comb += self.top_ok[c].eq(late(f"top_ok_{c}", top_ok_t[c], 1, FETCH_LATENCY - 2))
        m.d.comb += [self.shift.eq(a_shift), self.swap.eq(a_swap), self.os.eq(a_os), self.os_acc.eq(a_os_acc)]
        if cfg.has_os:
            m.d.comb += [self.first.eq(Cat(*a_first)), self.last.eq(Cat(*a_lastf))]
        for c in range(C):
            present, we_row, addr, last = a_o[c]  # addr: absolute output buffer address
            m.d.comb += [
                self.out_token[c].present.eq(present),
                self.out_token[c].we.eq(present & we_row & out_lane_ok[c]),
                self.out_token[c].addr.eq(addr),
                self.out_token[c].acc.eq(a_acc),
                self.out_token[c].last.eq(last),
            ]

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
            self.busy.eq(raw["valid"] | nxt["valid"] | q1["valid"] | ld_run | Cat(*run_d).any() | self.out_busy),
        ]
        return m
