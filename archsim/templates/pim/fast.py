"""Fast model of the PIM template: closed-form cycles of a tile's plan.

Costs (``s = column_spacing = max(tCCD_L, mac_cycles_per_column)``):

- a row burst of ``c`` RD-MACs (ACTAB at 0, MACAB i at ``tRCD + i*s``, PREAB
  at ``max(tRAS, tRCD + (c-1)*s + tRTP)``) frees the channel for the next
  ACT after ``D(c) = max(tRAS, tRCD + (c-1)*s + tRTP) + tRP`` cycles (back to
  back bursts never meet tRRD / tFAW because ``tRC = tRAS + tRP >= tFAW``,
  which ``PimParams.validate`` requires);
- a write burst of ``c`` WRs to one bank: ``max(tRAS, tRCDWR + (c-1)*tCCD_L + tWR) + tRP``;
- ``n`` broadcast column writes: ``n * tCCD_S``, starting no earlier than
  ``rdacc_turnaround`` (``tRTW``, plus the reduction's cycles beyond ``tCL``) after the last
  accumulator read (data-bus turnaround);
- a gather of ``n`` accumulator reads, ``max(tCCD_S, rdacc_spacing_cycles)`` apart, starts when
  the last MAC's data are in the accumulators (``last MACAB + mac_drain``) and not before
  the PREAB that precedes it; the channel is free again at
  ``max(PREAB + tRP, last RDACC + tCCD_S)`` and the data have arrived at
  ``last RDACC + rdacc_latency`` (``tCL``, or the interleaved partials' reduction when longer);
- refresh: before each ACT, if the next REF is due, an all-bank REF is
  issued (the banks are closed at that point) and the ACT waits ``tRFC``.
  The number of REFs in a run of identical bursts is found per refresh
  interval (``ceil((due - t) / D)`` bursts fit before the next one), so a
  run costs O(number of refreshes), not O(bursts).

The tile's cycles are ``max(channel free time, last data arrival)``.
"""
from __future__ import annotations

from archsim.templates.pim.tile import PimTile, plan_steps


def burst_cycles(cols: int, p) -> tuple[int, int]:
    """(ACT -> PRE, ACT -> next ACT) of one all-bank row burst of ``cols`` RD-MACs."""
    pre = max(p.tRAS, p.tRCD + (cols - 1) * p.column_spacing + p.tRTP)
    return pre, pre + p.tRP


def write_burst_cycles(cols: int, p) -> tuple[int, int]:
    pre = max(p.tRAS, p.tRCDWR + (cols - 1) * p.tCCD_L + p.tWR)
    return pre, pre + p.tRP


def steps_cycles(steps, p, ref_due: int) -> dict[str, int]:
    """Closed-form timing of a plan: cycles, refreshes, and the channel-busy split."""
    t = 0  # channel free: banks precharged, no command pending
    due = ref_due
    refs = 0
    data_end = 0
    last_mac = None  # time of the last MACAB
    last_pre = 0  # time of the last PRE
    last_rdacc = None  # time of the last accumulator read
    for step in steps:
        kind = step[0]
        if kind == "bcast":
            if last_rdacc is not None:  # the data bus turns around after the gather
                t = max(t, last_rdacc + p.rdacc_turnaround)
            t += step[1] * p.tCCD_S
        elif kind == "gather":
            start = (max(last_mac + max(p.mac_drain, p.tCCD_S), last_pre)
                     if last_mac is not None else t)
            last = start + (step[1] - 1) * max(p.tCCD_S, p.rdacc_spacing_cycles)
            last_rdacc = last
            t = max(t, last + p.tCCD_S)
            data_end = max(data_end, last + p.rdacc_latency)
        else:
            m, cols = step[1], step[2]
            pre, period = (burst_cycles if kind == "burst" else write_burst_cycles)(cols, p)
            while m > 0:
                if t >= due:  # REF before this ACT
                    t += p.tRFC
                    due += p.tREFI
                    refs += 1
                    continue
                j = -(-(due - t) // period)  # bursts that start before the REF is due
                n = min(j, m)
                act = t + (n - 1) * period  # the last ACT of these n bursts
                t += n * period
                m -= n
                last_pre = act + pre
                if kind == "burst":
                    last_mac = act + p.tRCD + (cols - 1) * p.column_spacing
                    data_end = max(data_end, last_mac + p.mac_drain)
    return {"cycles": max(t, data_end), "refreshes": refs}


def tile_cycles(tile: PimTile, p) -> int:
    return steps_cycles(plan_steps(tile, p), p, tile.ref_due)["cycles"]
