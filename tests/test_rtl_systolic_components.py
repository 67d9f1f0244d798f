"""The systolic controller's components on their own (amaranth.sim, no HDL simulator needed).

Expected values by hand from the timing contract (archsim/templates/systolic/tile.py): a tile of
``R x C`` PEs takes ``L + S + R + C - 2 + P`` cycles (``L`` = R preload rows unless hidden or OS,
``S`` = m / n / k streamed items for WS / IS / OS); the output window of WS / IS starts at
``L + R - 1 + P`` and lasts ``S`` rows, that of OS at ``S - 1 + P`` for ``R`` rows.
Every test uses R = C = 4, P = 0 (64-entry buffers: 6 address bits).
"""
from __future__ import annotations

from archsim.templates.systolic import SystolicParams
from rtl.lib.cycle_counter import TileCycleCounter
from rtl.systolic.command_queue import CommandQueue
from rtl.systolic.config import DATAFLOW_CODES, SystolicConfig
from rtl.systolic.sequencer import ShadowLoader, TileSequencer
from rtl.systolic.skew import ArrayControl, LaneSkew
from tests.sim_trace import cycles_where, trace


def _cfg(dataflow="ws", preload="double_buffered"):
    return SystolicConfig.from_params(SystolicParams(rows=4, cols=4, dataflow=dataflow, preload=preload))


def _command(dut, dataflow, m, k, n, hidden=0, left=0, top=0, out=0):
    p = dut.cmd.payload
    return [(dut.cmd.valid, 1), (p.dataflow, DATAFLOW_CODES[dataflow]), (p.m, m), (p.k, k), (p.n, n),
            (p.preload_hidden, hidden), (p.left_base, left), (p.top_base, top), (p.out_base, out)]


def test_queue_decodes_a_ws_command_into_its_schedule():
    dut = CommandQueue(_cfg())
    head = dut.head
    names = ("L", "S", "last", "stream_end", "out_start", "out_len", "out_end", "pre_skip", "lim_left",
             "lim_top", "lim_out", "top_last", "end0", "pre0", "str0", "ow0", "left_base", "out_base")
    seen = trace(dut, 4, lambda t: _command(dut, "ws", m=5, k=3, n=2, left=10, top=20, out=30) if t == 0
                 else [(dut.cmd.valid, 0)],
                 {"valid": dut.head_valid, "ready": dut.head_ready, "error": dut.error,
                  **{nm: getattr(head, nm) for nm in names}})
    # taken at the edge closing cycle 0, registered in cycle 1, the queue head from cycle 2
    assert seen["valid"] == [0, 0, 1, 1] and seen["ready"] == [0, 0, 1, 1]
    # WS, not hidden: L = R = 4, S = m = 5; 4 + 5 + 4 + 4 - 2 = 15 cycles (last 14); the window
    # starts at L + R - 1 = 7 for S = 5 rows; R - k = 1 padding preload row; lanes k, n, n
    expect = dict(L=4, S=5, last=14, stream_end=9, out_start=7, out_len=5, out_end=12, pre_skip=1, lim_left=3,
                  lim_top=2, lim_out=2, top_last=23, end0=0, pre0=1, str0=0, ow0=0, left_base=10, out_base=30)
    assert {nm: seen[nm][2] for nm in names} == expect
    assert seen["error"] == [0] * 4


def test_queue_decodes_an_os_command_and_refuses_a_zero_dimension():
    dut = CommandQueue(_cfg("os"))
    cmds = {0: _command(dut, "os", m=2, k=6, n=3), 2: _command(dut, "os", m=0, k=6, n=3)}
    seen = trace(dut, 6, lambda t: cmds.get(t, [(dut.cmd.valid, 0)]),
                 {nm: getattr(dut.head, nm) for nm in ("L", "S", "last", "out_start", "out_len", "lim_left",
                                                       "lim_top")} | {"error": dut.error})
    # OS: no preload, S = k = 6: 6 + 4 + 4 - 2 = 12 cycles; window from S - 1 = 5 for R = 4 rows; lanes m, n
    assert {nm: v[2] for nm, v in seen.items() if nm != "error"} == dict(L=0, S=6, last=11, out_start=5, out_len=4,
                                                                        lim_left=2, lim_top=3)
    # the zero-m command is taken at 2, registered at 3, flagged (sticky) from 4
    assert seen["error"] == [0, 0, 0, 0, 1, 1]


def test_queue_holds_two_entries_and_a_registered_command_then_backs_up():
    dut = CommandQueue(_cfg())
    drive = {t: _command(dut, "ws", m=t + 1, k=4, n=4) for t in range(4)}
    drive[4] = [(dut.cmd.valid, 0), (dut.launch, 1)]
    drive[5] = [(dut.launch, 0)]
    seen = trace(dut, 8, lambda t: drive.get(t), {"ready": dut.cmd.ready, "m": dut.head.m,
                                                  "pending": dut.pending})
    # m = 1 (taken 0) heads from 2; m = 2 (taken 1) waits in q1; m = 3 (taken 2) in the command
    # register; from cycle 3 the register cannot move (q1 full): the command of cycle 3 is not taken
    assert seen["ready"][:5] == [1, 1, 1, 0, 0]
    assert seen["m"][2:5] == [1, 1, 1]
    # the launch in cycle 4 moves q1 to the head: q1 is free in 5, so the register takes again
    assert seen["m"][5:] == [2, 2, 2] and seen["ready"][5:7] == [1, 1]
    assert seen["pending"] == [0] + [1] * 7


def test_shadow_loader_shifts_r_rows_down_from_the_top_when_the_chain_is_free():
    dut = ShadowLoader(_cfg())
    head = dut.head
    fixed = [(head.hidden, 1), (head.top_last, 23), (head.pre_skip, 1), (dut.head_valid, 1), (dut.launch, 0)]
    drive = {0: fixed + [(dut.chain_free, 0), (dut.head_loaded, 0)], 2: [(dut.chain_free, 1)],
             6: [(dut.head_loaded, 1)]}  # the queue took the loaded_now of cycle 5
    probes = {"go": dut.go, "last": dut.last, "valid": dut.valid, "addr": dut.addr, "loaded_now": dut.loaded_now,
              "running": dut.running}
    seen = trace(dut, 9, lambda t: drive.get(t), probes)
    # the chain is busy in cycles 0-1; the loader shifts in 2, 3, 4, 5 (R = 4): top_last down to
    # top_last - 3; the first of R - k = 1 padding rows is not valid; the last shift flags the queue
    assert cycles_where(seen["go"]) == [2, 3, 4, 5]
    assert [seen["addr"][t] for t in range(2, 6)] == [23, 22, 21, 20]
    assert [seen["valid"][t] for t in range(2, 6)] == [0, 1, 1, 1]
    assert cycles_where(seen["last"]) == [5] and cycles_where(seen["loaded_now"]) == [5]
    assert cycles_where(seen["running"]) == [3, 4, 5]


def _ws_entry(head):
    """The schedule of a WS tile m = 2, k = n = 4 (R = C = 4), worked out by hand: L = 4, S = 2,
    4 + 2 + 4 + 4 - 2 = 12 cycles; stream at 4-5; output window at L + R - 1 = 7 for 2 rows."""
    vals = dict(os=0, L=4, S=2, last=11, last_m1=10, stream_end=6, stream_end_m1=5, out_start=7, out_start_m1=6,
                out_len=2, out_len_m1=1, out_end=9, out_end_m1=8, S_m1=1, pre_skip=0, lim_left=4, lim_top=4,
                lim_out=4, end0=0, pre0=1, str0=0, ow0=0, top_base=0, top_last=3, left_base=8, out_base=16, m=2,
                k=4, n=4)
    return [(getattr(head, k), v) for k, v in vals.items()]


def test_sequencer_launches_and_walks_preload_stream_and_output_window():
    dut = TileSequencer(_cfg())
    tok = dut.tok
    drive = {0: _ws_entry(dut.head) + [(dut.head_ready, 1)], 1: [(dut.head_ready, 0)]}
    seen = trace(dut, 15, lambda t: drive.get(t), {
        "launch": dut.launch, "run": tok.run, "start": tok.start, "shift": tok.shift, "swap": tok.swap,
        "top_valid": tok.top.valid, "top_addr": tok.top.addr, "left_valid": tok.left.valid,
        "left_addr": tok.left.addr, "first": tok.left.first, "last": tok.left.last, "present": tok.out.present,
        "out_addr": tok.out.addr, "out_last": tok.out.last})
    # launched in cycle 0: tile cycle x is cycle x + 1, x = 0..11
    assert cycles_where(seen["launch"]) == [0]
    assert cycles_where(seen["run"]) == list(range(1, 13)) and cycles_where(seen["start"]) == [1]
    # preload x = 0..3: top rows from top_last = 3 down to 0; the shadow bank swaps in at x = 3
    assert cycles_where(seen["shift"]) == [1, 2, 3, 4] and cycles_where(seen["top_valid"]) == [1, 2, 3, 4]
    assert [seen["top_addr"][t] for t in range(1, 5)] == [3, 2, 1, 0]
    assert cycles_where(seen["swap"]) == [4]
    # stream x = 4, 5 from left_base 8; output window x = 7, 8 from out_base 16
    assert cycles_where(seen["left_valid"]) == [5, 6] and [seen["left_addr"][t] for t in (5, 6)] == [8, 9]
    assert seen["first"][5] == 1 and seen["last"][6] == 1
    assert cycles_where(seen["present"]) == [8, 9] and [seen["out_addr"][t] for t in (8, 9)] == [16, 17]
    assert [seen["out_last"][t] for t in (8, 9)] == [0, 1]  # (a don't-care outside the window)


def test_lane_skew_delays_lane_i_by_i():
    dut = LaneSkew(_cfg())
    left, top = dut.tok.left, dut.tok.top
    drive = {0: [(left.addr, 5), (left.valid, 1), (left.lim, 3), (top.addr, 7), (top.valid, 1), (top.lim, 2)],
             1: [(left.valid, 0), (top.valid, 0)]}
    probes = {f"la{r}": dut.left_addr[r] for r in range(4)} | {f"lok{r}": dut.left_ok[r] for r in range(4)}
    probes |= {f"ta{c}": dut.top_addr[c] for c in range(4)} | {f"tok{c}": dut.top_ok[c] for c in range(4)}
    seen = trace(dut, 8, lambda t: drive.get(t), probes)
    # left lane r: address registered at +1, then r more; valid with the read data (+2 + r), lanes < 3
    assert [seen[f"la{r}"][1 + r] for r in range(4)] == [5] * 4
    assert [cycles_where(seen[f"lok{r}"]) for r in range(4)] == [[2], [3], [4], []]
    # WS top: every lane at once (the preload shifts down the chain), lanes < 2
    assert [seen[f"ta{c}"][1] for c in range(4)] == [7] * 4
    assert [cycles_where(seen[f"tok{c}"]) for c in range(4)] == [[2], [2], [], []]


def test_array_control_times_controls_and_output_tokens():
    dut = ArrayControl(_cfg())
    tok = dut.tok
    drive = {0: [(tok.run, 1), (tok.start, 1), (tok.shift, 1), (tok.lim_out, 2), (tok.out.present, 1),
                 (tok.out.we, 1), (tok.out.addr, 9), (tok.out.last, 1)],
             1: [(tok.run, 0), (tok.start, 0), (tok.shift, 0), (tok.out.present, 0), (tok.out.last, 0)]}
    probes = {"start": dut.tile_start, "done": dut.tile_done, "shift": dut.shift, "active": dut.active}
    probes |= {f"p{c}": dut.out_token[c].present for c in range(4)} | {f"we{c}": dut.out_token[c].we for c in range(4)}
    seen = trace(dut, 10, lambda t: drive.get(t), probes)
    # operand side: FETCH_LATENCY = 3; contract side: 3 + 1 - P = 4; column c one cycle after c - 1
    assert cycles_where(seen["shift"]) == [3] and cycles_where(seen["start"]) == [4]
    assert [cycles_where(seen[f"p{c}"]) for c in range(4)] == [[4], [5], [6], [7]]
    assert [cycles_where(seen[f"we{c}"]) for c in range(4)] == [[4], [5], [], []]  # lanes < lim_out = 2
    assert cycles_where(seen["done"]) == [7]  # the last column's last row
    assert cycles_where(seen["active"]) == [0, 1, 2, 3, 4]  # run and its 4 delayed copies


def test_cycle_counter_counts_start_through_done():
    dut = TileCycleCounter()
    pulses = {2: (1, 0), 6: (0, 1), 7: (1, 0), 9: (0, 1)}
    seen = trace(dut, 12, lambda t: list(zip((dut.start, dut.done), pulses.get(t, (0, 0)))),
                 {"cycles": dut.tile_cycles, "tiles": dut.tiles_done})
    # tile 1: cycles 2..6 = 5, shown from 7; tile 2 back to back: 7..9 = 3, shown from 10
    assert seen["cycles"] == [0] * 7 + [5] * 3 + [3] * 2
    assert seen["tiles"] == [0] * 7 + [1] * 3 + [2] * 2
