"""The LUT core's two arithmetics as Amaranth logic: exact integers (int8 activations) and
fp32 with round-to-nearest-even on every add (fp16 / bf16 activations).

Each arithmetic has the five operations the datapath uses (the contract in
:mod:`archsim.templates.lut.tile`): ``neg`` (a table lookup with the top index
bit 0), ``add`` (table build, ``acc + r``), ``double_add`` (``rne(2*p + t)``,
the bit-serial shift-add), ``half_sub`` (``rne(p - S) * 0.5``) and ``zero``.
Values are bit vectors of the storage width ``width``: two's complement for
integers, fp32 bit patterns for floats. The fp32 add, doubling, halving
and fp16 -> fp32 are the shared ones of :mod:`rtl.lib.fp`.
"""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal, signed

from rtl.lib import fp
from rtl.lib.fp import fp16_to_fp32, fp32_double, fp32_half  # noqa: F401 - the LUT datapath's helpers


class IntArith:
    """Exact two's-complement arithmetic in ``width`` bits (wide enough by construction)."""

    kind = "int"

    def __init__(self, width: int):
        self.width = width

    def _s(self, x):
        return (x if len(x) <= self.width else x[:self.width]).as_signed()

    def neg(self, m: Module, x, name: str):
        out = Signal(signed(self.width), name=name)
        m.d.comb += out.eq(-self._s(x))
        return out

    def add(self, m: Module, x, y, name: str):
        out = Signal(signed(self.width), name=name)
        m.d.comb += out.eq(self._s(x) + self._s(y))
        return out

    def double_add(self, m: Module, p, t, name: str):
        out = Signal(signed(self.width), name=name)
        m.d.comb += out.eq((self._s(p) << 1) + self._s(t))
        return out

    def half_sub(self, m: Module, p, s, name: str):
        out = Signal(signed(self.width), name=name)
        m.d.comb += out.eq((self._s(p) - self._s(s)) >> 1)  # p - S is even: exact
        return out

    def activation(self, m: Module, code, afmt_fp16, name: str):
        """An int8 activation (low byte of its 16-bit lane), sign-extended."""
        out = Signal(signed(self.width), name=name)
        m.d.comb += out.eq(code[:8].as_signed())
        return out


class FpArith:
    """fp32 arithmetic, round to nearest even on every add (numpy float32 semantics)."""

    kind = "fp"
    width = 32

    def neg(self, m: Module, x, name: str):
        out = Signal(32, name=name)
        m.d.comb += out.eq(Cat(x[:31], ~x[31]))
        return out

    def add(self, m: Module, x, y, name: str):
        return fp.fp32_add_finite(m, x[:32], y[:32], name)

    def double_add(self, m: Module, p, t, name: str):
        d = Signal(32, name=f"{name}_2p")
        m.d.comb += d.eq(fp32_double(p[:32]))
        return fp.fp32_add_finite(m, d, t[:32], name)

    def half_sub(self, m: Module, p, s, name: str):
        diff = fp.fp32_add_finite(m, p[:32], Cat(s[:31], ~s[31]), f"{name}_d")
        return fp32_half(m, diff, name)

    def activation(self, m: Module, code, afmt_fp16, name: str):
        """fp32 bits of a 16-bit activation: fp16 when ``afmt_fp16`` else bf16."""
        h = fp16_to_fp32(m, code, f"{name}_h")
        out = Signal(32, name=name)
        m.d.comb += out.eq(Mux(afmt_fp16, h, Cat(Const(0, 16), code[:16])))
        return out
