"""rtl.lib units build every forcing option they accept, and refuse the ones they do not build.

An option a unit silently ignored (``Fp32AddFinite(specials_as_data=True)`` once built the same
Verilog as without it) reads as applied when it is not; so each unit declares ``forcing_options``, every
declared option must change the unit's Verilog, and every other one is refused in one line.
"""
from __future__ import annotations

import pytest
from amaranth.back import verilog

from rtl.lib import units

OPTIONS = ("specials_as_data", "zero_fill_as_data", "packed_round", "split_compare", "compare_as_data", "split_add",
           "negate_early")

#: one small instance of every unit that takes forcing options (name, constructor of stages + options)
UNITS = {
    "FpMul": lambda **kw: units.FpMul("bf16", 2, **kw),
    "FpAdd": lambda **kw: units.FpAdd("fp16", 2, **kw),
    "FpFma": lambda **kw: units.FpFma("bf16", 3, **kw),
    "RoundPack": lambda **kw: units.RoundPack(24, "fp32", 2, **kw),
    "IntToFp": lambda **kw: units.IntToFp(16, "fp32", 2, **kw),
    "Exp2": lambda **kw: units.Exp2(3, 3, **kw),
    "Fp32AddFinite": lambda **kw: units.Fp32AddFinite(3, **kw),
    "Fp32MulFinite": lambda **kw: units.Fp32MulFinite(3, **kw),
    "Fp32Max": lambda **kw: units.Fp32Max(1, **kw),
    "Rint": lambda **kw: units.Rint(2, **kw),
    "Ldexp": lambda **kw: units.Ldexp(2, **kw),
}


def _asked(option: str) -> dict:
    """The keyword arguments that ask for ``option`` (packed_round rounds the forcing-as-data pack)."""
    return {"specials_as_data": True, "packed_round": True} if option == "packed_round" else {option: True}


def _baseline(option: str) -> dict:
    """What ``option`` is compared against: the same unit without it."""
    return {"specials_as_data": True} if option == "packed_round" else {}


@pytest.mark.parametrize("name", sorted(UNITS))
def test_declared_options_are_built_and_the_others_refused(name):
    make = UNITS[name]
    declared = getattr(units, name).forcing_options
    assert declared <= set(OPTIONS)
    for option in OPTIONS:
        if option in declared:
            with_it = verilog.convert(make(**_asked(option)), name="u")
            without = verilog.convert(make(**_baseline(option)), name="u")
            assert with_it != without, f"{name}: {option} is declared but builds the same Verilog"
        else:
            with pytest.raises((ValueError, TypeError), match=f"{name}.*(specials_as_data|{option})"):  # not a parameter, or refused
                make(**_asked(option))


def test_the_finite_adder_refuses_the_forcing_it_cannot_build():
    """The case that was silent: the finite fp32 adder's round-and-pack has no forcing to build as data."""
    with pytest.raises(TypeError, match="specials_as_data"):
        units.Fp32AddFinite(3, specials_as_data=True)
    with pytest.raises(ValueError, match="Fp32Max: split_compare not built by this unit"):
        units.Fp32Max(1, split_compare=True)
    assert units.Fp32AddFinite(3, zero_fill_as_data=True).zero_fill_as_data
