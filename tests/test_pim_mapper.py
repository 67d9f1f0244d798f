"""PIM mapper end to end: a hand-worked GEMV layer, GPT-2's weight bytes from its
published parameter count, the capacity error, and decode / prefill runs whose
reports carry tokens/s and energy per token."""
from __future__ import annotations

import json
import re

import pytest

from mappers.options import MapOptions

import mappers
import workloads
from archsim.engine import ArchContext, run_program, schedule_layer
from archsim.errors import MappingError
from archsim.spec.load import load_arch
from mappers.pim import check_graph, make_mapper, model_bytes
from workloads.ops import MatMul

HBM2 = load_arch("pim-hbm2")


def test_gemv_layer_by_hand():
    """768 x 768 bf16 GEMV + bias on pim-hbm2 (16 ch x 16 banks, 1 KiB rows = 32 columns of 32 B),
    open-row layout (a group's weight rows back to back across DRAM rows).

    Bursts: D(32) = max(34, 14 + 31*4 + 4) + 14 = 156, D(16) = max(34, 14 + 15*4 + 4) + 14 = 92.
    s=1: 3 rows/bank of 48 columns = 144 columns = 4 bursts of 32 + 1 of 16; bcast 48 x 2 = 96;
    last ACT 96 + 4*156 = 720, last MAC 794, PRE 798; 6 RDACC from 794 + 15 = 809 to 819, data at 833.
    s=2 (k split over 2 channels): 6 rows/bank of 24 columns = 144 columns, the same bursts;
    bcast 24 x 2 = 48; last ACT 672, last MAC 746; 12 RDACC from 761 to 783, data at 797; the ASIC
    adds 768 partials (768/32 = 24 cycles): 821 < 833, so s = 2. The bias add (24 cycles): 845.
    """
    lp = make_mapper(HBM2, MapOptions())(MatMul("fc", m=1, k=768, n=768, bias=True, act_precision="bf16",
                                        weight_precision="bf16"))
    assert lp.mapping["k_split"] == 2 and lp.mapping["rows_per_bank"] == 6
    tiles = [c for c in lp.commands if hasattr(c, "tile")]
    assert len(tiles) == 16 and {c.unit for c in tiles} == {f"pim.ch{i}" for i in range(16)}
    assert HBM2.model().tile_cycles(tiles[0].tile) == 797
    assert schedule_layer(lp.commands, ArchContext(HBM2)).cycles == 845
    # bytes between banks and ASIC: per channel 24 GBWR + 12 RDACC columns of 32 B
    assert lp.internal_bytes["io"] == 16 * 36 * 32


def test_gpt2_weight_bytes_match_published_parameter_count():
    g = workloads.load("gpt2", phase="decode", kv_len=1023)
    b = model_bytes(g, HBM2)
    assert b["weights"] == 124_439_808 * 2  # Radford et al. 2019 / Hugging Face: 124,439,808 params, bf16
    assert b["kv_cache"] == 12 * 2 * 1024 * 768 * 2


def test_capacity_error_is_one_line():
    g = workloads.load("llama2_7b", phase="decode", kv_len=1024)
    with pytest.raises(MappingError) as err:
        check_graph(g, HBM2)
    msg = str(err.value)
    assert re.match(r"^llama2-7b: weights \(12\.\d\d GiB\) \+ KV cache \(0\.50 GiB\) do not fit the 4\.00 GiB "
                    r"of pim-hbm2's PIM DRAM$", msg)
    with pytest.raises(MappingError, match=r"do not fit the 4\.00 GiB of pim-hbm2's PIM DRAM$"):
        run_program(mappers.compile(g, HBM2), HBM2)
    with pytest.raises(MappingError, match=r"do not fit the 12\.00 GiB"):
        check_graph(g, load_arch("pim-hbm2", overrides=["stacks=3"]))
    check_graph(g, load_arch("pim-hbm2", overrides=["stacks=4"]))  # four 4-high 8 Gb stacks: 16 GiB fits


def test_gpt2_decode_reads_every_weight_once():
    g = workloads.load("gpt2", phase="decode", kv_len=1023, weight_precision="bf16", act_precision="bf16")
    prog = mappers.compile(g, HBM2)
    model = HBM2.model()
    read_bits = 0
    for layer in prog.layers:
        if layer.op != "matmul":
            continue
        for c in layer.commands:
            if hasattr(c, "tile"):
                read_bits += model.tile_actions(c.tile)["pim.col_read_bit"] * layer.repeat
    matmul_weights = (124_439_808 - 1024 * 768) * 2  # all but the position table (the LM head reads wte)
    assert matmul_weights <= read_bits / 8 <= 1.35 * matmul_weights  # padding of rows and banks only
    r = run_program(prog, HBM2)
    ex = r.extras
    assert ex["tokens"] == 1
    seconds = sum(l.cycles for l in r.layers) / (HBM2.clock_mhz * 1e6)  # layers run back to back
    assert ex["tokens_per_s"] == pytest.approx(1 / seconds)
    # internal bandwidth bound: 256 banks x 32 B per 4 cycles = 2048 B/cycle
    assert r.total_cycles > matmul_weights / 2048
    assert ex["energy_per_token_pj"] > read_bits * HBM2.tech.energy("pim.col_read_bit")
    # per token: every layer's energy plus DRAM background power of every channel over the run
    background = HBM2.tech.energy("pim.background_cycle") * HBM2.params.channels * sum(l.cycles for l in r.layers)
    assert ex["energy_per_token_pj"] == pytest.approx(sum(l.energy_pj for l in r.layers) + background)
    assert ex["pim_io_bytes"] > 0


def test_prefill_counts_prompt_tokens():
    g = workloads.load("gpt2", phase="prefill", seq_len=16)
    r = run_program(mappers.compile(g, HBM2), HBM2)
    assert r.extras["tokens"] == 16


def test_cli_run_writes_pim_extras(tmp_path):
    from archsim.cli import main

    out = tmp_path / "run"
    assert main(["run", "--arch", "pim-hbm2", "--workload", "gpt2", "--phase", "decode", "--kv-len", "1023",
                 "--out", str(out), "--no-plots", "--trace-layers", "0"]) == 0
    report = json.loads((out / "report.json").read_text())
    seconds = sum(l["cycles"] for l in report["layers"]) / (report["arch"]["clock_mhz"] * 1e6)
    assert report["extras"]["tokens"] == 1  # batch 1, one new token
    assert report["extras"]["tokens_per_s"] == pytest.approx(1 / seconds)
    assert report["extras"]["energy_per_token_pj"] >= sum(l["energy_pj"] for l in report["layers"])
