"""``archsim rtl cosim --unit topk``: SpAtten's top-k engine driven from the CLI, on random tiles and
on the pruning steps of a real workload (rtl/attention/topk_sources.py); bad flags are one line."""
from __future__ import annotations

import numpy as np
import pytest

from archsim.cli import main
from cli_errors import one_line_error
from sim_skip import require_icarus

SMALL = ["--arch", "spatten", "--unit", "topk", "--set", "topk_parallelism=4", "--depth", "32", "-q"]



@pytest.mark.parametrize("argv, words", [
    (["--arch", "spatten", "--unit", "nope"], ["--unit", "'nope'", "topk"]),
    (["--arch", "systolic-32x32-ws", "--unit", "topk"], ["--unit", "systolic", "no unit"]),
    (["--arch", "fusemax-edge", "--unit", "topk"], ["topk_parallelism"]),
    (["--arch", "spatten", "--unit", "topk", "--source", "nope"], ["'nope'", "random or program"]),
    (["--arch", "spatten", "--unit", "topk", "--source", "program"], ["capacity 64", "--depth to 8"]),
    (["--arch", "spatten", "--unit", "topk", "--depth", "8", "--source", "program", "--workload", "resnet50"],
     ["resnet50", "no top-k layer"]),
    (["--arch", "spatten", "--unit", "topk", "--depth", "8", "--source", "program", "--layer", "h9"],
     ["--layer", "'h9'", "h0.self_attn.attn.topk_tokens"]),
    (["--arch", "spatten", "--unit", "topk", "--banks", "2"], ["--banks"]),
    (["--arch", "spatten", "--unit", "topk", "--verilog", "x.v", "--top", "x"], ["--verilog", "--unit topk"]),
])
def test_bad_unit_flags_are_one_line(capsys, argv, words):
    one_line_error(capsys, ["rtl", "cosim", *argv, "-q"], *words)


def test_generate_axi_wrapper_of_a_unit_is_one_line(capsys, tmp_path):
    one_line_error(capsys, ["rtl", "generate", "--arch", "spatten", "--unit", "topk", "--wrapper", "axi",
                             "--out", str(tmp_path / "o"), "-q"], "--wrapper axi", "topk")


def _reference_keep(scores, k):
    """Independent top-k: the k largest, ties broken by the lower index, returned ascending."""
    order = sorted(range(len(scores)), key=lambda i: (-int(scores[i]), i))
    return sorted(order[:k])


def test_program_tiles_are_gpt2s_pruning_steps():
    """GPT-2-small prefill, 128 tokens, the spatten preset's token_keep 0.9, 0.7, 0.2, ...: the first layer
    reads every token (no earlier step), then floor(0.7 * 128) = 89, floor(0.2 * 128) = 25 and
    floor(0.1 * 128) = 12 tokens are kept (by hand); scores are 16-bit with the largest at 65535, and the
    models keep what an independent sort keeps."""
    from archsim.spec import load_arch
    from rtl.generate import unit_design_for

    arch = load_arch("spatten", ["topk_parallelism=4"])
    design = unit_design_for(arch, "topk", {"depth": 32})
    items = design.cosim_items("program", tiles=8, arch=arch, workload="gpt2")
    assert [(t.n, t.k) for t, _ in items] == [(128, 89), (89, 25), (25, 12)]
    model = arch.model()
    for tile, ops in items:
        scores = ops["scores"]
        assert scores.max() == 65535 and scores.min() >= 0 and len(scores) == tile.n
        want = _reference_keep(scores, tile.k)
        assert list(model.tile_values(tile, ops)) == want
        assert list(model.detailed_tile(tile, ops)[0]) == want


@pytest.mark.rtl
def test_cli_cosim_program_and_random_tiles(capsys):
    require_icarus()
    rc = main(["rtl", "cosim", *SMALL, "--source", "program", "--workload", "gpt2", "--tiles", "3"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "3 tiles from program" in out and "PASS: 3/3 tiles match archsim on icarus" in out
    for label in ("n=128 k=89", "n=89 k=25", "n=25 k=12"):
        assert label in out
    rc = main(["rtl", "cosim", *SMALL, "--tiles", "4", "--seed", "3"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "PASS: 4/4 tiles match archsim on icarus" in out


@pytest.mark.rtl
def test_cli_cosim_with_one_lane(capsys):
    """One comparator: out_mask is a 1-bit port (cocotb gives a Logic, not a LogicArray; the driver used
    to stop on it)."""
    require_icarus()
    rc = main(["rtl", "cosim", "--arch", "spatten", "--unit", "topk", "--set", "topk_parallelism=1", "--depth", "16",
               "--tiles", "4", "--seed", "2", "-q"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "PASS: 4/4 tiles match archsim on icarus" in out


@pytest.mark.rtl
def test_cli_cosim_reports_a_planted_wrong_index(capsys, monkeypatch):
    """The RTL's kept indices read one too high on every tile: the CLI fails the tiles, exit status 1."""
    from rtl.attention.topk_design import TopkDesign

    require_icarus()
    real = TopkDesign.rtl_tile_values
    monkeypatch.setattr(TopkDesign, "rtl_tile_values", lambda self, tile, g: real(self, tile, g) + 1)
    rc = main(["rtl", "cosim", *SMALL, "--tiles", "2", "--seed", "3"])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "FAIL: 0/2 tiles" in out and "DIFF" in out


def test_program_scores_rank_like_their_probabilities():
    """to_scores keeps the order of the cumulative probabilities (a scaled floor is monotone), and the
    probabilities of R query rows sum to R (each softmax row sums to 1)."""
    from rtl.attention.topk_sources import cumulative_probabilities, to_scores

    imp = cumulative_probabilities(np.random.default_rng(1), 50, 24, 16)
    assert abs(imp.sum() - 24) < 1e-9
    s = to_scores(imp, 16)
    order = np.argsort(imp, kind="stable")
    assert np.all(np.diff(s[order]) >= 0) and s.max() == 65535


def test_generate_a_unit(capsys, tmp_path):
    """``rtl generate --unit topk --depth 3`` on 4 comparators: capacity 3 x 4 = 12 scores in the manifest."""
    import json

    out = tmp_path / "topk"
    rc = main(["rtl", "generate", "--arch", "spatten", "--unit", "topk", "--set", "topk_parallelism=4", "--depth", "3",
               "--out", str(out), "-q"])
    assert rc == 0, capsys.readouterr().err
    manifest = json.loads((out / "archsim_topk.json").read_text())
    assert manifest["params"] == {"lanes": 4, "capacity": 12, "width": 16}
    assert "UnusedElaboratable" not in capsys.readouterr().err


def test_a_template_design_that_refuses_names_the_unit_that_has_rtl(capsys):
    """spatten's array is not one the attention RTL builds, but its top-k engine is: the refusal says
    which --unit co-simulates it (a configuration without a top-k engine gets no such hint)."""
    from archsim.cli import main

    assert main(["rtl", "cosim", "--arch", "spatten", "--tiles", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("(units with their own RTL: --unit topk)") and "\n" not in err
    assert main(["rtl", "cosim", "--arch", "fusemax-edge", "--set", "exp_on=array1d", "--tiles", "1"]) == 2
    assert "--unit" not in capsys.readouterr().err


@pytest.mark.rtl
def test_cli_cosim_json_dash_prints_json_on_stdout(capsys, tmp_path, monkeypatch):
    """``--json -`` prints the report as JSON on stdout (as ``rtl synth`` does) and writes no file named '-'."""
    import json

    require_icarus()
    monkeypatch.chdir(tmp_path)
    rc = main(["rtl", "cosim", *SMALL, "--tiles", "2", "--seed", "4", "--json", "-"])
    out = capsys.readouterr().out
    assert rc == 0, out
    report = json.loads(out)
    assert report["ok"] is True and len(report["tiles"]) == 2, report
    assert all(t["values_ok"] and t["cycles_ok"] for t in report["tiles"]), report
    assert not (tmp_path / "-").exists()
