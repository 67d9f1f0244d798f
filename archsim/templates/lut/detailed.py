"""Detailed model of the LUT array: cycle by cycle through table build, index,
lookup, negate and shift-add, carrying values (contract: :mod:`.tile`).

Each cycle the precompute unit writes up to ``precompute_entries_per_cycle``
entries of the next step's tables (``tile_m`` rows x ``E`` stored entries, row
major) into the free one of two table banks, and the lookup unit runs one
(column block, bit plane) of the current step: it forms the ``tile_n``
columns' indices from the plane's weight bits, reads the stored half-table
(negating when the top index bit is 0, with ``symmetric``), and shift-adds into
the per-column plane register; after a block's last plane it forms ``r`` and
adds it into the accumulators (with ``lookup_interleave`` D > 1: the planes of D blocks in
turn, each block with its own plane register). A bank is free once the lookups of the step
that used it are done; a step's lookups start the cycle after its table is
complete (``precompute_pipeline_cycles`` after its last entry was built: the
precompute unit's latency). After the last lookup the result leaves through ``pipeline_cycles``
pipeline stages (where ``per_channel`` scales are applied).
"""
from __future__ import annotations

from math import ceil

import numpy as np

from archsim.templates.lut.tile import PLANES, LutTile, weight_planes
from archsim.templates.lut.values import F32, activations, build_tables, group_results, is_int


class LutArrayDetailed:
    """The LUT array of one ``params`` instance; :meth:`run_tile` returns ``(values, cycles)``.

    ``trace`` (list of str), when given, receives one line per cycle."""

    def __init__(self, params):
        self.p = params

    def run_tile(self, tile: LutTile, operands: dict, trace: list | None = None) -> tuple[np.ndarray, int]:
        p = self.p
        tile.check(p)
        K, tm, tn = p.group_k, p.tile_m, p.tile_n
        integer = is_int(tile.activation_format)
        b = PLANES[tile.weight_format]
        a = activations(operands["input"], tile.activation_format)
        w = np.asarray(operands["weight"], np.int64)
        if a.shape != (tile.m, tile.k) or w.shape != (tile.k, tile.n):
            raise ValueError(f"operands: expected input {(tile.m, tile.k)} and weight {(tile.k, tile.n)}")
        planes = weight_planes(w, tile.weight_format)  # (b, K_total, N) bits
        row_blocks, groups = ceil(tile.m / tm), tile.k // K
        n_steps = row_blocks * groups
        # stored entries: idx with top bit 1 (symmetric) or all idx
        top = 1 << (K - 1)
        stored = np.arange(top, 2 ** K) if p.symmetric else np.arange(2 ** K)
        E = len(stored)
        a_pad = np.zeros((row_blocks * tm, tile.k), a.dtype)
        a_pad[: tile.m] = a
        # accumulators
        scale, psum = p.scale, (operands.get("psum") if tile.accumulate else None)
        fp_acc = (not integer) or scale == "per_group"
        acc = np.zeros((row_blocks * tm, tile.n), F32 if fp_acc else np.int64)
        if psum is not None and scale != "per_channel":
            acc[: tile.m] = np.asarray(psum, acc.dtype)
        sc = np.asarray(operands["scale"], F32) if scale != "none" else None

        banks: list[np.ndarray | None] = [None, None]  # stored table of (tm, E) per bank
        bank_step = [-1, -1]  # step whose table a bank holds (complete or being built)
        pre_step, pre_done = 0, 0  # next step to build and entries of it written
        ready = [False] * n_steps  # table complete (usable from the next cycle)
        landing: list[tuple[int, int]] = []  # (cycle its last entry lands, step): the precompute unit's latency
        look_step, look_unit = 0, 0  # current lookup step and (column block, plane) position
        n_blocks, D = ceil(tile.n / tn), p.lookup_interleave
        look_units = ceil(n_blocks / D) * D * b  # batches of D blocks, plane-major within a batch
        pre_rate = p.precompute_entries_per_cycle
        pregs = np.zeros((D, tm, tn), np.int64 if integer else F32)  # the plane register of each block of a batch
        cycle = 0
        if tile.precomputed:  # the tables arrive with the activations
            pre_step = n_steps
            ready = [True] * n_steps
        while look_step < n_steps:
            newly_ready = []
            # --- precompute unit: entries of step pre_step into bank pre_step % 2
            if pre_step < n_steps:
                bank = pre_step % 2
                # a build starts once its bank is free (the lookups that used it are done) and the previous
                # step's tables have landed (the RTL starts it with that step's lookups)
                free = bank_step[bank] < look_step and (pre_step == 0 or ready[pre_step - 1])
                if bank_step[bank] == pre_step or free:
                    if bank_step[bank] != pre_step:
                        bank_step[bank], banks[bank] = pre_step, np.zeros((tm, E), a.dtype)
                    mb, g = divmod(pre_step, groups)
                    lo, hi = pre_done, min(pre_done + pre_rate, tm * E)
                    for e in range(lo, hi):
                        r, j = divmod(e, E)
                        grp = a_pad[mb * tm + r, g * K:(g + 1) * K]
                        banks[bank][r, j] = build_tables(grp, K, integer, stored[j:j + 1])[0]
                    pre_done = hi
                    if trace is not None:
                        trace.append(f"{cycle:6d} pre  step {pre_step} entries {lo}..{hi - 1}")
                    if pre_done == tm * E:
                        landing.append((cycle + p.precompute_pipeline_cycles, pre_step))
                        pre_step, pre_done = pre_step + 1, 0
            newly_ready += [st for c, st in landing if c == cycle]
            # --- lookup unit: one (column block, plane) of look_step
            if ready[look_step]:
                s = look_step
                bank = s % 2
                table = banks[bank] if not tile.precomputed else self._arrived_table(a_pad, s, groups, stored,
                                                                                    integer)
                mb, g = divmod(s, groups)
                batch, v = divmod(look_unit, D * b)
                q, d = divmod(v, D)
                cb = batch * D + d
                plane = b - 1 - q  # MSB first
                preg = pregs[d]
                if cb >= n_blocks:  # the last batch's idle slot
                    if trace is not None:
                        trace.append(f"{cycle:6d} look step {s} idle")
                else:
                    cols = slice(cb * tn, min((cb + 1) * tn, tile.n))
                    ncol = cols.stop - cols.start
                    bits = planes[plane, g * K:(g + 1) * K, cols].astype(np.int64)  # (K, ncol)
                    idx = (bits << np.arange(K)[:, None]).sum(axis=0)  # index formation
                    if p.symmetric:
                        neg = (idx & top) == 0
                        folded = np.where(neg, idx ^ (2 ** K - 1), idx) - top
                        t = table[:, folded]  # (tm, ncol)
                        t = np.where(neg[None, :], -t, t)  # negate
                    else:
                        t = table[:, idx]
                    if q == 0:
                        preg[:, :ncol] = t
                    else:
                        preg[:, :ncol] = 2 * preg[:, :ncol] + t if integer else (F32(2) * preg[:, :ncol] + t)
                    if trace is not None:
                        trace.append(f"{cycle:6d} look step {s} block {cb} plane {plane}")
                    if q == b - 1:  # last plane of the block: r, then the accumulator
                        total = table[:, -1][:, None]  # S = T[2^K - 1] (stored in both layouts)
                        r = group_results(preg[:, :ncol].copy(), total, tile.weight_format, integer)
                        rows = slice(mb * tm, (mb + 1) * tm)
                        if scale == "per_group":
                            rs = r.astype(F32) * sc[(g * K) // p.scale_group][None, cols]
                            acc[rows, cols] = (acc[rows, cols] + rs.astype(F32)).astype(F32)
                        elif integer and not fp_acc:
                            acc[rows, cols] = acc[rows, cols] + r
                        else:
                            acc[rows, cols] = (acc[rows, cols] + r).astype(F32)
                look_unit += 1
                if look_unit == look_units:
                    look_step, look_unit = look_step + 1, 0
            for s in newly_ready:
                ready[s] = True
            cycle += 1
        cycle += p.pipeline_cycles
        out = acc[: tile.m]
        if scale == "per_channel":
            out = (out.astype(F32) * sc[None, :]).astype(F32)
            if psum is not None:
                out = (np.asarray(psum, F32) + out).astype(F32)
        return out, cycle

    def _arrived_table(self, a_pad, s, groups, stored, integer):
        """With ``precomputed``: the step's stored tables as they arrived with the activations."""
        p = self.p
        mb, g = divmod(s, groups)
        grp = a_pad[mb * p.tile_m:(mb + 1) * p.tile_m, g * p.group_k:(g + 1) * p.group_k]
        return build_tables(grp, p.group_k, integer, stored)
