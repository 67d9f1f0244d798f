"""Run SCALE-Sim v3 and save its per-layer compute cycles as test reference data.

SCALE-Sim (scalesim-project/SCALE-Sim, PyPI ``scalesim``) is an independent
oracle for the systolic template's fold timing. This script runs it, in its
default stall-free mode (``InterfaceBandwidth = CALC``), on every topology in
``/work/shared/scalesim_topologies`` (or ``--topologies``) for each array size
and dataflow, and writes ``archsim/validate/scalesim_reference/<topology>.csv`` with
one row per (array, dataflow, layer)::

    rows,cols,dataflow,layer,total_cycles

``total_cycles`` is the "Total Cycles" column of SCALE-Sim's
``COMPUTE_REPORT.csv``. SCALE-Sim itself runs in the venv given by
``--venv`` (create it with ``python3 -m venv /tmp/scalesim-venv &&
/tmp/scalesim-venv/bin/pip install scalesim==3.0.0 "numpy<2.3"``).

Usage::

    python bench/scalesim_reference.py --venv /tmp/scalesim-venv [--arrays 32 128] [--only gemm256]

Rows already in an output file for configurations not run now are kept, so
array sizes can be run separately (SCALE-Sim takes ~10-40 min per
configuration of a ResNet on one core).
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TOPOLOGIES = Path("/work/shared/scalesim_topologies")
OUT_DIR = REPO / "archsim" / "validate" / "scalesim_reference"

# GEMM-form topologies (``-i gemm``: Layer, M, N, K); all others are conv form.
GEMM_TOPOLOGIES = {"gemm256", "vit_s"}

CONFIG = """[general]
run_name = archsim_ref

[run_presets]
InterfaceBandwidth = CALC
UseRamulatorTrace = False

[architecture_presets]
ArrayHeight = {rows}
ArrayWidth = {cols}
IfmapSramSzkB = 64
FilterSramSzkB = 64
OfmapSramSzkB = 64
IfmapOffset = 0
FilterOffset = 10000000
OfmapOffset = 20000000
Dataflow = {dataflow}
Bandwidth = 10
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
IfmapSRAMBankBandwidth = 10
IfmapSRAMBankNum = 10
IfmapSRAMBankPort = 2
FilterCustomLayout = False
FilterSRAMBankBandwidth = 10
FilterSRAMBankNum = 10
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
SparseRep = ellpack_block
OptimizedMapping = false
BlockSize = 8
RandomNumberGeneratorSeed = 40
"""

# Runs inside the SCALE-Sim venv. save_disk_space=True: no per-cycle traces on disk.
RUNNER = """
import sys
from scalesim.scale_sim import scalesim
cfg, topo, out, gemm = sys.argv[1:5]
s = scalesim(save_disk_space=True, verbose=False, config=cfg, topology=topo,
             layout=topo, input_type_gemm=(gemm == "1"))
s.run_scale(top_path=out)
"""


def run_one(venv: Path, topo: Path, rows: int, cols: int, dataflow: str) -> list[tuple[str, int]]:
    """Run SCALE-Sim once; return [(layer name, Total Cycles)] in layer order."""
    with tempfile.TemporaryDirectory(prefix="scalesim-") as tmp:
        cfg = Path(tmp) / "archsim.cfg"
        cfg.write_text(CONFIG.format(rows=rows, cols=cols, dataflow=dataflow))
        gemm = "1" if topo.stem in GEMM_TOPOLOGIES else "0"
        subprocess.run(
            [str(venv / "bin" / "python"), "-c", RUNNER, str(cfg), str(topo), tmp, gemm],
            check=True, cwd=tmp, stdout=subprocess.DEVNULL,
        )
        reports = list(Path(tmp).rglob("COMPUTE_REPORT.csv"))
        if len(reports) != 1:
            raise RuntimeError(f"expected one COMPUTE_REPORT.csv under {tmp}, found {reports}")
        names = layer_names(topo)
        out = []
        with open(reports[0], newline="") as f:
            reader = csv.reader(f)
            header = [h.strip() for h in next(reader)]
            col = header.index("Total Cycles")
            for row in reader:
                if not row or not row[0].strip():
                    continue
                layer_id = int(row[0])
                out.append((names[layer_id], int(float(row[col]))))
        return out


def layer_names(topo: Path) -> list[str]:
    names = []
    for i, line in enumerate(topo.read_text().splitlines()):
        if i == 0 or not line.strip():
            continue
        names.append(line.split(",")[0].strip())
    return names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", type=Path, default=Path("/tmp/scalesim-venv"))
    ap.add_argument("--topologies", type=Path, default=DEFAULT_TOPOLOGIES)
    ap.add_argument("--arrays", type=int, nargs="+", default=[32, 128], help="square array sizes")
    ap.add_argument("--dataflows", nargs="+", default=["os", "ws", "is"])
    ap.add_argument("--only", nargs="*", help="topology stems to run (default: all)")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    args = ap.parse_args(argv)

    args.out.mkdir(parents=True, exist_ok=True)
    for topo in sorted(args.topologies.glob("*.csv")):
        if args.only and topo.stem not in args.only:
            continue
        out_file = args.out / f"{topo.stem}.csv"
        rows_out: list[tuple[int, int, str, str, int]] = []
        for size in args.arrays:
            for df in args.dataflows:
                t0 = time.time()
                for name, cycles in run_one(args.venv, topo, size, size, df):
                    rows_out.append((size, size, df, name, cycles))
                print(f"{topo.stem} {size}x{size} {df}: {time.time() - t0:.0f} s", flush=True)
        # keep rows of configurations not re-run now (e.g. 32x32 and 128x128 run separately)
        done = {(r[0], r[1], r[2]) for r in rows_out}
        if out_file.exists():
            with open(out_file, newline="") as f:
                old = [(int(r["rows"]), int(r["cols"]), r["dataflow"], r["layer"], int(r["total_cycles"]))
                       for r in csv.DictReader(f)]
            rows_out = [r for r in old if (r[0], r[1], r[2]) not in done] + rows_out
        rows_out.sort(key=lambda r: (r[0], r[1], ["os", "ws", "is"].index(r[2])))  # stable: layer order kept
        with open(out_file, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["rows", "cols", "dataflow", "layer", "total_cycles"])
            w.writerows(rows_out)
        print(f"wrote {out_file.relative_to(REPO) if out_file.is_relative_to(REPO) else out_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
