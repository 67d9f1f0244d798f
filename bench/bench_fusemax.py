"""FuseMax table: the four attention-only workloads at seq 1K-64K, batch 64, on
fusemax-cloud with the three mappings, next to FuseMax's published headline;
BERT-base end to end; the fast model's cost at 256K tokens; and a plot of
2D-array utilization and attention latency vs sequence length.

    python bench/bench_fusemax.py [--seqs 1024,4096,16384,65536] [--out sim_out/bench_fusemax]

"2D util" is the attention MACs (QK^T + AV) over (256 x 256 x cycles): the
exps FuseMax also runs on the 2D array are not counted as useful work.
"1D busy" is the 1D array's busy fraction. FuseMax (Nayak et al., MICRO 2024)
reports near-full 2D utilization at long sequences, ~6.7x speedup over FLAT on
attention and ~5.3x end to end (its geomeans; its own cost model, not ours).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import mappers
import workloads
from archsim.engine import run_program
from archsim.spec.load import load_arch

MODELS = ("attn_bert", "attn_trxl", "attn_t5", "attn_xlm")
MAPPINGS = ("fusemax", "flat", "unfused")
PAPER = {"attention speedup over FLAT": "6.7x", "end-to-end speedup over FLAT": "5.3x",
         "2D utilization at long sequences": "near 100%"}


def run(workload: str, mapping: str, batch: int, seq: int, **kw):
    arch = load_arch("fusemax-cloud", [f"attention_mapping={mapping}"])
    g = workloads.load(workload, batch=batch, seq=seq, weight_precision="bf16", act_precision="bf16", **kw)
    res = run_program(mappers.compile(g, arch), arch)
    return res


def _geomean(xs):
    import math

    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seqs", default="1024,4096,16384,65536")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--out", default="sim_out/bench_fusemax")
    args = ap.parse_args()
    seqs = [int(s) for s in args.seqs.split(",")]
    rows = []
    print(f"fusemax-cloud, batch {args.batch}, bf16; latency in ms; 2D util = attention MACs / (65536 x cycles)")
    print(f"{'model':<10} {'seq':>6} | " + " | ".join(f"{m:^24}" for m in MAPPINGS) + " | FM/FLAT FM/unf")
    print(f"{'':<10} {'':>6} | " + " | ".join(f"{'ms':>9} {'2D':>6} {'1D':>6}" for _ in MAPPINGS) + " |")
    t_all = time.time()
    for model in MODELS:
        for seq in seqs:
            r = {m: run(model, m, args.batch, seq) for m in MAPPINGS}
            cells = []
            for m in MAPPINGS:
                res = r[m]
                u = res.units
                one_d = u.get("array1d", {}).get("utilization", 0.0)
                cells.append(f"{res.latency_s * 1e3:9.2f} {res.utilization * 100:5.1f}% {one_d * 100:5.1f}%")
                rows.append((model, seq, m, res.latency_s, res.utilization, one_d))
            s_flat = r["flat"].total_cycles / r["fusemax"].total_cycles
            s_unf = r["unfused"].total_cycles / r["fusemax"].total_cycles
            print(f"{model:<10} {seq:>6} | " + " | ".join(cells) + f" | {s_flat:6.2f}x {s_unf:6.2f}x", flush=True)
    by = {(m, s, k): (lat, u) for m, s, k, lat, u, _ in rows}
    sp_flat = [by[(m, s, "flat")][0] / by[(m, s, "fusemax")][0] for m in MODELS for s in seqs]
    sp_unf = [by[(m, s, "unfused")][0] / by[(m, s, "fusemax")][0] for m in MODELS for s in seqs]
    long_util = [by[(m, max(seqs), "fusemax")][1] for m in MODELS]
    print(f"\ngeomean FuseMax/FLAT on attention: {_geomean(sp_flat):.2f}x   (paper: {PAPER['attention speedup over FLAT']})")
    print(f"geomean FuseMax/unfused on attention: {_geomean(sp_unf):.2f}x")
    print(f"FuseMax 2D util at seq {max(seqs)}: " + ", ".join(f"{m} {u * 100:.1f}%" for m, u in zip(MODELS, long_util))
          + f"   (paper: {PAPER['2D utilization at long sequences']})")
    print(f"(table took {time.time() - t_all:.1f} s)")

    print("\nBERT-base end to end, fusemax-cloud, batch 64, seq 512 (its maximum positions), bf16:")
    e2e = {m: run("bert_base", m, args.batch, 512) for m in MAPPINGS}
    for m in MAPPINGS:
        res = e2e[m]
        att = sum(l.cycles for l in res.layers if l.op == "attention")
        print(f"  {m:<8} {res.latency_s * 1e3:8.2f} ms  util {res.utilization * 100:5.1f}%  "
              f"attention {att / res.total_cycles * 100:5.1f}% of cycles  "
              f"speedup of fusemax {res.total_cycles / e2e['fusemax'].total_cycles:5.2f}x")
    print(f"  (paper: {PAPER['end-to-end speedup over FLAT']} end to end over FLAT, at its sequence lengths)")
    print("\nt5_base encoder end to end (BERT-base shape: d 768, 12 heads, FFN 3072, 12 layers; no position limit), "
          f"batch {args.batch}:")
    for seq in (4096, 16384, 65536):
        e2e = {m: run("t5_base", m, args.batch, seq) for m in MAPPINGS}
        fm = e2e["fusemax"].total_cycles
        cells = "  ".join(f"{m} {e2e[m].latency_s * 1e3:10.1f} ms ({e2e[m].total_cycles / fm:5.2f}x)" for m in MAPPINGS)
        print(f"  seq {seq:>6}: {cells}", flush=True)

    t0 = time.time()
    long = run("attn_bert", "fusemax", 1, 262144)
    print(f"\nfast model, attn_bert fusemax batch 1 seq 256K: {long.latency_s * 1e3:.1f} ms simulated, "
          f"util {long.utilization * 100:.1f}%, {time.time() - t0:.2f} s wall (mapping + engine)")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for m in MAPPINGS:
        axes[0].plot(seqs, [by[("attn_bert", s, m)][1] * 100 for s in seqs], marker="o", label=m)
        axes[1].plot(seqs, [by[("attn_bert", s, m)][0] * 1e3 for s in seqs], marker="o", label=m)
    axes[0].set(xscale="log", xlabel="sequence length", ylabel="2D-array MAC utilization (%)",
                title="attn_bert, batch 64, fusemax-cloud")
    axes[1].set(xscale="log", yscale="log", xlabel="sequence length", ylabel="attention latency (ms)")
    for ax in axes:
        ax.legend()
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    path = out / "fusemax_util_latency.png"
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=120)
    tmp.replace(path)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
