"""The attention template's entry in the RTL registry: ports, job encoding of attention
tiles (operands + one command each), comparison with the fast and detailed models.

Values are compared bit for bit with the models (the RTL computes the
template's fp32 arithmetic, :mod:`rtl.lib.fp`); each tile's report also
carries its error against the independent float64 reference and the derived
bound (:func:`archsim.templates.attention.reference.error_bound`). Cycles are
the tile's ``tile_start .. tile_done`` on the RTL against
:func:`~archsim.templates.attention.tile.tile_cycles` (fast) and
:class:`~archsim.templates.attention.detailed.AttentionDetailed`.
"""
from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

import numpy as np

from archsim.errors import SpecError
from rtl.attention.design import AttentionRtlConfig
from rtl.attention.pe import OPERAND_FORMATS
from rtl.attention.engine import (BUF_CODES, AttentionEngine, attention_host_signature, bank_bits, command_layout,
                                  entry_bits)
from rtl.design import Port, RtlDesign, TileModels, pack_lanes
from rtl.lib.host import HOST_PORT_DOCS, payload_shape

PORT_DOCS = {
    **HOST_PORT_DOCS,
    "cmd__payload": "the tile command, fields from bit 0 up (rtl.attention.engine.command_layout): flat (1 bit: "
                    "0 = fusemax tile, one pass, online softmax; 1 = flat tile, two passes), q_rows (1..rows), "
                    "kv_len (1..key_blocks_max*cols; flat: 1..flat_keys_max), head_dim (1..head_dim_max), "
                    "passes (query tiles of q_rows rows against the same keys; flat: 1), drain (1: count the "
                    "wavefront drain, rows + cols - 2 cycles, at the end of the tile), q_set, kv_set (1 bit "
                    "each: the operand set the tile reads Q / K and V from)",
    "wr__ready": "low while the write goes into an operand set the running tile reads (a write never changes "
                 "a running tile's operands; writes into the other set are taken while it runs)",
    "wr__payload": "buf (2 bits: 0 = Q, 1 = K, 2 = V), addr (set << (bank_bits + entry_bits) | bank << "
                   "entry_bits | entry; Q: bank = array row i, entry = pass; K, V: bank = key index mod cols, "
                   "entry = key index div cols; set: the operand set, 0 or 1), data (a "
                   "head-dim vector of bf16 / fp16 (precision) codes, element e at bits [16e, 16e+16))",
    "rd_addr__payload": "result row pass * rows + query row (read while busy is low)",
    "rd_data__payload": "the row's outputs (fp32), element e at bits [32e, 32e+32)",
    "busy": "a tile is running or its outputs are being normalised (results are readable when it falls)",
    "done": "high in the tile's last cycle (the contract's tile_cycles); the final divide by the row sum follows "
            "while busy stays high",
    "tile_cycles": "cycles of the last finished tile (tile_start .. done inclusive), hardware counter; "
                   "updated the cycle after done",
    "error": "sticky: a command outside the built sizes (zero or too large a dimension, too many passes or keys)",
    "tile_start": "debug, not part of the host interface: high in tile cycle 0",
}

#: largest generated instance (a 16x16 array already takes minutes to convert and simulate)
MAX_PES = 256
MAX_LANES = 32
RTL_OPTIONS = ("head_dim_max", "passes_max", "key_blocks_max", "flat_keys_max", "multiplier")

#: ``multiplier`` (``archsim rtl ... --multiplier``) as the ``mul`` of the 2D PEs' pipelined multiplier
#: (``latency2d >= 1``) and of the 1D lanes' (``latency1d.mul >= 1``: the lanes' multiplier and their
#: ``exp2``'s): the inferred product, or ECP5 MULT18X18D blocks whose own registers are its cut points
#: (same latency, bits)
MULTIPLIER_MULS = {"inferred": "dsp", "ecp5_dsp": "dsp_reg"}


#: the 1D lanes' pipelined units: latency1d key -> what it is (its latency is the unit's stages; the
#: exp op's is the adder's and exp2's)
PIPELINED_1D = {"exp": "exp2", "recip": "reciprocal", "mul": "multiplier", "add": "adder", "max": "compare"}


def _max_stages_1d(fn: str, exp_macs: int) -> int:
    """Cut points of the lanes' unit for ``fn`` (the largest stages the RTL builds; the adder one more:
    its operands registered, :func:`rtl.attention.pe.add_stages_max`)."""
    from rtl.lib.recip import Recip
    from rtl.lib.units import Exp2, Fp32Max, Fp32MulFinite

    if fn == "add":
        from rtl.attention.pe import add_stages_max

        return add_stages_max()
    unit = {"exp": lambda: Exp2(exp_macs, 0), "recip": lambda: Recip(0), "mul": lambda: Fp32MulFinite(0),
            "max": lambda: Fp32Max(0)}[fn]()
    unit._MustUse__silence = True  # built only to read its number of cut points
    return unit.max_stages


def _max_stages_2d(unit_name: str) -> int:
    """Cut points of the 2D PEs' library unit ``unit_name`` (the largest stages the RTL builds; the
    adders one more: their operands registered, :func:`rtl.attention.pe.add_stages_max`)."""
    from rtl.lib import units

    if unit_name == "Fp32AddFinite":
        from rtl.attention.pe import add_stages_max

        return add_stages_max()
    unit = getattr(units, unit_name)(0)
    unit._MustUse__silence = True  # built only to read its number of cut points
    return unit.max_stages


def check_params(p) -> None:
    """``ValueError`` (one line) if the RTL cannot be generated for ``p``."""
    p.validate()
    if p.exp_on != "array2d":
        raise ValueError(f"exp_on: the RTL evaluates the exps on the 2D array (array2d), got {p.exp_on}")
    if p.flat_scale_on != "array1d":
        raise ValueError(f"flat_scale_on: the RTL scales FLAT's scores on the 1D lanes (array1d), "
                         f"got {p.flat_scale_on}")
    rates = {k: v for k, v in p.ops1d_per_cycle.items() if v != 1}
    if rates:
        raise ValueError(f"ops1d_per_cycle: the RTL's 1D lanes run one op of each function per cycle, got {rates}")
    lat = {k: v for k, v in p.latency1d.items() if v and k not in PIPELINED_1D}
    if lat:
        raise ValueError(f"latency1d: the RTL pipelines only the 1D lanes' exp, reciprocal, multiplier, adder and "
                         f"compare (latency1d.exp, .recip, .mul, .add, .max), got {lat}")
    add = p.latency1d.get("add", 0)
    for fn, what in PIPELINED_1D.items():
        most = _max_stages_1d(fn, p.exp_macs)
        stages = p.latency1d.get(fn, 0) - (add if fn == "exp" else 0)
        if fn == "exp" and stages < 0:
            raise ValueError(f"latency1d.exp: the 1D lanes' exp op subtracts on the adder (latency1d.add {add}) "
                             f"before exp2, so it takes at least {add} cycles, got {p.latency1d.get('exp', 0)}")
        if stages > most:
            raise ValueError(f"latency1d.{fn}: the 1D lanes' {what} has at most {most} pipeline stages"
                             + (f" at exp_macs {p.exp_macs}" if fn == "exp" else "")
                             + (f" (latency1d.exp at most {most + add}: the adder's {add} first)"
                                if fn == "exp" and add else "") + f", got {p.latency1d[fn]}")
    for key, unit in (("latency2d_add", "Fp32AddFinite"), ("latency2d_rint", "Rint"), ("latency2d_ldexp", "Ldexp")):
        most = _max_stages_2d(unit)
        if getattr(p, key) > most:
            raise ValueError(f"{key}: the 2D PEs' {unit} has at most {most} pipeline stages, got {getattr(p, key)}")
    if p.precision not in OPERAND_FORMATS:
        raise ValueError(f"precision: the RTL's operand buffers hold {' or '.join(OPERAND_FORMATS)}, got {p.precision}")
    if p.rows * p.cols > MAX_PES or p.pe1d > MAX_LANES:
        raise ValueError(f"rows x cols, pe1d: the RTL is generated for up to {MAX_PES} PEs and {MAX_LANES} 1D lanes "
                         f"(every PE has its own fp32 units), got {p.rows}x{p.cols} and {p.pe1d}; "
                         f"e.g. --set rows=4 --set cols=4 --set pe1d=4")


def operand_codes(x: np.ndarray, precision: str, name: str) -> np.ndarray:
    """16-bit codes of operand ``x`` (fp32 values) in ``precision`` (bf16 or fp16); a value the
    format does not hold exactly is refused (the models compute on the values as given)."""
    x = np.asarray(x, np.float32)
    if precision == "bf16":
        codes = x.view(np.uint32) >> 16
        back = (codes << 16).astype(np.uint32).view(np.float32)
    else:
        with np.errstate(over="ignore"):
            half = x.astype(np.float16)
        codes, back = half.view(np.uint16), half.astype(np.float32)
    bad = ~((back == x) & (np.signbit(back) == np.signbit(x)))
    if bad.any():
        raise SpecError(f"attention RTL: operand {name} holds {float(x[bad][0])!r}, not a {precision} value "
                        f"(the buffers hold {precision} codes)")
    return codes.astype(np.int64)


_pack = pack_lanes  # one word of lanes (rtl.design)


class AttentionDesign(RtlDesign):
    """RTL of :class:`~archsim.templates.attention.params.AttentionParams` (see :mod:`rtl.attention.design`)."""

    template = "attention"
    toplevel = "archsim_attention"
    driver = "rtl.attention.driver:run_job"
    #: the driver uses only the host signature (plus tile_start where present): user RTL too
    host_interface = True

    def __init__(self, params: Any, options: dict | None = None):
        options = dict(options or {})
        multiplier = options.pop("multiplier", "inferred")
        if multiplier not in MULTIPLIER_MULS:
            raise ValueError(f"multiplier: expected one of {', '.join(MULTIPLIER_MULS)}, got {multiplier!r}")
        mul1d_stages = params.latency1d.get("mul", 0)
        if multiplier != "inferred" and not (params.latency2d or mul1d_stages):
            raise SpecError(f"attention RTL: multiplier {multiplier}: the registered DSP blocks need a pipelined "
                            f"multiplier (latency2d >= 1 for the 2D PEs, latency1d.mul >= 1 for the 1D lanes), "
                            f"got latency2d 0 and latency1d.mul 0")
        muls = {"mul2d": MULTIPLIER_MULS[multiplier] if params.latency2d else "dsp",
                "mul1d": MULTIPLIER_MULS[multiplier] if mul1d_stages else "dsp"}
        unknown = sorted(set(options) - set(RTL_OPTIONS))
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not an option of the attention RTL "
                             f"(it has {', '.join(RTL_OPTIONS)})")
        for k, v in options.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{k}: expected a positive integer, got {v!r}")
        super().__init__(params, {**options, "multiplier": multiplier} if multiplier != "inferred" else options)
        try:
            check_params(params)
        except ValueError as err:
            raise SpecError(f"attention RTL: {err}") from None
        cfg = {"head_dim_max": 8, "passes_max": 4, "key_blocks_max": 16, "flat_keys_max": 4 * params.cols}
        cfg.update(options)
        fk = cfg["flat_keys_max"]
        cfg["flat_keys_max"] = -(-fk // params.cols) * params.cols  # whole key blocks
        self.cfg = AttentionRtlConfig(rows=params.rows, cols=params.cols, pe1d=params.pe1d,
                                      exp_macs=params.exp_macs, exp1d_stages=params.latency1d.get("exp", 0),
                                      recip1d_stages=params.latency1d.get("recip", 0),
                                      mul1d_stages=params.latency1d.get("mul", 0),
                                      add1d_stages=params.latency1d.get("add", 0),
                                      max1d_stages=params.latency1d.get("max", 0),
                                      mul2d_stages=params.latency2d, add2d_stages=params.latency2d_add,
                                      rint2d_stages=params.latency2d_rint, ldexp2d_stages=params.latency2d_ldexp,
                                      precision=params.precision, **muls, **cfg)

    def sim_sources(self) -> dict[str, str]:
        """``multiplier ecp5_dsp``: the MULT18X18D blocks' simulation model beside the Verilog."""
        if "dsp_reg" in (self.cfg.mul2d, self.cfg.mul1d):
            from rtl.lib.ecp5 import mult18x18d_sim_model

            return {"MULT18X18D_model.v": mult18x18d_sim_model()}
        return {}

    def component(self):
        return AttentionEngine(self.cfg)

    def config_dict(self) -> dict[str, Any]:
        out = asdict(self.params)
        out.update({f.name: getattr(self.cfg, f.name) for f in fields(self.cfg)})
        return out

    def ports(self) -> list[Port]:
        return self.ports_of(attention_host_signature(self.cfg), PORT_DOCS)

    def description(self) -> str:
        p = self.params
        return f"archsim attention array {p.rows}x{p.cols} fp32 2D + {p.pe1d}-lane 1D (FuseMax / FLAT tiles)"

    # ---------------------------------------------------------------- co-simulation
    def runs(self, tile, ops) -> str:
        """Why the RTL cannot run ``(tile, ops)`` ('' if it can)."""
        c = self.cfg
        if ops is None:
            return "no operands (the RTL runs whole tiles with values)"
        if tile.phase != "all" or not (tile.first and tile.last):
            return f"phase {tile.phase} first={tile.first} last={tile.last} (the RTL runs whole tiles)"
        if tile.head_dim > c.head_dim_max:
            return f"head_dim {tile.head_dim} > head_dim_max {c.head_dim_max}"
        if tile.passes > c.passes_max:
            return f"passes {tile.passes} > passes_max {c.passes_max}"
        nb = -(-tile.kv_len // c.cols)
        if nb > c.key_blocks_max:
            return f"kv_len {tile.kv_len} > key_blocks_max*cols {c.key_blocks_max * c.cols}"
        if tile.mapping == "flat" and c.add2d_stages:
            return f"flat with latency2d_add {c.add2d_stages} (the RTL builds FLAT with combinational 2D adders)"
        if tile.mapping == "flat" and tile.kv_len > c.flat_keys_max:
            return f"flat kv_len {tile.kv_len} > flat_keys_max {c.flat_keys_max}"
        return ""

    def cosim_items(self, source: str = "random", tiles: int = 8, seed: int = 0, **_kwargs) -> list:
        """``random``: the conformance hook's tiles (edge cases first) that the RTL runs, then random ones."""
        if source != "random":
            raise SpecError(f"attention RTL: unknown co-simulation source {source!r}; expected random")
        from archsim.templates.attention import conformance

        rng = np.random.default_rng(seed)
        items = [(t, o) for t, o in conformance.sample_tiles(rng, self.params, max(tiles, 16))
                 if not self.runs(t, o)]
        while len(items) < tiles:
            items += [(t, o) for t, o in conformance.sample_tiles(rng, self.params, 16)[10:] if not self.runs(t, o)]
        return items[:tiles]

    def encode(self, tile, ops) -> dict[str, Any]:
        why = self.runs(tile, ops)
        if why:
            raise SpecError(f"attention RTL cannot run {tile}: {why}")
        R, C = self.cfg.rows, self.cfg.cols
        q, k, v = (operand_codes(ops[n], self.cfg.precision, n) for n in ("q", "k", "v"))
        eb = entry_bits(self.cfg)
        writes = []  # [buf, first address, [words at consecutive addresses]]: one bank's entries from 0
        for i in range(tile.q_rows):
            writes.append([BUF_CODES["q"], i << eb, [_pack(q[p * tile.q_rows + i], 16) for p in range(tile.passes)]])
        for name, x in (("k", k), ("v", v)):
            for bank in range(min(C, tile.kv_len)):
                writes.append([BUF_CODES[name], bank << eb, [_pack(x[j], 16) for j in range(bank, tile.kv_len, C)]])
        reads = [[p * R, tile.q_rows] for p in range(tile.passes)]  # [first address, rows]
        return {"cmd": {"flat": int(tile.mapping == "flat"), "q_rows": tile.q_rows, "kv_len": tile.kv_len,
                        "head_dim": tile.head_dim, "passes": tile.passes, "drain": int(tile.drain),
                        "q_set": 0, "kv_set": 0},  # operand set 0 (rtl.attention.driver alternates the sets)
                "writes": writes, "reads": reads, "label": self.label(tile)}

    def make_job(self, items) -> dict[str, Any]:
        sig = attention_host_signature(self.cfg)
        wr = payload_shape(sig.members["wr"])
        return {"driver": self.driver, "head_dim_max": self.cfg.head_dim_max,
                "command_layout": [(n, f.offset, f.width) for n, f in command_layout(self.cfg)],
                "write_layout": [(n, f.offset, f.width) for n, f in wr],
                "set_shift": entry_bits(self.cfg) + bank_bits(self.cfg),
                "tiles": [self.encode(t, o) for t, o in items]}

    def tile_models(self, tile, ops):
        from archsim.spec import arch_from_params
        from archsim.templates.attention.model import AttentionModel

        model = getattr(self, "_model", None)
        if model is None:
            model = self._model = AttentionModel(arch_from_params(self.params))
        det_vals, det_cycles = model.detailed_tile(tile, ops)
        return TileModels(np.asarray(model.tile_values(tile, ops), np.float32), model.tile_cycles(tile),
                          np.asarray(det_vals, np.float32), int(det_cycles))

    def rtl_tile_values(self, tile, g):
        rows = np.array(g["rows"], np.uint64) if g["rows"] else np.zeros((0, 0), np.uint64)
        return (rows[:, :tile.head_dim].astype(np.uint32).view(np.float32) if rows.size
                else np.zeros((0, tile.head_dim), np.float32))

    def value_extra(self, tile, ops, vals):
        from archsim.templates.attention.reference import error_bound, reference_attention

        ref = reference_attention(ops["q"], ops["k"], ops["v"])
        bound = error_bound(ops["q"], ops["k"], ops["v"], self.params.cols, self.params.exp_macs)
        err = np.abs(vals.astype(np.float64) - ref).max(axis=1)
        return {"max_abs_error": float(err.max()), "error_over_bound": float((err / bound).max())}

    def tile_flag(self, g, extra):
        return "the array flagged the command (error)" if g.get("error_flag") else ""

    @staticmethod
    def label(tile) -> str:
        extra = "" if tile.drain else " nodrain"
        extra += f" x{tile.passes}" if tile.passes > 1 else ""
        return f"{tile.mapping} q={tile.q_rows} L={tile.kv_len} d={tile.head_dim}{extra}"

