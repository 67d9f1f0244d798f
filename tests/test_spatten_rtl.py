"""SpAtten's pruning step composed in RTL (rtl/attention/spatten.py: the attention array, an fp32
probability accumulator and the top-k engine) against its models (archsim/templates/attention/
pruning.py): the models' probabilities and kept keys against an independent float64 softmax and sort,
the cycles of a step counted by hand, and the RTL bit- and cycle-exact, with planted bugs caught."""
from __future__ import annotations

import numpy as np
import pytest

from archsim.spec import load_arch
from archsim.templates.attention import pruning, topk
from archsim.templates.attention.conformance import _bf16
from archsim.templates.attention.pruning import PruneTile
from sim_skip import require_icarus

SETS = ["rows=2", "cols=2", "pe1d=2", "exp_macs=4", "topk_parallelism=4"]
OPTIONS = {"head_dim_max": 4, "flat_keys_max": 8}


def _arch():
    return load_arch("fusemax-edge", SETS)


def _ops(rng, tile: PruneTile) -> dict:
    h, q, L, d = tile.heads, tile.q_rows, tile.kv_len, tile.head_dim
    return {"q": _bf16(rng.uniform(-2, 2, (h, q, d))), "k": _bf16(rng.uniform(-2, 2, (h, L, d))),
            "v": _bf16(rng.uniform(-2, 2, (h, L, d)))}


def _softmax64(q, k):
    s = q.astype(np.float64) @ k.astype(np.float64).T / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def _reference_keep(values, k):
    """The k largest, ties to the lower index, ascending (independent of the engine's quick-select)."""
    order = sorted(range(len(values)), key=lambda i: (-float(values[i]), i))
    return sorted(order[:k])


@pytest.mark.parametrize("tile", [PruneTile(2, 5, 2, 2, 2, 9), PruneTile(1, 8, 3, 1, 5, 77), PruneTile(2, 3, 4, 1, 1)])
def test_models_sum_the_softmax_and_keep_the_largest(tile):
    """The keys' sums equal float64 softmax column sums over heads and rows (the array's exp2 polynomial
    and fp32: within 1e-3 relative), their total is heads x rows, and the kept keys are the k largest
    sums by an independent sort; the attention outputs are the model's FLAT values."""
    arch = _arch()
    model = arch.model()
    ops = _ops(np.random.default_rng(tile.seed), tile)
    res = pruning.run(model, tile, ops)
    want = sum(_softmax64(ops["q"][h], ops["k"][h]).sum(axis=0) for h in range(tile.heads))
    np.testing.assert_allclose(res.importance.astype(np.float64), want, rtol=1e-3)
    assert abs(float(res.importance.astype(np.float64).sum()) - tile.heads * tile.q_rows) < 1e-3
    assert list(res.kept) == _reference_keep(res.importance, tile.k)
    for h in range(tile.heads):
        o = _softmax64(ops["q"][h], ops["k"][h]) @ ops["v"][h].astype(np.float64)
        np.testing.assert_allclose(res.out[h], o, rtol=1e-2, atol=1e-3)
    fast = pruning.run(model, tile, ops, detailed=False)
    assert list(fast.kept) == list(res.kept)
    assert np.array_equal(fast.importance.view(np.uint32), res.importance.view(np.uint32))


def test_step_cycles_counted_by_hand():
    """q=1, L=4, d=2, one head on a 2x2 array with 2 1D lanes (docs/attention.md's FLAT contract):
    Q.K = skew 2 + 2 blocks x d 2 = 6, P.V = 6, softmax max 2 + m*c 1 + s*c 2 + exp 2 + sum 2 + recip 1
    + normalise 2 = 12: a tile 24 cycles, + capture 1 + the wrapper's handoff 1 = 26; the output tile
    and ceil(4/2) = 2 probability passes = 78, each pass's 1 row read + 1 add = 4: 82 before the
    select, which adds its start and done cycles (2) to the top-k's own."""
    arch = _arch()
    tile = PruneTile(1, 4, 2, 1, 2, 5)
    ops = _ops(np.random.default_rng(0), tile)
    res = pruning.run(arch.model(), tile, ops)
    run = topk.select(pruning.scores_of(res.importance), tile.k, 4, tile.seed)
    assert res.cycles == 82 + 2 + run.cycles


def test_the_attention_model_takes_a_pruning_step():
    """The template's model runs a PruneTile as the level harness asks: its cycles range is the hand
    count above (82 + 2) plus the top-k's own range, the fast cycles lie in it, the detailed values are
    the step's; utilization and actions are refused (programs run the step's parts)."""
    arch = _arch()
    model = arch.model()
    tile = PruneTile(1, 4, 2, 1, 2, 5)
    ops = _ops(np.random.default_rng(0), tile)
    low, high = topk.cycles_range(tile.topk_tile(), 4)
    assert model.detailed_cycles_range(tile) == (84 + low, 84 + high)
    assert 84 + low <= model.tile_cycles(tile) <= 84 + high
    values, cycles = model.detailed_tile(tile, ops)
    res = pruning.run(model, tile, ops)
    assert cycles == res.cycles
    assert list(values[-tile.k:]) == list(res.kept) and len(values) == tile.q_rows * tile.head_dim + 4 + tile.k
    assert np.array_equal(model.tile_values(tile, ops), values)
    with pytest.raises(ValueError, match="PruneTile .* is for co-simulation"):
        model.tile_actions(tile)


def test_refuses_a_step_that_drops_nothing():
    with pytest.raises(ValueError, match="k: expected 1 <= k < kv_len"):
        PruneTile(1, 4, 2, 1, 4).check(_arch().params)


# ----------------------------------------------------------------------------- RTL

TILES = [PruneTile(2, 4, 2, 2, 2, 300), PruneTile(1, 5, 4, 1, 3, 4242)]


def _design(cls=None):
    from rtl.attention.spatten_design import SpattenDesign

    return (cls or SpattenDesign)(_arch().params, OPTIONS)


def _items():
    rng = np.random.default_rng(11)
    return [(t, _ops(rng, t)) for t in TILES]


@pytest.mark.rtl
def test_rtl_matches_the_models():
    from rtl.api import run_design_cosim

    require_icarus()
    items = _items()
    report = run_design_cosim(_design(), items)
    assert report.ok, "\n" + report.summary()
    assert len(report.tiles) == len(items)
    for check, (tile, ops) in zip(report.tiles, items):
        assert check.rtl_cycles == pruning.run(_arch().model(), tile, ops).cycles, check.label


@pytest.mark.rtl
def test_planted_dropped_probability_row_is_caught():
    """An accumulator that skips the last result row of every probability pass: the sums differ."""
    from rtl.api import run_design_cosim
    from rtl.attention.spatten import SpattenEngine
    from rtl.attention.spatten_design import SpattenDesign

    require_icarus()

    class Planted(SpattenEngine):
        def dropped_row(self, got, q_rows):
            return got + 1 == q_rows

    class PlantedDesign(SpattenDesign):
        toplevel = "archsim_spatten_planted"  # its own Verilog cache entry

        def component(self):
            return Planted(self.cfg, self.params.topk_parallelism)

        def component_class(self):
            return Planted

    report = run_design_cosim(_design(PlantedDesign), _items()[:1])
    assert not report.ok
    assert not report.tiles[0].values_ok and "values differ" in report.tiles[0].mismatch


@pytest.mark.rtl
def test_planted_model_cycle_is_caught(monkeypatch):
    """A model that forgets the cycle of the last add of each probability pass: cycles differ."""
    from rtl.api import run_design_cosim

    require_icarus()
    monkeypatch.setattr(pruning, "ACC_TAIL_CYCLES", 0)
    report = run_design_cosim(_design(), _items()[:1])
    assert not report.ok
    assert report.tiles[0].values_ok and not report.tiles[0].cycles_ok


@pytest.mark.rtl
@pytest.mark.long
def test_rtl_1000_random_steps():
    """1000 random steps (q 1-2, L 2-8, d 1-4, 1-2 heads) on Verilator: 0 mismatches."""
    from rtl.api import run_design_cosim
    from rtl.cosim import simulator_missing_reason

    sim = "verilator" if not simulator_missing_reason("verilator") else "icarus"
    design = _design()
    items = design.cosim_items("random", tiles=1000, seed=7)
    report = run_design_cosim(design, items, sim=sim)
    assert report.ok, "\n".join(report.failures()[:10])
    assert len(report.tiles) == 1000


def test_job_refuses_a_step_the_rtl_cannot_run():
    from archsim.errors import SpecError

    rng = np.random.default_rng(0)
    for tile, why in ((PruneTile(1, 9, 2, 1, 3), "flat_keys_max 8"), (PruneTile(1, 4, 5, 1, 2), "head_dim_max 4"),
                      (PruneTile(3, 4, 2, 1, 2), "q_rows")):
        with pytest.raises(SpecError, match=why):
            _design().make_job([(tile, _ops(rng, tile))])


@pytest.mark.rtl
def test_a_bad_select_raises_the_error_flag_and_runs_nothing():
    """A select keeping every key (k = kv_len), sent past the job's check: error high, no done."""
    from rtl.cosim.harness import run_job

    require_icarus()
    design = _design()
    job = design.make_job(_items()[1:])
    job["tiles"][0]["steps"][-1]["cmd"]["k"] = TILES[1].kv_len
    result = run_job(design.verilog(), design.toplevel, job).result
    assert result["tiles"][0]["error_flag"] == 1
    assert result["tiles"][0]["cycles"] is None  # no done: the top-k never ran
