"""LUT template: the timing contract worked by hand, params / tile errors, the detailed model's schedule."""
from __future__ import annotations

import numpy as np
import pytest

from archsim.errors import SpecError
from archsim.spec import arch_from_params
from archsim.spec.load import load_arch
from archsim.templates.lut import LutModel, LutParams, LutTile
from archsim.templates.lut.detailed import LutArrayDetailed


def _zeros(tile: LutTile) -> dict:
    w = np.full((tile.k, tile.n), 1 if tile.weight_format == "int1" else 0)
    return {"input": np.zeros((tile.m, tile.k), np.int64), "weight": w}


# (params overrides, tile, cycles worked by hand from the contract)
CASES = [
    # M2 N64 K4, 16 entries/cycle: pre = ceil(2*8/16) = 1, look = ceil(100/64)*2 = 4,
    # steps = 2 row blocks x 2 groups = 4: 1 + 3*4 + 4 + 3 = 20
    ({}, LutTile(4, 8, 100, "ternary"), 20),
    # precompute bound: 1 entry/cycle -> pre = 16, look = 1 block x 1 plane = 1, steps = 1 x 3:
    # 16 + 2*16 + 1 + 3 = 52
    ({"precompute_entries_per_cycle": 1}, LutTile(2, 12, 64, "int1"), 52),
    # the same fused: pre = 0 -> 3 steps x 1 + 3 = 6
    ({"precompute_entries_per_cycle": 1}, LutTile(2, 12, 64, "int1", precomputed=True), 6),
    # asymmetric tables: E = 16, pre = ceil(2*16/16) = 2; int4: look = 2 blocks * 4 = 8; steps = 1 x 1:
    # 2 + 0 + 8 + 3 = 13
    ({"symmetric": False}, LutTile(1, 4, 65, "int4"), 13),
    # K = 2: E = 2, tile_m 3: pre = ceil(6/4) = 2; int3 look = 1*3 = 3; steps = ceil(7/3)=3 x 3 groups = 9:
    # 2 + 8*3 + 3 + 0 = 29
    ({"group_k": 2, "tile_k": 2, "tile_m": 3, "precompute_entries_per_cycle": 4, "pipeline_cycles": 0},
     LutTile(7, 6, 5, "int3"), 29),
    # lookups interleaved over D = 4 column blocks: the first case's 2 blocks fill one batch of 4,
    # look = 1 batch * 4 * 2 planes = 8: 1 + 3*8 + 8 + 3 = 36
    ({"lookup_interleave": 4}, LutTile(4, 8, 100, "ternary"), 36),
    # D = 2 over 5 blocks (N = 300 / 64), int3: 3 batches * 2 * 3 = 18 (15 without the idle slot);
    # pre = 1, 1 row block x 1 group: 1 + 0 + 18 + 3 = 22
    ({"lookup_interleave": 2}, LutTile(2, 4, 300, "int3"), 22),
]


@pytest.mark.parametrize("overrides, tile, cycles", CASES)
def test_cycles_by_hand(overrides, tile, cycles):
    arch = load_arch("lut-m2n64k4", overrides)
    model = arch.model()
    assert model.tile_cycles(tile) == cycles
    assert model.detailed_tile_cycles(tile) == cycles
    assert model.detailed_tile(tile, _zeros(tile))[1] == cycles


def test_detailed_trace_overlaps_precompute_with_lookups():
    """Double-buffered tables: the build of step 1 runs in the cycle of step 0's first lookup."""
    p = LutParams(tile_m=2, tile_n=4, precompute_entries_per_cycle=16)
    trace: list = []
    tile = LutTile(2, 8, 4, "int2")
    LutArrayDetailed(p).run_tile(tile, _zeros(tile), trace)
    assert trace[:3] == ["     0 pre  step 0 entries 0..15", "     1 pre  step 1 entries 0..15",
                         "     1 look step 0 block 0 plane 1"]
    assert trace[-1] == "     4 look step 1 block 0 plane 0"


def test_peak_macs_per_weight_format():
    m = LutModel(arch_from_params(LutParams(tile_m=2, tile_n=64, group_k=4, tile_k=4)))
    # every column reduces K activations per plane per cycle: 2 * 64 * 4 / b
    assert [m.peak_macs_per_cycle(f) for f in ("int1", "ternary", "int2", "int3", "int4")] == \
        [512, 256, 256, 512 / 3, 128]


@pytest.mark.parametrize("overrides, message", [
    ({"tile_k": 8}, r"tile_k: expected tile_k == group_k \(4\), got 8"),
    ({"group_k": 9, "tile_k": 9}, r"group_k: expected 1\.\.8, got 9"),
    ({"weight_formats": ["int8"]}, r"weight_formats: expected a non-empty list among int1, ternary"),
    ({"scale": "per_row"}, r"scale: expected one of none, per_channel, per_group, got 'per_row'"),
    ({"scale_group": 6}, r"scale_group: expected a multiple of group_k \(4\), got 6"),
    ({"activation_formats": ["int8"], "activation_format": "fp16"},
     r"activation_format: expected one of int8, got 'fp16'"),
])
def test_bad_params_are_one_line_errors(overrides, message):
    with pytest.raises(SpecError, match=message) as err:
        load_arch("lut-m2n8k4-ecp5", overrides)
    assert "\n" not in str(err.value)


def test_bad_tiles():
    m = LutModel(arch_from_params(LutParams(scale="per_group", scale_group=8)))
    with pytest.raises(ValueError, match=r"^k: expected a multiple of group_k \(4\), got 6$"):
        m.check_tile(LutTile(1, 6, 1))
    with pytest.raises(ValueError, match=r"^k: expected a multiple of scale_group \(8\) with per_group scales"):
        m.check_tile(LutTile(1, 4, 1))
    with pytest.raises(ValueError, match=r"^weight_format: expected one of int1, ternary, int2, int3, int4, got 'int8'"):
        m.check_tile(LutTile(1, 8, 1, "int8"))


def test_precision_pairs_through_with_precision():
    p = LutParams()
    assert p.with_precision("int4", "bf16").weight_format == "int4"
    with pytest.raises(ValueError, match=r"lut core runs weights int1/ternary/int2/int3/int4 x activations "
                                         r"int8/fp16/bf16, got int8/int8"):
        p.with_precision("int8", "int8")


@pytest.mark.parametrize("af", ["int8", "fp16"])
def test_interleaved_lookups_keep_the_values(af):
    """Interleaving the planes of D column blocks keeps every block's sums in their order: the
    detailed model's values at D = 3 equal those at D = 1 bit for bit (fp16: fp32 roundings
    included), and the fast model's (numpy reference) too."""
    rng = np.random.default_rng(3)
    tile = LutTile(3, 8, 300, "int3", af)
    a = rng.integers(-128, 128, (3, 8)) if af == "int8" else rng.standard_normal((3, 8)).astype(np.float16)
    ops = {"input": a, "weight": rng.integers(-4, 4, (8, 300))}
    one = load_arch("lut-m2n64k4").model().detailed_tile(tile, ops)
    model = load_arch("lut-m2n64k4", {"lookup_interleave": 3}).model()
    three = model.detailed_tile(tile, ops)
    assert np.array_equal(one[0], three[0]) and one[0].dtype == three[0].dtype
    assert np.array_equal(model.tile_values(tile, ops), three[0])
    assert model.tile_cycles(tile) == three[1]
    # 5 blocks in 2 batches of 3: 6 * 3 planes a step instead of 15; 2 row blocks x 2 groups
    assert (one[1], three[1]) == (1 + 3 * 15 + 15 + 3, 1 + 3 * 18 + 18 + 3)
