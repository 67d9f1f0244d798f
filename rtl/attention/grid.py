"""The attention array's 2D datapath: ``rows x cols`` :class:`rtl.attention.pe.AttentionPE` with the
row chains through them (the row max, the row sum and ``P.V``: column 0 to the last), and -- with
pipelined adders (``add_stages > 0``) -- Q, K and QK's decode as a real wavefront: PE ``(i, j)``
sees them ``i + j`` cycles late (skew registers at the left / top edge, then one register per hop
right / down). The controller's decode comes in; each row's block max and chain and each PE's score
go out (the controller writes them to its state registers).
"""
from __future__ import annotations

from amaranth import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.attention.pe import AttentionPE, qk_tree_levels
from rtl.lib.pipe import delay


class PeGrid(wiring.Component):
    def __init__(self, rows: int, cols: int, exp_macs: int, precision: str = "bf16", mul_stages: int = 0,
                 add_stages: int = 0, rint_stages: int = 0, ldexp_stages: int = 0, mul: str = "dsp"):
        self.rows, self.cols = rows, cols
        self.pe_args = dict(precision=precision, mul_stages=mul_stages, add_stages=add_stages,
                            rint_stages=rint_stages, ldexp_stages=ldexp_stages, mul=mul)
        self.exp_macs = exp_macs
        #: ``(i, j) -> AttentionPE``, filled when elaborated (tests watch the PEs' ports)
        self.pes: dict[tuple[int, int], AttentionPE] = {}
        R, C = rows, cols
        ports = {
            # the controller's decode, to every PE (QK's: to PE (0, 0), the others by the wavefront)
            "exp0": In(1), "horner": In(1), "flat": In(1), "qk_ring": In(2), "esa_ring": In(2),
            "scale": In(32), "horner_coef": In(32), "qk_mac": In(1), "qk_first": In(1),
            # per row / per column (the column's row-chain decode already skewed by the controller)
            "q": In(16).array(R), "neg_mc": In(32).array(R), "chain_in": In(32).array(R),
            "k": In(16).array(C), "v": In(16).array(C), "expfin": In(1).array(C), "av": In(1).array(C),
            "colvalid": In(1).array(C), "p_flat": In(32).array(R, C),
            # results: each row's block max and chain out of its last column, each PE's score
            "rmax": Out(32).array(R), "chain": Out(32).array(R), "score": Out(32).array(R, C),
        }
        if mul_stages:  # the adder's decode, S cycles after the multiplier's
            ports.update({"qk_acc": In(1), "exp0_add": In(1), "horner_add": In(1), "av_add": In(1).array(C)})
        if add_stages:  # QK interleaved on the pipelined adder
            ports.update({"qk_add": In(1), "qk_pad": In(1), "qk_tree": In(1), "qk_rmask": In(1), "qk_fin": In(1),
                          "qk_tap": In(range(max(1, qk_tree_levels(add_stages))))})
        super().__init__(ports)

    def _wavefront(self, m: Module):
        """``(q, k, decode)`` of each PE: PE ``(i, j)``'s ``i + j`` cycles late (registers)."""
        R, C = self.rows, self.cols
        qk_dec = Cat(self.qk_mac, self.qk_first, self.qk_add, self.qk_pad, self.qk_tree, self.qk_rmask,
                     self.qk_fin, self.qk_tap)
        wave_q, wave_k, wave_dec = ([[None] * C for _ in range(R)] for _ in range(3))
        for i in range(R):
            for j in range(C):
                wave_q[i][j] = delay(m, self.q[i], i, f"wave_q{i}_") if j == 0 else \
                    delay(m, wave_q[i][j - 1], 1, f"wave_q{i}_{j}_")
                wave_k[i][j] = delay(m, self.k[j], j, f"wave_k{j}_") if i == 0 else \
                    delay(m, wave_k[i - 1][j], 1, f"wave_k{i}_{j}_")
                wave_dec[i][j] = delay(m, qk_dec, i, f"wave_dec{i}_") if j == 0 else \
                    delay(m, wave_dec[i][j - 1], 1, f"wave_dec{i}_{j}_")
        return wave_q, wave_k, wave_dec

    def elaborate(self, platform):
        m = Module()
        S, A = self.pe_args["mul_stages"], self.pe_args["add_stages"]
        if A:
            wave_q, wave_k, wave_dec = self._wavefront(m)
        for i in range(self.rows):
            chain, rmax, rmax_key = self.chain_in[i], None, None
            for j in range(self.cols):
                m.submodules[f"pe_{i}_{j}"] = pe = AttentionPE(self.exp_macs, first_col=j == 0, **self.pe_args)
                self.pes[i, j] = pe
                m.d.comb += [
                    pe.exp0.eq(self.exp0), pe.horner.eq(self.horner), pe.expfin.eq(self.expfin[j]),
                    pe.av.eq(self.av[j]), pe.flat.eq(self.flat), pe.qk_ring.eq(self.qk_ring),
                    pe.esa_ring.eq(self.esa_ring), pe.v.eq(self.v[j]), pe.scale.eq(self.scale),
                    pe.neg_mc.eq(self.neg_mc[i]), pe.horner_coef.eq(self.horner_coef),
                    pe.p_flat.eq(self.p_flat[i][j]), pe.colvalid.eq(self.colvalid[j]), pe.chain_in.eq(chain),
                    self.score[i][j].eq(pe.score),
                ]
                if j:  # the registered chain (A > 0) carries keys
                    m.d.comb += pe.rmax_key_in.eq(rmax_key) if A else pe.rmax_in.eq(rmax)
                if A:
                    m.d.comb += [Cat(pe.qk_mac, pe.qk_first, pe.qk_add, pe.qk_pad, pe.qk_tree, pe.qk_rmask, pe.qk_fin,
                                     pe.qk_tap).eq(wave_dec[i][j]), pe.q.eq(wave_q[i][j]), pe.k.eq(wave_k[i][j])]
                else:
                    m.d.comb += [pe.qk_mac.eq(self.qk_mac), pe.qk_first.eq(self.qk_first), pe.q.eq(self.q[i]),
                                 pe.k.eq(self.k[j])]
                if S:
                    m.d.comb += [pe.qk_acc.eq(self.qk_acc), pe.exp0_add.eq(self.exp0_add),
                                 pe.horner_add.eq(self.horner_add), pe.av_add.eq(self.av_add[j])]
                chain, rmax = pe.chain_out, pe.rmax_out
                rmax_key = pe.rmax_key_out if A else None
            m.d.comb += [self.rmax[i].eq(rmax), self.chain[i].eq(chain)]
        return m
