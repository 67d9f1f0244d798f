"""SCALE-Sim v3 cycles: archsim's systolic presets against SCALE-Sim's own output.

The published figure is SCALE-Sim 3.0.0's per-layer "Total Cycles" (stall-free
CALC mode, 64 kB SRAMs per operand) on its own topology files, as it printed
them: ``archsim/validate/scalesim_reference/<topology>.csv``, produced by
``bench/scalesim_reference.py`` (never archsim's output). archsim runs the same
topology file through its SCALE-Sim importer on the matching
``scalesim-<N>x<N>-<df>`` preset, end to end (``archsim.simulate``), and its
cycles are compared in SCALE-Sim's convention (the index of a layer's last
cycle: archsim's count minus one). One claim per (topology, array, dataflow):
the sum over layers, held to exact agreement; the note counts the layers that
agree one by one.
"""
from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

from archsim.validate import Claim

#: SCALE-Sim's output and the topology files it ran on (a source checkout's test data)
REFERENCE_DIR = Path(__file__).resolve().parent / "scalesim_reference"
SOURCE = ("SCALE-Sim 3.0.0 (scalesim-project/SCALE-Sim) COMPUTE_REPORT.csv 'Total Cycles', stall-free CALC mode, "
          "64 kB SRAMs; archsim/validate/scalesim_reference/{topology}.csv (bench/scalesim_reference.py)")


def reference_cycles(reference_dir: Path = REFERENCE_DIR) -> dict[tuple[str, int, str], dict[str, int]]:
    """(topology, array size, dataflow) -> {layer: SCALE-Sim total cycles}, from the reference CSVs."""
    from archsim.errors import ArchsimError

    files = sorted(reference_dir.glob("*.csv"))
    if not files:
        raise ArchsimError(f"scalesim: no SCALE-Sim reference data in {reference_dir} "
                           "(the package ships it; bench/scalesim_reference.py regenerates it)")
    out: dict[tuple[str, int, str], dict[str, int]] = defaultdict(dict)
    for path in files:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row["rows"] != row["cols"]:
                    raise ArchsimError(f"{path}: rows {row['rows']} != cols {row['cols']}; "
                                       "expected square arrays (the scalesim-NxN presets)")
                out[(path.stem, int(row["rows"]), row["dataflow"])][row["layer"]] = int(row["total_cycles"])
    return dict(out)


def archsim_cycles(topology: Path, array: int, dataflow: str) -> dict[str, int]:
    """{layer: cycles in SCALE-Sim's convention} of archsim on the ``scalesim-<N>x<N>-<df>`` preset."""
    import archsim

    result = archsim.simulate(str(topology), f"scalesim-{array}x{array}-{dataflow}")
    return {layer.name: layer.cycles - 1 for layer in result.layers}


def claims(reference_dir: Path = REFERENCE_DIR) -> list[Claim]:
    out = []
    for (topology, array, dataflow), theirs in sorted(reference_cycles(reference_dir).items()):
        ours = archsim_cycles(reference_dir / "topologies" / f"{topology}.csv", array, dataflow)
        equal = sum(ours.get(layer) == cycles for layer, cycles in theirs.items())
        missing = sorted(set(theirs) - set(ours))
        note = f"{equal}/{len(theirs)} layers equal"
        if missing:
            note += f"; archsim has no layer {', '.join(missing[:3])}"
        out.append(Claim(
            group="scalesim",
            name=f"{topology} {array}x{array} {dataflow.upper()} total cycles",
            ours=float(sum(ours.get(layer, float("nan")) for layer in theirs)),
            published=float(sum(theirs.values())),
            rel_tol=0.0,
            source=SOURCE.format(topology=topology),
            unit="cycles",
            note=note,
        ))
    return out
