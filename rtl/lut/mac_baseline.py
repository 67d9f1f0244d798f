"""The dequantize-then-MAC baseline of the LUT core's density comparison: a small
parameterized Amaranth core of the same peak MACs/cycle (synthesis only, not a template).

Equal peak throughput, per weight width: the bit-serial LUT core does
``tile_m * tile_n * group_k / b`` MACs per cycle with b-bit weights (one bit
plane per cycle), so its peak depends on W. The baseline of a W x A pair is
this core with ``tile_m x (tile_n / b) x group_k`` multipliers (one MAC each
per cycle): the same peak MACs/cycle AT THAT W (W1.58 and W2 share one, b = 2).

Each cycle it takes ``tile_m x group_k`` activations and ``group_k x tile_n``
weights. ``weight_format=None`` (what the density bench synthesizes): the weights
arrive dequantized, as int8 (``A8``) or fp16 (``A16``) lanes -- a MAC array fed
with dequantized weights, so its multipliers are general int8 x int8 / fp16 x
fp16 ones (with the codes on the ports instead, synthesis would fold the +-1 of
int1 or the 2-bit range of ternary into the multipliers, which a core serving
every weight format cannot do). With a weight format the core dequantizes b-bit
codes itself (int1: +-1; ternary / intb: two's complement) to int8 or fp16. It
multiplies (int8 x int8 -> int16 exact; fp16 x fp16 -> fp32, exact, rounded
by :func:`rtl.lib.fp.narrow_mul_fp32`), sums the ``group_k`` products of each
(m, n) with an adder tree (int exact; fp32 adds RNE, pairwise) and adds the
sum into its accumulator (int32 / fp32; ``first`` restarts from the sum).
Pipeline: products, tree, accumulator (3 register stages).
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.lib import fp
from rtl.lib.formats import FP16

PLANES = {"int1": 1, "ternary": 2, "int2": 2, "int3": 3, "int4": 4}


def int_to_fp16(code, bits: int, int1: bool):
    """fp16 bits of a small weight code (|w| <= 8): a constant table, as a dequantizer would hold."""
    table = []
    for u in range(1 << bits):
        w = (1 if u else -1) if int1 else (u - (1 << bits) if u >> (bits - 1) else u)
        if w == 0:
            table.append(0)
            continue
        e = abs(w).bit_length() - 1
        frac = (abs(w) << (10 - e)) & 0x3FF
        table.append(((w < 0) << 15) | ((e + 15) << 10) | frac)
    out = Const(table[0], 16)
    for u in range(1, 1 << bits):
        out = Mux(code == u, table[u], out)
    return out


class MacBaseline(wiring.Component):
    """``tile_m x tile_n x group_k`` dequantize-then-MAC core (module docstring)."""

    def __init__(self, tile_m: int, tile_n: int, group_k: int, weight_format: str | None = None,
                 activation_format: str = "int8"):
        if weight_format is not None and weight_format not in PLANES:
            raise ValueError(f"weight_format: expected one of {', '.join(PLANES)}, got {weight_format!r}")
        if activation_format not in ("int8", "fp16"):
            raise ValueError(f"activation_format: expected int8 or fp16, got {activation_format!r}")
        self.tm, self.tn, self.K = tile_m, tile_n, group_k
        self.wf, self.af = weight_format, activation_format
        self.ab = 8 if activation_format == "int8" else 16
        self.b = PLANES[weight_format] if weight_format else self.ab  # bits of one weight on the port
        super().__init__({
            "in_valid": In(1), "first": In(1),
            "act": In(tile_m * group_k * self.ab), "weight": In(group_k * tile_n * self.b),
            "out": Out(tile_m * tile_n * 32), "out_valid": Out(1),
        })

    @property
    def peak_macs_per_cycle(self) -> int:
        return self.tm * self.tn * self.K

    def elaborate(self, platform):
        m = Module()
        tm, tn, K, b, ab = self.tm, self.tn, self.K, self.b, self.ab
        integer = self.af == "int8"
        acts = [[self.act[(r * K + j) * ab:(r * K + j + 1) * ab] for j in range(K)] for r in range(tm)]
        codes = [[self.weight[(j * tn + c) * b:(j * tn + c + 1) * b] for c in range(tn)] for j in range(K)]
        # dequantize (shared by the rows)
        deq = [[None] * tn for _ in range(K)]
        for j in range(K):
            for c in range(tn):
                code = codes[j][c]
                if self.wf is None:  # dequantized upstream
                    deq[j][c] = code
                    continue
                if integer:
                    w = Signal(signed(8), name=f"deq_j{j}_c{c}")
                    m.d.comb += w.eq(Mux(code[0], 1, -1) if self.wf == "int1" else code.as_signed())
                else:
                    w = Signal(16, name=f"deq_j{j}_c{c}")
                    m.d.comb += w.eq(int_to_fp16(code, b, self.wf == "int1"))
                deq[j][c] = w
        v1, f1, v2, f2, v3 = Signal(), Signal(), Signal(), Signal(), Signal()
        m.d.sync += [v1.eq(self.in_valid), f1.eq(self.first), v2.eq(v1), f2.eq(f1), v3.eq(v2)]
        m.d.comb += self.out_valid.eq(v3)
        outs = []
        for r in range(tm):
            for c in range(tn):
                prods = []
                for j in range(K):  # stage 1: products
                    p = Signal(signed(16) if integer else 32, name=f"prod_r{r}_c{c}_j{j}")
                    if integer:
                        m.d.sync += p.eq(acts[r][j].as_signed() * deq[j][c].as_signed())
                    else:
                        m.d.sync += p.eq(fp.narrow_mul_fp32(m, FP16, acts[r][j], deq[j][c], f"mul_r{r}_c{c}_j{j}"))
                    prods.append(p)
                level, lvl = prods, 0  # stage 2: pairwise adder tree
                while len(level) > 1:
                    nxt = []
                    for i in range(0, len(level) - 1, 2):
                        if integer:
                            nxt.append(level[i] + level[i + 1])
                        else:
                            nxt.append(fp.fp32_add_finite(m, level[i], level[i + 1], f"add_r{r}_c{c}_l{lvl}_{i}"))
                    if len(level) % 2:
                        nxt.append(level[-1])
                    level, lvl = nxt, lvl + 1
                total = Signal(signed(32) if integer else 32, name=f"sum_r{r}_c{c}")
                m.d.sync += total.eq(level[0])
                acc = Signal(signed(32) if integer else 32, name=f"acc_r{r}_c{c}")  # stage 3: accumulate
                with m.If(v2):
                    if integer:
                        m.d.sync += acc.eq(Mux(f2, 0, acc) + total)
                    else:
                        m.d.sync += acc.eq(fp.fp32_add_finite(m, Mux(f2, 0, acc), total, f"acc_r{r}_c{c}_add"))
                outs.append(acc)
        m.d.comb += self.out.eq(Cat(*outs))
        return m
