"""The import bench's synthetic graphs (bench/bench_onnx_import.py), built small: the importer's MACs
equal the config's closed-form count, attention is the zoo's op, and Llama's GQA keeps its KV heads.
(The bench itself measures the full-size graphs' import time and memory; no timing is asserted here.)"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import workloads

BENCH = Path(__file__).parent.parent / "bench" / "bench_onnx_import.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_onnx_import", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_small_bert_graph_matches_its_formula(tmp_path):
    bench = _bench()
    path = str(tmp_path / "bert.onnx")
    params = bench.build_bert(path, embedded=True, layers=2, d=32, heads=4, ffn=64, vocab=100, max_pos=16)
    g = workloads.load(path, batch=1, seq_len=16)
    assert g.total_macs() == bench.bert_macs(seq=16, layers=2, d=32, ffn=64)
    # by hand: per layer 4*16*32*32 + 2*16*16*32 + 2*16*32*64, plus the pooler 32*32
    assert g.total_macs() == 2 * (65536 + 16384 + 65536) + 1024
    attn = [op for op in g.ops() if op.kind == "attention"]
    assert [(a.heads, a.kv_heads, a.seq_q, a.head_dim) for a in attn] == [(4, 4, 16, 8)] * 2
    assert g.total_params() == params  # every weight counted once
    assert g.import_report["substituted"] == []


def test_small_llama_graph_keeps_gqa_and_reads_no_weights(tmp_path):
    bench = _bench()
    path = str(tmp_path / "llama.onnx")
    bench.build_llama(path, layers=2, d=64, heads=8, kv_heads=2, ffn=96, vocab=50)
    g = workloads.load(path, batch=1, seq_len=12)  # external data: a sparse placeholder, never read
    assert g.total_macs() == bench.llama_macs(seq=12, layers=2, d=64, kv=16, ffn=96, vocab=50)
    attn = [op for op in g.ops() if op.kind == "attention"]
    assert [(a.heads, a.kv_heads, a.seq_kv, a.head_dim) for a in attn] == [(8, 2, 12, 8)] * 2
