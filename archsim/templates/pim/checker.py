"""Independent checker of DRAM command streams.

:func:`check_stream` takes any stream of ``(time, channel, bank, cmd, row)``
(``bank = -1`` for an all-bank command; ``cmd`` one of ACT, MAC, RD, WR,
PRE, REF, REFPB (per-bank refresh of ``bank``), GBWR, RDACC) and returns ``None`` if it breaks no constraint, else
the first :class:`Violation` (in stream order): the constraint's name, the
command's index and its cycle. It is written from the JEDEC definitions
(table in :mod:`archsim.templates.pim.params`), not from the scheduler.

Constraints checked, per channel:

=============  ==============================================================
``order``      times never decrease along the stream
``bus``        at most one row command (ACT/PRE/REF/REFPB) per cycle
``act_bus``    a row command while an ACT still holds the row bus
               (``act_bus_cycles``: HBM's ACT takes two cycles)
``state``      ACT to a closed bank; MAC/RD/WR to an open bank and its open
               row; REF and GBWR with every bank closed; REFPB to a closed bank
``tRCD``       ACT -> MAC/RD of that bank
``tRCDWR``     ACT -> WR of that bank
``tRAS``       ACT -> PRE of that bank
``tRP``        PRE -> ACT of that bank; PRE -> REF (any bank); PRE -> REFPB of that bank
``tRTP``       MAC/RD -> PRE of that bank
``tWR``        WR -> PRE of that bank
``tPPD``       PRE -> PRE in the channel
``tCCD_L``     column commands touching a common bank group
``tCCD_S``     any two column commands
``tWTR``       WR -> MAC/RD touching the WR's bank group (WL + burst + tWTR_L)
``tWTR_S``     WR -> MAC/RD of any other bank group (WL + burst + tWTR_S)
``tRTW``       MAC/RD/RDACC -> WR in the channel, RD/RDACC -> GBWR (read-to-write bus turnaround; an
               RDACC's counted from its data, ``rdacc_latency - tCL`` after a RD's)
``mac_drain``  RDACC before the last MAC's data are in the accumulators
               (``last MAC + mac_drain``)
``rdacc_spacing``  RDACC -> RDACC (``rdacc_spacing_cycles``: ``P / 2`` with interleaved partials)
``tRASmax``    a row open longer than ``tRASmax`` (checked at every later
               command of the channel and at ``end``)
``tRRD``       ACT -> ACT in the channel (different bank groups)
``tRRD_L``     ACT -> ACT touching a common bank group
``tFAW``       five ACTs within tFAW (an all-bank ACT counts as four)
``tRFC``       REF -> any command
``tRFCpb``     REFPB -> ACT of that bank
``tRREFD``     REFPB -> REFPB, and REFPB -> ACT of another bank
``tREFI``      REF number n (from 1) issued by ``ref_due + (n - 1 + max_postponed) * tREFI``
               (per-bank refresh counts bank by bank: REFPBs add up to one REF
               only when every bank has had one, so 16 REFPBs to bank 0 are not a REF)
=============  ==============================================================
"""
from __future__ import annotations

from dataclasses import dataclass

ROW = ("ACT", "PRE", "REF", "REFPB")
COLUMN = ("MAC", "RD", "WR", "GBWR", "RDACC")
KNOWN = ROW + COLUMN


@dataclass(frozen=True)
class Violation:
    constraint: str
    index: int
    time: int
    command: tuple
    message: str

    def __str__(self) -> str:
        return f"{self.constraint} violated by command {self.index} {self.command} at cycle {self.time}: {self.message}"


class _State:
    def __init__(self, p):
        n = p.banks_per_channel
        self.open = [None] * n
        self.t_act = [None] * n
        self.t_pre = [None] * n
        self.t_rd = [None] * n
        self.t_wr = [None] * n
        self.acts: list[int] = []
        self.act_groups: list[tuple[int, frozenset]] = []  # recent ACTs and the bank groups they touch
        self.reads: list[tuple[int, frozenset]] = []  # recent MAC/RD and their groups
        self.writes: list[tuple[int, frozenset]] = []  # recent WR and their groups
        self.last_pre = None
        self.t_refpb = [None] * n
        self.last_refpb = None
        self.pb_refs = [0] * n  # REFPBs per bank
        self.bus_reads: list[int] = []  # recent RD / RDACC (drive the data bus out)
        self.last_mac = None
        self.last_rdacc = None
        self.row_bus_free = None
        self.last_row_cmd = None
        self.cols: list[tuple[int, frozenset]] = []
        self.t_ref = None
        self.refs = 0
        self.last_time = None


def check_stream(stream, p, ref_due: int | None = None, end: int | None = None) -> Violation | None:
    """First violation of ``stream`` on the DRAM of params ``p``, or ``None``.

    ``ref_due``: cycle at which the first REF is due (default ``p.tREFI``);
    ``end``: the stream's end cycle for the refresh check (default: the last command's).
    """
    nb, ng = p.banks_per_channel, p.bank_groups
    per_group = nb // ng
    first_due = p.tREFI if ref_due is None else ref_due
    states: dict[int, _State] = {}

    def banks_of(bank: int) -> list[int]:
        return list(range(nb)) if bank == -1 else [bank]

    def groups_of(cmd: str, bank: int) -> frozenset:
        if cmd in ("GBWR", "RDACC"):
            return frozenset()
        return frozenset(b // per_group for b in banks_of(bank))

    def refs_done(s: _State) -> int:
        """All-bank REFs plus the REFPB rounds every bank has completed."""
        return s.refs + min(s.pb_refs)

    def refs_required(t: int) -> int:
        """REFs that must have been issued by cycle t."""
        late = first_due + p.max_postponed_refreshes * p.tREFI
        return 0 if t <= late else (t - late - 1) // p.tREFI + 1

    for i, item in enumerate(stream):
        t, ch, bank, cmd, row = (item.as_tuple() if hasattr(item, "as_tuple") else tuple(item))[:5]
        cmd_t = (t, ch, bank, cmd, row)

        def bad(name: str, msg: str) -> Violation:
            return Violation(name, i, t, cmd_t, msg)

        if cmd not in KNOWN:
            return bad("state", f"unknown command {cmd!r}")
        if bank != -1 and not 0 <= bank < nb:
            return bad("state", f"bank {bank} out of range 0..{nb - 1}")
        s = states.setdefault(ch, _State(p))
        if s.last_time is not None and t < s.last_time:
            return bad("order", f"issued before the previous command (cycle {s.last_time})")
        need = refs_required(t)
        if refs_done(s) < need:
            worst = min(range(nb), key=lambda b: s.pb_refs[b])
            return bad("tREFI", f"{need} REF commands due by cycle {t}, {s.refs} issued "
                                f"(+ {min(s.pb_refs)} per-bank rounds: bank {worst} refreshed {s.pb_refs[worst]} times)")
        for b in range(nb):
            if s.open[b] is not None and t > s.t_act[b] + p.tRASmax:
                return bad("tRASmax", f"bank {b}: row {s.open[b]} open since cycle {s.t_act[b]}, "
                                      f"{t - s.t_act[b]} cycles > tRASmax {p.tRASmax}")
        if s.t_ref is not None and t < s.t_ref + p.tRFC:
            return bad("tRFC", f"{t - s.t_ref} cycles after REF at {s.t_ref}, need {p.tRFC}")
        bs = banks_of(bank)
        if cmd in ROW:
            if s.last_row_cmd is not None and t == s.last_row_cmd:
                return bad("bus", "two row commands in one cycle")
            if s.row_bus_free is not None and t < s.row_bus_free:
                return bad("act_bus", f"row bus still holds the ACT issued at {s.row_bus_free - p.act_bus_cycles} "
                                      f"({p.act_bus_cycles} cycles)")
        else:
            g = groups_of(cmd, bank)
            for tc, gc in s.cols:
                if g & gc and t < tc + p.tCCD_L:
                    return bad("tCCD_L", f"{t - tc} cycles after a column command to the same bank group, "
                                         f"need {p.tCCD_L}")
                if t < tc + p.tCCD_S:
                    return bad("tCCD_S", f"{t - tc} cycles after a column command, need {p.tCCD_S}")
        if cmd in ("WR", "GBWR"):  # the data bus turns from driven-by-DRAM to driven-by-host
            late = [tr for tr in s.bus_reads if t < tr + p.tRTW]
            if late:
                return bad("tRTW", f"{cmd} {t - max(late)} cycles after a RD / RDACC's data time on the data bus "
                                   f"(an RDACC's data {p.rdacc_latency - p.tCL} cycles after tCL), need {p.tRTW} "
                                   f"(bus turnaround)")
        if cmd == "RDACC" and s.last_rdacc is not None and t < s.last_rdacc + p.rdacc_spacing_cycles:
            return bad("rdacc_spacing", f"RDACC {t - s.last_rdacc} cycles after the previous one, need "
                                        f"{p.rdacc_spacing_cycles} (the interleaved partials' reduction takes "
                                        f"one RDACC every accumulator_interleave / 2 cycles)")
        if cmd == "RDACC" and s.last_mac is not None and t < s.last_mac + p.mac_drain:
            return bad("mac_drain", f"RDACC {t - s.last_mac} cycles after the last MAC, whose data reach the "
                                    f"accumulators {p.mac_drain} cycles after it (tCL + MAC cycles + pipeline)")
        if cmd == "ACT":
            for b in bs:
                if s.open[b] is not None:
                    return bad("state", f"ACT to bank {b} with row {s.open[b]} open")
                if s.t_pre[b] is not None and t < s.t_pre[b] + p.tRP:
                    return bad("tRP", f"bank {b}: {t - s.t_pre[b]} cycles after PRE, need {p.tRP}")
                if s.t_refpb[b] is not None and t < s.t_refpb[b] + p.tRFCpb:
                    return bad("tRFCpb", f"bank {b}: {t - s.t_refpb[b]} cycles after REFPB, need {p.tRFCpb}")
            if s.last_refpb is not None and t < s.last_refpb + p.tRREFD:
                return bad("tRREFD", f"{t - s.last_refpb} cycles after a REFPB, need {p.tRREFD}")
            g = groups_of(cmd, bank)
            for ta, ga in s.act_groups:
                if g & ga and t < ta + p.tRRD_L:
                    return bad("tRRD_L", f"{t - ta} cycles after an ACT to the same bank group, need {p.tRRD_L}")
            if s.acts and t < s.acts[-1] + p.tRRD:
                return bad("tRRD", f"{t - s.acts[-1]} cycles after the previous ACT, need {p.tRRD}")
            weight = 4 if bank == -1 else 1
            window = [a for a in s.acts if a > t - p.tFAW]
            if len(window) + weight > 4:
                return bad("tFAW", f"{len(window) + weight} activates within {p.tFAW} cycles")
        elif cmd in ("MAC", "RD", "WR"):
            for b in bs:
                if s.open[b] is None:
                    return bad("state", f"{cmd} to closed bank {b}")
                if s.open[b] != row:
                    return bad("state", f"{cmd} to row {row} of bank {b}, row {s.open[b]} is open")
                if cmd == "WR" and t < s.t_act[b] + p.tRCDWR:
                    return bad("tRCDWR", f"bank {b}: {t - s.t_act[b]} cycles after ACT, need {p.tRCDWR}")
                if cmd != "WR" and t < s.t_act[b] + p.tRCD:
                    return bad("tRCD", f"bank {b}: {t - s.t_act[b]} cycles after ACT, need {p.tRCD}")
            g = groups_of(cmd, bank)
            if cmd == "WR":
                for tr, _gr in s.reads:
                    if t < tr + p.tRTW:
                        return bad("tRTW", f"{t - tr} cycles after a read, need {p.tRTW} (bus turnaround)")
            else:
                for tw, gw in s.writes:
                    if g & gw and t < tw + p.tWTR:
                        return bad("tWTR", f"{t - tw} cycles after a WR to the same bank group, need {p.tWTR}")
                    if t < tw + p.tWTR_S:
                        return bad("tWTR_S", f"{t - tw} cycles after a WR to another bank group, need {p.tWTR_S}")
        elif cmd == "PRE":
            if s.last_pre is not None and t < s.last_pre + p.tPPD:
                return bad("tPPD", f"{t - s.last_pre} cycles after the previous PRE, need {p.tPPD}")
            for b in bs:
                if s.open[b] is None:
                    continue  # precharging a closed bank is a no-op (JEDEC allows it)
                if t < s.t_act[b] + p.tRAS:
                    return bad("tRAS", f"bank {b}: {t - s.t_act[b]} cycles after ACT, need {p.tRAS}")
                if s.t_rd[b] is not None and s.t_rd[b] >= s.t_act[b] and t < s.t_rd[b] + p.tRTP:
                    return bad("tRTP", f"bank {b}: {t - s.t_rd[b]} cycles after a read, need {p.tRTP}")
                if s.t_wr[b] is not None and s.t_wr[b] >= s.t_act[b] and t < s.t_wr[b] + p.tWR:
                    return bad("tWR", f"bank {b}: {t - s.t_wr[b]} cycles after WR, need {p.tWR}")
        elif cmd == "REFPB":
            if bank == -1:
                return bad("state", "REFPB needs a bank")
            if s.open[bank] is not None:
                return bad("state", f"REFPB to open bank {bank}")
            if s.t_pre[bank] is not None and t < s.t_pre[bank] + p.tRP:
                return bad("tRP", f"REFPB {t - s.t_pre[bank]} cycles after PRE of bank {bank}, need {p.tRP}")
            if s.t_refpb[bank] is not None and t < s.t_refpb[bank] + p.tRFCpb:
                return bad("tRFCpb", f"bank {bank}: {t - s.t_refpb[bank]} cycles after REFPB, need {p.tRFCpb}")
            if s.last_refpb is not None and t < s.last_refpb + p.tRREFD:
                return bad("tRREFD", f"{t - s.last_refpb} cycles after a REFPB, need {p.tRREFD}")
        elif cmd in ("REF", "GBWR"):
            for b in range(nb):
                if s.open[b] is not None:
                    return bad("state", f"{cmd} with bank {b} open")
                if cmd == "REF" and s.t_pre[b] is not None and t < s.t_pre[b] + p.tRP:
                    return bad("tRP", f"REF {t - s.t_pre[b]} cycles after PRE of bank {b}, need {p.tRP}")
        # ---- update
        s.last_time = t
        horizon = t - max(p.tCCD_L, p.tWTR, p.tWTR_S, p.tRTW)
        if cmd in ROW:
            s.last_row_cmd = t
        else:
            s.cols = [(tc, gc) for tc, gc in s.cols if tc > t - p.tCCD_L] + [(t, groups_of(cmd, bank))]
            if cmd in ("MAC", "RD"):
                s.reads = [x for x in s.reads if x[0] > horizon] + [(t, groups_of(cmd, bank))]
            elif cmd == "WR":
                s.writes = [x for x in s.writes if x[0] > horizon] + [(t, groups_of(cmd, bank))]
            if cmd in ("RD", "RDACC"):  # an RDACC's data leave rdacc_latency - tCL cycles later than a RD's
                shift = p.rdacc_latency - p.tCL if cmd == "RDACC" else 0
                s.bus_reads = [x for x in s.bus_reads if x > t - p.tRTW] + [t + shift]
            if cmd == "MAC":
                s.last_mac = t
            elif cmd == "RDACC":
                s.last_rdacc = t
        if cmd == "ACT":
            s.row_bus_free = t + p.act_bus_cycles
            s.act_groups = [x for x in s.act_groups if x[0] > t - p.tRRD_L] + [(t, groups_of(cmd, bank))]
            for b in bs:
                s.open[b] = row
                s.t_act[b] = t
            s.acts = [a for a in s.acts if a > t - p.tFAW] + [t] * (4 if bank == -1 else 1)
        elif cmd == "PRE":
            s.last_pre = t
            for b in bs:
                if s.open[b] is not None:
                    s.open[b] = None
                    s.t_pre[b] = t
        elif cmd == "REFPB":
            s.t_refpb[bank] = t
            s.last_refpb = t
            s.pb_refs[bank] += 1
        elif cmd in ("MAC", "RD"):
            for b in bs:
                s.t_rd[b] = t
        elif cmd == "WR":
            for b in bs:
                s.t_wr[b] = t
        elif cmd == "REF":
            s.t_ref = t
            s.refs += 1
    if end is not None:
        for ch, s in states.items():
            need = refs_required(end)
            if refs_done(s) < need:
                return Violation("tREFI", len(stream), end, (end, ch, -1, "END", 0),
                                 f"{need} REF commands due by the end at cycle {end}, {s.refs} issued "
                                 f"(+ {min(s.pb_refs)} per-bank rounds)")
            for b in range(nb):
                if s.open[b] is not None and end > s.t_act[b] + p.tRASmax:
                    return Violation("tRASmax", len(stream), end, (end, ch, b, "END", s.open[b]),
                                     f"bank {b}: row {s.open[b]} open from cycle {s.t_act[b]} to the end, "
                                     f"{end - s.t_act[b]} cycles > tRASmax {p.tRASmax}")
    return None
