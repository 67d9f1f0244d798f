"""Benchmark: ONNX import time and memory on large transformer graphs (issue 21).

Builds two synthetic graphs with onnx.helper (no torch), shaped like what the
exporters produce, and times ``workloads.load`` on each in a fresh process:

- ``bert-base``: a BERT-base-sized export (12 layers, hidden 768, 12 heads,
  FFN 3072, vocab 30522, 110 M params) at batch 1, seq 512, in the legacy
  exporter's style: symbolic ``batch`` / ``sequence`` inputs, ``Shape ->
  Gather -> Unsqueeze -> Concat -> Reshape`` head splits, an attention mask,
  Erf-GELU. Weights as external data (torch.onnx's dynamo default); with
  ``--embedded`` also once with the weights inside the .onnx.
- ``llama3-8b``: a Llama-3-8B-structured graph (32 layers, hidden 4096, 32
  heads, 8 KV heads, FFN 14336, vocab 128256, RMSNorm, RoPE, repeat_kv, SwiGLU)
  at batch 1, seq 2048, weights as external data that is never loaded (the
  data file is a sparse placeholder).

Targets: bert-base <= 2 s and <= 300 MB; llama3-8b <= 5 s. Prints, per graph,
the import time, the peak RSS of the importing process and its growth over
the same process before the import (Python + onnx + numpy + archsim loaded),
the MACs and the MACs the config's formula gives.

    python3 bench/bench_onnx_import.py [--embedded] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from math import prod

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = {"bert-base": (2.0, 300), "llama3-8b": (5.0, None)}


# ----------------------------------------------------------------------------- graph builders
class _Builder:
    """Nodes and initializers of one graph; initializers are external (offsets in one data file)
    or embedded."""

    def __init__(self, data_file: str | None, embedded: bool):
        self.nodes, self.inits, self.offset = [], [], 0
        self.data_file, self.embedded = data_file, embedded
        self.params = 0
        self.k = 0

    def name(self, base: str) -> str:
        self.k += 1
        return f"{base}_{self.k}"

    def node(self, op, inputs, n_out=1, **attrs):
        from onnx import helper

        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=self.name(op), **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, values, dtype=np.int64) -> str:
        from onnx import numpy_helper

        name = self.name("const")
        self.inits.append(numpy_helper.from_array(np.asarray(values, dtype), name))
        return name

    def weight(self, shape) -> str:
        from onnx import TensorProto, numpy_helper

        name = self.name("w")
        self.params += prod(shape)
        if self.embedded:
            rng = np.random.default_rng(self.k)
            self.inits.append(numpy_helper.from_array(rng.standard_normal(shape, dtype=np.float32) * 0.02, name))
            return name
        t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(shape))
        t.data_location = TensorProto.EXTERNAL
        length = 4 * prod(shape)
        for key, value in (("location", os.path.basename(self.data_file)), ("offset", str(self.offset)),
                           ("length", str(length))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        self.offset += length
        self.inits.append(t)
        return name

    def linear(self, x, k, n, bias=True):
        y = self.node("MatMul", [x, self.weight((k, n))])
        return self.node("Add", [self.weight((n,)), y]) if bias else y

    def save(self, path, inputs, outputs, opset=17):
        import onnx
        from onnx import helper

        graph = helper.make_graph(self.nodes, os.path.basename(path), inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        if not self.embedded:  # a sparse placeholder: the importer never reads it
            with open(self.data_file, "wb") as f:
                f.truncate(self.offset)
        del onnx


def _dims_of(b: _Builder, x: str, idx: list[int]) -> list[str]:
    """The legacy exporter's ``Shape -> Gather -> Unsqueeze`` of dims ``idx`` of ``x``."""
    shape = b.node("Shape", [x])
    out = []
    for i in idx:
        g = b.node("Gather", [shape, b.const(i)], axis=0)
        out.append(b.node("Unsqueeze", [g, b.const([0])]))
    return out


def build_bert(path: str, embedded: bool, layers=12, d=768, heads=12, ffn=3072, vocab=30522, max_pos=512):
    from onnx import TensorProto, helper

    b = _Builder(path + ".data", embedded)
    hd = d // heads
    ids = "input_ids"
    emb = b.node("Gather", [b.weight((vocab, d)), ids], axis=0)
    pos = b.node("Slice", [b.weight((max_pos, d)), b.const([0]), _dims_of(b, ids, [1])[0], b.const([0])])
    x = b.node("Add", [emb, pos])
    x = b.node("LayerNormalization", [x, b.weight((d,)), b.weight((d,))], axis=-1, epsilon=1e-12)
    m = b.node("Unsqueeze", ["attention_mask", b.const([1, 2])])
    m = b.node("Cast", [m], to=TensorProto.FLOAT)
    m = b.node("Sub", [b.const(1.0, np.float32), m])
    mask = b.node("Mul", [m, b.const(-10000.0, np.float32)])
    for _ in range(layers):
        bs, sq = _dims_of(b, x, [0, 1])
        heads_shape = b.node("Concat", [bs, sq, b.const([heads]), b.const([hd])], axis=0)
        q, k, v = (b.node("Reshape", [b.linear(x, d, d), heads_shape]) for _ in range(3))
        q = b.node("Transpose", [q], perm=[0, 2, 1, 3])
        k = b.node("Transpose", [k], perm=[0, 2, 3, 1])
        v = b.node("Transpose", [v], perm=[0, 2, 1, 3])
        s = b.node("Div", [b.node("MatMul", [q, k]), b.const(8.0, np.float32)])
        p = b.node("Softmax", [b.node("Add", [s, mask])], axis=-1)
        ctx = b.node("Transpose", [b.node("MatMul", [p, v])], perm=[0, 2, 1, 3])
        ctx = b.node("Reshape", [ctx, b.node("Concat", [bs, sq, b.const([d])], axis=0)])
        x = b.node("LayerNormalization", [b.node("Add", [b.linear(ctx, d, d), x]), b.weight((d,)), b.weight((d,))],
                   axis=-1, epsilon=1e-12)
        h = b.linear(x, d, ffn)
        erf = b.node("Erf", [b.node("Div", [h, b.const(1.4142135, np.float32)])])
        h = b.node("Mul", [b.node("Mul", [h, b.node("Add", [erf, b.const(1.0, np.float32)])]),
                           b.const(0.5, np.float32)])
        x = b.node("LayerNormalization", [b.node("Add", [b.linear(h, ffn, d), x]), b.weight((d,)), b.weight((d,))],
                   axis=-1, epsilon=1e-12)
    cls = b.node("Gather", [x, b.const(0)], axis=1)
    b.node("Tanh", [b.node("Gemm", [cls, b.weight((d, d)), b.weight((d,))])])
    b.nodes[-1].output[0] = "pooled"
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])]
    b.save(path, inputs, [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, None)])
    return b.params


def bert_macs(seq=512, layers=12, d=768, ffn=3072) -> int:
    """Q, K, V, O projections, QK^T and AV, the two FFN GEMMs, the pooler (one token)."""
    return layers * (4 * seq * d * d + 2 * seq * seq * d + 2 * seq * d * ffn) + d * d


def build_llama(path: str, layers=32, d=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256):
    from onnx import TensorProto, helper

    b = _Builder(path + ".data", embedded=False)
    hd = d // heads
    rep = heads // kv_heads
    x = b.node("Gather", [b.weight((vocab, d)), "input_ids"], axis=0)
    cos, sin = "cos", "sin"  # [batch, seq, head_dim] model inputs, as torch's dynamo export takes them

    def rmsnorm(t):
        var = b.node("ReduceMean", [b.node("Pow", [t, b.const(2.0, np.float32)]), b.const([-1])], keepdims=1)
        inv = b.node("Reciprocal", [b.node("Sqrt", [b.node("Add", [var, b.const(1e-5, np.float32)])])])
        return b.node("Mul", [b.weight((d,)), b.node("Mul", [t, inv])])

    def rope(t):
        half = hd // 2
        x1 = b.node("Slice", [t, b.const([0]), b.const([half]), b.const([-1])])
        x2 = b.node("Slice", [t, b.const([half]), b.const([hd]), b.const([-1])])
        rot = b.node("Concat", [b.node("Neg", [x2]), x1], axis=-1)
        c = b.node("Unsqueeze", [cos, b.const([1])])
        s_ = b.node("Unsqueeze", [sin, b.const([1])])
        return b.node("Add", [b.node("Mul", [t, c]), b.node("Mul", [rot, s_])])

    for _ in range(layers):
        bs, sq = _dims_of(b, x, [0, 1])
        h = rmsnorm(x)
        q = b.node("Reshape", [b.linear(h, d, d, bias=False), b.node("Concat", [bs, sq, b.const([heads, hd])], axis=0)])
        kv_shape = b.node("Concat", [bs, sq, b.const([kv_heads, hd])], axis=0)
        k = b.node("Reshape", [b.linear(h, d, kv_heads * hd, bias=False), kv_shape])
        v = b.node("Reshape", [b.linear(h, d, kv_heads * hd, bias=False), kv_shape])
        q = rope(b.node("Transpose", [q], perm=[0, 2, 1, 3]))
        k = rope(b.node("Transpose", [k], perm=[0, 2, 1, 3]))
        v = b.node("Transpose", [v], perm=[0, 2, 1, 3])
        rep_shape = b.node("Concat", [bs, b.const([kv_heads, rep]), sq, b.const([hd])], axis=0)
        full_shape = b.node("Concat", [bs, b.const([heads]), sq, b.const([hd])], axis=0)
        k, v = (b.node("Reshape", [b.node("Expand", [b.node("Unsqueeze", [t, b.const([2])]), rep_shape]), full_shape])
                for t in (k, v))
        s = b.node("Mul", [b.node("MatMul", [q, b.node("Transpose", [k], perm=[0, 1, 3, 2])]),
                           b.const(hd ** -0.5, np.float32)])
        p = b.node("Softmax", [b.node("Add", [s, "causal_mask"])], axis=-1)
        ctx = b.node("Transpose", [b.node("MatMul", [p, v])], perm=[0, 2, 1, 3])
        ctx = b.node("Reshape", [ctx, b.node("Concat", [bs, sq, b.const([d])], axis=0)])
        x = b.node("Add", [x, b.linear(ctx, d, d, bias=False)])
        h = rmsnorm(x)
        gate = b.linear(h, d, ffn, bias=False)
        up = b.linear(h, d, ffn, bias=False)
        act = b.node("Mul", [b.node("Mul", [gate, b.node("Sigmoid", [gate])]), up])
        x = b.node("Add", [x, b.linear(act, ffn, d, bias=False)])
    logits = b.linear(rmsnorm(x), d, vocab, bias=False)
    b.nodes[-1].output[0] = "logits"
    del logits
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
              helper.make_tensor_value_info("cos", TensorProto.FLOAT, ["batch", "sequence", hd]),
              helper.make_tensor_value_info("sin", TensorProto.FLOAT, ["batch", "sequence", hd]),
              helper.make_tensor_value_info("causal_mask", TensorProto.FLOAT, ["batch", 1, "sequence", "sequence"])]
    b.save(path, inputs, [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)])
    return b.params


def llama_macs(seq=2048, layers=32, d=4096, kv=1024, ffn=14336, vocab=128256) -> int:
    """Q and O (d x d), K and V (d x kv), QK^T and AV at full seq x seq, gate/up/down, LM head."""
    return layers * (2 * seq * d * d + 2 * seq * d * kv + 2 * seq * seq * d + 3 * seq * d * ffn) + seq * d * vocab


# ----------------------------------------------------------------------------- measuring
_CHILD = r"""
import json, sys, time
sys.path.insert(0, {repo!r})
import onnx, numpy, workloads, workloads.onnx_import, workloads.onnx_shapes, workloads.onnx_ops  # noqa


def hwm_kb():  # this process's peak RSS (VmHWM: reset by exec, unlike ru_maxrss, which a fork inherits)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])


base = hwm_kb()
t = time.perf_counter()
g = workloads.load({path!r}, batch=1, seq_len={seq})
dt = time.perf_counter() - t
peak = hwm_kb()
attn = [op for op in g.ops() if op.kind == "attention"]
print(json.dumps(dict(seconds=dt, peak_mb=peak / 1024, base_mb=base / 1024, macs=g.total_macs(),
                      ops=len(g), nodes=g.import_report["nodes"], attention=len(attn),
                      kv_heads=attn[0].kv_heads if attn else 0, steps=g.import_report["shape_resolution"])))
"""


def measure(path: str, seq: int) -> dict:
    env = {**os.environ, "PYTHONPATH": REPO}
    out = subprocess.run([sys.executable, "-c", _CHILD.format(repo=REPO, path=path, seq=seq)], env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"import of {path} failed: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedded", action="store_true", help="also time BERT-base with its weights inside the .onnx")
    ap.add_argument("--keep", metavar="DIR", help="write the graphs here and keep them")
    args = ap.parse_args(argv)
    folder = args.keep or tempfile.mkdtemp(prefix="bench_onnx_import_")
    os.makedirs(folder, exist_ok=True)
    cases = []
    t = time.perf_counter()
    params = build_bert(os.path.join(folder, "bert_base.onnx"), embedded=False)
    cases.append(("bert-base", "external data", os.path.join(folder, "bert_base.onnx"), 512, params, bert_macs()))
    if args.embedded:
        build_bert(os.path.join(folder, "bert_base_embedded.onnx"), embedded=True)
        cases.append(("bert-base", "embedded", os.path.join(folder, "bert_base_embedded.onnx"), 512, params,
                      bert_macs()))
    params = build_llama(os.path.join(folder, "llama3_8b.onnx"))
    cases.append(("llama3-8b", "external, not loaded", os.path.join(folder, "llama3_8b.onnx"), 2048, params,
                  llama_macs()))
    print(f"built {len(cases)} graphs in {time.perf_counter() - t:.1f} s ({folder})")
    print(f"{'graph':10s} {'weights':22s} {'params':>8s} {'nodes':>6s} {'import s':>9s} {'target':>7s} "
          f"{'peak MB':>8s} {'growth MB':>9s} {'MACs':>18s} {'formula':>18s} attention")
    for name, weights, path, seq, params, formula in cases:
        r = measure(path, seq)
        secs, mb = TARGETS[name]
        growth = r["peak_mb"] - r["base_mb"]
        ok = r["seconds"] <= secs and (mb is None or growth <= mb)
        print(f"{name:10s} {weights:22s} {params / 1e6:7.1f}M {r['nodes']:6d} {r['seconds']:9.2f} {secs:6.1f}s "
              f"{r['peak_mb']:8.0f} {growth:9.0f} {r['macs']:18,} {formula:18,} "
              f"{r['attention']} (kv_heads {r['kv_heads']}) {'ok' if ok else 'OVER'}")
        if r["macs"] != formula:
            print(f"  MACs differ from the formula by {r['macs'] - formula:+,}")
    print("growth: peak RSS of the importing process minus its peak before the import (Python, onnx, numpy and "
          "archsim already loaded); target bert-base <= 300 MB")
    if not args.keep:
        for f in os.listdir(folder):
            os.remove(os.path.join(folder, f))
        os.rmdir(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
