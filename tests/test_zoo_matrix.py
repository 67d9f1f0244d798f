"""Every zoo workload on every shipped arch preset runs, or fails with a
deliberate, documented capacity error.

The preset list comes from the registry (``archsim.spec.load.preset_names``),
so presets added later are covered without editing this file. LLMs run both
phases; decode uses the zoo's default KV length (``seq_len`` cached tokens),
so ``--kv-len`` is optional.

Documented capacity errors (the only failures allowed):

- a PIM preset whose DRAM cannot hold the model's weights + KV cache
  (e.g. Llama-3-8B's 15 GiB of int8 weights on one 4 GiB HBM2 PIM stack):
  ``mappers.pim.check_graph``'s one-line MappingError. The test checks the
  figure against the graph's parameter count and the preset's capacity.

The default run covers every preset on a representative set of workloads
(a CNN, ViT-B/16 with its large position table, an encoder, an LLM decode
and an attention block), every workload on a cheap preset, and every workload
on one preset of each template (the presets taken in turn), so every mapper
sees every workload; the rest of the matrix (about 880 runs, a third of the
suite's time) carries the ``long`` mark: ``./setup test -m long -k zoo_matrix``
runs the whole matrix (``bench/bench_zoo_matrix.py`` times it).
"""
from __future__ import annotations

import re

import pytest

import archsim
from archsim.spec import load_arch
from mappers.options import make_options
from mappers.registry import get_mapper_module
import workloads
from archsim.errors import MappingError
from archsim.spec.load import preset_names
from workloads.zoo import builder_params

#: a MappingError naming this is a capacity error (mappers.pim.check_graph)
CAPACITY_RE = re.compile(r"^(\S+): weights \(([\d.]+) GiB\) \+ KV cache \(([\d.]+) GiB\) do not fit the "
                         r"([\d.]+) GiB of (\S+)'s PIM DRAM$")
#: workloads of the default run on every preset
REPRESENTATIVE = (("resnet18", None), ("vit-b16", None), ("bert-base", None), ("gpt2", "decode"),
                  ("attn-bert", None))
#: preset every workload runs on in the default run (a closed-form model: fast)
CHEAP_PRESET = "gpu-a100"


def _phases(workload: str) -> tuple:
    return ("prefill", "decode") if "phase" in builder_params(workload) else (None,)


def _cases() -> list[tuple[str, str, str | None]]:
    return [(arch, w, ph) for arch in preset_names() for w in workloads.zoo_names() for ph in _phases(w)]


def _default_cases() -> set:
    cases = {(arch, w, ph) for arch in preset_names() for w, ph in REPRESENTATIVE}
    cases |= {(CHEAP_PRESET, w, ph) for w in workloads.zoo_names() for ph in _phases(w)}
    return cases


def _per_template_cases() -> set:
    """Every workload (and phase) on one preset of each template, the template's presets in turn."""
    by_template: dict[str, list[str]] = {}
    for arch in preset_names():
        by_template.setdefault(archsim.load_arch(arch).template, []).append(arch)
    runs = [(w, ph) for w in workloads.zoo_names() for ph in _phases(w)]
    return {(presets[i % len(presets)], w, ph) for presets in by_template.values() for i, (w, ph) in enumerate(runs)}


def _params() -> list:
    default = _default_cases()
    sampled = _per_template_cases() - default
    out = []
    for case in _cases():
        marks = () if case in default else (pytest.mark.slow,) if case in sampled else (pytest.mark.slow, pytest.mark.long)
        out.append(pytest.param(*case, marks=marks, id=f"{case[0]}-{case[1]}" + (f"-{case[2]}" if case[2] else "")))
    return out


def _check_capacity_error(err: MappingError, arch_name: str, workload: str, phase: str | None) -> None:
    """``err`` must be the documented PIM capacity error, with true figures."""
    m = CAPACITY_RE.match(str(err))
    assert m, f"{arch_name} x {workload}: not a documented capacity error: {err}"
    arch = archsim.load_arch(arch_name)
    assert arch.template == "pim" and m.group(5) == arch_name
    graph = workloads.load(workload, **({"phase": phase} if phase else {}))
    # independent figures: parameter elements x the PIM's element bytes, vs its capacity
    weights_gib = graph.total_params() * arch.params.element_bytes / 2**30
    cap_gib = arch.params.capacity_bytes / 2**30
    assert float(m.group(2)) == pytest.approx(weights_gib, abs=0.01)
    assert float(m.group(4)) == pytest.approx(cap_gib, abs=0.01)
    assert float(m.group(2)) + float(m.group(3)) > cap_gib


#: prompt length of the matrix's prefill runs: the zoo default (128) costs up to 50 s per 7-8B model on
#: the tiny ECP5-sized LUT preset; 32 tokens exercise the same layers (bench/bench_zoo_matrix.py runs the defaults)
PREFILL_SEQ = 32


@pytest.mark.parametrize("arch_name, workload, phase", _params())
def test_zoo_workload_runs_on_preset(arch_name, workload, phase):
    options = {"phase": phase} if phase else {}
    if phase == "prefill":
        options["seq_len"] = PREFILL_SEQ
    try:
        result = archsim.simulate(workload, arch_name, **options)
    except MappingError as err:
        _check_capacity_error(err, arch_name, workload, phase)
        return
    assert result.total_cycles > 0
    graph = workloads.load(workload, **options)
    # the graph the arch's mapper maps: itself, or a rewrite its options ask for (SpAtten's cascade
    # pruning), which the report then names -- work is dropped only where the spec says so
    arch = load_arch(arch_name)
    mapped = get_mapper_module(arch.template).make_mapper(arch, make_options(arch, {})).prepare_graph(graph)
    assert sum(layer.macs for layer in result.layers) >= mapped.total_macs() > 0
    assert result.workload_name == mapped.name
    if mapped is not graph:
        assert mapped.name != graph.name and mapped.total_macs() <= graph.total_macs()


def test_decode_without_kv_len_caches_the_prompt():
    """Decode without kv_len: the cache holds seq_len tokens, so attention sees seq_len + 1."""
    g = workloads.load("gpt2", phase="decode", seq=64)
    attn = [op for op in g.ops() if op.kind == "attention"]
    assert attn and all(op.seq_q == 1 and op.seq_kv == 65 for op in attn)
    assert workloads.load("gpt2", phase="decode").total_macs() == \
        workloads.load("gpt2", phase="decode", kv_len=128).total_macs()


def test_matrix_covers_every_preset_and_workload():
    cases = _cases()
    assert {c[0] for c in cases} == set(preset_names())
    assert {c[1] for c in cases} == set(workloads.zoo_names())
    default = _default_cases()
    assert {c[0] for c in default} == set(preset_names())
    assert {c[1] for c in default} == set(workloads.zoo_names())
    # the default run maps every workload and phase with every template's mapper
    templates = {p: archsim.load_arch(p).template for p in preset_names()}
    runs = {(w, ph) for _, w, ph in cases}
    default_run = default | _per_template_cases()
    for template in set(templates.values()):
        assert {(w, ph) for a, w, ph in default_run if templates[a] == template} == runs, template


def test_column_groups_keep_fold_shapes_and_figures(monkeypatch):
    """A GEMM over the fold limit runs as identical column groups: the same folds
    (shapes x count), the same weight bytes and MACs, never fewer cycles (only
    the overlap between groups is lost). Hand figures: 256 x 1024 int8
    weights, 1 x 256 x 1024 MACs, 8 k-folds x 32 n-folds of 1 x 32 x 32."""
    from collections import Counter

    import mappers
    import mappers.systolic as ms
    from archsim.program import Compute
    from workloads.ops import MatMul

    graph = workloads.Graph("head")
    graph.add(MatMul(name="head", m=1, k=256, n=1024, weight_is_param=True))

    def run(limit):
        monkeypatch.setattr(ms, "FOLD_LIMIT", limit)
        mappers.clear_cache()
        arch = archsim.load_arch("systolic-32x32-ws")
        program = mappers.compile(graph, arch)
        return program.layers[0], archsim.simulate(graph, arch).layers[0]

    whole, r_whole = run(10**9)
    split, r_split = run(64)  # 8 k-folds x 32 n-folds = 256 > 64: 4 groups of 256 columns
    assert split.repeat == 4 and split.mapping["column_groups"] == 4 and whole.repeat == 1

    def folds(layer):
        c = Counter((x.tile.m, x.tile.k, x.tile.n) for x in layer.commands if isinstance(x, Compute))
        return Counter({k: v * layer.repeat for k, v in c.items()})

    assert folds(split) == folds(whole) == Counter({(1, 32, 32): 256})
    assert r_split.macs == r_whole.macs == 256 * 1024
    assert r_split.dram_bytes_by_operand["weight"] == r_whole.dram_bytes_by_operand["weight"] == 256 * 1024
    assert r_split.cycles >= r_whole.cycles


@pytest.mark.slow
def test_column_groups_cost_little_on_an_lm_head(monkeypatch):
    """Llama-3-8B's LM head at decode (1 x 4096 x 128256, 513k folds on 32x32):
    the 8 groups' lost overlap (a few thousand cycles each: DRAM latency,
    first tile loads, last store) stays under 0.2 % of the layer's cycles."""
    import mappers
    import mappers.systolic as ms
    from workloads.ops import MatMul

    graph = workloads.Graph("lm_head")
    graph.add(MatMul(name="lm_head", m=1, k=4096, n=128256, weight_is_param=True))
    results = []
    for limit in (10**9, ms.FOLD_LIMIT):
        monkeypatch.setattr(ms, "FOLD_LIMIT", limit)
        mappers.clear_cache()
        results.append(archsim.simulate(graph, "systolic-32x32-ws").layers[0])
    whole, split = results
    assert split.repeat > 1 and whole.repeat == 1
    assert split.dram_bytes_by_operand["weight"] == whole.dram_bytes_by_operand["weight"] == 4096 * 128256
    assert whole.cycles <= split.cycles <= whole.cycles * 1.002
