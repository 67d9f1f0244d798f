"""PIM RTL with ``accumulator_interleave`` P > 1 (rtl.pim.interleaved): co-simulation (Icarus) bit-
and cycle-exact against both models, the values equal to an independent scalar fp32 reference of
the interleaved order, and a model with the sequential order (P = 1) catches the RTL's bits."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from archsim.templates.pim import PimParams, PimTile
from archsim.templates.pim.values import to_bf16
from rtl import cosim_items, design_for, run_cosim
from rtl.cosim import run_job

pytestmark = pytest.mark.rtl

F = np.float32
# one bf16 bank of 4 lanes (column_bytes 8), gddr6-like tCL 14: the RDACC reduction of P = 4 takes 3 + 1 + 2 x 4 = 12
BF16 = PimParams(channels=1, banks_per_channel=1, bank_groups=1, rows_per_bank=64, row_bytes=64, column_bytes=8,
                 mac_lanes=4, mac_precision="bf16", mac_pipeline_cycles=1, acc_registers=8, input_buffer_bytes=128,
                 tRCD=3, tRP=3, tRAS=7, tRTP=2, tWR=4, tCCD_S=1, tCCD_L=1, tRRD=1, tFAW=6, tREFI=300, tRFC=20,
                 tCL=14, accumulator_interleave=4)


@pytest.fixture(scope="module", autouse=True)
def _needs_icarus():
    from rtl.cosim.harness import simulator_missing_reason

    reason = simulator_missing_reason("icarus")
    if reason:
        pytest.skip(reason)


def _pairwise(vals: list) -> np.float32:
    vals = [F(v) for v in vals]
    while len(vals) > 1:
        vals = [F(vals[i] + vals[i + 1]) for i in range(0, len(vals), 2)]
    return vals[0]


def _reference_row(w_row, x, ce: int, P: int) -> np.float32:
    """Scalar fp32: column sums (pairwise), column c into partial c mod P, partials pairwise."""
    k = len(x)
    partial = [F(0)] * P
    for c in range(-(-k // ce)):
        prods = [F(w_row[e]) * F(x[e]) if e < k else F(0) for e in range(c * ce, c * ce + ce)]
        partial[c % P] = F(partial[c % P] + _pairwise(prods))
    return _pairwise(partial)


@pytest.fixture(scope="module")
def bf16_run():
    """(3, 120): 15 columns per row over several DRAM rows, back to back (a partial hit every 3 or 4
    cycles: the forwarding paths); (10, 70): two accumulator groups (the counters restart)."""
    items = []
    for rows, k, ref_due in [(3, 120, 100), (10, 70, 60)]:
        rng = np.random.default_rng(rows + k)
        w = to_bf16((rng.standard_normal((1, rows, k)) * np.exp2(rng.integers(-8, 9, (1, rows, k)))).astype(F))
        x = to_bf16(rng.standard_normal(k).astype(F))
        items.append((PimTile("gemv", rows=rows, k=k, banks=1, ref_due=ref_due), {"weight": w, "input": x}))
    design = design_for(BF16)
    run = run_job(design.verilog(), design.toplevel, design.make_job(items))
    return design, items, run.result


def test_interleaved_unit_matches_models_and_reference(bf16_run):
    design, items, result = bf16_run
    report = design.check(items, result)
    assert report.ok, "\n" + report.summary()
    for (tile, ops), res in zip(items, result["streams"]):
        rtl = design.rtl_values(tile, res)
        w, x = ops["weight"], ops["input"]
        ref = np.array([[_reference_row(w[0, r], x, BF16.column_elements, 4) for r in range(tile.rows)]], F)
        assert rtl.astype(F).view(np.uint32).tolist() == ref.view(np.uint32).tolist()


def test_a_sequential_order_model_catches_the_interleaved_bits(bf16_run):
    _design, items, result = bf16_run
    seq = design_for(dataclasses.replace(BF16, accumulator_interleave=1))
    report = seq.check(items, result)
    assert not report.ok
    assert any("values differ" in msg for msg in report.failures())


@pytest.mark.parametrize("prec, P", [("int8", 2), ("bf16", 2)])
def test_interleaved_random_tiles(prec, P):
    p = dataclasses.replace(BF16, mac_precision=prec, accumulator_interleave=P, column_bytes=16,
                            mac_lanes=16 if prec == "int8" else 8)
    items = cosim_items(p, "random", tiles=4, seed=11, max_stream=4)
    report = run_cosim(p, items)
    assert report.ok, "\n" + report.summary()


def test_a_channel_refuses_interleave():
    from archsim.errors import ArchsimError

    with pytest.raises(ArchsimError, match="accumulator_interleave: a channel"):
        design_for(BF16, {"banks": 2})


def test_irregular_mac_spacing_exercises_every_forwarding_distance():
    """The scheduler's bursts hit a partial exactly every P cycles; a stream stretched with gaps of
    0-2 extra cycles between MACs hits it P, P + 1, P + 2 and more cycles apart (the forwarded
    results in flight and the memory). Values are timing-independent: still the interleaved order."""
    from archsim.templates.pim.values import gemv_dot

    rows, k = 2, 120
    rng = np.random.default_rng(5)
    w = to_bf16((rng.standard_normal((1, rows, k)) * np.exp2(rng.integers(-8, 9, (1, rows, k)))).astype(F))
    x = to_bf16(rng.standard_normal(k).astype(F))
    tile = PimTile("gemv", rows=rows, k=k, banks=1, ref_due=1000)
    design = design_for(BF16, {"top": "unit"})
    stream = design.stream(tile, {"weight": w, "input": x})
    gaps = [0, 1, 0, 0, 2, 1, 0, 2, 2, 0, 1, 1]  # extra cycles before each MAC (cycled)
    shift, n, cmds = 0, 0, []
    for c in stream["commands"]:
        if c[1] == "MAC":
            shift += gaps[n % len(gaps)]
            n += 1
        cmds.append([c[0] + shift] + c[1:])
    stream["commands"] = cmds
    job = {"driver": design.driver, "array_latency": design.array_latency(), "streams": [stream]}
    res = run_job(design.verilog(), design.toplevel, job).result["streams"][0]
    assert res["error"] == 0, "\n".join(res["trace"])
    rtl = design.rtl_values(tile, res).astype(F)
    ref = np.array([[_reference_row(w[0, r], x, BF16.column_elements, 4) for r in range(rows)]], F)
    assert rtl.view(np.uint32).tolist() == ref.view(np.uint32).tolist()
    assert ref.view(np.uint32).tolist() == gemv_dot(w, x, BF16.column_elements, "bf16", 4).view(np.uint32).tolist()


@pytest.mark.parametrize("gap", [0, 1, 2])
def test_a_group_restart_1_2_or_3_cycles_before_a_mac_hides_the_stale_counts(gap):
    """The column counters are written back 4 cycles after the command, a counter read 1 cycle after
    it: a group's first MAC clears them (restart) too late for the MACs 1, 2 and 3 cycles after it,
    which must read 0, not the count their accumulator had in the previous group. Two streams of 8
    rows of one column each (every MAC a new accumulator): the second stream's counters are stale
    (1) when its MACs, ``gap + 1`` cycles apart, read them. Removing the 'cleared' forward at that
    distance sends the second MAC into partial 1 and reads the stale partial 0 with it."""
    rows, k = 8, 4
    design = design_for(BF16, {"top": "unit"})
    streams, refs, tiles = [], [], []
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        w = to_bf16((rng.standard_normal((1, rows, k)) * 4).astype(F))
        x = to_bf16(rng.standard_normal(k).astype(F))
        tile = PimTile("gemv", rows=rows, k=k, banks=1, ref_due=1000)
        stream = design.stream(tile, {"weight": w, "input": x})
        shift, cmds = 0, []
        for c in stream["commands"]:
            shift += gap if c[1] == "MAC" else 0
            cmds.append([c[0] + shift] + c[1:])
        stream["commands"] = cmds
        streams.append(stream)
        tiles.append(tile)
        refs.append(np.array([[_reference_row(w[0, r], x, BF16.column_elements, 4) for r in range(rows)]], F))
    job = {"driver": design.driver, "array_latency": design.array_latency(), "streams": streams}
    res = run_job(design.verilog(), design.toplevel, job).result["streams"]
    for tile, r, ref in zip(tiles, res, refs):
        assert r["error"] == 0, "\n".join(r["trace"])
        assert design.rtl_values(tile, r).astype(F).view(np.uint32).tolist() == ref.view(np.uint32).tolist()


def test_p8_reduction_longer_than_tcl_is_cycle_exact():
    """P = 8 on tCL 14: the reduction takes 3 + (8 / 2 - 1) + 3 x 8 = 30 cycles, so the RDACC's data come
    16 cycles after tCL and the models charge them (the second tile's GBWRs follow an RDACC: the
    turnaround); RDACCs 8 / 2 = 4 cycles apart (the first level's adder takes the 4 pairs one a cycle)."""
    p = dataclasses.replace(BF16, accumulator_interleave=8)
    assert (p.rdacc_latency, p.rdacc_spacing_cycles) == (30, 4)
    items = cosim_items(p, "random", tiles=3, seed=12, max_stream=4)
    rng = np.random.default_rng(8)
    w = to_bf16((rng.standard_normal((1, 10, 70)) * np.exp2(rng.integers(-8, 9, (1, 10, 70)))).astype(F))
    x = to_bf16(rng.standard_normal(70).astype(F))
    items.append((PimTile("gemv", rows=10, k=70, banks=1, ref_due=1 << 40), {"weight": w, "input": x}))
    report = run_cosim(p, items)
    assert report.ok, "\n" + report.summary()
    ref = np.array([[_reference_row(w[0, r], x, p.column_elements, 8) for r in range(10)]], F)
    design = design_for(p)
    run = run_job(design.verilog(), design.toplevel, design.make_job(items[-1:]))
    rtl = design.rtl_values(items[-1][0], run.result["streams"][0]).astype(F)
    assert rtl.view(np.uint32).tolist() == ref.view(np.uint32).tolist()


def test_p16_pads_the_adders_beyond_the_library_depth_and_is_cycle_exact():
    """P = 16 (2 lanes): the accumulate and reduction adders are the library's deepest fp32 adder (11
    stages) plus 5 registers; the reduction takes 3 + (16 / 2 - 1) + 4 x 16 = 74 cycles (60 beyond tCL
    14, charged), its RDACCs 8 cycles apart."""
    p = dataclasses.replace(BF16, accumulator_interleave=16, column_bytes=4, mac_lanes=2, mac_pipeline_cycles=9)
    assert (p.rdacc_latency, p.rdacc_spacing_cycles) == (74, 8)
    items = cosim_items(p, "random", tiles=2, seed=16, max_stream=3)
    rng = np.random.default_rng(16)
    k = 70  # 35 columns of 2: every partial taken twice or three times
    w = to_bf16((rng.standard_normal((1, 3, k)) * np.exp2(rng.integers(-8, 9, (1, 3, k)))).astype(F))
    x = to_bf16(rng.standard_normal(k).astype(F))
    items.append((PimTile("gemv", rows=3, k=k, banks=1, ref_due=1 << 40), {"weight": w, "input": x}))
    report = run_cosim(p, items)
    assert report.ok, "\n" + report.summary()
    design = design_for(p)
    run = run_job(design.verilog(), design.toplevel, design.make_job(items[-1:]))
    rtl = design.rtl_values(items[-1][0], run.result["streams"][0]).astype(F)
    ref = np.array([[_reference_row(w[0, r], x, p.column_elements, 16) for r in range(3)]], F)
    assert rtl.view(np.uint32).tolist() == ref.view(np.uint32).tolist()


def test_fabric_multipliers_are_cycle_exact_and_refused_for_int8():
    """mul="lut" (the bf16 significand products in fabric, up to 11 stages: the deepest "dsp" one stays
    below 150 MHz on ECP5) at its deepest, the tree adders at 11: bits and cycles as the models."""
    from archsim.errors import ArchsimError

    p = dataclasses.replace(BF16, mac_pipeline_cycles=30)  # budget 14 + 30 - 2 - 3 = 39 >= 11 + 2 x 11
    design = design_for(p, {"mul": "lut", "mul_stages": 11, "add_stages": 11, "top": "unit"})
    assert design.config_dict()["mul"] == "lut"
    items = cosim_items(p, "random", tiles=3, seed=21, max_stream=3)
    result = run_job(design.verilog(), design.toplevel, design.make_job(items)).result
    report = design.check(items, result)
    assert report.ok, "\n" + report.summary()
    with pytest.raises(ArchsimError, match="mul: expected one of dsp, lut"):
        design_for(dataclasses.replace(p, mac_precision="int8", accumulator_interleave=1), {"mul": "lut"})


def test_registered_dsp_multipliers_simulate_with_their_model_and_are_cycle_exact():
    """mul="dsp_reg" (ECP5 MULT18X18D instances whose own registers are the cut points around them) at
    its deepest (9) with P = 16: the design ships the block's simulation model (sim_sources), and the
    unit's bits and cycles are the models'; the Verilog has the instances, no inferred multiply."""
    p = dataclasses.replace(BF16, accumulator_interleave=16, column_bytes=4, mac_lanes=2, mac_pipeline_cycles=26)
    design = design_for(p, {"mul": "dsp_reg", "mul_stages": 9, "add_stages": 11, "top": "unit"})
    assert "MULT18X18D" in design.verilog() and set(design.sim_sources()) == {"MULT18X18D_model.v"}
    assert design_for(p, {"mul": "lut", "mul_stages": 11, "add_stages": 11}).sim_sources() == {}
    items = cosim_items(p, "random", tiles=2, seed=26, max_stream=3)
    result = run_job(design.verilog(), design.toplevel, design.make_job(items),
                     extra_sources=design.sim_sources()).result
    report = design.check(items, result)
    assert report.ok, "\n" + report.summary()


def test_block_ram_buffer_with_its_output_register_is_cycle_exact():
    """``buffer="ecp5_outreg"`` (the input buffer as DP16KD blocks reading through their output register, a
    cycle longer, the cycle taken from the slice's delay line) on the P = 16 unit measured for 150 MHz: the
    design ships the block's model, bits and cycles are the models'; the same model without the output
    register (the read a cycle early) breaks the values, so the delay line's cycle is what the test checks."""
    from rtl.pim.rtl_design import PimDesign

    p = dataclasses.replace(BF16, accumulator_interleave=16, column_bytes=4, mac_lanes=2, mac_pipeline_cycles=26)
    options = {"mul": "dsp_reg", "mul_stages": 9, "add_stages": 11, "buffer": "ecp5_outreg"}
    design = design_for(p, options)
    assert design.verilog().count("DP16KD") == 2  # 32 bits: two 18-bit slices
    assert set(design.sim_sources()) == {"MULT18X18D_model.v", "DP16KD_model.v"}
    assert "DP16KD" not in design_for(p, {"mul": "dsp_reg", "mul_stages": 9, "add_stages": 11}).verilog()
    items = cosim_items(p, "random", tiles=2, seed=27, max_stream=3)
    job = design.make_job(items)
    report = design.check(items, run_job(design.verilog(), design.toplevel, job,
                                         extra_sources=design.sim_sources()).result)
    assert report.ok, "\n" + report.summary()
    early = dict(design.sim_sources())
    early["DP16KD_model.v"] = early["DP16KD_model.v"].replace('(REGMODE_B == "OUTREG") ? o_b : q_b', "q_b")
    assert early["DP16KD_model.v"] != design.sim_sources()["DP16KD_model.v"]
    planted = design.check(items, run_job(design.verilog(), design.toplevel, job, extra_sources=early).result)
    assert not planted.ok
    assert isinstance(design, PimDesign) and design.config_dict()["buffer"] == "ecp5_outreg"


def test_block_ram_buffer_needs_a_cycle_of_slice_delay():
    """``ecp5_outreg`` with no register left in the slice's delay line (mac_pipeline_cycles 23 at P = 16, mul 9 /
    add 11: the datapath takes the whole budget) is one line naming the buffer; so is an unknown kind."""
    from archsim.errors import ArchsimError

    p = dataclasses.replace(BF16, accumulator_interleave=16, column_bytes=4, mac_lanes=2, mac_pipeline_cycles=23)
    opts = {"mul": "dsp_reg", "mul_stages": 9, "add_stages": 11, "top": "unit"}
    design_for(p, opts).verilog()  # the inferred buffer fits
    with pytest.raises(ArchsimError, match="buffer: 'ecp5_outreg' reads in 2 cycles"):
        design_for(p, {**opts, "buffer": "ecp5_outreg"})
    with pytest.raises(ArchsimError, match="buffer: expected one of inferred, ecp5_outreg"):
        design_for(p, {**opts, "buffer": "lutram"})


def test_the_cli_multiplier_option_selects_the_registered_dsp_blocks(capsys):
    """``--multiplier ecp5_dsp`` (the flag the other templates take) builds the bf16 datapath's MULT18X18D
    instances, ``inferred`` the inferred product; a clash with ``mul`` or an unknown name is one line."""
    from archsim.cli import main
    from archsim.errors import ArchsimError

    p = dataclasses.replace(BF16, accumulator_interleave=16, column_bytes=4, mac_lanes=2, mac_pipeline_cycles=26)
    assert design_for(p, {"multiplier": "ecp5_dsp"}).verilog() == design_for(p, {"mul": "dsp_reg"}).verilog()
    assert "MULT18X18D" not in design_for(p, {"multiplier": "inferred"}).verilog()
    with pytest.raises(ArchsimError, match="multiplier 'ecp5_dsp' and mul 'lut'"):
        design_for(p, {"multiplier": "ecp5_dsp", "mul": "lut"})
    with pytest.raises(ArchsimError, match="multiplier: expected one of inferred, ecp5_dsp"):
        design_for(p, {"multiplier": "dsp48"})
    assert main(["rtl", "lint", "--arch", "pim-gpt-gddr6", "--set", "mac_precision=int8", "--multiplier",
                 "ecp5_dsp", "-q"]) == 2
    assert "multiplier" in capsys.readouterr().err


def test_rdaccs_closer_than_half_the_interleave_break_the_reduction(monkeypatch):
    """Planted: the models spacing RDACCs by tCCD_S only (no ``rdacc_spacing_cycles``) send the P = 16
    unit RDACCs closer than its first-level reduction adder takes them (P / 2 = 8 cycles): the values
    come out wrong, so the spacing the models charge is needed."""
    p = dataclasses.replace(BF16, accumulator_interleave=16, column_bytes=4, mac_lanes=2, mac_pipeline_cycles=9)
    monkeypatch.setattr(PimParams, "rdacc_spacing_cycles", property(lambda self: 1))
    # the Verilog uncached: the controller reads the patched spacing, which the cache key (the params' fields)
    # does not see, so a cached copy would be served to the unpatched configuration
    design = design_for(p)
    items = cosim_items(p, "random", tiles=1, seed=16, max_stream=3)
    report = design.check(items, run_job(design.convert_verilog(), design.toplevel, design.make_job(items)).result)
    assert not report.ok


def test_a_stream_breaking_the_rdacc_spacing_sets_the_error_flag(monkeypatch):
    """Planted stream: the RTL built with the real spacing (P / 2 = 8) replays a schedule whose RDACCs are
    only tCCD_S apart (the models' spacing patched to 1 after the Verilog is made): the unit refuses it with
    its error flag, named in the report -- not only wrong values."""
    p = dataclasses.replace(BF16, accumulator_interleave=16, column_bytes=4, mac_lanes=2, mac_pipeline_cycles=9)
    design = design_for(p)
    verilog = design.convert_verilog()  # uncached (see the test above)
    monkeypatch.setattr(PimParams, "rdacc_spacing_cycles", property(lambda self: 1))
    planted = design_for(p)
    items = cosim_items(p, "random", tiles=1, seed=16, max_stream=3)
    report = planted.check(items, run_job(verilog, planted.toplevel, planted.make_job(items)).result)
    assert not report.ok and "flagged a timing violation" in report.summary()
