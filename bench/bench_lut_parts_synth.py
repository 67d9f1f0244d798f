"""ECP5 resources and Fmax of two parts of the LUT core's A16 timing build, alone (issue 23 item 6).

The full W2 x A16 N2 build (``bench_lut_fmax.py --interleave 16``) takes 20-40 min of wall time on
the shared machine; these unit-level builds show what each round-3e change does to its own part:

- ``adder``: the core's pipelined fp32 adder (:func:`rtl.lut.precompute.fp32_adder`, 11 stages, as a
  D = 16 build's precompute and interleaved adds), inputs registered, ``--as-data`` off (round 3d's
  :class:`rtl.lib.units.Fp32AddFinite`) and on (the library's fp32 :class:`rtl.lib.units.FpAdd` with
  its forcing as data). Also counts the flip-flops whose LSR (reset) is driven by logic, not a port.
- ``lookup``: the fp lookup stage of ``--lanes`` lanes (``tile_m`` 2 rows x ``lanes / 2`` columns,
  K 4, symmetric: E = 8 fp32 entries a row, registered) from the weight buffer's read data to the
  lookup registers: round 3d (the weight word registered, the index formed after it, an 8:1 mux of
  32 bits + the sign select) or round 3e (:meth:`rtl.lut.design.LutCore._lane_lookup`: each lane's
  index registered, one copy per 8 entry bits).

    ARCHSIM_YOSYS=native python bench/bench_lut_parts_synth.py --part adder|lookup [--lanes 16] [--workdir DIR]

yosys ``synth_ecp5`` + nextpnr-ecp5 (85k, out of context, ``--freq 200``, seed 1), cached by Verilog.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from amaranth import Array, Cat, Module, Mux, Signal  # noqa: E402
from amaranth.back import verilog  # noqa: E402
from amaranth.lib import wiring  # noqa: E402
from amaranth.lib.wiring import In, Out  # noqa: E402

from rtl.synth import synthesize_verilog  # noqa: E402

K, E, EB, TM = 4, 8, 32, 2


class LookupStage(wiring.Component):
    """The fp lookup of ``lanes`` lanes: registered entries in, lookup registers out."""

    def __init__(self, lanes: int, per_lane_selects: bool):
        self.tn, self.per_lane = lanes // TM, per_lane_selects
        super().__init__({"wdata": In(self.tn * K), "tab": In(TM * E * EB), "out": Out(lanes * EB)})

    def elaborate(self, platform):
        from rtl.lut.design import LutConfig, LutCore

        m = Module()
        tab = Signal(TM * E * EB, name="tab_q")  # the table register (as the build's)
        m.d.sync += tab.eq(self.tab)
        entries = [[tab[(r * E + e) * EB:(r * E + e + 1) * EB] for e in range(E)] for r in range(TM)]
        cfg = LutConfig(TM, self.tn, K, True, 2, ("int2",), ("fp16",), 41, 34, lookup_interleave=16)
        core = LutCore(cfg)
        core._MustUse__silence = True  # only its lane lookup is built
        wword = Signal(self.tn * K, name="t2_wword")
        m.d.sync += wword.eq(self.wdata)
        outs = []
        for col in range(self.tn):
            for r in range(TM):
                t_raw = Signal(EB, name=f"t_r{r}_c{col}")
                if self.per_lane:
                    top = core._lane_lookup(m, self.wdata[col * K:(col + 1) * K], entries[r], t_raw, r, col)
                else:
                    idx = wword[col * K:(col + 1) * K]
                    top = idx[K - 1]
                    m.d.comb += t_raw.eq(Array(entries[r])[Mux(top, idx[:K - 1], ~idx[:K - 1])])
                tv = Signal(EB, name=f"l_fp_r{r}_c{col}_t")
                m.d.sync += tv.eq(Mux(top, t_raw, t_raw ^ (1 << 31)))
                outs.append(tv)
        m.d.comb += self.out.eq(Cat(*outs))
        return m


class AdderRegistered(wiring.Component):
    def __init__(self, as_data: bool):
        from rtl.lut.precompute import fp32_adder, fp_add_max_stages

        self.add = fp32_adder(fp_add_max_stages(), as_data)
        super().__init__({"a": In(32), "b": In(32), "out": Out(32)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.add = add = self.add
        a, b = Signal(32, name="a_q"), Signal(32, name="b_q")
        m.d.sync += [a.eq(self.a), b.eq(self.b)]
        m.d.comb += [add.a.eq(a), add.b.eq(b), add.in_valid.eq(1), self.out.eq(add.out)]
        return m


def logic_driven_resets(netlist: Path) -> int:
    """Flip-flops whose LSR is a net that is not a top-level port (a reset yosys built from logic)."""
    d = json.loads(netlist.read_text())
    n = 0
    for mod in d["modules"].values():
        ports = {b for p in mod.get("ports", {}).values() for b in p["bits"]}
        for c in mod.get("cells", {}).values():
            b = c["connections"].get("LSR", ["0"])[0] if c["type"] == "TRELLIS_FF" else "0"
            n += not isinstance(b, str) and b not in ports
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("adder", "lookup"), required=True)
    ap.add_argument("--lanes", type=int, default=16, help="lookup: lanes (2 rows; default 16, the preset's M2 N8)")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--workdir", required=True, help="keep each build's files under DIR/<part>_<variant>")
    args = ap.parse_args(argv)
    for variant in ("round 3d", "round 3e"):
        new = variant == "round 3e"
        top = AdderRegistered(new) if args.part == "adder" else LookupStage(args.lanes, new)
        work = Path(args.workdir) / f"{args.part}_{variant[-2:]}"
        r = synthesize_verilog(verilog.convert(top, name="part", emit_src=False), "part", target="ecp5", pnr=True,
                               timeout_s=args.timeout, workdir=work, netlist=True)
        cp = r.get("critical_path", {})
        lsr = logic_driven_resets(work / "netlist.json") if (work / "netlist.json").exists() else "?"
        print(f"{args.part} {variant}: {r['luts']:,} LUT4, {r['ffs']:,} FF, {lsr} logic-driven resets, "
              f"{r['fmax_mhz']} MHz; {cp.get('from')} -> {cp.get('to')} ({cp.get('logic_ns')} ns logic + "
              f"{cp.get('routing_ns')} ns routing)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
