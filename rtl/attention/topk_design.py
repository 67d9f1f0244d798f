"""SpAtten's top-k engine (:mod:`rtl.attention.topk`) as a unit design of the attention template
(:class:`rtl.design.UnitDesign`, named in its ``Template(unit_rtl=...)``): the level harness and
:func:`rtl.api.run_design_cosim` replay ``TopkTile`` s with their scores on it and compare the kept
indices with both models and the cycles with the detailed model (the fast model only estimates a
top-k tile's cycles: they depend on the scores, see :mod:`archsim.templates.attention.topk`).

The engine has ``params.topk_parallelism`` lanes (a power of two) and RTL options ``capacity`` (most
scores per tile, default 64) and ``width`` (score bits, default 16: unsigned integers). It runs
tiles with ``k < n``; ``k == n`` is the model's bypass (no engine cycles), not sent to it.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from archsim.errors import SpecError
from rtl.design import Port, TileModels, UnitDesign

PORT_DOCS = {
    "clk": "clock", "rst": "synchronous reset, active high",
    "start": "pulse: start a tile (n, k, seed sampled)", "n": "scores in the tile", "k": "scores kept (k < n)",
    "seed": "pivot LFSR seed (1..65535)", "in_valid": "a row of scores on in_data (fill)",
    "in_data": "lanes x width-bit scores, lane 0 in the low bits",
    "out_valid": "a select-pass row on out_row / out_mask", "out_row": "row of the select pass",
    "out_mask": "lane j kept (index out_row * lanes + j)", "busy": "a tile is running",
    "done": "pulse after the tile's last select row", "cycles": "the tile's cycles (fill + rounds + select)",
}


class TopkDesign(UnitDesign):
    template: ClassVar[str] = "attention"
    unit: ClassVar[str] = "topk"
    toplevel: ClassVar[str] = "archsim_topk"
    #: ``--depth N``: N rows of ``topk_parallelism`` scores per buffer (capacity ``N * lanes``)
    depth_options: ClassVar[tuple[str, ...]] = ("depth",)
    driver: ClassVar[str] = "rtl.attention.topk_cosim:drive"
    #: the driver reads the engine's own cycle counter; there is no second count on the ports
    has_cycle_counter: ClassVar[bool] = False
    conformance_arch: ClassVar[dict[str, Any]] = {"topk_parallelism": 4}

    def __init__(self, params: Any, options: Any = None):
        super().__init__(params, options)
        opts = dict(options or {})
        self.lanes = params.topk_parallelism
        depth = opts.pop("depth", None)
        if depth is not None and "capacity" in opts:
            raise SpecError("top-k RTL: options depth and capacity: give one (capacity = depth x topk_parallelism)")
        self.capacity = int(opts.pop("capacity", 64 if depth is None else depth * self.lanes))
        self.width = int(opts.pop("width", 16))
        if opts:
            raise SpecError(f"top-k RTL: unknown options {sorted(opts)}; expected capacity (or depth), width")
        if self.lanes == 0:
            raise SpecError("top-k RTL: the arch has no top-k engine (params.topk_parallelism 0); "
                            "e.g. --set topk_parallelism=4")
        if self.lanes < 1 or self.lanes & (self.lanes - 1):
            raise SpecError(f"top-k RTL: params.topk_parallelism: expected a power of two >= 1, got {self.lanes}")
        if self.capacity % self.lanes or self.capacity < self.lanes:
            raise SpecError(f"top-k RTL: capacity: expected a positive multiple of topk_parallelism = "
                            f"{self.lanes}, got {self.capacity}")
        self._attention_model = None  # the models the RTL is compared with, built on first use

    # ---- hardware ----
    def component(self):
        from rtl.attention.topk import TopkEngine

        return TopkEngine(self.lanes, self.capacity, self.width)

    def component_class(self) -> type:
        from rtl.attention.topk import TopkEngine

        return TopkEngine

    def ports(self) -> list[Port]:
        engine = self.component()
        engine._MustUse__silence = True  # built only to read its signature
        return self.ports_of(engine.signature, PORT_DOCS)

    def config_dict(self) -> dict[str, Any]:
        return {"lanes": self.lanes, "capacity": self.capacity, "width": self.width}

    def description(self) -> str:
        return "archsim SpAtten top-k engine (quick-select)"

    # ---- co-simulation ----
    def accepts(self, tile, ops) -> bool:
        from archsim.templates.attention.topk import TopkTile

        return (isinstance(tile, TopkTile) and ops is not None and tile.k < tile.n <= self.capacity
                and int(np.max(ops["scores"])) < (1 << self.width) and int(np.min(ops["scores"])) >= 0)

    def cosim_items(self, source: str = "random", tiles: int = 8, seed: int = 0, arch: Any = None,
                    workload: str | None = None, layer: str | None = None, **_kwargs) -> list:
        """``random``: tiles of :func:`rtl.attention.topk_cosim.random_tiles` (half with many ties);
        ``program``: the pruning steps of ``workload`` (default gpt2) compiled for ``arch``
        (:mod:`rtl.attention.topk_sources`)."""
        from archsim.templates.attention.topk import TopkTile
        from rtl.attention.topk_cosim import random_tiles

        if source == "program":
            from archsim.spec import arch_from_params
            from rtl.attention.topk_sources import program_items

            items = program_items(arch if arch is not None else arch_from_params(self.params), workload or "gpt2",
                                  tiles, self.width, seed, layer)
            for tile, ops in items:
                if tile.n > self.capacity:
                    raise SpecError(f"top-k RTL: capacity {self.capacity} scores, but {workload or 'gpt2'}'s pruning "
                                    f"step ranks {tile.n}: raise --depth to {-(-tile.n // self.lanes)} "
                                    f"(rows of {self.lanes} scores)")
            return items
        if source != "random":
            raise SpecError(f"top-k RTL: unknown co-simulation source {source!r}; expected random or program")
        return [(TopkTile(len(s), k, sd), {"scores": np.array(s, np.int64)})
                for s, k, sd in random_tiles(tiles, self.capacity, self.width, seed)]

    def make_job(self, items) -> dict[str, Any]:
        for tile, ops in items:
            if not self.accepts(tile, ops):
                raise SpecError(f"top-k RTL (capacity {self.capacity}, {self.width}-bit scores) cannot run {tile}")
        return {"driver": self.driver, "lanes": self.lanes, "width": self.width,
                "tiles": [{"scores": [int(v) for v in ops["scores"]], "k": tile.k, "seed": tile.seed}
                          for tile, ops in items]}

    @staticmethod
    def label(tile) -> str:
        return f"topk n={tile.n} k={tile.k} seed={tile.seed}"

    def _model(self):
        model = self._attention_model
        if model is None:
            from archsim.spec import arch_from_params

            model = self._attention_model = arch_from_params(self.params).model()
        return model

    def tile_models(self, tile, ops) -> TileModels:
        model = self._model()
        det_values, det_cycles = model.detailed_tile(tile, ops)
        return TileModels(model.tile_values(tile, ops), None, det_values, det_cycles)

    def rtl_tile_values(self, tile, g: dict):
        return np.asarray(g["indices"], np.int64)
