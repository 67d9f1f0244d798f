"""Detailed model of the PIM template: DRAM commands, one by one.

:func:`schedule` expands a tile's plan into the commands of one channel, in
program order, and issues each at the earliest cycle every constraint allows,
tracking the state of every bank (open row, last ACT / RD / WR / PRE), the
channel's column bus, the four-activate window and refresh. It shares no
formula with the fast model (:mod:`archsim.templates.pim.fast`); tests check
that both give the same cycles, and :func:`archsim.templates.pim.checker.check_stream`
proves every stream it emits legal.

Command set (``bank == ALL_BANKS`` for the all-bank forms, HBM-PIM / AiM style):

========  ============================================================
ACT       open ``row`` in a bank (ACTAB: in every bank, same row)
MAC       RD-MAC: read one column into the bank's MAC unit (MACAB: all banks)
RD, WR    ordinary column read / write of one bank
PRE       close a bank (PREAB: all banks)
REF       all-bank refresh (every bank closed)
GBWR      write one column of the channel's global input buffer
RDACC     read one column of accumulators out to the ASIC
========  ============================================================

Row commands (ACT, PRE, REF) and column commands (MAC, RD, WR, GBWR, RDACC)
travel on separate command buses (as in HBM), at most one per bus per cycle;
commands issue in program order (times never decrease).

Scheduling rules beyond JEDEC (the controller's policy, documented in
docs/pim.md): an ACT or REF waits ``tCCD_S`` after a GBWR/RDACC; GBWR waits
for every bank to be precharged (the buffer is loaded between bursts) and
``tRTW`` after an RDACC's data (the data bus turns around: ``rdacc_turnaround``);
RDACC waits for the last MAC's data (``mac_drain``) and ``rdacc_spacing_cycles`` after the
previous RDACC (the interleaved partials' reduction takes one every ``P / 2`` cycles); a MAC waits
``mac_cycles_per_column`` after the previous one (the MAC unit is busy); before
each ACT a REF is issued if one is due; an ACT waits until every bank is
precharged (one row burst at a time per channel). An all-bank ACT counts as four
activates in the ``tFAW`` window.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archsim.templates.pim.tile import PimTile, _layout, dot_pieces, plan_steps

ALL_BANKS = -1
ROW_CMDS = ("ACT", "PRE", "REF")
COL_CMDS = ("MAC", "RD", "WR", "GBWR", "RDACC")


@dataclass(frozen=True, slots=True)
class Cmd:
    """One DRAM command of a channel's stream.

    ``time`` in command-clock cycles from the tile's start; ``bank`` is a bank
    index or ``ALL_BANKS``; ``row``/``col`` address the bank; ``acc`` is the
    accumulator a MAC adds into and ``in_off`` the input-buffer element
    offset it multiplies with (fields of the RD-MAC command, as in PIM-GPT's
    MAC command; unused by other commands)."""

    time: int
    channel: int
    bank: int
    cmd: str
    row: int = 0
    col: int = 0
    acc: int = 0
    in_off: int = 0

    def as_tuple(self) -> tuple[int, int, int, str, int]:
        return (self.time, self.channel, self.bank, self.cmd, self.row)

    def trace(self) -> str:
        b = "all" if self.bank == ALL_BANKS else str(self.bank)
        extra = f" col={self.col} acc={self.acc} in={self.in_off}" if self.cmd == "MAC" else ""
        return f"{self.time:>8} ch{self.channel} b{b:<3} {self.cmd:<5} row={self.row}{extra}"


# ----------------------------------------------------------------------------- program (untimed)


def program(tile: PimTile, p) -> list[tuple]:
    """The tile's commands in program order, untimed:
    ``(cmd, bank, row, col, acc, in_off, src)``.

    ``src`` says where the data come from, for placing operands and replaying
    values: MAC -> (weight row within the bank, element offset in that row);
    GBWR -> element offset in the input vector of the column written;
    RDACC -> (first weight row of the group, rows in the group).
    """
    steps = plan_steps(tile, p)
    out: list[tuple] = []
    if tile.kind == "write":
        row = 0
        for s in steps:
            for i in range(s[1]):
                b = i % tile.banks
                out.append(("ACT", b, row, 0, 0, 0, None))
                out.extend(("WR", b, row, c, 0, 0, None) for c in range(s[2]))
                out.append(("PRE", b, row, 0, 0, 0, None))
                if b == tile.banks - 1:
                    row += 1
        return out
    if not steps:
        return out
    ce = p.column_elements
    kc, per_row, chunks = _layout(tile, p)
    fits = tile.input_elements() * p.element_bytes <= p.input_buffer_bytes
    dram_row = 0

    def burst(cols: list[tuple]) -> None:
        nonlocal dram_row
        out.append(("ACT", ALL_BANKS, dram_row, 0, 0, 0, None))
        out.extend(("MAC", ALL_BANKS, dram_row, c, acc, off, src) for c, acc, off, src in cols)
        out.append(("PRE", ALL_BANKS, dram_row, 0, 0, 0, None))
        dram_row += 1

    def gbwr(first: int, elements: int) -> None:
        n = -(-(elements * p.element_bytes) // p.column_bytes)
        out.extend(("GBWR", ALL_BANKS, 0, c, 0, 0, first + c * ce) for c in range(n))

    def gather(nbytes: int, src: tuple) -> None:
        out.extend(("RDACC", ALL_BANKS, 0, c, 0, 0, src) for c in range(-(-nbytes // p.column_bytes)))

    if fits:
        gbwr(0, tile.input_elements())
    if tile.mode == "axpy":
        for r0 in range(0, tile.rows, per_row):
            cols = []
            for j in range(min(per_row, tile.rows - r0)):
                # token r0+j: its scalar is at buffer offset bank*rows + r0+j (in_off holds r0+j)
                cols.extend((j * kc + c, c, r0 + j, (r0 + j, c * ce)) for c in range(kc))
            burst(cols)
        gather(tile.banks * kc * ce * p.acc_bytes, (0, kc * ce))
        return out
    group = p.acc_registers
    big_r = p.row_columns
    _fits, pieces = dot_pieces(tile, p)
    for g0 in range(0, tile.rows, group):
        rg = min(group, tile.rows - g0)
        for k0, cc in pieces:
            base = 0 if fits else k0
            if not fits:
                gbwr(k0, min(cc * ce, tile.k - k0))
            total = rg * cc  # the piece's columns, back to back over DRAM rows (open-row layout)
            for j0 in range(0, total, big_r):
                cols = []
                for j in range(j0, min(total, j0 + big_r)):
                    r, c = divmod(j, cc)
                    e0 = k0 + c * ce
                    cols.append((j - j0, r, e0 - base, (g0 + r, e0)))
                burst(cols)
        gather(tile.banks * rg * p.acc_bytes, (g0, rg))
    return out


# ----------------------------------------------------------------------------- scheduler


class _Channel:
    """Timing state of one channel (all times are issue cycles)."""

    def __init__(self, p, ref_due: int):
        nb = p.banks_per_channel
        self.p = p
        self.open_row = [None] * nb
        self.act = [-(1 << 40)] * nb
        self.pre = [-(1 << 40)] * nb
        self.rd = [-(1 << 40)] * nb
        self.wr = [-(1 << 40)] * nb
        self.acts: list[int] = []  # ACT times, four per all-bank ACT
        self.act_group = [-(1 << 40)] * p.bank_groups  # last ACT per bank group
        self.read_group = [-(1 << 40)] * p.bank_groups  # last RD / MAC per bank group
        self.wr_group = [-(1 << 40)] * p.bank_groups  # last WR per bank group
        self.last_pre = -(1 << 40)
        self.last_row_cmd = -(1 << 40)
        self.row_bus_free = -(1 << 40)  # the row bus is busy for act_bus_cycles after an ACT
        self.last_col: tuple[int, frozenset] | None = None  # (time, bank groups touched)
        self.last_io = -(1 << 40)  # last GBWR / RDACC
        self.last_bus_read = -(1 << 40)  # last RD / RDACC, shifted by an RDACC's data beyond tCL
                                         # (the bus turnaround counts from the data)
        self.last_mac = -(1 << 40)
        self.last_rdacc = -(1 << 40)
        self.ref = -(1 << 40)
        self.due = ref_due
        self.now = 0

    def groups(self, bank: int, cmd: str = "MAC") -> frozenset:
        p = self.p
        if cmd in ("GBWR", "RDACC"):
            return frozenset()  # the global buffer and the accumulators are outside the bank groups
        if bank == ALL_BANKS:
            return frozenset(range(p.bank_groups))
        return frozenset([bank // (p.banks_per_channel // p.bank_groups)])

    def banks(self, bank: int) -> range:
        return range(self.p.banks_per_channel) if bank == ALL_BANKS else range(bank, bank + 1)

    def earliest(self, cmd: str, bank: int) -> int:
        p = self.p
        t = max(self.now, self.ref + p.tRFC)
        if cmd in ROW_CMDS:
            t = max(t, self.last_row_cmd + 1, self.row_bus_free)
        else:
            if self.last_col is not None:
                lt, lg = self.last_col
                t = max(t, lt + (p.tCCD_L if lg & self.groups(bank, cmd) else p.tCCD_S))
        bs = self.banks(bank)
        if cmd == "ACT":
            for b in bs:
                assert self.open_row[b] is None, "ACT to an open bank"
            # policy: one row burst at a time per channel (close page; all-bank bursts need it anyway,
            # single-bank KV writes are serialised too, see docs/pim.md)
            t = max(t, max(self.pre) + p.tRP)
            mine = self.groups(bank)
            for g, ta in enumerate(self.act_group):
                t = max(t, ta + (p.tRRD_L if g in mine else p.tRRD))
            need = 5 - (4 if bank == ALL_BANKS else 1)  # the ACT must be tFAW after acts[-need]
            if len(self.acts) >= need:
                t = max(t, self.acts[-need] + p.tFAW)
            t = max(t, self.last_io + p.tCCD_S)
        elif cmd in ("MAC", "RD", "WR"):
            for b in bs:
                assert self.open_row[b] is not None, f"{cmd} to a closed bank"
                t = max(t, self.act[b] + (p.tRCDWR if cmd == "WR" else p.tRCD))
            if cmd == "WR":  # read -> write bus turnaround, anywhere in the channel
                t = max(t, max(self.read_group) + p.tRTW, self.last_bus_read + p.tRTW)
            else:  # write -> read: tWTR_L in the WR's bank group, tWTR_S in the others
                t = max(t, max(self.wr_group[g] for g in self.groups(bank)) + p.tWTR,
                        max(self.wr_group) + p.tWTR_S)
            if cmd == "MAC":  # the MAC unit takes mac_cycles_per_column per column
                t = max(t, self.last_mac + p.mac_cycles_per_column)
        elif cmd == "PRE":
            t = max(t, self.last_pre + p.tPPD)
            for b in bs:
                t = max(t, self.act[b] + p.tRAS, self.rd[b] + p.tRTP, self.wr[b] + p.tWR)
        elif cmd == "REF":
            for b in range(p.banks_per_channel):
                assert self.open_row[b] is None, "REF with an open bank"
                t = max(t, self.pre[b] + p.tRP)
            t = max(t, self.last_io + p.tCCD_S)
        elif cmd == "GBWR":
            for b in range(p.banks_per_channel):
                assert self.open_row[b] is None, "GBWR with an open bank"
                t = max(t, self.pre[b] + p.tRP)
            t = max(t, self.last_bus_read + p.tRTW)  # the data bus turns around after an RDACC
        elif cmd == "RDACC":  # the partials' reduction takes an RDACC every rdacc_spacing_cycles
            t = max(t, self.last_mac + p.mac_drain, self.last_rdacc + p.rdacc_spacing_cycles)
        return t

    def issue(self, cmd: str, bank: int, row: int, t: int) -> None:
        self.now = t
        if cmd in ROW_CMDS:
            self.last_row_cmd = t
            if cmd == "ACT":
                self.row_bus_free = t + self.p.act_bus_cycles
                for g in self.groups(bank):
                    self.act_group[g] = t
            elif cmd == "PRE":
                self.last_pre = t
        else:
            if cmd in ("MAC", "RD"):
                for g in self.groups(bank, cmd):
                    self.read_group[g] = t
            elif cmd == "WR":
                for g in self.groups(bank, cmd):
                    self.wr_group[g] = t
            self.last_col = (t, self.groups(bank, cmd))
        for b in self.banks(bank) if cmd != "REF" else ():
            if cmd == "ACT":
                self.open_row[b] = row
                self.act[b] = t
            elif cmd == "PRE":
                self.open_row[b] = None
                self.pre[b] = t
            elif cmd in ("MAC", "RD"):
                self.rd[b] = t
            elif cmd == "WR":
                self.wr[b] = t
        if cmd == "ACT":
            self.acts.extend([t] * (4 if bank == ALL_BANKS else 1))
            del self.acts[:-4]
        elif cmd == "REF":
            self.ref = t
            self.due += self.p.tREFI
        elif cmd in ("GBWR", "RDACC"):
            self.last_io = t
        if cmd == "MAC":
            self.last_mac = t
        elif cmd == "RD":
            self.last_bus_read = max(self.last_bus_read, t)
        elif cmd == "RDACC":
            self.last_bus_read = max(self.last_bus_read, t + self.p.rdacc_latency - self.p.tCL)
            self.last_rdacc = t


def schedule(tile: PimTile, p, channel: int = 0) -> tuple[list[Cmd], int]:
    """Issue the tile's commands at their earliest legal cycles.

    Returns ``(commands, cycles)``: cycles is the tile's length (channel free
    and the last data arrived), the same quantity as the fast model's.
    """
    ch = _Channel(p, tile.ref_due)
    out: list[Cmd] = []
    end = 0
    for cmd, bank, row, col, acc, off, _src in program(tile, p):
        if cmd == "ACT":
            while True:
                t = ch.earliest("ACT", bank)
                if t < ch.due:
                    break
                tr = ch.earliest("REF", ALL_BANKS)
                ch.issue("REF", ALL_BANKS, 0, tr)
                out.append(Cmd(tr, channel, ALL_BANKS, "REF"))
        t = ch.earliest(cmd, bank)
        ch.issue(cmd, bank, row, t)
        out.append(Cmd(t, channel, bank, cmd, row, col, acc, off))
        if cmd == "MAC":
            end = max(end, t + p.mac_drain)
        elif cmd == "RDACC":
            end = max(end, t + p.rdacc_latency)
    # the channel is free when the banks are precharged, the refresh is over and the bus is idle
    free = max([ch.pre[b] + p.tRP for b in range(p.banks_per_channel) if ch.pre[b] >= 0] + [0])
    free = max(free, ch.ref + p.tRFC, ch.last_io + p.tCCD_S, end)
    if out and out[-1].cmd in ("GBWR",):
        free = max(free, out[-1].time + p.tCCD_S)
    return out, free


# ----------------------------------------------------------------------------- values


def place(tile: PimTile, p, weights: np.ndarray) -> np.ndarray:
    """Bank memory ``[banks, dram rows, row elements]`` holding ``weights[banks, rows, k]``
    where the tile's MAC commands read them (zeros elsewhere)."""
    ce, re = p.column_elements, p.row_bytes // p.element_bytes
    prog = program(tile, p)
    nrows = 1 + max((c[2] for c in prog if c[0] == "MAC"), default=0)
    dtype = np.int64 if p.mac_precision == "int8" else np.float32
    mem = np.zeros((tile.banks, nrows, re), dtype)
    k = weights.shape[-1]
    for cmd, _b, row, col, _acc, _off, src in prog:
        if cmd != "MAC":
            continue
        wrow, k0 = src
        n = max(0, min(ce, k - k0))
        mem[:, row, col * ce: col * ce + n] = weights[:, wrow, k0:k0 + n]
    return mem


def execute(commands: list[Cmd], tile: PimTile, p, mem: np.ndarray, x: np.ndarray, srcs: list) -> np.ndarray:
    """Replay a timed stream on bank memory ``mem``: the values the banks and the
    ASIC produce. dot: ``[banks, rows]``; axpy: ``[k]`` (partials added on the ASIC)."""
    from archsim.templates.pim import values as V

    prec = p.mac_precision
    ce = p.column_elements
    kc = -(-tile.k // ce)
    nin = tile.input_elements()
    xp = np.zeros(nin + 2 * p.input_buffer_bytes, mem.dtype)
    xp[: len(x)] = x
    buf = np.zeros(p.input_buffer_bytes // p.element_bytes + ce, mem.dtype)
    accs = V.zeros((tile.banks, max(p.acc_registers, kc * ce)), prec)
    # dot mode: P partial accumulators per accumulator, and the columns each has taken in the group
    P = p.accumulator_interleave
    parts = V.zeros((tile.banks, p.acc_registers, P), prec)
    taken = np.zeros(p.acc_registers, np.int64)
    fresh = False
    if tile.mode == "dot":
        out = V.zeros((tile.banks, tile.rows), prec)
    else:
        out = V.zeros((tile.k,), prec)
    for c, src in zip(commands, srcs):
        if c.cmd == "GBWR":
            buf[c.col * ce:(c.col + 1) * ce] = xp[src:src + ce]
        elif c.cmd == "MAC":
            if fresh:
                accs[:] = 0
                parts[:] = 0
                taken[:] = 0
                fresh = False
            w = mem[:, c.row, c.col * ce:(c.col + 1) * ce]
            if tile.mode == "dot":
                s = V.tree_sum(V.products(w, buf[c.in_off:c.in_off + ce][None, :], prec), prec)
                j = taken[c.acc] % P
                parts[:, c.acc, j] = V.accumulate(parts[:, c.acc, j], s, prec)
                taken[c.acc] += 1
            else:
                scal = buf[np.arange(tile.banks) * tile.rows + c.in_off][:, None]
                sl = slice(c.acc * ce, (c.acc + 1) * ce)
                accs[:, sl] = V.accumulate(accs[:, sl], V.products(w, scal, prec), prec)
        elif c.cmd == "RDACC":
            g0, rg = src
            if tile.mode == "dot":
                out[:, g0:g0 + rg] = V.reduce_partials(parts[:, :rg], prec)
            else:
                total = V.zeros((tile.k,), prec)
                for b in range(tile.banks):
                    total = V.accumulate(total, accs[b, : tile.k], prec)
                out = total
            fresh = True
    return out


def run_detailed(tile: PimTile, p, weights: np.ndarray, x: np.ndarray, channel: int = 0):
    """Schedule, place and replay: ``(values, cycles, commands)``."""
    cmds, cycles = schedule(tile, p, channel)
    prog = program(tile, p)
    # the scheduler adds REF commands; align the sources with the scheduled stream
    srcs, it = [], iter(prog)
    for c in cmds:
        srcs.append(None if c.cmd == "REF" else next(it)[6])
    mem = place(tile, p, weights)
    return execute(cmds, tile, p, mem, x, srcs), cycles, cmds
