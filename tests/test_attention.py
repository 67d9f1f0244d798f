"""The attention template: timing contract by hand, values vs the float64 reference
within the derived bound, the three mappings through the CLI, report fields."""
from __future__ import annotations

import json

import numpy as np
import pytest

from archsim.cli import main
from archsim.spec.load import load_arch
from archsim.templates.attention.conformance import _operands
from archsim.templates.attention.reference import check, error_bound, reference_attention
from archsim.templates.attention.tile import AttentionTile
from workloads.zoo import build

SMALL = {"rows": 4, "cols": 4, "pe1d": 4}


def _model(**over):
    return load_arch("fusemax-edge", {**SMALL, **over}).model()


def test_fusemax_tile_cycles_by_hand():
    """4x4 array, pe1d 4, d = 2, 8 keys (2 blocks), E = 6. Slots (2D | 1D):
    s0 qk_max(b0) 3 | -; s1 qk_max(b1) 3 | stat(b0) 3; s2 exp_sum_av(b0) 6+1+2 = 9 | stat(b1) 3;
    s3 exp_sum_av(b1) 9 | update(b0) 1+1+2+2 = 6; s4 - | update(b1) 6 -> 3+3+9+9+6 = 30, + skew 4+4-2 = 6."""
    m = _model()
    assert m.tile_cycles(AttentionTile("fusemax", 4, 8, 2)) == 36
    assert m.tile_cycles(AttentionTile("fusemax", 4, 8, 2, drain=False)) == 30
    # 1D busy: stat 3 x 2 + update 6 x 2 + final recip 1 + 8 muls / 4 = 2
    assert m.tile_cycles(AttentionTile("fusemax", 4, 8, 2, "rescale")) == 21
    assert m.tile_cycles(AttentionTile("fusemax", 4, 8, 2, "rescale", last=False)) == 18


def test_flat_tile_cycles_by_hand():
    """qk = av = skew 6 + 2 blocks x d 2 = 10; softmax on 4 PEs over 32 scores:
    max 8 + m*c 1 + s*c-m*c 8 + exp 8 + sum 8 + recip 1 + normalise 8 = 42."""
    m = _model()
    assert [m.tile_cycles(AttentionTile("flat", 4, 8, 2, ph)) for ph in ("qk", "softmax", "av", "all")] == \
        [10, 42, 10, 62]
    slow = _model(ops1d_per_cycle={"exp": 0.25})
    assert slow.tile_cycles(AttentionTile("flat", 4, 8, 2, "softmax")) == 42 - 8 + 32


def test_exp_on_1d_moves_the_exps():
    """exp on the 1D array: 2D qk_max 3 (s0..s1), av 2 (s3..s4); 1D stat 3 (s1..s2),
    exp+sum 16/4 + 16/4 = 8 (s2..s3), update 6 (s4..s5):
    s0 3, s1 3, s2 max(0, 3+8) = 11, s3 max(2, 8) = 8, s4 max(2, 6) = 6, s5 6 -> 37 + skew 6."""
    m = _model(exp_on="array1d")
    assert m.tile_cycles(AttentionTile("fusemax", 4, 8, 2)) == 43


def test_online_softmax_error_within_the_derived_bound():
    """fusemax and flat values vs float64 softmax(QK^T/sqrt(d))V over many random tiles;
    the errors are real (nonzero) and below the bound derived in reference.py."""
    rng = np.random.default_rng(7)
    ratios = []
    for over in ({}, {"exp_macs": 3}, {"exp_macs": 8, "cols": 8, "rows": 8, "pe1d": 8}):
        m = _model(**over)
        p = m.params
        for mapping in ("fusemax", "flat"):
            for kv, d, grow in ((1, 1, False), (3 * p.cols + 1, 8, True), (37, 16, False), (64, 64, False)):
                t = AttentionTile(mapping, p.rows, kv, d)
                ops = _operands(rng, p.rows, kv, d, growing=grow)
                got = m.tile_values(t, ops)
                err = np.abs(got - reference_attention(ops["q"], ops["k"], ops["v"])).max(axis=1)
                bound = error_bound(ops["q"], ops["k"], ops["v"], p.cols, p.exp_macs)
                assert np.all(err <= bound)
                ratios.append(float((err / bound).max()))
    assert max(ratios) > 1e-3  # the bound is not absurdly loose everywhere


def test_the_reference_catches_a_wrong_value():
    m = _model()
    ops = _operands(np.random.default_rng(1), 4, 9, 4)
    t = AttentionTile("fusemax", 4, 9, 4)
    good = m.tile_values(t, ops)
    check(t, ops, m.params, good)
    bad = good.copy()
    bad[1, 2] += 1e-3
    with pytest.raises(AssertionError):
        check(t, ops, m.params, bad)


def test_fast_model_of_a_long_block_is_closed_form():
    m = load_arch("fusemax-cloud").model()
    t = AttentionTile("fusemax", 256, 262144, 64)
    # 1024 blocks; steady-state slot = max(2D 2*64+6+2 = 136, 1D 3 + 2 + 64 + 64 = 133)
    assert 1024 * 136 <= m.tile_cycles(t) <= 1024 * 136 + 4 * 136 + 510


def test_attn_zoo_entries():
    for name, (heads, hd) in {"attn_bert": (12, 64), "attn_trxl": (16, 64), "attn_t5": (8, 64),
                              "attn_xlm": (16, 128)}.items():
        g = build(name, batch=2, seq=128)
        (op,) = [o for o in g.ops() if o.kind == "attention"]
        assert (op.heads, op.head_dim, op.seq_q, op.seq_kv, op.batch) == (heads, hd, 128, 128, 2)
        assert op.macs() == 2 * 2 * heads * 128 * 128 * hd


def _run(tmp_path, capsys, mapping, workload="attn_bert", seq="4096"):
    out = tmp_path / (mapping or "default")  # not tmp_path itself: it holds the other runs
    argv = ["run", "--arch", "fusemax-cloud", "--workload", workload, "--batch", "64", "--seq", seq,
            "--out", str(out)]
    if mapping:
        argv += ["--set", f"attention_mapping={mapping}"]
    assert main(argv) == 0
    capsys.readouterr()
    return json.loads((out / "report.json").read_text())


def test_cli_three_mappings_and_unit_report(tmp_path, capsys):
    reports = {m: _run(tmp_path, capsys, m) for m in ("flat", "unfused", "")}
    fm, flat, unf = reports[""], reports["flat"], reports["unfused"]
    assert fm["layers"][0]["mapping"]["attention_mapping"] == "fusemax"  # the default
    assert flat["layers"][0]["mapping"]["attention_mapping"] == "flat"
    for r in reports.values():
        assert set(r["units"]) == {"array2d", "array1d", "dma"}
        assert all(0 <= u["utilization"] <= 1 and u["busy_cycles"] > 0 for u in r["units"].values())
        assert set(r["layers"][0]["unit_utilization"]) == {"array2d", "array1d", "dma"}
    # one-pass beats the 1D-bound two-pass, which beats the DRAM round trips
    assert fm["total_cycles"] < flat["total_cycles"] < unf["total_cycles"]
    # flat is bound by its 1D array: it is busier than the 2D array
    assert flat["units"]["array1d"]["busy_cycles"] > flat["units"]["array2d"]["busy_cycles"]


def test_unknown_mapping_is_one_line(capsys):
    code = main(["run", "--arch", "fusemax-cloud", "--workload", "attn_bert", "--set", "attention_mapping=bogus"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "attention_mapping" in err


def test_precision_pairs():
    p = load_arch("fusemax-edge").params
    assert p.with_precision("fp16", "fp16").precision == "fp16"
    with pytest.raises(ValueError, match="bf16/bf16"):
        p.with_precision("int8", "int8")


def test_t5_encoder_params_match_hugging_face():
    """T5EncoderModel: shared embedding 32128 x d, per layer q/k/v/o (4 d^2), wi/wo (2 d ff) and two
    RMS norms (2 d), the final norm (d), the relative position bias (32 x heads).
    Hugging Face: t5-small 35,330,816, t5-base 109,628,544."""
    for name, d, ff, layers, heads, hf in (("t5_small", 512, 2048, 6, 8, 35_330_816),
                                            ("t5_base", 768, 3072, 12, 12, 109_628_544)):
        by_hand = 32128 * d + layers * (4 * d * d + 2 * d * ff + 2 * d) + d + 32 * heads
        assert by_hand == hf
        assert sum(o.params() for o in build(name, seq=8).ops()) == hf


def test_whole_networks_run_with_each_mapping(tmp_path, capsys):
    """Each network and each mapping once, end to end through the CLI (a full 2 x 2 grid repeats both)."""
    for wl, m in (("t5_small", "fusemax"), ("llama2_7b", "flat")):
        out = tmp_path / f"{wl}-{m}"
        argv = ["run", "--arch", "fusemax-cloud", "--workload", wl, "--batch", "1", "--seq", "256",
                "--set", f"attention_mapping={m}", "--out", str(out)]
        assert main(argv) == 0, capsys.readouterr().err
        r = json.loads((out / "report.json").read_text())
        assert r["units"]["array2d"]["busy_cycles"] > 0


def test_detailed_engine_run_equals_fast():
    """archsim's --detailed (the detailed model's cycles for every tile) gives the fast model's totals."""
    import mappers
    from archsim.engine import run_program

    for m in ("fusemax", "flat", "unfused"):
        arch = load_arch("fusemax-edge", [f"attention_mapping={m}"])
        prog = mappers.compile(build("attn_t5", batch=1, seq=200), arch)
        fast, det = run_program(prog, arch), run_program(prog, arch, detailed=True)
        assert det.total_cycles == fast.total_cycles > 0
        assert det.units == fast.units


def test_flat_row_that_does_not_fit_is_one_line(capsys):
    """FLAT keeps a whole row of scores on chip: 1 MiB cannot hold two rows of 256K 2-byte scores."""
    code = main(["run", "--arch", "fusemax-edge", "--workload", "attn_bert", "--batch", "1", "--seq", "262144",
                 "--set", "attention_mapping=flat"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "does not fit" in err and "fusemax" in err


def test_flat_softmax_four_ops_per_score_with_the_scale_at_the_2d_edge():
    """flat_scale_on = array2d: the scores leave the 2D array scaled by c, so the 1D array runs
    max 8 + exp 8 + sum 8 + recip 1 + normalise 8 = 33 cycles on 32 scores (5 ops -> 4 per score)."""
    m = _model(flat_scale_on="array2d")
    assert [m.tile_cycles(AttentionTile("flat", 4, 8, 2, ph)) for ph in ("qk", "softmax", "av", "all")] == \
        [10, 33, 10, 53]
    acts = m.tile_actions(AttentionTile("flat", 4, 8, 2, "softmax"))
    assert acts["vector.op"] == 4 * 32 + 4  # 4 per score + a reciprocal per row
    assert acts["sram_read_bytes.scores"] == acts["sram_write_bytes.scores"] == 2 * 32
    assert m.tile_actions(AttentionTile("flat", 4, 8, 2, "qk"))["mult.fp32"] == 32  # the edge multiplier


def test_flat_scale_on_is_checked(capsys):
    code = main(["run", "--arch", "fusemax-edge", "--workload", "attn_bert", "--set", "flat_scale_on=array3d"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "flat_scale_on" in err


def _attention_mapping(arch_overrides, seq):
    import mappers

    arch = load_arch("fusemax-cloud", arch_overrides)
    prog = mappers.compile(build("attn_bert", batch=1, seq=seq), arch)
    return next(l for l in prog.layers if l.op == "attention").mapping


def test_buffer_per_mapping_option():
    """fusemax-cloud gives FLAT the artifact's 32 MiB: at 64K keys its row-granular tile holds
    3 x 32 MiB / (16 x 65536) = 96 queries; with the option cleared, the spec's 16 MiB: 48."""
    assert _attention_mapping(["attention_mapping=flat"], 65536)["q_tile"] == 96
    assert _attention_mapping(["attention_mapping=flat", "buffer_bytes={flat: 16 MiB}"], 65536)["q_tile"] == 48
    assert _attention_mapping(["attention_mapping=flat", "buffer_bytes=null"], 65536)["q_tile"] == 48


def test_bad_buffer_bytes_is_one_line(capsys):
    for bad in ("buffer_bytes={flat: lots}", "buffer_bytes={flash: 1 MiB}"):
        code = main(["run", "--arch", "fusemax-cloud", "--workload", "attn_bert", "--set", bad])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and "buffer_bytes" in err, err


def test_unfused_dma_streams_while_the_softmax_runs():
    """Unfused at 16K is DRAM-bound: Q, K, V, O once and the scores 4 times (stored, loaded,
    probabilities stored, loaded), 2 bytes each, at 400 GiB/s. With the loads queued ahead of
    the probability stores it runs within 15% of that bound; a DMA that waited on every
    softmax would add the 1D array's time (~90% of it) on top."""
    import mappers
    from archsim.engine import run_program

    arch = load_arch("fusemax-cloud", ["attention_mapping=unfused"])
    b, h, L, d = 64, 12, 16384, 64
    res = run_program(mappers.compile(build("attn_bert", batch=b, seq=L), arch), arch)
    nbytes = 4 * 2 * b * h * L * L + 4 * 2 * b * h * L * d
    assert res.dram_bytes == nbytes
    bound_s = nbytes / (400 * 2**30)
    assert bound_s <= res.latency_s <= 1.15 * bound_s
