"""SpAtten's pruning step (:mod:`rtl.attention.spatten`) as a design the co-simulation harness runs
(:func:`rtl.api.run_design_cosim`): items are ``(PruneTile, {"q", "k", "v"})`` with per-head
operands; the RTL's attention outputs (fp32 bits) and kept key indices are compared with
:func:`archsim.templates.attention.pruning.run` bit for bit, its cycles (the hardware counter of
the step) with the detailed model's exactly (the fast model estimates the top-k's cycles, so its
cycles are not compared: ``TileModels.fast_cycles`` None).

The array's part reuses :class:`rtl.attention.rtl_design.AttentionDesign` (its parameter checks,
buffer sizes and operand encoding), so the wrapper follows the array's operand format. Options:
the array's (``head_dim_max``, ``flat_keys_max``, ...).

A unit design of the attention template (``Template(unit_rtl=...)``, unit ``prune`` as its tiles):
``archsim rtl cosim|generate|lint|synth --unit prune`` and the level harness's unit cases run it.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from archsim.errors import SpecError
from archsim.templates.attention.pruning import PruneResult, PruneTile, one_hot_values, step_values
from rtl.design import Port, TileModels, UnitDesign

PORT_DOCS_EXTRA = {
    "cmd__payload": "the attention array's command fields (rtl.attention.engine.command_layout), then mode "
                    "(0 attention, 1 probability pass, 2 select), first (clear the sums and the cycle counter), "
                    "offset (first key of a probability pass), k (keys kept by the select), seed (top-k pivot LFSR)",
    "kept": "after the select's done: bit j set when key j is kept",
    "sums": "the keys' probability sums, fp32, key j at bits [32j, 32j+32)",
}


class SpattenDesign(UnitDesign):
    template: ClassVar[str] = "attention"
    unit: ClassVar[str] = "prune"
    toplevel: ClassVar[str] = "archsim_spatten"
    driver: ClassVar[str] = "rtl.attention.spatten_cosim:drive"
    #: small: every step runs ``heads x (1 + ceil(kv_len / head_dim))`` array tiles on Icarus
    conformance_arch: ClassVar[dict[str, Any]] = {"rows": 2, "cols": 2, "pe1d": 2, "exp_macs": 4,
                                                  "topk_parallelism": 4}

    def __init__(self, params: Any, options: Any = None):
        from rtl.attention.rtl_design import AttentionDesign

        super().__init__(params, options)
        if params.topk_parallelism < 1 or params.topk_parallelism & (params.topk_parallelism - 1):
            raise SpecError(f"SpAtten RTL: params.topk_parallelism: expected a power of two >= 1, got "
                            f"{params.topk_parallelism} (e.g. --set topk_parallelism=4)")
        self.array = AttentionDesign(params, options)
        self.cfg = self.array.cfg
        self._models = None

    # ---- hardware ----
    def component(self):
        from rtl.attention.spatten import SpattenEngine

        return SpattenEngine(self.cfg, self.params.topk_parallelism)

    def component_class(self) -> type:
        from rtl.attention.spatten import SpattenEngine

        return SpattenEngine

    def ports(self) -> list[Port]:
        from rtl.attention.rtl_design import PORT_DOCS
        from rtl.attention.spatten import spatten_signature

        sig = spatten_signature(self.cfg, self.params.topk_parallelism)
        return self.ports_of(sig, {**PORT_DOCS, **PORT_DOCS_EXTRA})

    def config_dict(self) -> dict[str, Any]:
        return {**self.array.config_dict(), "topk_parallelism": self.params.topk_parallelism}

    def description(self) -> str:
        return "archsim SpAtten pruning step: attention array + probability accumulator + top-k engine"

    # ---- co-simulation ----
    def accepts(self, tile, ops) -> bool:
        return isinstance(tile, PruneTile) and ops is not None and not self.runs(tile, ops)

    def runs(self, tile: PruneTile, ops) -> str:
        """Why the RTL cannot run ``tile`` ('' if it can)."""
        try:
            tile.check(self.params)
        except ValueError as err:
            return str(err)
        why = self.array.runs(tile.attention_tile(), {"q": 0})
        if why:
            return why
        if tile.kv_len > self.cfg.flat_keys_max:
            return f"kv_len {tile.kv_len} > flat_keys_max {self.cfg.flat_keys_max}"
        return ""

    def cosim_items(self, source: str = "random", tiles: int = 8, seed: int = 0, **_kwargs) -> list:
        """``random``: :func:`random_items`."""
        if source != "random":
            raise SpecError(f"SpAtten RTL: unknown co-simulation source {source!r}; expected random")
        return random_items(np.random.default_rng(seed), self.params, self.cfg, tiles)

    def make_job(self, items) -> dict[str, Any]:
        from rtl.attention.engine import command_layout
        from rtl.attention.spatten import MODE_ATTENTION, MODE_PROBABILITIES, MODE_SELECT, spatten_signature
        from rtl.lib.host import payload_shape

        sig = spatten_signature(self.cfg, self.params.topk_parallelism)
        wr = payload_shape(sig.members["wr"])
        layout = payload_shape(sig.members["cmd"])
        jobs = []
        for tile, ops in items:
            why = self.runs(tile, ops)
            if why:
                raise SpecError(f"SpAtten RTL cannot run {tile}: {why}")
            at = tile.attention_tile()
            steps = []
            first = 1
            for h in range(tile.heads):
                q, k, v = (np.asarray(ops[n][h], np.float32) for n in ("q", "k", "v"))
                passes = [(MODE_ATTENTION, 0, v)] + [
                    (MODE_PROBABILITIES, off, one_hot_values(tile.kv_len, tile.head_dim, off))
                    for off in range(0, tile.kv_len, tile.head_dim)]
                for mode, off, vv in passes:
                    enc = self.array.encode(at, {"q": q, "k": k, "v": vv})
                    cmd = {**enc["cmd"], "mode": mode, "first": first, "offset": off, "k": 0, "seed": 0}
                    first = 0
                    steps.append({"writes": enc["writes"], "cmd": cmd,
                                  "reads": enc["reads"] if mode == MODE_ATTENTION else []})
            select = {n: 0 for n, _f in command_layout(self.cfg)}
            select.update({"kv_len": tile.kv_len, "mode": MODE_SELECT, "first": 0, "offset": 0, "k": tile.k,
                           "seed": tile.seed})
            steps.append({"writes": [], "cmd": select, "reads": []})
            jobs.append({"steps": steps, "label": self.label(tile)})
        return {"driver": self.driver, "head_dim_max": self.cfg.head_dim_max,
                "command_layout": [(n, f.offset, f.width) for n, f in layout],
                "write_layout": [(n, f.offset, f.width) for n, f in wr], "tiles": jobs}

    def _model(self):
        if self._models is None:
            from archsim.spec import arch_from_params

            self._models = arch_from_params(self.params).model()
        return self._models

    def tile_models(self, tile, ops) -> TileModels:
        model = self._model()
        det_values, det_cycles = model.detailed_tile(tile, ops)
        return TileModels(model.tile_values(tile, ops), None, det_values, det_cycles)

    def rtl_tile_values(self, tile, g: dict):
        rows = np.array(g["rows"], np.uint64).reshape(tile.heads, tile.q_rows, -1)[:, :, :tile.head_dim]
        out = rows.astype(np.uint32).view(np.float32)
        sums = np.array([g["sums"] >> (32 * j) & 0xFFFFFFFF for j in range(tile.kv_len)], np.uint32).view(np.float32)
        kept = [j for j in range(tile.kv_len) if g["kept"] >> j & 1]
        return step_values(PruneResult(out, sums, np.array(kept, np.int64), 0))

    def counter_cycles(self, g):
        return g.get("cycles")

    def port_cycles(self, g):
        return None

    def tile_extra(self, tile, ops, g):
        return {"kept": [j for j in range(tile.kv_len) if g.get("kept", 0) >> j & 1]}

    def tile_flag(self, g, extra):
        return "the array flagged a command (error)" if g.get("error_flag") else ""

    def value_name(self, at: tuple[int, ...]) -> str:
        return f"value[{at[0]}] (attention outputs' fp32 bits, the keys' sums' fp32 bits, then the kept indices)"

    @staticmethod
    def label(tile) -> str:
        return f"prune q={tile.q_rows} L={tile.kv_len} d={tile.head_dim} h={tile.heads} k={tile.k} seed={tile.seed}"


def random_items(rng: np.random.Generator, params, cfg, count: int) -> list:
    """``count`` random steps within the built sizes: q_rows 1..rows, kv_len 2..flat_keys_max,
    head_dim 1..head_dim_max, 1-2 heads, k 1..kv_len-1; bf16 operands uniform in [-2, 2) (every third
    step with keys growing along the sequence: a few keys carry most of the probability)."""
    from archsim.templates.attention.conformance import _bf16

    items = []
    for t in range(count):
        q_rows = int(rng.integers(1, params.rows + 1))
        kv = int(rng.integers(2, cfg.flat_keys_max + 1))
        d = int(rng.integers(1, cfg.head_dim_max + 1))
        heads = int(rng.integers(1, 3))
        tile = PruneTile(q_rows, kv, d, heads, int(rng.integers(1, kv)), int(rng.integers(1, 1 << 16)))
        q = _bf16(rng.uniform(-2, 2, (heads, q_rows, d)))
        k = rng.uniform(-2, 2, (heads, kv, d))
        if t % 3 == 2:
            k = k * np.linspace(0.2, 3, kv)[None, :, None]
        items.append((tile, {"q": q, "k": _bf16(k), "v": _bf16(rng.uniform(-2, 2, (heads, kv, d)))}))
    return items
