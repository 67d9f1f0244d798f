"""Detailed model of the attention template: cycle by cycle through the 2D array,
the 1D array and the slot pipeline between them, carrying fp32 values.

Each cycle, every unit advances the phase it is running by one cycle:

- 2D array, ``qk_max``: cycle ``t < d`` adds ``Q[:, t] * K[:, t]`` into every
  PE's score; cycle ``d`` runs the row compare chain (block max);
- 2D array, ``exp_sum_av``: cycle 0 ``x = s*c - m*c`` and its range reduction,
  cycles ``1..E-1`` one Horner step each (``2**n`` applied with the last),
  cycle ``E`` the row add chain (sum), cycles ``E+1 ..`` one column of
  ``P.V`` each (row chains);
- 1D array: each op of a phase occupies the array for its ``c1`` cycles; its
  result is written when the op's last cycle ends.
- with ``latency2d = S > 0`` the PEs' products reach their adders ``S`` cycles late:
  ``qk_max`` and the P.V columns take ``S`` more cycles (the last products), the range
  reduction and every Horner step ``S + 1`` cycles each;
- with ``latency2d_add = A``, ``latency2d_rint = Rn``, ``latency2d_ldexp = Lx``: QK's steps go
  into ``A + 1`` partial sums in flight on the adder (its stages and its read-back register) (one step a cycle, ``max(d, A + 1)`` of them), which
  then leave it one a cycle into a pairwise tree on the same adder (each level's first sum waits for
  its second operand, then ``A`` cycles), and one cycle to the ring; the range reduction ``S + 2A + Rn + 1``
  (product, add, ``rint``, ``x - n``), a Horner step ``S + A + 1``, ``2**n`` ``Lx`` more, and the
  last ``P.V`` column leaves the row chain ``C A`` cycles later (one adder per column); with ``A > 0``
  the row max chain is registered (``C + 1`` more cycles after the last score) and Q / K enter as a
  wavefront (PE ``(i, j)`` ``i + j`` late: ``R - 1`` more cycles, and no drain at the tile's end).

Units start the phases of slot ``s`` together and the next slot starts when
both are idle (:mod:`archsim.templates.attention.tile`). The model does not
use the closed form: it counts cycles as it steps.
"""
from __future__ import annotations

import numpy as np

from archsim.templates.attention.tile import AttentionTile, c1, row_reduce_cycles, skew_cycles
from archsim.templates.attention.values import F32, exp2_coefficients, scale_of


class _Exp2Steps:
    """The 2D array's exp, one Horner MAC per cycle (same arithmetic as ``values.exp2_poly``)."""

    def __init__(self, x: np.ndarray, exp_macs: int):
        self.coef = exp2_coefficients(exp_macs)
        self.n = np.rint(x).astype(F32)
        self.f = (x - self.n).astype(F32)
        self.p = np.full_like(self.f, self.coef[-1])
        self.i = len(self.coef) - 2

    def step(self) -> None:
        self.p = (self.p * self.f).astype(F32)
        self.p = (self.p + self.coef[self.i]).astype(F32)
        self.i -= 1

    def result(self) -> np.ndarray:
        return np.ldexp(self.p, self.n.astype(np.int32)).astype(F32)


def _exp2_1d(x: np.ndarray, exp_macs: int) -> np.ndarray:
    """The 1D array's exp unit: the same function, evaluated whole."""
    neg = np.isneginf(x)
    st = _Exp2Steps(np.where(neg, F32(0), x).astype(F32), exp_macs)
    while st.i >= 0:
        st.step()
    return np.where(neg, F32(0), st.result()).astype(F32)


class AttentionDetailed:
    """Cycle-by-cycle model of one ``AttentionParams`` instance."""

    def __init__(self, params):
        self.p = params

    # ------------------------------------------------------------------ fusemax
    def _fusemax(self, tile: AttentionTile, ops):
        p = self.p
        q_rows, L, d, C, E = tile.q_rows, tile.kv_len, tile.head_dim, p.cols, p.exp_macs
        nb = -(-L // C)
        exp2d = p.exp_on == "array2d"
        lag = 2 if exp2d else 3
        S2 = p.latency2d
        A2, Rn2, Lx2 = p.latency2d_add, p.latency2d_rint, p.latency2d_ldexp
        vals = ops is not None
        if vals:
            q, k, v = ops
            c = scale_of(d)
            m = np.full(q_rows, -np.inf, F32)
            mc = np.full(q_rows, -np.inf, F32)
            l = np.zeros(q_rows, F32)
            o = np.zeros((q_rows, d), F32)
        blk: dict[int, dict] = {}

        def keys(b):
            b %= nb
            return slice(b * C, min(L, (b + 1) * C))

        def qrows(b):
            i = b // nb
            return q[i * q_rows:(i + 1) * q_rows]

        def fresh_pass(b):  # the first block of a pass starts from the initial running state
            if b % nb == 0 and vals:
                state.update(m=np.full(q_rows, -np.inf, F32), mc=np.full(q_rows, -np.inf, F32))

        # 2D phases as generators of per-cycle steps
        def qk_max(b):
            st = blk.setdefault(b, {})
            if vals:
                kb = k[keys(b)]
                qb = qrows(b)
                st["s"] = np.zeros((q_rows, kb.shape[0]), F32)
            if not A2:
                for t in range(d):
                    if vals:
                        st["s"] = (st["s"] + (qb[:, t, None] * kb[None, :, t]).astype(F32)).astype(F32)
                    yield
            else:  # A2 + 1 partial sums in flight on the adder (its stages and its read-back register),
                L2 = A2 + 1  # then a pairwise tree of them on it
                part = [np.zeros_like(st["s"]) if vals else None for _ in range(L2)]
                for t in range(max(d, L2)):  # step t into partial t % L2 (-0.0 past the head dim)
                    if vals:
                        prod = (qb[:, t, None] * kb[None, :, t]).astype(F32) if t < d else F32(-0.0)
                        part[t % L2] = (part[t % L2] + prod).astype(F32)
                    yield
                # the partials leave the adder one a cycle, from partial max(d, L2) % L2 on
                level = [part[(max(d, L2) + j) % L2] for j in range(L2)]
                gap = 1
                while len(level) > 1:  # this level's first sum: its second operand `gap` cycles on, then L2
                    if vals:
                        level = [(level[i] + level[i + 1]).astype(F32) if i + 1 < len(level) else level[i]
                                 for i in range(0, len(level), 2)]
                    else:
                        level = level[::2]
                    for _ in range(gap + L2):
                        yield
                    gap *= 2
                if vals:
                    st["s"] = level[0]
                yield  # the sum written to the score ring
            # the last products, then (A2 > 0) the wavefront's last row R - 1 cycles behind the first and
            # the registered row max chain
            for _ in range(S2 + (p.rows - 1 + C + 1 if A2 else 0)):
                yield
            if vals:
                st["bm"] = st["s"].max(axis=1)
            yield

        def exp_sum_av(b):
            st = blk[b]
            if vals:
                x = ((st["s"] * c).astype(F32) - st["mc"][:, None]).astype(F32)
                ex = _Exp2Steps(x, E)
            for _ in range(S2 + 2 * A2 + Rn2 + 1):  # s*c, then - m*c, rint and x - n
                yield
            for _ in range(E - 1):
                if vals:
                    ex.step()
                for _ in range(S2 + A2 + 1):  # p*f, then + coefficient
                    yield
            for _ in range(Lx2):  # 2**n
                yield
            if vals:
                st["p"] = ex.result()
                acc = np.zeros(q_rows, F32)
                for j in range(st["p"].shape[1]):
                    acc = (acc + st["p"][:, j]).astype(F32)
                st["rowsum"] = acc
            yield
            yield from av_cols(b)

        def av_cols(b):
            st = blk[b]
            if vals:
                vb = v[keys(b)]
                st["pv"] = np.zeros((q_rows, d), F32)
            for e in range(d):
                if vals:
                    acc = np.zeros(q_rows, F32)
                    for j in range(vb.shape[0]):
                        acc = (acc + (st["p"][:, j] * vb[j, e]).astype(F32)).astype(F32)
                    st["pv"][:, e] = acc
                yield
            for _ in range(S2 + C * A2):  # the last products leave the multiplier, then the row's adders
                yield

        # 1D phases: a list of (cycles, action at completion)
        def op1d(n, fn, action=None, cycles=None):
            for _ in range((c1(p, n, fn) if cycles is None else cycles) - 1):
                yield
            if action is not None:
                action()
            yield

        def stat(b):
            st = blk[b]
            fresh_pass(b)

            def new_max():
                st["m"] = np.maximum(state["m"], st["bm"]).astype(F32)

            def new_mc():
                st["mc"] = (st["m"] * c).astype(F32)

            def alpha():
                st["alpha"] = _exp2_1d((state["mc"] - st["mc"]).astype(F32), E)
                state["m"], state["mc"] = st["m"], st["mc"]

            yield from op1d(q_rows, "max", new_max if vals else None)
            yield from op1d(q_rows, "mul", new_mc if vals else None)
            yield from op1d(q_rows, "exp", alpha if vals else None)

        def exp_sum_1d(b):
            st = blk[b]
            n = q_rows * C

            def ex():
                x = ((st["s"] * c).astype(F32) - st["mc"][:, None]).astype(F32)
                st["p"] = _exp2_1d(x, E)

            def sm():
                acc = np.zeros(q_rows, F32)
                for j in range(st["p"].shape[1]):
                    acc = (acc + st["p"][:, j]).astype(F32)
                st["rowsum"] = acc

            yield from op1d(n, "exp", ex if vals else None)
            yield from op1d(n, "add", sm if vals else None, row_reduce_cycles(p, q_rows, C, "add"))

        def update(b):
            st = blk[b]
            tmp = {}

            def mul_l():
                if b % nb == 0:  # a new pass: its sum and output start from zero
                    state["l"], state["o"] = np.zeros(q_rows, F32), np.zeros((q_rows, d), F32)
                tmp["l"] = (state["l"] * st["alpha"]).astype(F32)

            def add_l():
                state["l"] = (tmp["l"] + st["rowsum"]).astype(F32)

            def mul_o():
                tmp["o"] = (state["o"] * st["alpha"][:, None]).astype(F32)

            def add_o():
                state["o"] = (tmp["o"] + st["pv"]).astype(F32)
                blk.pop(b, None)
                if b % nb == nb - 1:  # a pass is complete
                    done.append((state["l"], state["o"]))

            yield from op1d(q_rows, "mul", mul_l if vals else None)
            yield from op1d(q_rows, "add", add_l if vals else None)
            yield from op1d(q_rows * d, "mul", mul_o if vals else None)
            yield from op1d(q_rows * d, "add", add_o if vals else None)

        state = {"m": m, "mc": mc, "l": l, "o": o} if vals else {}
        done: list = []
        nb_all = nb * tile.passes
        if exp2d:
            sched2 = [(qk_max, 0), (exp_sum_av, 2)]
            sched1 = [(stat, 1), (update, 3)]
        else:
            sched2 = [(qk_max, 0), (av_cols, 3)]
            sched1 = [(stat, 1), (exp_sum_1d, 2), (update, 4)]
        cycles = 0
        for s in range(nb_all + lag + 1):
            units = []
            for sched in (sched2, sched1):
                gens = [fn(s - off) for fn, off in sched if 0 <= s - off < nb_all]
                units.append(iter(_chain(gens)))
            running = [True, True]
            while True:
                for i, g in enumerate(units):
                    if running[i] and next(g, StopIteration) is StopIteration:
                        running[i] = False
                if not any(running):
                    break
                cycles += 1
        out = None
        if tile.drain:
            for _ in range(skew_cycles(p)):  # the last results leave the wave
                cycles += 1
        if tile.last and vals:  # the 1D array's final divide (timed on the rescale companion)
            outs = []
            for l_p, o_p in done:
                fin: dict = {}

                def recip():
                    fin["r"] = (F32(1) / l_p).astype(F32)

                def scale():
                    fin["o"] = (o_p * fin["r"][:, None]).astype(F32)

                for _ in _chain([op1d(q_rows, "recip", recip), op1d(q_rows * d, "mul", scale)]):
                    pass
                outs.append(fin["o"])
            out = np.concatenate(outs, axis=0)
        return out, cycles

    def _fusemax_rescale_cycles(self, tile: AttentionTile) -> int:
        """Busy cycles of the 1D array in a fusemax pass: its phases stepped without the 2D array."""
        p = self.p
        nb = -(-tile.kv_len // p.cols)
        q, d = tile.q_rows, tile.head_dim
        per_block = [(q, "max"), (q, "mul"), (q, "exp"), (q, "mul"), (q, "add"), (q * d, "mul"), (q * d, "add")]
        if p.exp_on == "array1d":
            per_block += [(q * p.cols, "exp"), (q * p.cols, "row_sum")]
        cycles = 0
        for _pass in range(tile.passes):
            for _b in range(nb):
                for n, fn in per_block:
                    for _ in range(row_reduce_cycles(p, q, p.cols, "add") if fn == "row_sum" else c1(p, n, fn)):
                        cycles += 1
            if tile.last:
                for n, fn in ((q, "recip"), (q * d, "mul")):
                    for _ in range(c1(p, n, fn)):
                        cycles += 1
        return cycles

    # ------------------------------------------------------------------ flat
    def _flat(self, tile: AttentionTile, ops):
        p = self.p
        q_rows, L, d, C, E = tile.q_rows, tile.kv_len, tile.head_dim, p.cols, p.exp_macs
        nb = -(-L // C)
        vals = ops is not None
        cycles = 0
        if vals:
            q, k, v = ops
            c = scale_of(d)
            s = np.zeros((q_rows, L), F32)
        if tile.phase in ("all", "qk"):
            for b in range(nb):
                for t in range(d):
                    if vals:
                        ks = slice(b * C, min(L, (b + 1) * C))
                        s[:, ks] = (s[:, ks] + (q[:, t, None] * k[None, ks, t]).astype(F32)).astype(F32)
                    cycles += 1
            cycles += p.latency2d  # the last products leave the multiplier
            cycles += skew_cycles(p) if tile.drain else 0
        scaled_2d = p.flat_scale_on == "array2d"
        if vals and scaled_2d:  # the array's edge multiplier scales each score as it drains
            s = (s * c).astype(F32)
        if tile.phase in ("all", "softmax"):
            st: dict = {}
            if scaled_2d:  # max of the scaled scores == the scaled max (monotone rounding, c > 0)
                scale = [(q_rows * L, "row_max", lambda: st.update(m=s.max(axis=1))),
                         # the exp op subtracts the row max in its range reduction: no cycles of its own
                         (0, "mul", lambda: st.update(x=(s - st["m"][:, None]).astype(F32)))]
            else:
                scale = [(q_rows * L, "row_max", lambda: st.update(m=s.max(axis=1))),
                         (q_rows, "mul", lambda: st.update(mc=(st["m"] * c).astype(F32))),
                         # s*c - m*c: the product, then its sum (latency1d.add more)
                         (q_rows * L, "mul+add", lambda: st.update(x=((s * c).astype(F32) - st["mc"][:, None]).astype(F32)))]
            seq = [
                *scale,
                (q_rows * L, "exp", lambda: st.update(e=_exp2_1d(st["x"], E))),
                (q_rows * L, "row_sum", lambda: st.update(l=_row_sum(st["e"]))),
                (q_rows, "recip", lambda: st.update(r=(F32(1) / st["l"]).astype(F32))),
                (q_rows * L, "mul", lambda: st.update(pn=(st["e"] * st["r"][:, None]).astype(F32))),
            ]
            for n, fn, action in seq:
                if fn == "mul+add":
                    cycles += c1(p, n, "mul") + p.latency1d.get("add", 0)
                elif fn in ("row_sum", "row_max"):  # each lane its own rows when pipelined
                    cycles += row_reduce_cycles(p, q_rows, L, "add" if fn == "row_sum" else "max")
                else:
                    cycles += c1(p, n, fn)
                if vals:
                    action()
        out = None
        if tile.phase in ("all", "av"):
            if vals:
                out = np.zeros((q_rows, d), F32)
            for b in range(nb):
                for e in range(d):
                    if vals:
                        ks = range(b * C, min(L, (b + 1) * C))
                        acc = out[:, e].copy()
                        for j in ks:
                            acc = (acc + (st["pn"][:, j] * v[j, e]).astype(F32)).astype(F32)
                        out[:, e] = acc
                    cycles += 1
            cycles += p.latency2d  # the last products leave the multiplier
            cycles += skew_cycles(p) if tile.drain else 0
        return out, cycles

    # ------------------------------------------------------------------ entry
    def run_tile(self, tile: AttentionTile, operands: dict | None):
        tile.check(self.p)
        ops = None
        if operands is not None:
            if tile.phase != "all" or not (tile.first and tile.last):
                raise ValueError("operands: values are modelled for whole tiles (phase all, first and last)")
            ops = tuple(np.asarray(operands[n], dtype=F32) for n in ("q", "k", "v"))
        if tile.mapping == "fusemax":
            if tile.phase == "rescale":
                return None, self._fusemax_rescale_cycles(tile)
            return self._fusemax(tile, ops)
        return self._flat(tile, ops)


def _row_sum(e: np.ndarray) -> np.ndarray:
    acc = np.zeros(e.shape[0], F32)
    for j in range(e.shape[1]):
        acc = (acc + e[:, j]).astype(F32)
    return acc


def _chain(gens):
    for g in gens:
        yield from g
