"""PIM-GPT versus a batch-1 NVIDIA T4: archsim's pim-gpt-gddr6 and gpu-t4 beside the paper.

Published figures: Wu, Wang, Lu, "PIM-GPT: a hybrid process-in-memory accelerator for
autoregressive transformers", npj Unconventional Computing 1, 2024 (arXiv 2310.09385v2), abstract:
41-137x speedup and 123-383x energy efficiency over a T4 GPU on 8 GPT models up to 1.4 B
parameters (GPT2-small/medium/large/XL, GPT3-small/medium/large/XL). The per-model bars of the
paper's results figure were not reachable in the stored copies of the paper, so the claims pin
the published *range*: its lower and upper ends, and their ratio (the spread over the models).

The T4 is gpu-t4: a roofline at the sustained bandwidth (the roofline-only row) plus a host
dispatch cost per kernel overlapped with execution (the calibrated row), calibrated here against
a published T4 measurement (PrunaAI's Tesla T4 base-model results, Hugging Face transformers,
fp32 weights): SmolLM2-135M, host-bound, sets the cost; SmolLM2-1.7B, memory-bound, checks it.
Both sides run 16-bit formats (PIM bf16, T4 fp16: Turing has no bf16), one token decoded
against ``KV_LEN`` cached tokens (the paper's sequence setup is not reproduced: assumed).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from archsim.validate import Claim

GROUP = "pim_gpt"
PAPER = ("Wu, Wang, Lu, PIM-GPT, npj Unconventional Computing 2024 (arXiv 2310.09385v2), abstract: "
         "41-137x speedup, 123-383x energy efficiency over a T4, 8 GPT models")
MODELS = ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "gpt3-small", "gpt3-medium", "gpt3-large", "gpt3-xl")
SPEEDUP = (41.0, 137.0)
ENERGY = (123.0, 383.0)
KV_LEN = 1024

# ---- the T4 measurement the host cost is calibrated to (ms per generated token, batch 1, fp32)
_PRUNA = "https://huggingface.co/PrunaAI/HuggingFaceTB-SmolLM2-{}-Instruct-{}-smashed base_results.json (Tesla T4)"
T4_MEASURED_MS = {
    # SmolLM2-135M (HF config: 576 wide, 30 layers, 9 heads / 3 KV heads, FFN 1536, vocab 49152, tied)
    "smollm2-135m": ((35.61, 37.13, 38.99), _PRUNA.format("135M", "{GPTQ-4bit,HQQ-2bit,HQQ-4bit}")),
    # SmolLM2-1.7B (2048 wide, 24 layers, 32 heads, FFN 8192, vocab 49152, tied)
    "smollm2-1.7b": ((36.91, 35.36), _PRUNA.format("1.7B", "{HQQ-4bit,QUANTO-qint2bit}")),
}
# configs from HuggingFaceTB/SmolLM2-135M and SmolLM2-1.7B config.json (Llama architecture, tied embeddings)
SMOLLM2 = {
    "smollm2-135m": dict(hidden=576, layers=30, heads=9, kv_heads=3, ffn=1536, vocab=49152),
    "smollm2-1.7b": dict(hidden=2048, layers=24, heads=32, kv_heads=32, ffn=8192, vocab=49152),
}
SPEEDUP_TOL = 0.25  # the level misses by 2.2-2.4x: shown as "differs" with the reason (LEVEL_GAP)
ENERGY_TOL = 0.25
LEVEL_GAP = ("level 2.2-4.4x below the paper: the paper's T4 ran an older fp32 software stack whose per-token host "
             "work archsim's calibrated T4 (SmolLM2 on a T4, 76 us/kernel) does not have; our PIM charges column "
             "reads at 1.5 pJ/bit (docs/pim.md, PIM-GPT). The spread over the models agrees.")
SPREAD_TOL = 0.20
T4_CHECK_TOL = 0.15


def measured_ms(model: str) -> float:
    values, _src = T4_MEASURED_MS[model]
    return sum(values) / len(values)


def _t4_roofline_kernels(model: str) -> list[float]:
    """Per-kernel seconds of a SmolLM2 decode step (fp32, KV 128) on the T4 roofline."""
    import archsim
    from archsim.templates.roofline.dispatch import layer_kernel_seconds
    from workloads.zoo.llama import decoder

    g = decoder(**SMOLLM2[model], tie_embeddings=True, phase="decode", kv_len=128, name=model,
                weight_precision="fp32", act_precision="fp32", acc_precision="fp32")
    return layer_kernel_seconds(archsim.simulate(g, "gpu-t4", overrides=["dispatch_us=0"]))


@lru_cache(maxsize=1)
def calibrated_dispatch_us() -> float:
    """Host time per kernel (us) at which the dispatch pipeline meets the measured SmolLM2-135M step."""
    from archsim.templates.roofline.dispatch import pipelined

    kernels = _t4_roofline_kernels("smollm2-135m")
    target = measured_ms("smollm2-135m") * 1e-3
    lo, hi = 0.0, 1e-3
    for _ in range(60):  # the step time grows monotonically with the host cost
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if pipelined(kernels, mid).seconds < target else (lo, mid)
    return (lo + hi) / 2 * 1e6


def predicted_ms(model: str, dispatch_us: float) -> float:
    from archsim.templates.roofline.dispatch import pipelined

    return pipelined(_t4_roofline_kernels(model), dispatch_us * 1e-6).seconds * 1e3


@dataclass(frozen=True)
class Row:
    """One model: PIM and T4 seconds and joules per token (T4 roofline-only and calibrated)."""

    model: str
    pim_s: float
    pim_j: float
    roof_s: float
    roof_j: float
    cal_s: float
    cal_j: float

    @property
    def roof_speedup(self) -> float:
        return self.roof_s / self.pim_s

    @property
    def roof_energy(self) -> float:
        return self.roof_j / self.pim_j

    @property
    def speedup(self) -> float:
        return self.cal_s / self.pim_s

    @property
    def energy(self) -> float:
        return self.cal_j / self.pim_j


def row(model: str, kv_len: int = KV_LEN, dispatch_us: float | None = None, idle_power_w: float | None = None) -> Row:
    """PIM-GPT's comparison for one model; ``dispatch_us`` / ``idle_power_w`` default to the preset's."""
    from archsim.simulation import simulate

    opts = dict(phase="decode", kv_len=kv_len)
    pim = simulate(model, "pim-gpt-gddr6", weights="bf16", activations="bf16", **opts).headline()
    over = []
    if dispatch_us is not None:
        over.append(f"dispatch_us={dispatch_us:g}")
    if idle_power_w is not None:
        over.append(f"idle_power_w={idle_power_w:g}")
    t4 = simulate(model, "gpu-t4", weights="fp16", activations="fp16", overrides=over, **opts)
    x = t4.extras
    return Row(model, 1 / pim["tokens_per_s"], pim["energy_per_token_j"], 1 / x["tokens_per_s"],
               x["energy_per_token_pj"] * 1e-12, 1 / x["dispatch_bound_tokens_per_s"],
               x["dispatch_bound_energy_per_token_j"])


@lru_cache(maxsize=1)
def table() -> tuple[Row, ...]:
    return tuple(row(m) for m in MODELS)


def claims_from(rows, check_ms: float) -> list[Claim]:
    sp = [r.speedup for r in rows]
    en = [r.energy for r in rows]
    note = (f"pim-gpt-gddr6 bf16 vs gpu-t4 fp16 (roofline x 0.69 + {calibrated_dispatch_us():.0f} us host "
            f"dispatch/kernel overlapped, 70 W busy / idle_power_w waiting), decode KV {KV_LEN}, 8 paper models")
    out = [
        Claim(GROUP, "speedup over T4, smallest of 8 (level gap, docs/pim.md)", min(sp), SPEEDUP[0], SPEEDUP_TOL, PAPER, "x", note, explained=LEVEL_GAP),
        Claim(GROUP, "speedup over T4, largest of 8 (level gap)", max(sp), SPEEDUP[1], SPEEDUP_TOL, PAPER, "x", note, explained=LEVEL_GAP),
        Claim(GROUP, "speedup spread (largest / smallest)", max(sp) / min(sp), SPEEDUP[1] / SPEEDUP[0], SPREAD_TOL,
              PAPER, "", "the spread over the models agrees; the level does not (docs/pim.md)"),
        Claim(GROUP, "energy eff. over T4, smallest (level gap)", min(en), ENERGY[0], ENERGY_TOL, PAPER, "x", note, explained=LEVEL_GAP),
        Claim(GROUP, "energy eff. over T4, largest (level gap)", max(en), ENERGY[1], ENERGY_TOL, PAPER, "x", note, explained=LEVEL_GAP),
        Claim(GROUP, "energy spread (largest / smallest)", max(en) / min(en), ENERGY[1] / ENERGY[0], SPREAD_TOL,
              PAPER, "", "PIM column reads at the pre-GSA 1.5 pJ/bit set the level (docs/pim.md)"),
        Claim(GROUP, "T4 SmolLM2-1.7B decode step (held out)", check_ms, measured_ms("smollm2-1.7b"), T4_CHECK_TOL,
              T4_MEASURED_MS["smollm2-1.7b"][1], "ms",
              f"gpu-t4 fp32 with the host cost calibrated on SmolLM2-135M ({measured_ms('smollm2-135m'):.1f} ms)"),
    ]
    return out


def claims() -> list[Claim]:
    return claims_from(table(), predicted_ms("smollm2-1.7b", calibrated_dispatch_us()))
