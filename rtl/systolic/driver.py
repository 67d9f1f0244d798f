"""cocotb driver of the systolic design (runs inside the simulator).

``run_job(dut, job)`` replays ``job["tiles"]`` on the top module: it packs
as many tiles as fit into the local buffers (a *batch*), writes their
operands through the write port, issues their commands back to back (so a
``preload_hidden`` tile's shadow load overlaps the previous tile, as on the
real array), waits for ``busy`` to fall, and reads the results back. It uses
only the host signature (:mod:`rtl.lib.host`), so it drives any RTL that
implements it (``archsim rtl cosim --verilog``). A monitor samples ``done``
every cycle and reads the hardware's ``tile_cycles`` counter the cycle after:
that count is the tile's measured cycles. A design that also has a
``tile_start`` port (archsim's own) is timed from its ports too
(``port_cycles``), and the checker asks the two to agree.

Buffer layout per tile (lane = array row for "left", array column for
"top" and "out"; ``a`` = address offset from the tile's base)::

    dataflow  left lane r, addr a   top lane c, addr a   out lane c, addr a
    ws        A[a, r]               W[a, c]              out[a, c]
    is        W[r, a]               A[c, a]              out[c, a]
    os        A[r, a]               W[a, c]              out[a, c]
"""
from __future__ import annotations

from rtl.cosim.direct_host import host_for
from rtl.design import pack_lanes

DATAFLOW_CODES = {"ws": 0, "os": 1, "is": 2}
#: the ``wr`` stream's buffers (``buf`` codes)
BUFFERS = {"left": 0, "top": 1, "out": 2}


_pack = pack_lanes  # one word of lanes (rtl.design)


def _unpack(word: int, lanes: int, bits: int) -> list[int]:
    out = []
    for lane in range(lanes):
        v = (word >> (lane * bits)) & ((1 << bits) - 1)
        out.append(v - (1 << bits) if v >> (bits - 1) else v)
    return out


def tile_layout(tile: dict) -> dict[str, list[list[int]]]:
    """Rows (one per address) to write into the left/top buffers, and the out rows to read."""
    df, A, W = tile["dataflow"], tile["input"], tile["weight"]
    m, k, n = tile["m"], tile["k"], tile["n"]
    if df == "ws":
        left = [A[i][:k] for i in range(m)]
        top = [W[r][:n] for r in range(k)]
        out_rows = m
    elif df == "is":
        left = [[W[r][j] for r in range(k)] for j in range(n)]
        top = [[A[c][r] for c in range(m)] for r in range(k)]
        out_rows = n
    else:
        left = [[A[i][t] for i in range(m)] for t in range(k)]
        top = [W[t][:n] for t in range(k)]
        out_rows = m
    return {"left": left, "top": top, "out_rows": out_rows}


def out_rows_to_tile(tile: dict, rows: list[list[int]]) -> list[list[int]]:
    """Output buffer rows -> out[m x n]."""
    m, n = tile["m"], tile["n"]
    if tile["dataflow"] == "is":  # lane c = out row c, address = out column
        return [[rows[j][i] for j in range(n)] for i in range(m)]
    return [row[:n] for row in rows[:m]]


def psum_rows(tile: dict) -> list[list[int]]:
    P = tile["psum"]
    if tile["dataflow"] == "is":
        return [[P[i][j] for i in range(tile["m"])] for j in range(tile["n"])]
    return [list(r) for r in P]


async def run_job(dut, job: dict) -> dict:
    cfg = job["config"]
    R, C = cfg["rows"], cfg["cols"]
    lw = max(cfg["input_bits"], cfg["weight_bits"])
    ab = cfg["acc_bits"]
    P = cfg["mult_pipeline_stages"]
    depth = {"left": cfg["left_depth"], "top": cfg["top_depth"], "out": cfg["out_depth"]}
    tiles = job["tiles"]

    host = host_for(dut, job, BUFFERS)  # on the ports, or through the AXI wrapper (rtl.lib.axi)
    problem = await host.start(C * ab)
    if problem:
        return {"error": problem, "tiles": []}

    results: list[dict] = []
    i = 0
    while i < len(tiles):
        # ---- plan a batch that fits the buffers ----
        batch, used = [], {"left": 0, "top": 0, "out": 0}
        for j in range(i, len(tiles)):
            lay = tile_layout(tiles[j])
            chained = bool(tiles[j].get("chain")) and bool(batch)
            need = {"left": len(lay["left"]), "top": R if tiles[j]["dataflow"] != "os" else len(lay["top"]),
                    "out": 0 if chained else lay["out_rows"]}
            if any(used[b] + need[b] > depth[b] for b in used) or len(batch) == (host.max_batch or -1):
                break
            base = dict(used)
            if chained:  # accumulate in place onto the previous tile's results
                base["out"] = batch[-1][2]["out"]
            lay["chained"] = chained
            for b in used:
                used[b] += need[b]
            batch.append((j, lay, base))
        if not batch:
            return {"error": f"tile {i} does not fit the RTL buffers ({depth})", "tiles": results}

        # ---- load operands (and initial partial sums) ----
        for j, lay, base in batch:
            await host.write_rows("left", base["left"], [_pack(row, lw) for row in lay["left"]])
            await host.write_rows("top", base["top"], [_pack(row, lw) for row in lay["top"]])
            if tiles[j]["accumulate"] and not lay["chained"]:
                await host.write_rows("out", base["out"], [_pack(row, ab) for row in psum_rows(tiles[j])])

        # ---- run the batch back to back ----
        host.begin_batch()
        budget = 1000
        for j, lay, base in batch:
            t = tiles[j]
            budget += 4 * (R + t["m"] + t["k"] + t["n"] + R + C + P)
            await host.issue({
                "dataflow": DATAFLOW_CODES[t["dataflow"]],
                "m": t["m"], "k": t["k"], "n": t["n"],
                "accumulate": int(t["accumulate"]),
                "preload_hidden": int(t.get("preload_hidden", False)),
                "left_base": base["left"], "top_base": base["top"], "out_base": base["out"],
            })
        if not await host.wait_idle(budget):
            return {"error": f"design still busy {budget} cycles after the commands of tiles {i}..{batch[-1][0]}",
                    "tiles": results}
        timing = await host.batch_timing(len(batch))

        # ---- read back (a tile whose results the next tile accumulated onto is gone: skip it) ----
        for idx, (j, lay, base) in enumerate(batch):
            overwritten = idx + 1 < len(batch) and batch[idx + 1][1]["chained"]
            words = await host.read_rows(base["out"], 0 if overwritten else lay["out_rows"])
            rows = [_unpack(w, C, ab) for w in words]
            results.append({"out": None if overwritten else out_rows_to_tile(tiles[j], rows), **timing[idx]})
        i = batch[-1][0] + 1
    return {"tiles": results, **await host.finish()}
