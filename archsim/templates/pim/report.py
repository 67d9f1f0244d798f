"""PIM figures added to report.json (the engine's ``report_extras`` hook).

- ``tokens_per_s``: :attr:`SimResult.tokens` (batch x new tokens: 1 per
  sequence in decode, the prompt length in prefill) over the run's latency;
- ``energy_per_token_pj``: the engine's energy (per-command DRAM energy, MACs,
  ASIC) plus DRAM background power over the whole run, per token;
  both only for workloads with tokens;
- ``pim_io_bytes``: bytes between the banks and the ASIC (input broadcast,
  accumulator gather, KV-cache writes);
- ``pim_weight_bytes`` / ``pim_kv_bytes``: bytes the mapped layers read
  (a table used twice, e.g. GPT-2's tied embedding / LM head, counts twice
  here). Whether the model fits the DRAM is checked once, exactly, before
  mapping: :func:`mappers.pim.check_graph`.
"""
from __future__ import annotations


def pim_extras(model, result) -> dict:
    arch, p = model.arch, model.p
    weights = sum(l.internal_bytes_by_operand.get("weight", 0) for l in result.layers)
    kv = sum(l.internal_bytes_by_operand.get("kv", 0) for l in result.layers)
    try:
        bg = arch.tech.energy("pim.background_cycle")
    except KeyError:
        bg = 0.0
    background = bg * p.n_channels * result.total_cycles
    total = result.energy_pj + background
    io = sum(l.internal_bytes_by_operand.get("io", 0) for l in result.layers)
    return {
        **result.token_rates(total),
        "background_energy_pj": background,
        "pim_io_bytes": io,
        "pim_weight_bytes": weights,
        "pim_kv_bytes": kv,
        "pim_capacity_bytes": p.capacity_bytes,
    }
