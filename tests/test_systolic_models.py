"""Systolic template: fast model vs detailed model vs numpy, and hand-worked cycles."""
from __future__ import annotations

import re

import numpy as np
import pytest

from archsim.spec import arch_from_params
from archsim.templates import get_template
from archsim.templates.systolic import (
    SystolicArrayDetailed,
    SystolicModel,
    SystolicParams,
    SystolicTile,
    detailed_sequence,
    detailed_tile,
    gemm_fold_cycles,
    gemm_tiles,
)

ACC_BITS = {"int16": 16, "int32": 32, "int64": 64}


def expected_values(a, w, psum, acc_bits):
    """Independent reference: exact Python-int matmul, then two's-complement wrap."""
    exact = np.array(
        [[sum(int(a[i, t]) * int(w[t, j]) for t in range(a.shape[1])) for j in range(w.shape[1])]
         for i in range(a.shape[0])], dtype=object)
    if psum is not None:
        exact = exact + psum.astype(object)
    mod = 1 << acc_bits
    return np.vectorize(lambda x: ((x + mod // 2) % mod) - mod // 2, otypes=[object])(exact)


def random_operands(rng, tile, params):
    lo_i = -(1 << (int(params.input_precision[3:]) - 1))
    lo_w = -(1 << (int(params.weight_precision[3:]) - 1))
    ops = {"input": rng.integers(lo_i, -lo_i, (tile.m, tile.k)),
           "weight": rng.integers(lo_w, -lo_w, (tile.k, tile.n))}
    if tile.accumulate:
        b = ACC_BITS[params.acc_precision]
        ops["psum"] = rng.integers(-(1 << (b - 1)), (1 << (b - 1)) - 1, (tile.m, tile.n), dtype=np.int64)
    return ops


# ---------------------------------------------------------------- hand-worked cycles
def test_ws_hand_worked_2x3():
    # 2x3 array, WS, serial, P=0, m=3 rows of A streamed.
    # cycles 0,1: weight rows shift in. A row i, element r enters PE(r,0) at 2+i+r.
    # Last row i=2 reaches PE(1,0) at 5, then column 2 at 7: out[2,2] leaves at 7 -> 8 cycles.
    p = SystolicParams(rows=2, cols=3)
    tile = SystolicTile("ws", m=3, k=2, n=3)
    assert SystolicModel(arch_from_params(p)).tile_cycles(tile) == 8
    a = np.array([[1, 2], [3, 4], [5, 6]])
    w = np.array([[1, 0, -1], [2, 1, 0]])
    values, cycles = detailed_tile(p, tile, {"input": a, "weight": w})
    assert cycles == 8
    assert values.tolist() == [[5, 2, -1], [11, 4, -3], [17, 6, -5]]


def test_os_hand_worked_pipelined():
    # 2x2 array, OS, k=3, mult_pipeline_stages=1. PE(i,j) does MAC t in cycle i+j+t;
    # the last MAC of PE(1,1) is t=2 in cycle 4, its add happens one cycle later (5),
    # so the last output is presented in cycle 5 -> 6 cycles.
    p = SystolicParams(rows=2, cols=2, dataflow="os", mult_pipeline_stages=1)
    tile = SystolicTile("os", m=2, k=3, n=2)
    assert SystolicModel(arch_from_params(p)).tile_cycles(tile) == 6
    a = np.array([[1, -1, 2], [0, 3, 1]])
    w = np.array([[1, 2], [3, 4], [5, 6]])
    values, cycles = detailed_tile(p, tile, {"input": a, "weight": w})
    assert cycles == 6
    assert values.tolist() == [[8, 10], [14, 18]]


def test_is_hand_worked_hidden_preload():
    # 3x2 array, IS, double-buffered with the preload hidden: no preload cycles;
    # W column j enters PE(r,0) at j+r; the last (j=3) leaves the bottom of column 1
    # (the last column) at 3 + 2 + 1 = 6 -> 7 cycles. Serial would add R=3 -> 10.
    p = SystolicParams(rows=3, cols=2, dataflow="is", preload="double_buffered")
    hidden = SystolicTile("is", m=2, k=3, n=4, preload_hidden=True)
    serial = SystolicTile("is", m=2, k=3, n=4)
    model = SystolicModel(arch_from_params(p))
    assert model.tile_cycles(hidden) == 7
    assert model.tile_cycles(serial) == 10
    rng = np.random.default_rng(7)
    ops = random_operands(rng, hidden, p)
    assert detailed_tile(p, hidden, ops)[1] == 7
    assert detailed_tile(p, serial, ops)[1] == 10


def test_gemm256_scalesim_readme_figures():
    # Worked by hand: WS 32x32, 256^3: (256/32)^2 = 64 folds of 2*32+32+256-2 = 350 -> 22400;
    # SCALE-Sim reports 22399 (index of the last cycle). OS: 64 folds of 256+32+32-2 = 318 -> 20352
    # (SCALE-Sim: 20351). IS is WS with A and W swapped: (256/32)^2 = 64 folds of 2*32+32+256-2 = 350
    # -> 22400 (SCALE-Sim: 22399). Figures in archsim/validate/scalesim_reference/gemm256.csv.
    p = SystolicParams(rows=32, cols=32)
    assert gemm_fold_cycles(256, 256, 256, p, "ws") == 64 * (2 * 32 + 32 + 256 - 2) == 22400
    assert gemm_fold_cycles(256, 256, 256, p, "os") == 64 * (256 + 32 + 32 - 2) == 20352
    assert gemm_fold_cycles(256, 256, 256, p, "is") == 64 * (2 * 32 + 32 + 256 - 2) == 22400
    # double-buffered, P=1: only the first fold pays the R=32 preload; every fold then takes
    # R + C + m - 2 + P = 32 + 32 + 256 - 2 + 1 cycles with its preload hidden behind the previous one
    db = SystolicParams(rows=32, cols=32, preload="double_buffered", mult_pipeline_stages=1)
    assert gemm_fold_cycles(256, 256, 256, db, "ws") == 64 * (32 + 32 + 256 - 2 + 1) + 32


# ---------------------------------------------------------------- random agreement
# Fast == detailed == numpy on random tiles of every dataflow x preload x pipeline on small
# arrays is the shared harness's job: tests/test_template_levels.py (cases from
# archsim/templates/systolic/conformance.py).


@pytest.mark.parametrize("acc,inp", [("int16", "int8"), ("int64", "int16"), ("int32", "int16")])
def test_wraparound_is_bit_exact(acc, inp):
    # Extreme operands so that sums overflow narrow accumulators: hardware wraps.
    p = SystolicParams(rows=8, cols=4, input_precision=inp, weight_precision=inp, acc_precision=acc)
    model = SystolicModel(arch_from_params(p))
    lo = -(1 << (int(inp[3:]) - 1))
    for df in ("ws", "os", "is"):
        tile = {"ws": SystolicTile("ws", 5, 8, 4, accumulate=True),
                "os": SystolicTile("os", 8, 12, 4, accumulate=True),
                "is": SystolicTile("is", 4, 8, 5, accumulate=True)}[df]
        b = ACC_BITS[acc]
        ops = {"input": np.full((tile.m, tile.k), lo), "weight": np.full((tile.k, tile.n), lo),
               "psum": np.full((tile.m, tile.n), (1 << (b - 1)) - 1, dtype=np.int64)}
        want = expected_values(ops["input"], ops["weight"], ops["psum"], b)
        assert model.tile_values(tile, ops).tolist() == want.tolist()
        assert model.detailed_tile(tile, ops)[0].tolist() == want.tolist()


@pytest.mark.parametrize("df", ["ws", "os", "is"])
@pytest.mark.parametrize("preload,P", [("serial", 0), ("double_buffered", 1), ("double_buffered", 0)])
def test_gemm_sequence_matches_numpy_and_fold_cycles(df, preload, P):
    # A whole GEMM as back-to-back tiles on one array (hidden preloads really overlap
    # the previous tile): assembled output == numpy, summed cycles == gemm_fold_cycles.
    rng = np.random.default_rng(11)
    p = SystolicParams(rows=4, cols=3, preload=preload, mult_pipeline_stages=P)
    M, K, N = 7, 10, 8
    A = rng.integers(-128, 128, (M, K))
    W = rng.integers(-128, 128, (K, N))
    items, slices = [], []
    for tile, (sm, sk, sn) in gemm_tiles(M, K, N, p, df):
        ops = {"input": A[sm, sk], "weight": W[sk, sn]}
        if tile.accumulate:
            ops["psum"] = np.zeros((tile.m, tile.n), dtype=np.int64)
        items.append((tile, ops))
        slices.append((sm, sn))
    results = detailed_sequence(p, items)
    out = np.zeros((M, N), dtype=np.int64)
    for (vals, _), (sm, sn) in zip(results, slices):
        out[sm, sn] += vals
    assert out.tolist() == (A @ W).tolist()
    assert sum(c for _, c in results) == gemm_fold_cycles(M, K, N, p, df)
    model = SystolicModel(arch_from_params(p))
    assert [c for _, c in results] == [model.tile_cycles(t) for t, _ in items]


def test_hidden_preload_across_dataflows():
    # Shadow bank loaded behind a WS tile and consumed by an IS tile, then behind that
    # IS tile for a WS tile; an OS tile in between forces a serial preload.
    rng = np.random.default_rng(3)
    p = SystolicParams(rows=4, cols=4, dataflow="auto", preload="double_buffered")
    tiles = [SystolicTile("ws", 6, 4, 4), SystolicTile("is", 3, 4, 5, preload_hidden=True),
             SystolicTile("ws", 2, 3, 4, preload_hidden=True), SystolicTile("os", 4, 3, 2),
             SystolicTile("is", 4, 2, 1), SystolicTile("ws", 1, 4, 3, preload_hidden=True)]
    items = [(t, random_operands(rng, t, p)) for t in tiles]
    arr = SystolicArrayDetailed(p)
    results = arr.run_sequence(items)
    model = SystolicModel(arch_from_params(p))
    for (t, ops), (vals, cyc) in zip(items, results):
        assert vals.tolist() == (ops["input"] @ ops["weight"]).tolist()
        assert cyc == model.tile_cycles(t)
    assert arr.cycle == sum(model.tile_cycles(t) for t in tiles)


def test_hidden_preload_after_os_is_rejected():
    p = SystolicParams(rows=2, cols=2, dataflow="auto", preload="double_buffered")
    rng = np.random.default_rng(4)
    tiles = [SystolicTile("os", 2, 3, 2), SystolicTile("ws", 2, 2, 2, preload_hidden=True)]
    with pytest.raises(ValueError, match=r"^preload_hidden: expected False for a tile following an os tile \(tile 1\)$"):
        detailed_sequence(p, [(t, random_operands(rng, t, p)) for t in tiles])


def test_gemm_fold_cycles_vectorised_equals_tile_sum():
    rng = np.random.default_rng(5)
    Ms, Ks, Ns = (rng.integers(1, 300, 40) for _ in range(3))
    for pre in ("serial", "double_buffered"):
        p = SystolicParams(rows=16, cols=8, preload=pre, mult_pipeline_stages=1)
        model = SystolicModel(arch_from_params(p))
        for df in ("ws", "os", "is"):
            vec = gemm_fold_cycles(Ms, Ks, Ns, p, df)
            loop = [sum(model.tile_cycles(t) for t, _ in gemm_tiles(int(m), int(k), int(n), p, df))
                    for m, k, n in zip(Ms, Ks, Ns)]
            assert vec.tolist() == loop


# ---------------------------------------------------------------- actions, registry, errors
def test_tile_actions_small_ws():
    p = SystolicParams(rows=4, cols=4, acc_precision="int32")
    acts = SystolicModel(arch_from_params(p)).tile_actions(SystolicTile("ws", 5, 3, 2, accumulate=True))
    assert acts["mac.int8"] == 30
    # 2 register writes per MAC + weight rows 0,1,2 written 1,2,3 times in 2 columns
    assert acts["pe_reg_access"] == 60 + 2 * (1 + 2 + 3)
    assert acts["sram_read_bytes.input"] == 15
    assert acts["sram_read_bytes.weight"] == 6
    assert acts["sram_write_bytes.output"] == 40
    assert acts["sram_read_bytes.output"] == 40


def test_template_registry_and_arch_spec():
    from archsim.spec.model import ArchSpec, DramSpec, TechSpec, VectorUnitSpec

    tpl = get_template("systolic")
    params = tpl.params_cls(rows=16, cols=8)
    arch = ArchSpec(name="t", template="systolic", params=params, clock_mhz=1000.0, buffers={},
                    dram=DramSpec(bytes_per_cycle=32), vector_unit=VectorUnitSpec(),
                    tech=TechSpec(name="x", node_nm=45, energy_pj={}, sram_points=()))
    model = tpl.model_cls(arch)
    assert model.peak_macs_per_cycle() == 128
    assert model.units["array"] == "compute" and model.units["vector"] == "vector"
    assert model.tile_cycles(SystolicTile("ws", 10, 16, 8)) == 2 * 16 + 8 + 10 - 2


@pytest.mark.parametrize("kwargs,message", [
    ({"rows": 0}, "rows: expected a positive integer, got 0"),
    ({"dataflow": "rs"}, "dataflow: expected one of ws, os, is, auto, got 'rs'"),
    ({"input_precision": "fp8"}, "input_precision: expected one of int8, int16, got 'fp8'"),
    ({"input_precision": "int16", "acc_precision": "int16"},
     "acc_precision: expected at least 24 bits for int16 x int8 products, got 'int16'"),
    ({"preload": "double"}, "preload: expected one of serial, double_buffered, got 'double'"),
    ({"mult_pipeline_stages": 2}, "mult_pipeline_stages: expected 0 or 1, got 2"),
])
def test_params_validate_messages(kwargs, message):
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        SystolicParams(**kwargs).validate()


def test_tile_errors():
    model = SystolicModel(arch_from_params(SystolicParams(rows=4, cols=2)))
    with pytest.raises(ValueError, match=r"^n: expected at most 2 for a ws tile on a 4x2 array, got 3$"):
        model.tile_cycles(SystolicTile("ws", 5, 4, 3))
    with pytest.raises(ValueError, match=r"^preload_hidden: expected False for an os tile or with preload=serial"):
        model.tile_cycles(SystolicTile("ws", 5, 4, 2, preload_hidden=True))
    with pytest.raises(ValueError, match=r"^operands.weight: expected shape \(4, 2\), got \(2, 4\)$"):
        model.tile_values(SystolicTile("ws", 5, 4, 2), {"input": np.zeros((5, 4), int), "weight": np.zeros((2, 4), int)})
    with pytest.raises(ValueError, match=r"^operands.input: expected values in \[-128, 127\] \(int8\)$"):
        model.tile_values(SystolicTile("ws", 1, 1, 1), {"input": np.array([[200]]), "weight": np.array([[1]])})


def test_line_trace_is_readable():
    lines = []
    p = SystolicParams(rows=2, cols=2)
    detailed_tile(p, SystolicTile("ws", 2, 2, 2), {"input": np.eye(2, dtype=int), "weight": np.eye(2, dtype=int)},
                  trace=lines.append)
    assert len(lines) == 2 * 2 + 2 + 2 - 2
    assert lines[0].startswith("ws  t=    0 PRE")
    assert "out: [1,1]=1" in lines[-1]
