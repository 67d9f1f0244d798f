"""Amaranth design of the attention template: a ``rows x cols`` 2D array of fp32 PEs,
a ``pe1d``-lane 1D array and the online-softmax rescale state, running FuseMax
(one pass, online softmax, exp on the 2D array) and FLAT (two passes) tiles.

Timing is the template's contract (:mod:`archsim.templates.attention.tile`);
values are the template's fp32 arithmetic (:mod:`archsim.templates.attention.values`,
:mod:`rtl.lib.fp`), so the RTL is compared bit for bit with the models.

Structure (``R x C`` array, ``P`` 1D lanes, ``E`` MACs per exp, ``D`` the
largest head dim built):

The top module with the host interface is :class:`rtl.attention.engine.AttentionEngine`;
this module is the array it wraps (flat ports).

- **operand buffers** (:class:`rtl.attention.buffers.OperandBuffers`): Q (``R``
  banks, one per array row; address = pass), K and V (``C`` banks, one per array
  column; address = key block); an entry is a head-dim vector of bf16 (or fp16: ``precision``) codes;
  combinational reads.
- **2D PE (i, j)** (:class:`rtl.attention.pe.AttentionPE`): one fp32 multiplier, one fp32 adder, a second adder and
  ``rint`` for the exp's range reduction, a ring of 4 score registers (the slot
  pipeline keeps blocks ``s``, ``s-1`` and ``s-2`` alive), the Horner registers
  ``p`` / ``f`` / ``n``. QK: ``s += q_i[t] * k_j[t]`` (Q broadcast along the
  row, K down the column); the row max, the row sum and the ``P.V`` column
  are chains through the row's PEs in one cycle, skipping the keys beyond
  ``kv_len``. With one-cycle adders the wavefront skew of a systolic array is not built
  (operands are broadcast) and the contract's drain (``R + C - 2`` cycles) is counted. With
  ``mul2d_stages = S > 0`` the PEs' multipliers are pipelined: the controller's decode
  picks the multiplier's operands and, delayed ``S`` cycles, the adder's use of the
  product (QK and P.V stream; the range reduction and each Horner step take ``S + 1``
  cycles; flat QK / AV wait ``S`` cycles after their last issue), as the contract says. With
  ``add2d_stages = A > 0`` (FuseMax only: a FLAT command raises ``error``) QK is interleaved
  (``A + 1`` partial sums in flight, then their pairwise tree on the PE's adder:
  ``tile.qk_sum_cycles``) and Q, K and QK's decode enter as a real wavefront (PE ``(i, j)``
  ``i + j`` cycles late: skew registers at the left / top edge, one register per hop), which
  drains within the QK phase (``R - 1`` cycles more; no drain is counted at the tile's end); the
  exp's steps wait for the pipelined adders, ``rint`` (``rint2d_stages``)
  and ``ldexp`` (``ldexp2d_stages``), and column ``j``'s row-chain decode (its row-sum add, its
  ``P.V`` operands and adds) is column 0's delayed ``j A`` cycles by registers: the row chains
  are systolic, one adder per column, and the results leave the last column ``C A`` cycles after
  column 0's add; the row max chain is registered (``C + 1`` cycles after the last score).
- **1D array**: ``P`` lanes (:class:`rtl.attention.lane.Lane1D`), each with an
  fp32 multiplier, adder, max, ``exp2`` (range reduction + Horner; the library's
  pipelined unit with ``exp1d_stages`` registers) and reciprocal (the library's
  restoring divider with ``recip1d_stages`` registers); an op over
  ``n`` elements takes ``ceil(n / P)`` cycles (an exp op ``exp1d_stages`` more, a
  reciprocal op ``recip1d_stages`` more: their results are written from a delay line as
  they leave the pipeline), lane ``l`` taking element
  ``t*P + l`` in row-major order (an incrementer chain gives each lane its
  row and column). Row sums and row maxima of FLAT are segmented chains
  through the lanes. With ``mul1d_stages`` / ``add1d_stages`` the lanes' multiplier / adder are
  pipelined (``latency1d.mul`` / ``.add``): every op's results are written its latency after issue
  from a delay line, the exp op's latency includes the adder's, and FLAT's row sum is not a chain
  but each lane's own rows, up to ``add1d_stages`` interleaved (``tile.row_reduce_cycles``). With
  ``max1d_stages`` (``latency1d.max``) the lanes' compare is pipelined: the running max op's results
  are written from a delay line and FLAT's row max is each lane's own rows, as the row sum.
- **online-softmax state** (per query row): running max ``m``, ``m*c``, sum
  ``l`` and output ``O`` (``R x D``), per-block rings for the block max, ``m*c``,
  ``alpha``, the row sum and ``P.V``; a finished pass's ``l`` and ``O`` are
  captured into the result store (:class:`rtl.attention.results.ResultStore`, which also
  serves the host's reads), normalised (``1/l``, ``O * 1/l``, one element per cycle, on
  lane 0's reciprocal and multiplier, idle then) after the tile: the contract times that
  final divide on the 1D array's companion tile, where it overlaps the next tile.
- **controller**: fusemax: slots (``s = 0 .. passes*nb + 2``), the 2D unit
  running ``qk_max(s)`` then ``exp_sum_av(s-2)``, the 1D unit ``stat(s-1)``
  then ``update(s-3)``; a slot ends in the cycle both units have finished; then
  the drain. flat: QK blocks (+ drain), the 1D softmax, the AV blocks (+ drain).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from amaranth import Array, Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.attention.buffers import OperandBuffers
from rtl.attention.lane import Lane1D
from rtl.attention.grid import PeGrid
from rtl.attention.pe import qk_tree_levels
from rtl.attention.results import ResultStore
from rtl.lib import fp
from rtl.lib.exp import exp2_coefficient_bits
from rtl.lib.pipe import delay

# controller states
IDLE, SLOTS, DRAIN, FIN, F_QK, F_QKD, F_SM, F_AV, F_AVD, CAP = range(10)
# 2D unit phases
P2_QK, P2_ESA, P2_DONE = range(3)
# 1D ops: fusemax stat (MAX, MULC, EXPA), update (MULL, ADDL, MULO, ADDO); flat softmax (F*)
(OP_MAX, OP_MULC, OP_EXPA, OP_MULL, OP_ADDL, OP_MULO, OP_ADDO,
 OP_FMAX, OP_FMULC, OP_FMULX, OP_FEXP, OP_FADD, OP_FRECIP, OP_FMULN, OP_DONE) = range(15)
FLAT_OPS = (OP_FMAX, OP_FMULC, OP_FMULX, OP_FEXP, OP_FADD, OP_FRECIP, OP_FMULN)


def _delay(m: Module, value, cycles: int, name: str):
    """``value`` through ``cycles`` registers."""
    for k in range(cycles):
        r = Signal(Value.cast(value).shape(), name=f"{name}{k}")
        m.d.sync += r.eq(value)
        value = r
    return value


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


@dataclass(frozen=True)
class AttentionRtlConfig:
    """What is generated: the template's params plus the RTL's buffer sizes."""

    rows: int
    cols: int
    pe1d: int
    exp_macs: int
    head_dim_max: int = 8
    passes_max: int = 4
    key_blocks_max: int = 16
    flat_keys_max: int = 16
    #: latency of the 1D lanes' exp op (the params' ``latency1d["exp"]``): the adder's ``add1d_stages``
    #: (the range subtraction), then ``exp2`` with the rest as its pipeline registers
    exp1d_stages: int = 0
    #: pipeline registers of the 1D lanes' reciprocal (its latency; the params' ``latency1d["recip"]``)
    recip1d_stages: int = 0
    #: pipeline registers of the 1D lanes' multiplier (its latency; the params' ``latency1d["mul"]``)
    mul1d_stages: int = 0
    #: pipeline registers of the 1D lanes' adder (its latency; the params' ``latency1d["add"]``)
    add1d_stages: int = 0
    #: pipeline registers of the 1D lanes' compare (its latency; the params' ``latency1d["max"]``)
    max1d_stages: int = 0
    #: pipeline registers of the 2D PEs' multiplier (its latency; the params' ``latency2d``)
    mul2d_stages: int = 0
    #: pipeline registers of the 2D PEs' adders, rint and ldexp (the params' ``latency2d_add``,
    #: ``latency2d_rint``, ``latency2d_ldexp``); with adder stages the row chains are skewed by them
    add2d_stages: int = 0
    #: the 2D PEs' pipelined multiplier's 18x18 products (``"dsp"`` inferred, ``"dsp_reg"`` ECP5 blocks)
    mul2d: str = "dsp"
    #: the 1D lanes' multipliers' (their own and exp2's) 18x18 products (``"dsp"``, ``"dsp_reg"``)
    mul1d: str = "dsp"
    rint2d_stages: int = 0
    ldexp2d_stages: int = 0
    #: operand format of the Q / K / V buffers (the params' ``precision``: bf16 or fp16), widened
    #: exactly to fp32 in the PEs
    precision: str = "bf16"

    @property
    def skew(self) -> int:
        """The drain counted at a tile's end: ``R + C - 2``; 0 with pipelined adders (the QK wavefront
        drains in every QK phase: ``qk_end``)."""
        return 0 if self.add2d_stages else self.rows + self.cols - 2


def attention_signature(c: AttentionRtlConfig) -> dict:
    R, C, D = c.rows, c.cols, c.head_dim_max
    return {
        "cmd_valid": In(1), "cmd_ready": Out(1), "cmd_flat": In(1), "cmd_q_rows": In(_bits(R + 1)),
        "cmd_kv_len": In(_bits(c.key_blocks_max * C + 1)), "cmd_head_dim": In(_bits(D + 1)),
        "cmd_passes": In(_bits(c.passes_max + 1)), "cmd_drain": In(1),
        "wr_en": In(1), "wr_buf": In(2), "wr_bank": In(_bits(max(R, C))),
        "wr_addr": In(_bits(max(c.passes_max, c.key_blocks_max))), "wr_data": In(16 * D),
        "wr_set": In(1), "q_set": In(1), "kv_set": In(1),  # operand sets: host writes / the tile reads (buffers.py)
        "rd_en": In(1), "rd_addr": In(_bits(c.passes_max * R)), "rd_data": Out(32 * D), "rd_valid": Out(1),
        "busy": Out(1), "tile_start": Out(1), "tile_done": Out(1), "tile_cycles": Out(32), "tiles_done": Out(32),
        "error": Out(1),
    }


def _above(field, limit: int):
    """``field > limit``, or a constant 0 when the field's width cannot hold more than ``limit``
    (no always-false comparison for lint to flag: CMPCONST)."""
    return Const(0, 1) if (1 << len(field)) - 1 <= limit else field > limit


def _scale_bits(d: int) -> int:
    from archsim.templates.attention.values import scale_of

    return int(np.array([scale_of(d)], np.float32).view(np.uint32)[0])



class _Ring:
    """Per-block copies of a per-row (or per-row-and-column) register set, one flat Array."""

    def __init__(self, sets):
        self.n = len(sets[0])
        self.flat = Array(x for st in sets for x in st)

    def __getitem__(self, r):
        ring = self

        class _At:
            def __getitem__(self, idx):
                return ring.flat[r * ring.n + idx]
        return _At()


class _Build:
    """The array under construction: its module ``m``, the component ``arr`` and every signal and helper
    that one builder function makes and a later one uses (by name: the builders below were one
    ``elaborate`` body; a name a configuration does not build reads as None)."""

    def __init__(self, arr, m):
        self.arr, self.m = arr, m

    def get(self, names: str) -> list:
        return [getattr(self, n, None) for n in names.split()]

    def put(self, scope: dict, names: str) -> None:
        for n in names.split():
            if n in scope:
                setattr(self, n, scope[n])


class AttentionArray(wiring.Component):
    """The array (module docstring). ``elaborate`` runs the builder functions below in a fixed order:
    it is the order of their statements, and of two synchronous assignments to one register in the same
    cycle the later one wins (the controller's ``start_op`` over the 1D sequencer's, for one)."""

    def __init__(self, config: AttentionRtlConfig):
        self.c = config
        super().__init__(attention_signature(config))

    def elaborate(self, platform):
        m = Module()
        ctx = _Build(self, m)
        for build in (_build_commands, _build_state_regs, _build_2d_decode, _build_pe_grid, _build_1d_setup):
            build(ctx)
        ctx.lanes = []
        for ln in range(self.c.pe1d):  # in lane order: FLAT's row chains run through them
            _lane_inputs(ctx, ln)
            _lane_writes(ctx, ln)
        m.d.sync += ctx.carry.eq(ctx.chain)
        for build in (_build_1d_sequencing, _build_2d_sequencing, _build_final_divide, _build_controller,
                      _build_outputs):
            build(ctx)
        return m


def _build_commands(ctx: _Build) -> None:
    """The operand buffers, the command registers, the slot history and the units' counters."""
    (arr, m) = ctx.get("arr m")
    c = arr.c
    R, C, P, E, D = c.rows, c.cols, c.pe1d, c.exp_macs, c.head_dim_max
    QP, KB, FL = c.passes_max, c.key_blocks_max, c.flat_keys_max
    K = E - 1  # Horner steps
    coef = exp2_coefficient_bits(E)

    # ------------------------------------------------------------------ operand buffers
    m.submodules.buffers = bufs = OperandBuffers(R, C, D, QP, KB)
    m.d.comb += [bufs.wr_en.eq(arr.wr_en), bufs.wr_buf.eq(arr.wr_buf), bufs.wr_bank.eq(arr.wr_bank),
                 bufs.wr_addr.eq(arr.wr_addr), bufs.wr_data.eq(arr.wr_data), bufs.wr_set.eq(arr.wr_set),
                 bufs.q_set.eq(arr.q_set), bufs.kv_set.eq(arr.kv_set)]

    # ------------------------------------------------------------------ command registers
    q_rows = Signal(range(R + 1))
    L = Signal(range(KB * C + 1))
    d = Signal(range(D + 1))
    passes = Signal(range(QP + 1))
    flat = Signal()
    drain = Signal()
    nb = Signal(range(KB + 1))
    nb_all = Signal(range(KB * QP + 1))
    qd = Signal(range(R * D + 1))
    qL = Signal(range(R * FL + 1))
    scale = Signal(32)
    m.d.comb += scale.eq(Array(Const(_scale_bits(max(1, x)), 32) for x in range(D + 1))[d])

    state = Signal(4)
    tile_cnt = Signal(32)
    busy = Signal()
    m.d.comb += [arr.busy.eq(state != IDLE), arr.cmd_ready.eq(state == IDLE), busy.eq(state != IDLE)]
    done_now = Signal()
    m.d.sync += arr.tile_start.eq(0)
    m.d.comb += arr.tile_done.eq(done_now)

    # ------------------------------------------------------------------ slot bookkeeping (fusemax)
    # history h[o] = the block of phase offset o in the current slot: valid, pass, block in pass, ring
    hv = [Signal(name=f"h{o}_valid") for o in range(4)]
    hp = [Signal(range(QP + 1), name=f"h{o}_pass") for o in range(4)]
    hb = [Signal(range(KB + 1), name=f"h{o}_blk") for o in range(4)]
    hr = [Signal(2, name=f"h{o}_ring") for o in range(4)]
    slot = Signal(range(KB * QP + 4))
    first = [Signal(name=f"h{o}_first") for o in range(4)]
    lastb = [Signal(name=f"h{o}_last") for o in range(4)]
    for o in range(4):
        m.d.comb += [first[o].eq(hb[o] == 0), lastb[o].eq(hb[o] == nb - 1)]

    # 2D unit
    ph2 = Signal(2, init=P2_DONE)
    S = c.mul2d_stages  # the 2D multiplier's latency: each product reaches the adder S cycles late
    A, RN, LX = c.add2d_stages, c.rint2d_stages, c.ldexp2d_stages  # the PEs' adders, rint, ldexp
    TRR = S + 2 * A + RN + 1  # exp0's multiply to the first Horner multiply (the range reduction)
    EX = TRR + (E - 1) * (S + A + 1)  # the ESA phase's ldexp (range reduction and E - 1 Horner steps before it)
    EF = EX + LX  # column 0's row-sum add (ldexp's result)
    SK = C * A  # the row chains' adders: column 0's add to the last column's result
    # QK on a pipelined adder: A + 1 partial sums in flight, then their pairwise tree on it (qk_tree_levels)
    QL, QT = A + 1, qk_tree_levels(A)
    QFIN = QT * QL + (1 << QT) - 1  # the tree's root in the PEs' read-back register, after the steps
    cnt2 = Signal(range(max(EF + D + S + SK, max(D, QL) + QFIN + 1 + S + (C + R if A else 0)) + 2))
    # 1D unit
    op1 = Signal(4, init=OP_DONE)
    pos = Signal(range(R * max(FL, D) + P + 1))
    i0 = Signal(range(R + P + 2))
    c0 = Signal(range(max(D, FL) + 2))
    # flat counters
    fblk = Signal(range(KB + 1))
    ft = Signal(range(D + 1))
    drain_cnt = Signal(range(c.skew + 2))
    ctx.put(locals(), "c R C P E D d QP KB K FL L passes flat coef bufs q_rows S drain nb nb_all qd qL scale A "
                "state tile_cnt done_now slot hv hp hb hr first lastb ph2 RN LX TRR EF SK QL QT QFIN ft "
                "cnt2 op1 pos i0 c0 fblk drain_cnt")


def _build_state_regs(ctx: _Build) -> None:
    """The online-softmax state, the per-block rings, the score buffer and the result store."""
    (m, R, D, FL, QP) = ctx.get("m R D FL QP")
    # ------------------------------------------------------------------ state registers
    def regs(n, name):
        return Array(Signal(32, name=f"{name}{k}") for k in range(n))

    m_state, mc_state, l_state = regs(R, "m_"), regs(R, "mc_"), regs(R, "l_")
    o_state = regs(R * D, "o_")
    bm = [regs(R, f"bm{r}_") for r in range(2)]
    mcb = [regs(R, f"mcb{r}_") for r in range(2)]
    alpha = [regs(R, f"alpha{r}_") for r in range(4)]
    rowsum = [regs(R, f"rowsum{r}_") for r in range(2)]
    pv = [regs(R * D, f"pv{r}_") for r in range(2)]
    sbuf = regs(R * FL, "sbuf_")
    m.submodules.results = results = ResultStore(R, D, QP)
    bmA, mcbA, alphaA, rowsumA, pvA = (_Ring(x) for x in (bm, mcb, alpha, rowsum, pv))
    ctx.put(locals(), "m_state mc_state l_state o_state sbuf results bmA mcbA alphaA rowsumA pvA")


def _build_2d_decode(ctx: _Build) -> None:
    """The 2D array's control decode: QK, the exp's steps and P.V, the adder's decode S cycles
    later, the operand reads and the row chains' per-column skew."""
    (D, d, state, S, L, m, ft, C, flat, K, A, coef, cnt2, TRR, R, QL, ph2, QFIN, QT, EF, fblk, hr, hb, bufs,
     hp, SK) = ctx.get("D d state S L m ft C flat K A coef cnt2 TRR R QL ph2 QFIN QT EF fblk hr hb bufs hp SK")
    # ------------------------------------------------------------------ 2D array control decode
    in_slots = state == SLOTS
    qk_mac = Signal()
    qk_max = Signal()
    exp0 = Signal()
    horner = Signal()
    expfin = Signal()
    av = Signal()
    av_e = Signal(range(D + 1))
    ftail = Signal() if S else Const(0, 1)  # flat QK / AV: the last products leave the multiplier
    ftail_cnt = Signal(range(S + 1))
    # the multiplier's cycle of Horner step k (1..K) is k (S + 1); its coefficient index K - k
    horner_at = [cnt2 == TRR + (k - 1) * (S + A + 1) for k in range(1, K + 1)]
    hidx = Signal(range(K + 1))
    for k in range(1, K + 1):
        with m.If(horner_at[k - 1]):
            m.d.comb += hidx.eq(K - k)
    qk_issue, qk_at = cnt2 < d, cnt2  # the multiplier streams the head dim
    if A:  # steps while cnt2 < c0 = max(d, A + 1), then the tree's adds at their cycles (adder time - S)
        qc0 = Signal(range(max(D, QL) + 1))
        qrel = Signal.like(cnt2)
        m.d.comb += [qc0.eq(Mux(d > QL, d, QL)), qrel.eq(cnt2 - qc0)]
        # + the registered row max chain, + the wavefront's last row (R - 1 cycles behind row 0)
        qk_end = (ph2 == P2_QK) & (cnt2 == qc0 + QFIN + 1 + S + C + 1 + R - 1)
        in_qk = in_slots & (ph2 == P2_QK)
        qk_step, qk_tail = in_qk & (cnt2 < qc0), in_qk & (cnt2 >= qc0)
        tree_hits, n_prev = [], QL  # (level, right operand missing) at each tree add's cycle
        for lev in range(1, QT + 1):
            n_lev = -(-n_prev // 2)
            for i in range(n_lev):
                at = (lev - 1) * QL + (1 << lev) - 1 + i * (1 << lev)
                tree_hits.append((qk_tail & (qrel == at), lev - 1, 2 * i + 1 >= n_prev))
            n_prev = n_lev
        qk_tree, qk_rmask = Signal(), Signal()
        qk_tap = Signal(range(max(1, QT)))
        for hit, tap, missing in tree_hits:
            with m.If(hit):
                m.d.comb += [qk_tree.eq(1), qk_tap.eq(tap), qk_rmask.eq(missing)]
        qk_fin = qk_tail & (qrel == QFIN)
    else:
        qk_end = (ph2 == P2_QK) & (cnt2 == d + S)
    m.d.comb += [
        qk_mac.eq((in_slots & (ph2 == P2_QK) & qk_issue) | ((state == F_QK) & ~ftail)),
        qk_max.eq(in_slots & qk_end),
        exp0.eq(in_slots & (ph2 == P2_ESA) & (cnt2 == 0)),
        horner.eq(in_slots & (ph2 == P2_ESA) & (Cat(*horner_at).any() if K else 0)),
        expfin.eq(in_slots & (ph2 == P2_ESA) & (cnt2 == EF)),
        av.eq((in_slots & (ph2 == P2_ESA) & (cnt2 > EF) & (cnt2 <= EF + d)) | ((state == F_AV) & ~ftail)),
        av_e.eq(Mux(state == F_AV, ft, cnt2 - EF - 1)),
    ]
    qk_t = Signal(range(D + 1))
    m.d.comb += qk_t.eq(Mux(state == F_QK, ft, qk_at))
    # the adder's decode: the multiplier's, S cycles later (the same signals when S = 0)
    def late(v, name):
        return delay(m, v, S, f"{name}_d")
    qk_acc, exp0_add, horner_add, av_add = (late(x, n) for x, n in ((qk_mac, "qk_acc"), (exp0, "exp0_add"),
                                                                   (horner, "horner_add"), (av, "av_add")))
    qk_first_add = late(qk_t == 0 if not A else cnt2 < QL, "qk_first")
    qk_last_add = late(qk_t == d - 1, "qk_last")
    if A:  # the interleaved QK's adder decode (rtl.attention.pe: qk_add .. qk_fin)
        qk_add_d, qk_pad_d, qk_tree_d, qk_rmask_d, qk_tap_d, qk_fin_d = (
            late(x, n) for x, n in ((qk_step | qk_tree, "qk_add"), (cnt2 >= d, "qk_pad"), (qk_tree, "qk_tree"),
                                    (qk_rmask, "qk_rmask"), (qk_tap, "qk_tap"), (qk_fin, "qk_fin")))
    av_e_add, fblk_add, hidx_add = late(av_e, "av_e"), late(fblk, "fblk"), late(hidx, "hidx")
    qk_ring = Mux(flat, 0, hr[0])
    esa_ring = hr[2]
    # operand reads: Q at the pass, K at the key block (QK), V at the key block (AV)
    kblk = Mux(flat, fblk, hb[0])
    vblk = Mux(flat, fblk, hb[2])
    m.d.comb += [bufs.q_addr.eq(Mux(flat, 0, hp[0])), bufs.kv_addr_k.eq(kblk), bufs.kv_addr_v.eq(vblk)]

    def lane16(word, idx):
        return Array(word[16 * x:16 * (x + 1)] for x in range(D))[idx]

    # column j's row-chain decode: column 0's, j A cycles later (the skew, as registers)
    def skewed(v, j, name):
        return delay(m, v, j * A, f"{name}_c{j}_")
    expfin_c = [skewed(expfin, j, "expfin") for j in range(C)]
    av_c = [skewed(av, j, "av") for j in range(C)]
    av_add_c = [skewed(av_add, j, "av_add") for j in range(C)]
    av_e_c = [skewed(av_e, j, "av_e") for j in range(C)]
    qcol = [lane16(bufs.q_data[i], qk_t) for i in range(R)]
    kcol = [lane16(bufs.k_data[j], qk_t) for j in range(C)]
    vcol = [lane16(bufs.v_data[j], av_e_c[j]) for j in range(C)]
    colvalid = [Signal(name=f"colvalid{j}") for j in range(C)]
    for j in range(C):
        blk_now = Mux(av_add_c[j] | expfin_c[j], Mux(flat, fblk_add, hb[2]), kblk)
        m.d.comb += colvalid[j].eq(blk_now * C + j < L)
    # the results leave the last column C A cycles after column 0's add
    expfin_cap, av_add_cap = delay(m, expfin, SK, "expfin_cap"), delay(m, av_add, SK, "av_add_cap")
    av_e_cap = delay(m, av_e_add, SK, "av_e_cap")
    coefA = Array(Const(x, 32) for x in coef)
    horner_coef = coefA[hidx_add]
    ctx.put(locals(), "in_slots qk_mac qk_max exp0 horner ftail ftail_cnt qk_end qk_acc exp0_add horner_add "
                "av_add qk_first_add qk_last_add qk_add_d qk_pad_d qk_tree_d qk_rmask_d qk_tap_d qk_fin_d "
                "av_e_add fblk_add qk_ring esa_ring expfin_c av_c av_add_c qcol kcol vcol colvalid "
                "expfin_cap av_add_cap av_e_cap horner_coef")


def _build_pe_grid(ctx: _Build) -> None:
    """The 2D datapath (:class:`rtl.attention.grid.PeGrid`: the PEs and the wavefront's skew registers), its
    decode and operands, and the row chains' results written to the state."""
    (A, c, E, C, qk_mac, m, qk_first_add, qk_add_d, qk_pad_d, qk_tree_d, qk_rmask_d, qk_fin_d, qk_tap_d, R,
     qcol, kcol, av_add, flat, o_state, D, av_e_add, mcbA, esa_ring, S, RN, LX, sbuf, FL, fblk, fblk_add,
     exp0, horner, expfin_c, av_c, qk_ring, vcol, scale, horner_coef, colvalid, qk_acc, exp0_add, horner_add,
     av_add_c, qk_last_add, qk_max, bmA, hr, expfin_cap, rowsumA, av_add_cap, av_e_cap, pvA) = ctx.get(
        "A c E C qk_mac m qk_first_add qk_add_d qk_pad_d qk_tree_d qk_rmask_d qk_fin_d qk_tap_d R qcol kcol "
        "av_add flat o_state D av_e_add mcbA esa_ring S RN LX sbuf FL fblk fblk_add exp0 horner expfin_c av_c "
        "qk_ring vcol scale horner_coef colvalid qk_acc exp0_add horner_add av_add_c qk_last_add qk_max bmA "
        "hr expfin_cap rowsumA av_add_cap av_e_cap pvA")
    m.submodules.grid = grid = PeGrid(R, C, E, precision=c.precision, mul_stages=S, add_stages=A, rint_stages=RN,
                                      ldexp_stages=LX, mul=c.mul2d)
    m.d.comb += [grid.exp0.eq(exp0), grid.horner.eq(horner), grid.flat.eq(flat), grid.qk_ring.eq(qk_ring),
                 grid.esa_ring.eq(esa_ring), grid.scale.eq(scale), grid.horner_coef.eq(horner_coef),
                 grid.qk_mac.eq(qk_mac), grid.qk_first.eq(qk_first_add)]
    if S:
        m.d.comb += [grid.qk_acc.eq(qk_acc), grid.exp0_add.eq(exp0_add), grid.horner_add.eq(horner_add)]
    if A:
        m.d.comb += [grid.qk_add.eq(qk_add_d), grid.qk_pad.eq(qk_pad_d), grid.qk_tree.eq(qk_tree_d),
                     grid.qk_rmask.eq(qk_rmask_d), grid.qk_fin.eq(qk_fin_d), grid.qk_tap.eq(qk_tap_d)]
    for j in range(C):
        m.d.comb += [grid.k[j].eq(kcol[j]), grid.v[j].eq(vcol[j]), grid.expfin[j].eq(expfin_c[j]),
                     grid.av[j].eq(av_c[j]), grid.colvalid[j].eq(colvalid[j])]
        if S:
            m.d.comb += grid.av_add[j].eq(av_add_c[j])
    for i in range(R):
        m.d.comb += [grid.q[i].eq(qcol[i]), grid.neg_mc[i].eq(fp.fp32_neg(mcbA[esa_ring[0]][i])),
                     grid.chain_in[i].eq(Mux(av_add & flat, o_state[i * D + av_e_add], Const(0, 32)))]
        for j in range(C):
            m.d.comb += grid.p_flat[i][j].eq(sbuf[i * FL + fblk * C + j])
            with m.If(qk_acc & flat & qk_last_add):
                m.d.sync += sbuf[i * FL + fblk_add * C + j].eq(grid.score[i][j])
        rmax, chain = grid.rmax[i], grid.chain[i]
        with m.If(qk_max):
            m.d.sync += bmA[hr[0][0]][i].eq(rmax)
        with m.If(expfin_cap):
            m.d.sync += rowsumA[esa_ring[0]][i].eq(chain)
        with m.If(av_add_cap):
            with m.If(flat):
                m.d.sync += o_state[i * D + av_e_cap].eq(chain)
            with m.Else():
                m.d.sync += pvA[esa_ring[0]][i * D + av_e_cap].eq(chain)


def _build_1d_setup(ctx: _Build) -> None:
    """The 1D unit's op decode: element counts, each op's latency, the row reductions' order."""
    (D, m, d, c, op1, L, R, FL, q_rows, qd, qL, hr, i0, c0, first, flat, QP, results) = ctx.get(
        "D m d c op1 L R FL q_rows qd qL hr i0 c0 first flat QP results")
    # ------------------------------------------------------------------ 1D array
    row_op = Signal()  # one element per query row
    o_op = Signal()  # one element per (row, head-dim column)
    m.d.comb += [row_op.eq((op1 == OP_MAX) | (op1 == OP_MULC) | (op1 == OP_EXPA) | (op1 == OP_MULL)
                           | (op1 == OP_ADDL) | (op1 == OP_FMULC) | (op1 == OP_FRECIP)),
                 o_op.eq((op1 == OP_MULO) | (op1 == OP_ADDO))]
    width = Signal(range(max(D, FL) + 2))
    n_elems = Signal(range(R * max(FL, D) + 1))
    m.d.comb += [width.eq(Mux(row_op, 1, Mux(o_op, d, L))),
                 n_elems.eq(Mux(row_op, q_rows, Mux(o_op, qd, qL)))]
    r1, r3 = hr[1], hr[3]
    S1, S2 = c.exp1d_stages, c.recip1d_stages
    M1, A1, MX = c.mul1d_stages, c.add1d_stages, c.max1d_stages
    is_exp = Signal()  # an exp op: its results are written S1 cycles after issue
    is_recip = Signal()  # a reciprocal op: its results are written S2 cycles after issue
    m.d.comb += [is_exp.eq((op1 == OP_EXPA) | (op1 == OP_FEXP)), is_recip.eq(op1 == OP_FRECIP)]
    # each op's latency: cycles from an element's issue to its result's write (the lanes' units)
    lat_of = {OP_MULC: M1, OP_MULL: M1, OP_MULO: M1, OP_FMULC: M1, OP_FMULN: M1, OP_FMULX: M1 + A1,
              OP_ADDL: A1, OP_ADDO: A1, OP_FADD: A1, OP_EXPA: S1, OP_FEXP: S1, OP_FRECIP: S2,
              OP_MAX: MX, OP_FMAX: MX}
    any_piped = any(lat_of.values())
    # a pipelined op has issued every element and waits for its pipeline (never without one)
    draining = Signal() if any_piped else Const(0, 1)
    drain1 = Signal(range(max(lat_of.values()) + 1))
    op_latency = Signal(range(max(lat_of.values()) + 1))  # of the current op
    with m.Switch(op1):
        for op, v in lat_of.items():
            if v:
                with m.Case(op):
                    m.d.comb += op_latency.eq(v)
    piped = op_latency != 0
    # FLAT's row sum on a pipelined adder (A1 > 0) and row max on a pipelined compare (MX > 0): not
    # chains through the lanes; lane l reduces rows (rb + rr) P + l, up to `ilv` (the unit's latency)
    # rows interleaved (rr = 0 .. ilv - 1), element jj of each in turn, the unit's result fed back ilv
    # cycles later (the contract's row_reduce_cycles)
    red_ops = {op: n for op, n in ((OP_FADD, A1), (OP_FMAX, MX)) if n}
    red = Signal() if red_ops else Const(0, 1)
    ilv = Signal(range(max(A1, MX) + 1)) if red_ops else None
    for op, n in red_ops.items():
        with m.If(op1 == op):
            m.d.comb += [red.eq(1), ilv.eq(n)]
    rb = Signal(range(R + max(A1, MX) + 1))
    rr = Signal(range(max(A1, MX, 2)))
    jj = Signal(range(FL + 1))
    li, lc = i0, c0
    carry = Signal(32)
    chain = carry
    first1 = first[1] & ~flat
    first3 = first[3] & ~flat
    # the final divide (after the tile, op1 = OP_DONE): lane 0's reciprocal and multiplier do it
    fp_ = Signal(range(QP + 1))
    fi = Signal(range(R + 1))
    fe = Signal(range(D + 1))
    m.d.comb += [results.fin_l_addr.eq(fp_ * R + fi), results.fin_o_addr.eq((fp_ * R + fi) * D + fe)]
    fin_l, fin_o = results.fin_l, results.fin_o
    ctx.put(locals(), "rr width n_elems r1 r3 S1 S2 M1 A1 MX is_exp is_recip lat_of any_piped piped li draining "
                "drain1 op_latency chain red rb ilv jj fe red_ops lc carry fi first1 first3 fp_ fin_l fin_o")


def _lane_inputs(ctx: _Build, ln: int) -> None:
    """Lane ``ln``'s element (row / column / valid), its unit and its operands for the current op."""
    (R, P, m, c, D, FL, li, red, red_ops, chain, chi, chc, rb, rr, lc, jj, q_rows, pos, n_elems, op1, E,
     draining, width, S1, A1, S2, M1, MX, lanes, m_state, scale, mc_state, mcbA, r1, first3, l_state, alphaA,
     r3, rowsumA, o_state, pvA, sbuf, fin_o, fin_l, bmA, first1) = ctx.get(
        "R P m c D FL li red red_ops chain chi chc rb rr lc jj q_rows pos n_elems op1 E draining width S1 A1 "
        "S2 M1 MX lanes m_state scale mc_state mcbA r1 first3 l_state alphaA r3 rowsumA o_state pvA sbuf "
        "fin_o fin_l bmA first1")
    ii = Signal(range(R + P + 2), name=f"lane{ln}_i")
    cc = Signal(range(max(D, FL) + 2), name=f"lane{ln}_c")
    vv = Signal(name=f"lane{ln}_valid")
    if red_ops:  # the row reductions' own element order (above); the incrementer chain for every other op
        chi = Signal(range(R + P + 2), name=f"lane{ln}_chi")
        chc = Signal(range(max(D, FL) + 2), name=f"lane{ln}_chc")
        row = (rb + rr) * P + ln
        m.d.comb += [chi.eq(li), chc.eq(lc), ii.eq(Mux(red, row, chi)), cc.eq(Mux(red, jj, chc)),
                     vv.eq(Mux(red, row < q_rows, (pos + ln < n_elems) & (op1 != OP_DONE)) & ~draining)]
    else:
        chi, chc = ii, cc
        m.d.comb += [ii.eq(li), cc.eq(lc), vv.eq((pos + ln < n_elems) & (op1 != OP_DONE) & ~draining)]
    wrap = chc + 1 == width
    li, lc = Mux(wrap, chi + 1, chi), Mux(wrap, 0, chc + 1)
    nm = f"lane{ln}"
    oi = ii * D + cc
    si = ii * FL + cc
    ma = Signal(32, name=f"{nm}_ma")
    mb = Signal(32, name=f"{nm}_mb")
    aa = Signal(32, name=f"{nm}_aa")
    ab = Signal(32, name=f"{nm}_ab")
    m.submodules[nm] = lane = Lane1D(E, S1 - A1, S2, M1, A1, mul=c.mul1d, max_stages=MX)
    lanes.append(lane)
    with m.Switch(op1):
        with m.Case(OP_MULC):
            m.d.comb += [ma.eq(m_state[ii]), mb.eq(scale)]
        with m.Case(OP_EXPA):
            m.d.comb += [aa.eq(mc_state[ii]), ab.eq(fp.fp32_neg(mcbA[r1[0]][ii]))]
        with m.Case(OP_MULL):
            m.d.comb += [ma.eq(Mux(first3, 0, l_state[ii])), mb.eq(alphaA[r3][ii])]
        with m.Case(OP_ADDL):
            m.d.comb += [aa.eq(l_state[ii]), ab.eq(rowsumA[r3[0]][ii])]
        with m.Case(OP_MULO):
            m.d.comb += [ma.eq(Mux(first3, 0, o_state[oi])), mb.eq(alphaA[r3][ii])]
        with m.Case(OP_ADDO):
            m.d.comb += [aa.eq(o_state[oi]), ab.eq(pvA[r3[0]][oi])]
        with m.Case(OP_FMULC):
            m.d.comb += [ma.eq(m_state[ii]), mb.eq(scale)]
        with m.Case(OP_FMULX):
            m.d.comb += [ma.eq(sbuf[si]), mb.eq(scale)]
        with m.Case(OP_FEXP):
            m.d.comb += [aa.eq(sbuf[si]), ab.eq(fp.fp32_neg(Const(0, 32)))]
        with m.Case(OP_FADD):
            m.d.comb += [aa.eq(Mux(cc == 0, 0, lane.sum if A1 else chain)), ab.eq(sbuf[si])]
        with m.Case(OP_FMULN):
            m.d.comb += [ma.eq(sbuf[si]), mb.eq(l_state[ii])]
        if ln == 0:  # no op: the final divide's O * (1/l)
            with m.Case(OP_DONE):
                m.d.comb += [ma.eq(fin_o), mb.eq(lane.recip)]
    recip_in = Mux(op1 == OP_DONE, fin_l, l_state[ii]) if ln == 0 else l_state[ii]
    m.d.comb += [lane.ma.eq(ma), lane.mb.eq(mb), lane.aa.eq(aa), lane.ab.eq(ab),
                 lane.fmulx.eq(op1 == OP_FMULX), lane.neg_mc.eq(fp.fp32_neg(mc_state[ii])),
                 lane.recip_in.eq(recip_in), lane.bm_in.eq(bmA[r1[0]][ii]),
                 # a pipelined compare: the first block's max is its own (max(bm, bm)); FLAT's row
                 # max fed back from the compare (each lane its own rows)
                 lane.m_in.eq(Mux(first1, bmA[r1[0]][ii], m_state[ii]) if MX else m_state[ii]),
                 lane.chain_in.eq(lane.max if MX else chain), lane.s_in.eq(sbuf[si]),
                 lane.fmax.eq(op1 == OP_FMAX),
                 lane.row_start.eq(cc == 0)]
    ctx.put(locals(), "ii lane cc vv li chi chc lc nm oi si")


def _lane_writes(ctx: _Build, ln: int) -> None:
    """Lane ``ln``'s results written to the state: at once, or from delay lines after its units' latency."""
    (m, lane, bmA, r1, ii, cc, L, mcbA, l_state, oi, o_state, mc_state, si, sbuf, m_state, MX, vv, op1,
     first1, lat_of, A1, S2, R, op_latency, nm, S1, is_exp, FL, alphaA, is_recip) = ctx.get(
        "m lane bmA r1 ii cc L mcbA l_state oi o_state mc_state si sbuf m_state MX vv op1 first1 lat_of A1 S2 "
        "R op_latency nm S1 is_exp FL alphaA is_recip")
    prod, add, ex, rc, mx, seg = lane.prod, lane.sum, lane.exp, lane.recip, lane.max, lane.seg
    bmv = bmA[r1[0]][ii]
    end_row = cc == L - 1
    writes = {  # op -> its result's write: (value, index -> target register) (one per element)
        OP_MULC: (prod, "ii", lambda x: mcbA[r1[0]][x]), OP_MULL: (prod, "ii", lambda x: l_state[x]),
        OP_ADDL: (add, "ii", lambda x: l_state[x]), OP_MULO: (prod, "oi", lambda x: o_state[x]),
        OP_ADDO: (add, "oi", lambda x: o_state[x]), OP_FMULC: (prod, "ii", lambda x: mc_state[x]),
        OP_FMULX: (add, "si", lambda x: sbuf[x]), OP_FMULN: (prod, "si", lambda x: sbuf[x]),
        **({OP_MAX: (mx, "ii", lambda x: m_state[x])} if MX else {}),
    }
    with m.If(vv):
        with m.Switch(op1):
            if not MX:
                with m.Case(OP_MAX):
                    m.d.sync += m_state[ii].eq(Mux(first1, bmv, mx))
            with m.Case(OP_EXPA):
                m.d.sync += mc_state[ii].eq(mcbA[r1[0]][ii])
            for op, (val, at, target) in writes.items():
                if not lat_of[op]:
                    with m.Case(op):
                        m.d.sync += target({"ii": ii, "oi": oi, "si": si}[at]).eq(val)
            if not MX:
                with m.Case(OP_FMAX):
                    with m.If(end_row):
                        m.d.sync += m_state[ii].eq(seg)
            if not A1:
                with m.Case(OP_FADD):
                    with m.If(end_row):
                        m.d.sync += l_state[ii].eq(seg)
            if not S2:
                with m.Case(OP_FRECIP):
                    m.d.sync += l_state[ii].eq(rc)
    # results of the pipelined multiplier / adder: written their op's latency after issue (a delay
    # line of the element's indices per latency; the op, its ring and first flags hold until its
    # pipeline drains, and only that op's elements are in the line)
    for lat in sorted({lat_of[op] for op in (*writes, OP_FADD, OP_FMAX) if lat_of[op]}):
        mine = vv & (op_latency == lat)  # only an op of this latency's elements enter its line
        d_v, d_ii, d_oi, d_si, d_end = (_delay(m, x, lat, f"{nm}_w{lat}_{k}_")
                                        for k, x in (("v", mine), ("i", ii), ("o", oi), ("s", si), ("e", end_row)))
        with m.If(d_v):
            with m.Switch(op1):
                for op, (val, at, target) in writes.items():
                    if lat_of[op] == lat:
                        with m.Case(op):
                            m.d.sync += target({"ii": d_ii, "oi": d_oi, "si": d_si}[at]).eq(val)
                for op, (val, state_reg) in ((OP_FADD, (add, l_state)), (OP_FMAX, (mx, m_state))):
                    if lat_of[op] == lat:  # a row reduction's end: the row's result
                        with m.Case(op):
                            with m.If(d_end):
                                m.d.sync += state_reg[d_ii].eq(val)
    # exp results: written S1 cycles after issue (a delay line of what the write needs)
    w_v, w_alpha, w_ii, w_si, w_first, w_ring = vv & is_exp, op1 == OP_EXPA, ii, si, first1, r1
    for k in range(S1):
        regs_k = [Signal(1, name=f"{nm}_ev{k}"), Signal(1, name=f"{nm}_ea{k}"),
                  Signal(ii.shape(), name=f"{nm}_ei{k}"), Signal(range(R * FL + 1), name=f"{nm}_es{k}"),
                  Signal(1, name=f"{nm}_ef{k}"), Signal(2, name=f"{nm}_er{k}")]
        m.d.sync += [r.eq(v) for r, v in zip(regs_k, (w_v, w_alpha, w_ii, w_si, w_first, w_ring))]
        w_v, w_alpha, w_ii, w_si, w_first, w_ring = regs_k
    with m.If(w_v):
        with m.If(w_alpha):
            m.d.sync += alphaA[w_ring][w_ii].eq(Mux(w_first, 0, ex))
        with m.Else():
            m.d.sync += sbuf[w_si].eq(ex)
    # reciprocal results (FLAT's 1/l): written S2 cycles after issue
    r_v, r_ii = vv & is_recip, ii
    for k in range(S2):
        rv_k, ri_k = Signal(1, name=f"{nm}_rv{k}"), Signal(ii.shape(), name=f"{nm}_ri{k}")
        m.d.sync += [rv_k.eq(r_v), ri_k.eq(r_ii)]
        r_v, r_ii = rv_k, ri_k
    if S2:
        with m.If(r_v):
            m.d.sync += l_state[r_ii].eq(rc)
    chain = seg
    ctx.put(locals(), "chain")


def _build_1d_sequencing(ctx: _Build) -> None:
    """The 1D unit's op sequence: issue, a pipelined op's drain, the next op."""
    (red_ops, red, m, rb, rr, P, q_rows, jj, L, pos, n_elems, op1, hv, piped, li, any_piped, draining,
     drain1, op_latency, i0, c0, lc, ilv) = ctx.get(
        "red_ops red m rb rr P q_rows jj L pos n_elems op1 hv piped li any_piped draining drain1 op_latency "
        "i0 c0 lc ilv")

    # ------------------------------------------------------------------ 1D sequencing
    op_last_cycle = Signal()
    if red_ops:  # a row reduction: lane 0's last row (the one with the most), its last element
        m.d.comb += op_last_cycle.eq(Mux(red, ((rb + rr + 1) * P >= q_rows) & (jj == L - 1), pos + P >= n_elems))
    else:
        m.d.comb += op_last_cycle.eq(pos + P >= n_elems)
    next_op = Signal(4)
    with m.Switch(op1):
        with m.Case(OP_EXPA):
            m.d.comb += next_op.eq(Mux(hv[3], OP_MULL, OP_DONE))
        with m.Case(OP_ADDO, OP_FMULN, OP_DONE):
            m.d.comb += next_op.eq(OP_DONE)
        with m.Default():
            m.d.comb += next_op.eq(op1 + 1)
    fin1 = Signal()
    op_end = Signal()  # the op's last cycle: its last issue, or a piped op's last pipeline cycle
    if any_piped:
        m.d.comb += op_end.eq(Mux(draining, drain1 == op_latency - 1, op_last_cycle & ~piped))
    else:
        m.d.comb += op_end.eq(op_last_cycle)
    m.d.comb += fin1.eq((op1 == OP_DONE) | (op_end & (next_op == OP_DONE)))

    def start_op(op):
        return ([op1.eq(op), pos.eq(0), i0.eq(0), c0.eq(0)] + ([draining.eq(0)] if any_piped else [])
                + ([rb.eq(0), rr.eq(0), jj.eq(0)] if red_ops else []))

    with m.If(op1 != OP_DONE):  # the controller below overrides this at a slot's end
        with m.If(op_end):
            m.d.sync += start_op(next_op)
        if any_piped:
            with m.Elif(draining):
                m.d.sync += drain1.eq(drain1 + 1)
            with m.Elif(op_last_cycle):  # a piped op issued its last elements
                m.d.sync += [draining.eq(1), drain1.eq(0)]
        with m.Else():
            m.d.sync += [pos.eq(pos + P), i0.eq(li), c0.eq(lc)]
            if red_ops:  # the row reductions' counters (above)
                with m.If(rr == ilv - 1):
                    m.d.sync += rr.eq(0)
                    with m.If(jj == L - 1):
                        m.d.sync += [jj.eq(0), rb.eq(rb + ilv)]
                    with m.Else():
                        m.d.sync += jj.eq(jj + 1)
                with m.Else():
                    m.d.sync += rr.eq(rr + 1)
    ctx.put(locals(), "fin1 op_end start_op")


def _build_2d_sequencing(ctx: _Build) -> None:
    """The 2D unit's phases inside a slot, and the capture of a finished pass."""
    (d, S, m, ph2, qk_end, hv, cnt2, EF, SK, in_slots, QP, op1, op_end, lastb, hp, state, results, l_state,
     o_state) = ctx.get(
        "d S m ph2 qk_end hv cnt2 EF SK in_slots QP op1 op_end lastb hp state results l_state o_state")
    # 2D sequencing inside a slot
    fin2 = Signal()
    m.d.comb += fin2.eq((ph2 == P2_DONE) | (qk_end & ~hv[2])
                        | ((ph2 == P2_ESA) & (cnt2 == EF + d + S + SK)))
    with m.If(in_slots):
        with m.If(qk_end):
            m.d.sync += [ph2.eq(Mux(hv[2], P2_ESA, P2_DONE)), cnt2.eq(0)]
        with m.Elif((ph2 == P2_ESA) & (cnt2 == EF + d + S + SK)):
            m.d.sync += ph2.eq(P2_DONE)
        with m.Elif(ph2 != P2_DONE):
            m.d.sync += cnt2.eq(cnt2 + 1)

    # capture of a finished pass (the cycle after its last ADDO)
    cap = Signal()
    cap_pass = Signal(range(QP + 1))
    m.d.sync += cap.eq(in_slots & (op1 == OP_ADDO) & op_end & lastb[3])
    with m.If(in_slots & (op1 == OP_ADDO) & op_end):
        m.d.sync += cap_pass.eq(hp[3])
    flat_cap = Signal()
    m.d.comb += flat_cap.eq(state == CAP)
    m.d.comb += [results.cap.eq(cap), results.cap_pass.eq(cap_pass), results.flat_cap.eq(flat_cap),
                 results.l_in.eq(Cat(*l_state)), results.o_in.eq(Cat(*o_state))]
    ctx.put(locals(), "fin2 cap")


def _build_final_divide(ctx: _Build) -> None:
    """The final divide's product write (lane 0's multiplier, M1 cycles after issue)."""
    (fi, lanes, D, S2, m, M1, fp_, R, fe, results) = ctx.get("fi lanes D S2 m M1 fp_ R fe results")
    # ------------------------------------------------------------------ the final divide (after the tile)
    fo = lanes[0].prod  # O * (1/l) on lane 0 (its op is OP_DONE in FIN: see the lane loop)
    fwait = Signal(range(S2 + 1))  # cycles of the current row's l in the reciprocal's pipeline
    fin_issue = Signal()  # an element of the final divide enters lane 0's multiplier
    fin_tail = Signal()  # every element issued; waiting M1 cycles for the last product
    fin_tail_cnt = Signal(range(M1 + 1))
    # the product is written M1 cycles after its issue (a delay line of the element's address)
    fin_w = _delay(m, fin_issue, M1, "fin_wv")
    fin_at = _delay(m, (fp_ * R + fi) * D + fe, M1, "fin_wa")
    m.d.comb += [results.fin_we.eq(fin_w), results.fin_addr.eq(fin_at), results.fin_data.eq(fo)]
    ctx.put(locals(), "fwait fin_issue fin_tail fin_tail_cnt")


def _build_controller(ctx: _Build) -> None:
    """The main controller: command accept, the slots, FLAT's phases, the drain, the final divide."""
    (m, c, slot, nb_all, nb, d, tile_cnt, arr, S, ft, hv, hp, hb, hr, ph2, cnt2, start_op, state, fin1, fin2,
     drain, drain_cnt, done_now, ftail, ftail_cnt, fblk) = ctx.get(
        "m c slot nb_all nb d tile_cnt arr S ft hv hp hb hr ph2 cnt2 start_op state fin1 fin2 drain drain_cnt "
        "done_now ftail ftail_cnt fblk")
    # ------------------------------------------------------------------ main controller
    slot_last = slot == nb_all + 2
    m.d.sync += tile_cnt.eq(Mux(arr.tile_start, 1, tile_cnt + 1))

    def new_slot(s_next_valid):
        """Shift the block history and start the units for the next slot."""
        stmts = []
        for o in (3, 2, 1):
            stmts += [hv[o].eq(hv[o - 1]), hp[o].eq(hp[o - 1]), hb[o].eq(hb[o - 1]), hr[o].eq(hr[o - 1])]
        nxt_blk = Mux(hb[0] + 1 == nb, 0, hb[0] + 1)
        nxt_pass = Mux(hb[0] + 1 == nb, hp[0] + 1, hp[0])
        stmts += [hv[0].eq(s_next_valid), hb[0].eq(nxt_blk), hp[0].eq(nxt_pass), hr[0].eq(hr[0] + 1)]
        # units: 2D runs qk(s) if valid, then esa(s-2) = the shifted h[1]; 1D stat(s-1) = h[0], update(s-3) = h[2]
        stmts += [ph2.eq(Mux(s_next_valid, P2_QK, Mux(hv[1], P2_ESA, P2_DONE))), cnt2.eq(0)]
        stmts += start_op(Mux(hv[0], OP_MAX, Mux(hv[2], OP_MULL, OP_DONE)))
        return stmts

    with m.Switch(state):
        with m.Case(IDLE):
            _accept_command(ctx)
        with m.Case(SLOTS):
            with m.If(fin1 & fin2):
                with m.If(slot_last):
                    with m.If(drain & (c.skew > 0)):
                        m.d.sync += [state.eq(DRAIN), drain_cnt.eq(1)]
                    with m.Else():
                        m.d.sync += state.eq(FIN)
                        m.d.comb += done_now.eq(1)
                    m.d.sync += start_op(OP_DONE)
                with m.Else():
                    m.d.sync += [slot.eq(slot + 1)] + new_slot(slot + 1 < nb_all)
        with m.Case(DRAIN, F_QKD, F_AVD):
            with m.If(drain_cnt == c.skew):
                with m.If(state == F_QKD):
                    m.d.sync += [state.eq(F_SM)] + start_op(OP_FMAX)
                with m.Elif(state == F_AVD):
                    m.d.sync += state.eq(CAP)
                    m.d.comb += done_now.eq(1)
                with m.Else():
                    m.d.sync += state.eq(FIN)
                    m.d.comb += done_now.eq(1)
            with m.Else():
                m.d.sync += drain_cnt.eq(drain_cnt + 1)
        with m.Case(F_QK, F_AV):
            def end_flat_phase():
                with m.If(drain & (c.skew > 0)):
                    m.d.sync += [state.eq(Mux(state == F_QK, F_QKD, F_AVD)), drain_cnt.eq(1)]
                with m.Elif(state == F_QK):
                    m.d.sync += [state.eq(F_SM)] + start_op(OP_FMAX)
                with m.Else():
                    m.d.sync += state.eq(CAP)
                    m.d.comb += done_now.eq(1)

            if S:  # after the last issue: S cycles until the last product is added
                with m.If(ftail):
                    with m.If(ftail_cnt == S):
                        m.d.sync += ftail.eq(0)
                        end_flat_phase()
                    with m.Else():
                        m.d.sync += ftail_cnt.eq(ftail_cnt + 1)
            with m.If(ftail):
                pass
            with m.Elif(ft + 1 == d):
                m.d.sync += [ft.eq(0), fblk.eq(fblk + 1)]
                with m.If(fblk + 1 == nb):
                    m.d.sync += fblk.eq(0)
                    if S:
                        m.d.sync += [ftail.eq(1), ftail_cnt.eq(1)]
                    else:
                        end_flat_phase()
            with m.Else():
                m.d.sync += ft.eq(ft + 1)
        with m.Case(F_SM):
            with m.If(fin1):
                m.d.sync += [state.eq(F_AV), fblk.eq(0), ft.eq(0)] + start_op(OP_DONE)
        with m.Case(CAP):
            m.d.sync += [state.eq(IDLE), arr.tiles_done.eq(arr.tiles_done + 1)]
        with m.Case(FIN):
            _final_divide_state(ctx)


def _accept_command(ctx: _Build) -> None:
    """IDLE: check a command (``error`` on a bad one), latch it and start the tile."""
    (d, arr, m, q_rows, R, D, passes, QP, KB, C, flat, FL, L, A, o_state, state, nb, drain, nb_all, qd, qL,
     fblk, ft, slot, hv, hp, hb, hr, ph2, cnt2, start_op) = ctx.get(
        "d arr m q_rows R D passes QP KB C flat FL L A o_state state nb drain nb_all qd qL fblk ft slot hv hp "
        "hb hr ph2 cnt2 start_op")
    bad = ((arr.cmd_q_rows == 0) | _above(arr.cmd_q_rows, R) | (arr.cmd_kv_len == 0)
           | (arr.cmd_head_dim == 0) | _above(arr.cmd_head_dim, D) | (arr.cmd_passes == 0)
           | _above(arr.cmd_passes, QP) | _above(arr.cmd_kv_len, KB * C)
           | (arr.cmd_flat & (_above(arr.cmd_kv_len, FL) | (arr.cmd_passes != 1))))
    if A:  # FLAT's row chains and o_state accumulation are built for combinational adders only
        bad = bad | arr.cmd_flat
    with m.If(arr.cmd_valid & bad):
        m.d.sync += arr.error.eq(1)
    with m.Elif(arr.cmd_valid):
        nbv = (arr.cmd_kv_len + (C - 1)) // C
        m.d.sync += [q_rows.eq(arr.cmd_q_rows), L.eq(arr.cmd_kv_len), d.eq(arr.cmd_head_dim),
                     passes.eq(arr.cmd_passes), flat.eq(arr.cmd_flat), drain.eq(arr.cmd_drain),
                     nb.eq(nbv), nb_all.eq(nbv * arr.cmd_passes),
                     qd.eq(arr.cmd_q_rows * arr.cmd_head_dim),
                     qL.eq(arr.cmd_q_rows * arr.cmd_kv_len), arr.tile_start.eq(1)]
        m.d.sync += [o.eq(0) for o in o_state]
        with m.If(arr.cmd_flat):
            m.d.sync += [state.eq(F_QK), fblk.eq(0), ft.eq(0), flat.eq(1)]
        with m.Else():
            m.d.sync += [state.eq(SLOTS), slot.eq(0)]
            for o in range(4):
                m.d.sync += [hv[o].eq(o == 0), hp[o].eq(0), hb[o].eq(0), hr[o].eq(0)]
            m.d.sync += [ph2.eq(P2_QK), cnt2.eq(0)] + start_op(OP_DONE)


def _final_divide_state(ctx: _Build) -> None:
    """FIN: normalise every finished pass (``O * 1/l`` on lane 0), then back to IDLE."""
    (m, cap, d, M1, fi, fin_tail, fin_tail_cnt, state, arr, S2, fwait, fin_issue, fe, q_rows, fp_, passes) = ctx.get(
        "m cap d M1 fi fin_tail fin_tail_cnt state arr S2 fwait fin_issue fe q_rows fp_ passes")
    with m.If(cap):
        pass  # the last pass is captured this cycle; normalise from the next
    if M1:  # every element issued: the last products leave lane 0's multiplier
        with m.Elif(fin_tail):
            with m.If(fin_tail_cnt == M1):
                m.d.sync += [fin_tail.eq(0), state.eq(IDLE), arr.tiles_done.eq(arr.tiles_done + 1)]
            with m.Else():
                m.d.sync += fin_tail_cnt.eq(fin_tail_cnt + 1)
    if S2:  # a row's 1/l leaves the pipelined reciprocal S2 cycles after its l went in
        with m.Elif(fwait != S2):
            m.d.sync += fwait.eq(fwait + 1)
    with m.Else():
        m.d.comb += fin_issue.eq(1)
        with m.If(fe + 1 >= d):
            m.d.sync += fe.eq(0)
            if S2:
                m.d.sync += fwait.eq(0)
            with m.If(fi + 1 >= q_rows):
                m.d.sync += fi.eq(0)
                with m.If(fp_ + 1 >= passes):
                    m.d.sync += fp_.eq(0)
                    if M1:
                        m.d.sync += [fin_tail.eq(1), fin_tail_cnt.eq(1)]
                    else:
                        m.d.sync += [state.eq(IDLE), arr.tiles_done.eq(arr.tiles_done + 1)]
                with m.Else():
                    m.d.sync += fp_.eq(fp_ + 1)
            with m.Else():
                m.d.sync += fi.eq(fi + 1)
        with m.Else():
            m.d.sync += fe.eq(fe + 1)


def _build_outputs(ctx: _Build) -> None:
    """The measured tile cycles and the result read port."""
    (m, done_now, arr, tile_cnt, results) = ctx.get("m done_now arr tile_cnt results")
    # measured tile cycles: tile_start is registered at command accept (high in tile cycle 0)
    with m.If(done_now):
        m.d.sync += arr.tile_cycles.eq(tile_cnt + 1)

    # ------------------------------------------------------------------ result read port
    m.d.comb += [results.rd_en.eq(arr.rd_en), results.rd_addr.eq(arr.rd_addr), arr.rd_valid.eq(results.rd_valid),
                 arr.rd_data.eq(results.rd_data)]
