"""simd template: format -> cycles, energy, SQNR on ResNet-50 and Llama-3-8B decode (one table).

Cycles and energy: the zoo's ResNet-50 (224x224, batch 1) and Llama-3-8B decode
(batch 1, KV length 1023) simulated on a simd preset at each precision
(``archsim run --weights W --activations A --set group_size=G``).

SQNR (values carried end to end, :mod:`archsim.accuracy`; fp32
reference = onnxruntime on an ONNX export built with the onnx helper API, random
weights, no downloads):
- ResNet-50-shaped CNN (bottleneck blocks 3-4-6-3, width 64, 1000 classes) at
  ``--image`` px, a batch of ``--batch`` random images: output SQNR and top-1 agreement;
- one Llama-style decoder block for decode at ``--llm-width`` (default 1024 = 1/4 of
  Llama-3-8B's 4096; heads and FFN scaled alike), KV length 511: output SQNR.

Run: ``python bench/bench_simd_formats.py [--arch simd-1024] [--image 64] [--batch 8]``;
``--cycles-only --compare-pipeline 4`` prints only the cycle columns, at the preset's
``pipeline_cycles`` and at the one given (the cost of a deeper PE pipeline).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from archsim.simulation import simulate
from archsim.accuracy.executor import Precision, onnxruntime_outputs, run_network
from archsim.templates.simd.onnx_nets import decoder_block_onnx, resnet_onnx

#: (label, weights, activations, group size, dequant)
ROWS = [
    ("int8", "int8", "int8", 0, False),
    ("int4 g128 (w4a8, MixPE order)", "int4", "int8", 128, False),
    ("int4 g128 (w4a8, dequant->fp16 baseline)", "int4", "int8", 128, True),
    ("int4 g128 (w4a4: 4-bit lanes)", "int4", "int4", 128, False),
    ("fp8_e4m3", "fp8_e4m3", "fp8_e4m3", 0, False),
    ("fp4_e2m1", "fp4_e2m1", "fp4_e2m1", 0, False),
    ("posit8_0", "posit8_0", "posit8_0", 0, False),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="simd-1024")
    ap.add_argument("--image", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--llm-width", type=int, default=1024)
    ap.add_argument("--cycles-only", action="store_true", help="only the cycle columns (no SQNR, no energy)")
    ap.add_argument("--compare-pipeline", type=int, metavar="N",
                    help="with --cycles-only: also the cycles at pipeline_cycles=N, and the ratio")
    args = ap.parse_args()
    if args.cycles_only:
        cycles_table(args)
        return

    rng = np.random.default_rng(0)
    t0 = time.time()
    cnn = resnet_onnx(image_size=args.image, batch=args.batch, seed=0)
    cnn_feeds = {"image": rng.standard_normal((args.batch, 3, args.image, args.image))}
    cnn_ref = onnxruntime_outputs(cnn, cnn_feeds)
    d = args.llm_width
    heads, hd, kv = d // 128, 128, 511
    block = decoder_block_onnx(d_model=d, heads=heads, ffn=int(d * 3.5), kv_len=kv, seed=0)
    blk_feeds = {"x": rng.standard_normal((1, d)), "k_cache": rng.standard_normal((heads, kv, hd)),
                 "v_cache": rng.standard_normal((heads, kv, hd))}
    blk_ref = onnxruntime_outputs(block, blk_feeds)

    print(f"arch {args.arch}; SQNR vs onnxruntime fp32: ResNet-50-shaped CNN at {args.image}px x {args.batch} "
          f"random images, Llama-style decode block at d={d} (Llama-3-8B: 4096), KV {kv}")
    print()
    print("| format | ResNet-50 cycles | ResNet-50 energy (uJ) | Llama-3-8B decode cycles | decode energy (uJ) "
          "| CNN output SQNR (dB) | CNN top-1 agreement | block output SQNR (dB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, w, a, g, dq in ROWS:
        sets = {"group_size": g, "dequant": dq}
        r50 = simulate("resnet50", args.arch, weights=w, activations=a, overrides=sets)
        llm = simulate("llama3_8b", args.arch, weights=w, activations=a, overrides=sets, phase="decode",
                       kv_len=1023)
        prec = Precision(w, a, g, dequant_format="fp16" if dq else "")
        acc_cnn = run_network(cnn, cnn_feeds, prec, reference=cnn_ref, classifier=True)
        acc_blk = run_network(block, blk_feeds, prec, reference=blk_ref)
        print(f"| {label} | {r50.total_cycles:,} | {r50.energy_pj / 1e6:,.1f} | {llm.total_cycles:,} | "
              f"{llm.energy_pj / 1e6:,.1f} | {acc_cnn.output_sqnr_db:.1f} | {acc_cnn.top1_agreement:.2f} | "
              f"{acc_blk.output_sqnr_db:.1f} |")
    print()
    print(f"total {time.time() - t0:.0f} s")


def _cycles(arch: str, w: str, a: str, sets: dict) -> tuple[int, int]:
    r50 = simulate("resnet50", arch, weights=w, activations=a, overrides=sets, trace_layers=0)
    llm = simulate("llama3_8b", arch, weights=w, activations=a, overrides=sets, phase="decode", kv_len=1023,
                   trace_layers=0)
    return r50.total_cycles, llm.total_cycles


def cycles_table(args) -> None:
    """ResNet-50 and Llama-3-8B decode cycles per format (and at ``--compare-pipeline``)."""
    from archsim.spec import load_arch

    t0 = time.time()
    depth = load_arch(args.arch).params.pipeline_cycles
    other = args.compare_pipeline
    head = f"| format | ResNet-50 cycles (pipeline {depth}) | Llama-3-8B decode cycles (pipeline {depth}) |"
    if other is not None:
        head += f" ResNet-50 (pipeline {other}) | decode (pipeline {other}) | ResNet-50 ratio | decode ratio |"
    print(f"arch {args.arch}")
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for label, w, a, g, dq in ROWS:
        sets = {"group_size": g, "dequant": dq}
        r50, llm = _cycles(args.arch, w, a, sets)
        row = f"| {label} | {r50:,} | {llm:,} |"
        if other is not None:
            r50o, llmo = _cycles(args.arch, w, a, {**sets, "pipeline_cycles": other})
            row += f" {r50o:,} | {llmo:,} | {r50 / r50o:.4f} | {llm / llmo:.4f} |"
        print(row, flush=True)
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
