"""The PIM template's entry in the RTL registry: one bank's near-bank unit (or, with the
option ``banks=N``, a channel of N bank units in all-bank lockstep with one global buffer,
:mod:`rtl.pim.channel`), its ports, the job encoding of RD-MAC command streams and the comparison
with the PIM models (detailed: :func:`archsim.templates.pim.commands.run_detailed`;
fast: :func:`archsim.templates.pim.fast.tile_cycles` and
:func:`archsim.templates.pim.values.gemv_dot`)."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from archsim.errors import SpecError
from rtl.design import Port, RtlDesign, TileModels
from rtl.pim.channel import PimChannelUnit, channel_signature, check_channel
from rtl.pim.design import LANE_BITS, PimBankUnit, array_latency, check_buffer, default_stages, pim_signature
from rtl.pim.mac import MULS, mac_latency
from rtl.design import pack_lanes
from rtl.lib.host import HOST_PORT_DOCS

PORT_DOCS = {
    "clk": "clock (rising edge) = the DRAM command clock",
    "rst": "synchronous reset, active high",
    "row_valid": "a row command is issued this cycle",
    "row_cmd": "row command: 1 ACT, 2 PRE, 3 REF",
    "row_addr": "DRAM row of an ACT",
    "col_valid": "a column command is issued this cycle",
    "col_cmd": "column command: 1 MAC (RD-MAC), 2 GBWR (input buffer write), 3 RDACC (accumulator read)",
    "col_addr": "MAC: column in the open row; GBWR: input buffer column; RDACC: accumulator column",
    "col_acc": "MAC: accumulator the column's dot product is added into; RDACC (channel): the group's rows "
               "per bank (0 = acc_registers)",
    "col_in": "MAC: input buffer column multiplied with the DRAM column",
    "col_wdata": "GBWR data: column_elements lanes (int8 or bf16), lane i at bits [i*W, (i+1)*W)",
    "dram_rd": "column read to the DRAM array (registered: high the cycle after the MAC command)",
    "dram_row": "row of the column read (the open row)",
    "dram_col": "column of the column read",
    "dram_rdata": "the DRAM array's answer: the column asked for, array_latency cycles after dram_rd is high "
                  "(tCL + mac_pipeline_cycles - 2 - mac_latency; both in the manifest's params); a channel: every "
                  "bank's column, bank b at bits [b*W, (b+1)*W)",
    "out_valid": "out_data holds an accumulator column (rdacc_latency cycles after its RDACC: tCL, or the "
                 "interleaved partials' reduction when longer)",
    "out_data": "column_bytes // 4 accumulators (int32 or fp32 bits), accumulator c*lanes + i at bits [32i, 32i+32)",
    "ready": "the bank is closed, tRP has passed since PRE and tRFC since REF (it may take an ACT)",
    "busy": "an RD-MAC is in flight (its column has not reached the accumulators)",
    "error": "sticky: a command broke tRCD, tRAS, tRP, tRTP, tRFC, the MAC unit's spacing, the RDACC's drain "
             "(mac_drain after the last MAC) or spacing (rdacc_spacing_cycles), or the bank state",
}


TOPS = ("unit", "host")
#: the default top of one bank (a channel, ``banks > 1``, is always the bare units)
DEFAULT_TOP = "host"
HOST_DRIVER = "rtl.pim.host_driver:run_job"
HOST_DOCS = {
    **HOST_PORT_DOCS,
    "cmd__payload": "one tile cycle's commands, fields from bit 0 up: at (24 bits, the tile cycle), row_cmd (0 none, "
                    "1 ACT, 2 PRE, 3 REF), row_addr, col_cmd (0 none, 1 MAC, 2 GBWR, 3 RDACC), col_addr, col_acc, "
                    "col_src (MAC: input-buffer column; GBWR: staging column), end (the tile's last entry)",
    "wr__payload": "buf (1 bit: 0 input staging, 1 DRAM array at row * 2**col_bits + col), addr, data (one column)",
    "rd_addr__payload": "output-buffer entry: the tile's i-th RDACC column",
    "rd_data__payload": "one RDACC column: column_bytes // 4 accumulators (int32 / fp32 bits), word i at [32i, 32i+32)",
    "tile_cycles": "the tile's cycles D (done is in tile cycle D = max(last RDACC column out, bank ready after the "
                   "last PRE)); updated the cycle after done",
    "run": "debug: high from the cycle before tile cycle 0 through done",
}

_pack = pack_lanes  # one word of lanes (rtl.design)


def lane_bits_of(values: np.ndarray, precision: str) -> np.ndarray:
    """Bit patterns of operands: int8 as two's complement bytes, bf16 as the high half of fp32."""
    if precision == "int8":
        return np.asarray(values, np.int64) & 0xFF
    return (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.int64)


def _unpack_words(word: int, lanes: int, precision: str) -> list:
    raw = [(word >> (32 * i)) & 0xFFFFFFFF for i in range(lanes)]
    if precision == "int8":
        return [v - (1 << 32) if v >> 31 else v for v in raw]
    return list(np.array(raw, np.uint32).view(np.float32))


def _bits(values: np.ndarray, precision: str) -> np.ndarray:
    """Comparable bit patterns of results (fp32 compared bit for bit, -0 != +0)."""
    if precision == "int8":
        return np.asarray(values, np.int64)
    return np.asarray(values, np.float32).view(np.uint32)


#: ``multiplier`` (``archsim rtl ... --multiplier``) as the bf16 datapath's ``mul``: the inferred product, or
#: the ECP5 MULT18X18D with its own registers on the cut points (same latency and bits)
MULTIPLIER_MULS = {"inferred": "dsp", "ecp5_dsp": "dsp_reg"}


class PimDesign(RtlDesign):
    """RTL of :class:`~archsim.templates.pim.params.PimParams`: one bank's near-bank unit."""

    template = "pim"
    toplevel = "archsim_pim_bank"
    banks_option = "banks"
    driver = "rtl.pim.driver:run_job"
    host_interface = True  # the default top (one bank, top "host"): rtl.pim.host_driver, host ports only

    def __init__(self, params: Any, options: dict | None = None):
        options = dict(options or {})
        banks = options.pop("banks", 1)
        stages = {k: options.pop(k) for k in ("mul_stages", "add_stages") if k in options}
        top = options.pop("top", DEFAULT_TOP if banks == 1 else "unit")
        mul = options.pop("mul", "dsp")
        buffer = options.pop("buffer", "inferred")
        multiplier = options.pop("multiplier", None)  # the CLI's --multiplier, as the other templates take it
        if multiplier is not None:
            if multiplier not in MULTIPLIER_MULS:
                raise ValueError(f"multiplier: expected one of {', '.join(MULTIPLIER_MULS)}, got {multiplier!r}")
            if mul != "dsp" and mul != MULTIPLIER_MULS[multiplier]:
                raise ValueError(f"multiplier {multiplier!r} and mul {mul!r}: give one of them")
            mul = MULTIPLIER_MULS[multiplier]
            if mul != "dsp" and params.mac_precision != "bf16":
                raise ValueError(f"multiplier {multiplier!r}: the {params.mac_precision} datapath has exact products "
                                 f"(no multiplier choice); it takes 'inferred'")
        if options:
            raise ValueError(f"{', '.join(sorted(options))}: not an option of the pim RTL "
                             f"(it has banks, buffer, mul_stages, add_stages, mul, multiplier, top)")
        if mul not in MULS or (mul != "dsp" and params.mac_precision != "bf16"):
            raise ValueError(f"mul: expected one of {', '.join(MULS)} (bf16; int8 takes 'dsp'), got {mul!r}")
        #: the bf16 multipliers' significand multiplier ("dsp" default, "lut": fabric, "dsp_reg": ECP5 blocks)
        self.mul = mul
        #: the bank's input buffer ("inferred" default, "ecp5_outreg": DP16KD blocks with their output register)
        self.buffer = buffer
        if top not in TOPS:
            raise ValueError(f"top: expected one of {', '.join(TOPS)}, got {top!r}")
        if top == "host" and banks != 1:
            raise ValueError("top: the host engine holds one bank unit (banks=1); use top='unit' for a channel")
        #: "host": the bank unit behind the host signature (rtl.pim.host_engine); "unit": the bare unit
        self.top = top
        for key, v in [("banks", banks)] + list(stages.items()):
            if isinstance(v, bool) or not isinstance(v, int) or v < (1 if key == "banks" else 0):
                raise ValueError(f"{key}: expected a {'positive' if key == 'banks' else 'non-negative'} integer, "
                                 f"got {v!r}")
        super().__init__(params, dict({"banks": banks} if banks != 1 else {}, **stages,
                                      **({"top": top} if top != DEFAULT_TOP and banks == 1 else {}),
                                      **({"mul": mul} if mul != "dsp" else {}),
                                      **({"buffer": buffer} if buffer != "inferred" else {})))
        self.banks = banks
        if banks != 1:
            self.toplevel = "archsim_pim_channel"
        if top == "host":
            self.toplevel, self.driver, self.has_cycle_counter = "archsim_pim_host", HOST_DRIVER, True
        try:
            check_channel(params, banks, stages.get("mul_stages"), stages.get("add_stages"))
        except ValueError as err:
            raise SpecError(f"pim RTL: {err}") from None
        ms, ad = default_stages(params)
        #: the MAC datapath's pipeline depths (options, else the deepest default that fits tCL)
        self.mul_stages, self.add_stages = stages.get("mul_stages", ms), stages.get("add_stages", ad)
        try:
            check_buffer(params, buffer, mac_latency(params.mac_precision, params.column_elements, self.mul_stages,
                                                     self.add_stages), banks != 1)
        except ValueError as err:
            raise SpecError(f"pim RTL: {err}") from None
        if top == "host" and array_latency(params, self.mul_stages, self.add_stages) < 1:
            raise SpecError(f"pim RTL: mul_stages/add_stages: the host engine's DRAM array memory needs >= 1 cycle "
                            f"of array latency (tCL + mac_pipeline_cycles - 2 - (accumulator_interleave - 1) - the "
                            f"MAC latency), got {array_latency(params, self.mul_stages, self.add_stages)}")

    def host_interface_problem(self) -> str:
        if self.top != "host":
            what = f"a channel of {self.banks} bank units" if self.banks != 1 else "the bare bank unit (top: unit)"
            return (f"the pim RTL as {what} keeps the unit's DRAM command ports, not the host interface; "
                    "the host engine holds one bank (banks 1, top: host)")
        return super().host_interface_problem()

    @staticmethod
    def target_options(params: Any, target: str) -> dict[str, Any]:
        """Synthesis counts the bank unit's logic: the host engine's DRAM-array memory stands in for a DRAM
        macro (and would be a million flip-flops in the generic flow)."""
        return {"top": "unit"}

    def sim_sources(self) -> dict[str, str]:
        """The ECP5 blocks' simulation models beside the Verilog: ``mul="dsp_reg"``'s MULT18X18D,
        ``buffer="ecp5_outreg"``'s DP16KD."""
        from rtl.lib.ecp5 import dp16kd_sim_model, mult18x18d_sim_model

        out = {}
        if self.mul == "dsp_reg":
            out["MULT18X18D_model.v"] = mult18x18d_sim_model()
        if self.buffer == "ecp5_outreg":
            out["DP16KD_model.v"] = dp16kd_sim_model()
        return out

    def component(self):
        if self.top == "host":
            from rtl.pim.host_engine import PimHostEngine

            return PimHostEngine(self.params, self.mul_stages, self.add_stages, mul=self.mul, buffer=self.buffer)
        if self.banks == 1:
            return PimBankUnit(self.params, False, self.mul_stages, self.add_stages, self.mul, self.buffer)
        return PimChannelUnit(self.params, self.banks, self.mul_stages, self.add_stages, self.mul)

    def config_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        out = asdict(self.params)
        out.update(column_elements=self.params.column_elements, row_columns=self.params.row_columns,
                   accumulator="int32" if self.params.mac_precision == "int8" else "fp32",
                   mul_stages=self.mul_stages, add_stages=self.add_stages,
                   mac_latency=mac_latency(self.params.mac_precision, self.params.column_elements,
                                           self.mul_stages, self.add_stages),
                   array_latency=self.array_latency())
        if self.mul != "dsp":
            out["mul"] = self.mul
        if self.buffer != "inferred":
            out["buffer"] = self.buffer
        if self.banks != 1:
            out["rtl_banks"] = self.banks
        return out

    def ports(self) -> list[Port]:
        if self.top == "host":
            comp = self.component()
            comp._MustUse__silence = True  # built only to read its signature
            return self.ports_of(comp.signature, HOST_DOCS)
        sig = pim_signature(self.params) if self.banks == 1 else channel_signature(self.params, self.banks)
        return self.ports_of(sig, PORT_DOCS)

    def description(self) -> str:
        p = self.params
        what = "near-bank unit" if self.banks == 1 else f"channel of {self.banks} near-bank units"
        return (f"archsim pim {what} ({p.column_elements} {p.mac_precision} lanes, "
                f"{p.acc_registers} accumulators)")

    # ---------------------------------------------------------------- co-simulation
    def cosim_items(self, source: str = "random", **kwargs) -> list:
        from rtl.pim.sources import cosim_items

        fits = self.host_fits if self.top == "host" else None  # random tiles sized to the engine they drive
        return cosim_items(self.params, source, banks=self.banks, fits=fits, **kwargs)

    #: the bank unit has no tile-cycle counter: its cycles are the last output / ready edge on the ports
    has_cycle_counter = False

    def rtl_tiles(self, result):
        return result.get("streams", [])

    def tile_models(self, tile, ops):
        from archsim.templates.pim.commands import run_detailed
        from archsim.templates.pim.fast import tile_cycles
        from archsim.templates.pim.values import gemv_dot

        p = self.params
        w = np.asarray(ops["weight"])
        x = np.asarray(ops["input"]).reshape(-1)
        det_vals, det_cycles, _cmds = run_detailed(tile, p, w, x)
        fast = gemv_dot(w, x, p.column_elements, p.mac_precision, p.accumulator_interleave)
        return TileModels(fast, tile_cycles(tile, p), det_vals, det_cycles)

    def rtl_cycles(self, g):
        if self.top == "host":  # the hardware's counter
            return g.get("cycles")
        last_out = max([o[0] for o in g["outputs"]] + [0])
        return max(last_out, g.get("ready_at") or 0)

    def rtl_tile_values(self, tile, g):
        return self.rtl_values(tile, g)

    def comparable(self, tile, values, rtl=False):
        return _bits(values, self.params.mac_precision)

    def value_name(self, at):
        return f"row {at[1]}"

    def tile_extra(self, tile, ops, g):
        return super().tile_extra(tile, ops, g) if self.top == "host" else {"ready_at": g.get("ready_at")}

    def tile_flag(self, g, extra):
        if g.get("error") and not g.get("error_before"):
            extra["trace"] = g.get("trace", [])
            return "the unit flagged a timing violation (error)"
        return ""

    @staticmethod
    def label(tile) -> str:
        ref = f" ref@{tile.ref_due}" if tile.ref_due < (1 << 40) else ""
        return f"gemv rows={tile.rows} k={tile.k}{ref}"

    def stream(self, tile, ops) -> dict[str, Any]:
        """The job entry of one tile: the timed command stream and the DRAM array's contents."""
        from archsim.templates.pim.commands import place, program, schedule

        p = self.params
        if tile.kind != "gemv" or tile.mode != "dot" or tile.banks != self.banks:
            raise ValueError(f"pim RTL co-simulation replays a dot-mode GEMV on {self.banks} bank(s), got {tile}")
        E, lb, prec = p.column_elements, LANE_BITS[p.mac_precision], p.mac_precision
        cmds, _cycles = schedule(tile, p)
        prog = program(tile, p)
        mem = lane_bits_of(place(tile, p, np.asarray(ops["weight"])), prec)  # [banks, dram rows, row elements]
        array = []
        for r in range(mem.shape[1]):
            for c in range(p.row_columns):
                word = 0
                for b in range(tile.banks):  # bank b's column at bits [b*E*lb, (b+1)*E*lb)
                    word |= _pack(mem[b, r, c * E:(c + 1) * E], lb) << (b * E * lb)
                if word:
                    array.append([r, c, word])
        x = lane_bits_of(np.asarray(ops["input"]).reshape(-1), prec)
        xp = np.zeros(len(x) + 2 * p.input_buffer_bytes, np.int64)
        xp[:len(x)] = x
        it = iter(prog)
        out, staging_cols = [], []
        for c in cmds:
            src = None if c.cmd == "REF" else next(it)[6]
            if c.cmd in ("ACT", "PRE", "REF"):
                out.append([c.time, c.cmd, c.row, 0, 0, 0])
            elif c.cmd == "MAC":
                out.append([c.time, c.cmd, c.col, c.acc, c.in_off // E, 0])
            elif c.cmd == "GBWR":
                out.append([c.time, c.cmd, c.col, 0, 0, _pack(xp[src:src + E], lb)])
                staging_cols.append(src // E)  # the input column copied (the host engine's staging address)
            else:  # RDACC; a channel gets the group's rows per bank (mod acc_registers: 0 = all)
                rg = src[1] % p.acc_registers if self.banks != 1 else 0
                out.append([c.time, c.cmd, c.col, rg, 0, 0])
        return {"commands": out, "array": array, "tail": p.rdacc_latency + p.tRP + p.tRFC + 4,
                "gbwr_src": staging_cols,
                "dram_rows": int(mem.shape[1]), "input": [_pack(xp[c * E:(c + 1) * E], lb)
                                                          for c in range(max(staging_cols, default=-1) + 1)]}

    def array_latency(self) -> int:
        """Cycles from ``dram_rd`` to the column on ``dram_rdata`` (the rest of tCL is the MAC pipeline)."""
        return array_latency(self.params, self.mul_stages, self.add_stages)

    def make_job(self, items) -> dict[str, Any]:
        if self.top == "host":
            return self._host_job(items)
        return {"driver": self.driver, "array_latency": self.array_latency(),
                "streams": [self.stream(tile, ops) for tile, ops in items]}

    def host_needs(self, tile) -> dict[str, int]:
        """What the host engine must hold for ``tile``, from its timed stream alone (no operands):
        command entries (one per issue cycle, plus the end entry), DRAM rows, input columns staged,
        RDACC columns."""
        from archsim.templates.pim.commands import program, schedule

        p = self.params
        cmds, _cycles = schedule(tile, p)
        prog = program(tile, p)
        macs = [c for c in prog if c[0] == "MAC"]
        gbwr_cols = [c[6] // p.column_elements for c in prog if c[0] == "GBWR"]
        return {"cmd_depth": len({c.time for c in cmds}) + 1, "array_rows": 1 + max((c[2] for c in macs), default=0),
                "staging_cols": max(gbwr_cols, default=-1) + 1, "out_depth": sum(c[0] == "RDACC" for c in prog)}

    def host_fits(self, tile) -> bool:
        """Whether the host engine (its default sizes) holds ``tile``."""
        held = self._host_sizes
        return all(v <= held[k] for k, v in self.host_needs(tile).items())

    @functools.cached_property
    def _host_sizes(self) -> dict[str, int]:
        from rtl.pim.host_engine import PimHostEngine

        eng = PimHostEngine(self.params, self.mul_stages, self.add_stages)
        eng._MustUse__silence = True  # only its sizes are read
        return {"cmd_depth": eng.cmd_depth, "array_rows": eng.array_rows, "staging_cols": eng.staging_cols,
                "out_depth": eng.out_depth}

    def _host_job(self, items) -> dict[str, Any]:
        """The host engine's job: per tile the staging and array contents and the command entries."""
        from rtl.lib.host import payload_shape
        from rtl.pim.host_engine import AT_BITS, PimHostEngine

        eng = PimHostEngine(self.params, self.mul_stages, self.add_stages)
        eng._MustUse__silence = True  # only its sizes are read
        rows = 1 << eng.col_bits
        codes = {"ACT": ("row", 1), "PRE": ("row", 2), "REF": ("row", 3), "MAC": ("col", 1), "GBWR": ("col", 2),
                 "RDACC": ("col", 3)}
        tiles = []
        for n, (tile, ops) in enumerate(items):
            s = self.stream(tile, ops)
            srcs = iter(s["gbwr_src"])
            by_at: dict[int, dict] = {}
            for t, cmd, addr, acc, inp, _w in s["commands"]:
                e = by_at.setdefault(t, {"at": t})
                bus, code = codes[cmd]
                if bus == "row":
                    e.update(row_cmd=code, row_addr=addr)
                else:
                    e.update(col_cmd=code, col_addr=addr, col_acc=acc, col_src=next(srcs) if cmd == "GBWR" else inp)
            words = {(r, c): w for r, c, w in s["array"]}
            need = {"cmd_depth": len(by_at) + 1, "array_rows": s["dram_rows"], "staging_cols": len(s["input"]),
                    "out_depth": sum(c[1] == "RDACC" for c in s["commands"])}
            assert need == self.host_needs(tile), "host_needs disagrees with the job's stream"
            for key, v in need.items():
                if v > getattr(eng, key):
                    raise SpecError(f"pim host engine: tile {n} ({self.label(tile)}) needs {key} {v}, the engine "
                                    f"holds {getattr(eng, key)} (use fewer rows per tile, e.g. a smaller --max-stream)")
            if max(by_at, default=0) >= 1 << AT_BITS:
                raise SpecError(f"pim host engine: tile {n} is longer than 2**{AT_BITS} cycles")
            last = max(by_at, default=0)
            tiles.append({"staging": s["input"], "entries": [by_at[t] for t in sorted(by_at)],
                          "array": [words.get((r, c), 0) for r in range(s["dram_rows"]) for c in range(rows)],
                          "rdaccs": need["out_depth"], "limit": 20 * (last + s["tail"]) + 20000})
        members = eng.signature.members
        layout = [(name, f.offset, f.width) for name, f in eng.layout]
        wr = [(name, f.offset, f.width) for name, f in payload_shape(members["wr"])]
        return {"driver": self.driver, "command_layout": layout, "write_layout": wr, "rd_bits": eng.out_bits,
                "tiles": tiles}

    def rtl_values(self, tile, res) -> np.ndarray:
        """The weight rows' results in the order the stream's RDACCs read them out."""
        from archsim.templates.pim.commands import program

        p = self.params
        lanes = p.column_bytes // 4
        words = []
        for _cycle, word in res["outputs"]:
            words.extend(_unpack_words(word, lanes, p.mac_precision))
        groups = []  # (first row, rows, RDACC columns) of each accumulator group, in program order
        for c in program(tile, p):
            if c[0] == "RDACC":
                if not groups or groups[-1][0] != c[6]:
                    groups.append([c[6], 0])
                groups[-1][1] += 1
        nb = tile.banks
        out = np.zeros((nb, tile.rows), np.int64 if p.mac_precision == "int8" else np.float32)
        pos = 0
        for (g0, rg), ncols in groups:
            vals = words[pos:pos + ncols * lanes]
            if len(vals) < nb * rg:
                raise ValueError(f"{len(words)} accumulators read out, expected more")
            for b in range(nb):  # bank-major: word b*rg + r is bank b's row g0 + r
                out[b, g0:g0 + rg] = vals[b * rg:(b + 1) * rg]
            pos += ncols * lanes
        return out

