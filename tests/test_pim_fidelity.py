"""PIM figures against their sources (issue 14): column-read energy, background and refresh
counted once per 128-bit HBM2 channel, GDDR6 tRFC, the AiM MAC rate, the HBM2 stack capacity.
Expected values are worked from the datasheets / papers, not read from the presets."""
from __future__ import annotations

import pytest

import mappers
import workloads
from archsim.engine import run_program
from archsim.spec.load import load_arch
from archsim.templates.pim import PimTile

HBM2 = load_arch("pim-hbm2")
GDDR6 = load_arch("pim-gddr6")


def test_hbm2_stack_capacity_is_4_gib():
    # JESD235 4-high stack of 8 Gb dies: 4 x 8 Gb = 32 Gb = 4 GiB
    assert HBM2.params.capacity_bytes == 4 * 8 * 2**30 // 8
    assert load_arch("pim-hbm2", overrides=["stacks=5"]).params.capacity_bytes == 5 * 4 * 2**30


def test_column_read_energy_is_the_pre_gsa_figure():
    """A dot GEMV tile reads every weight bit once from the sense amps to the bank edge, at
    O'Connor et al. MICRO 2017's ~1.5 pJ/bit pre-GSA figure: banks x rows x k x 16 bits (bf16)."""
    for arch in (HBM2, GDDR6):
        p = arch.params
        tile = PimTile("gemv", rows=8, k=4 * p.column_elements, banks=p.banks_per_channel)
        bits = arch.model().tile_actions(tile)["pim.col_read_bit"]
        assert p.mac_precision == "bf16" and bits == p.banks_per_channel * 8 * tile.k * 16
        assert bits * arch.tech.energy("pim.col_read_bit") == pytest.approx(bits * 1.5, rel=0.07)


def test_background_energy_counted_once_per_hbm2_channel():
    """DRAMsim3 HBM2_8Gb_x128: IDD3N 55 mA at 1.2 V per 128-bit channel; a stack has 8 such
    channels (16 pseudo-channels): background = 8 x 66 mW x run time."""
    g = workloads.load("gpt2", phase="decode", kv_len=64, weight_precision="bf16", act_precision="bf16")
    r = run_program(mappers.compile(g, HBM2), HBM2)
    expected_pj = 8 * 55e-3 * 1.2 * r.latency_s * 1e12
    assert r.extras["background_energy_pj"] == pytest.approx(expected_pj, rel=1e-6)


def test_refresh_energy_counted_once_per_hbm2_channel():
    """One REF of a 128-bit HBM2 channel: (IDD5AB 250 - IDD3N 55) mA (DRAMsim3 HBM2_8Gb_x128)
    x 1.2 V x the preset's own tRFC; each of its two pseudo-channels' REFs refreshes half of it.
    The tile's REF count is the detailed model's command stream's, not the fast model's."""
    import numpy as np

    from archsim.templates.pim import commands as C

    tile = PimTile("gemv", rows=64, k=4096, banks=16, ref_due=0)
    p = HBM2.params
    _values, _cycles, cmds = C.run_detailed(tile, p, np.zeros((16, 64, 4096)), np.zeros(4096))
    refs = sum(c.cmd == "REF" for c in cmds)
    assert refs >= 2 and HBM2.model().tile_actions(tile)["pim.ref"] == refs
    trfc_ns = p.tRFC * 1e3 / HBM2.clock_mhz
    assert refs * HBM2.tech.energy("pim.ref") == pytest.approx(refs * (0.250 - 0.055) * 1.2 * trfc_ns / 2 * 1e3)


def test_gddr6_refresh_time_is_120_ns():
    # Ramulator 2.0 GDDR6_2000_1350mV: tRFC 210 tCK x 0.57 ns = 119.7 ns (8 Gb); Samsung K4Z80325BC 120 ns
    p = GDDR6.params
    assert p.tRFC * 1e3 / GDDR6.clock_mhz == pytest.approx(120, abs=1)


def test_gddr6_all_bank_mac_rate_is_aims():
    """AiM (ISSCC 2022): 1 TFLOPS per 8 Gb device of 2 channels x 16 banks, 16 MACs per bank
    at 1 GHz: an all-bank MAC every ns. pim-gddr6 has 8 such devices."""
    peak = GDDR6.model().peak_macs_per_cycle() * 2 * GDDR6.clock_mhz * 1e6
    assert peak / 8 == pytest.approx(32 * 16 * 2 * 1e9)
    assert GDDR6.params.column_spacing == 1


@pytest.mark.parametrize("rows, k, acts", [
    (3, 768, 5),     # 3 x 48 columns = 144 = 4 full rows of 32 + 16 (close-page layout: 6 bursts)
    (6, 384, 5),     # 6 x 24 = 144 (was one burst per 24-column row: 6)
    (64, 64, 8),     # 64 x 4 = 256 = 8 full rows
    (65, 64, 9),     # two accumulator groups: 64 x 4 = 8 full rows, then 1 x 4 in a ninth
])
def test_open_row_layout_fills_dram_rows(rows, k, acts):
    """Weight rows of a group are stored back to back across DRAM rows: ACTs = ceil(group columns / 32)
    per group (bf16, 32 B columns, 1 KiB rows, 64 accumulators)."""
    from archsim.templates.pim.tile import plan_steps, step_counts

    p = HBM2.params
    kc = -(-k // 16)
    groups = [min(64, rows - g) for g in range(0, rows, 64)]
    expected = sum(-(-g * kc // 32) for g in groups)
    n = step_counts(plan_steps(PimTile("gemv", rows=rows, k=k, banks=16), p))
    assert n["ACTAB"] == expected
    assert n["MACAB"] == rows * kc
    assert n["ACTAB"] == acts


def test_report_json_top_level_token_figures(tmp_path):
    """Issue 14's interface: report.json carries tokens_per_s, energy_per_token_j and utilization
    at the top level (not only under extras); energy per token includes the DRAM background."""
    import json

    from archsim.cli import main

    out = tmp_path / "run"
    assert main(["run", "--arch", "pim-gpt-gddr6", "--workload", "gpt3-small", "--phase", "decode", "--kv-len",
                 "128", "--out", str(out), "--no-plots", "--trace-layers", "0"]) == 0
    r = json.loads((out / "report.json").read_text())
    assert r["tokens_per_s"] == pytest.approx(1 / r["latency_s"])
    total_pj = r["energy_pj"] + r["extras"]["background_energy_pj"]
    assert r["energy_per_token_j"] == pytest.approx(total_pj * 1e-12)
    assert 0 < r["utilization"] < 1


def test_stacks_scale_channels_capacity_and_speed():
    """stacks=5 (the A100 40GB's HBM2 stack count): 80 channels, 20 GiB, and a GEMV whose rows
    spread over five times the banks runs in fewer cycles."""
    from mappers.pim import make_mapper
    from mappers.options import MapOptions
    from workloads.ops import MatMul

    five = load_arch("pim-hbm2", overrides=["stacks=5"])
    assert len([u for u, k in five.model().units.items() if k == "compute"]) == 80
    assert five.params.capacity_bytes == 5 * HBM2.params.capacity_bytes
    op = MatMul("fc", m=1, k=1600, n=6400, bias=False, act_precision="bf16", weight_precision="bf16")

    def pim_cycles(arch):
        lp = make_mapper(arch, MapOptions())(op)
        return max(arch.model().tile_cycles(c.tile) for c in lp.commands if hasattr(c, "tile"))

    assert pim_cycles(five) < pim_cycles(HBM2) / 3
