"""What the systolic hardware is built from (template params + RTL options) and the layouts its
components exchange: the tile command (a ``lib.stream`` payload), buffer write/read ports."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from amaranth.hdl import signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from archsim.templates.systolic.params import PRECISION_BITS

DATAFLOW_CODES = {"ws": 0, "os": 1, "is": 2}
BUFFER_CODES = {"left": 0, "top": 1, "out": 2}
#: cycles from the fetch level (buffer read issued) to the array level (operand in the edge register)
FETCH_LATENCY = 3
#: cycles from a taken command (the clock edge with cmd.valid & cmd.ready) to its tile's fetch-level
#: cycle 0 on an idle engine: the command register, the decoded queue head, the launch. Behind a
#: running tile (commands queued back to back) they overlap it and cost nothing; the models time
#: tiles from contract cycle 0 (``tile_start``), so they count neither these nor FETCH_LATENCY
COMMAND_LATENCY_CYCLES = 3
MULTIPLIERS = ("inferred", "ecp5_dsp")
RAM_STYLES = ("auto", "block", "distributed")


@dataclass(frozen=True)
class SystolicRtlOptions:
    """RTL-only options (not part of the arch spec's timing).

    Attributes
    ----------
    multiplier : str
        ``"inferred"`` (default): ``a * b`` and a fabric product register, for any
        target. ``"ecp5_dsp"``: one ``MULT18X18D`` primitive per PE with its input
        registers (A: a duplicate of the left operand register; B: the stationary
        operand itself, or the moving one in OS) and, with ``mult_pipeline_stages=1``,
        its output register as the product register; WS, IS or OS builds (not
        ``auto``), operands up to 18 bits. Simulation uses the behavioural model
        :func:`rtl.lib.ecp5.mult18x18d_sim_model`.
    out_ram : str
        ``"auto"`` (the synthesizer chooses), ``"block"`` or ``"distributed"``: a
        ``ram_style`` hint for the output buffer. ECP5 block RAM has no output
        register in yosys' mapping (5.8 ns clock-to-out), so the ECP5 target uses
        ``"distributed"``.
    left_depth, top_depth, out_depth : int
        Entries per lane of the local tile buffers. ``0`` (default) picks
        ``max(64, 4 * max(rows, cols))`` rounded up to a power of two. A tile
        needs ``m`` (WS) / ``n`` (IS) / ``k`` (OS) left entries, ``R`` (WS/IS) or
        ``k`` (OS) top entries, and ``m`` / ``n`` / ``R`` output entries, from
        its base addresses.
    """

    left_depth: int = 0
    top_depth: int = 0
    out_depth: int = 0
    multiplier: str = "inferred"
    out_ram: str = "auto"

    def resolved(self, rows: int, cols: int) -> "SystolicRtlOptions":
        default = 1 << ceil_log2(max(64, 4 * max(rows, cols)))
        for key in ("left_depth", "top_depth", "out_depth"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{key}: expected a positive integer, got {v!r}")
        if self.multiplier not in MULTIPLIERS:
            raise ValueError(f"multiplier: expected one of {', '.join(MULTIPLIERS)}, got {self.multiplier!r}")
        if self.out_ram not in RAM_STYLES:
            raise ValueError(f"out_ram: expected one of {', '.join(RAM_STYLES)}, got {self.out_ram!r}")
        return SystolicRtlOptions(
            left_depth=self.left_depth or default,
            top_depth=self.top_depth or default,
            out_depth=self.out_depth or default,
            multiplier=self.multiplier,
            out_ram=self.out_ram,
        )


@dataclass(frozen=True)
class SystolicConfig:
    """Everything the hardware is built from: the template's params plus RTL options."""

    rows: int
    cols: int
    dataflow: str  # ws | os | is | auto
    input_bits: int
    weight_bits: int
    acc_bits: int
    double_buffered: bool
    mult_pipeline_stages: int
    left_depth: int
    top_depth: int
    out_depth: int
    multiplier: str = "inferred"
    out_ram: str = "auto"
    pe_style: str = "standard"  # the params' pe_style: "standard", "tpe" or "tpe_pipelined" (carry-save)

    @classmethod
    def from_params(cls, params, options: SystolicRtlOptions | None = None) -> "SystolicConfig":
        options = (options or SystolicRtlOptions()).resolved(params.rows, params.cols)
        return cls(
            rows=params.rows,
            cols=params.cols,
            dataflow=params.dataflow,
            input_bits=PRECISION_BITS[params.input_precision],
            weight_bits=PRECISION_BITS[params.weight_precision],
            acc_bits=PRECISION_BITS[params.acc_precision],
            double_buffered=params.preload == "double_buffered" and params.dataflow != "os",
            mult_pipeline_stages=int(params.mult_pipeline_stages),
            left_depth=options.left_depth,
            top_depth=options.top_depth,
            out_depth=options.out_depth,
            multiplier=options.multiplier,
            out_ram=options.out_ram,
            pe_style=params.pe_style,
        )

    # ---- derived sizes -------------------------------------------------
    def __post_init__(self):
        if self.multiplier == "ecp5_dsp":
            if self.dataflow == "auto":
                raise ValueError("multiplier: ecp5_dsp needs a ws, is or os build, got dataflow 'auto'")
            if max(self.input_bits, self.weight_bits) > 18:
                raise ValueError("multiplier: ecp5_dsp needs operands of at most 18 bits")
            if self.carry_save:
                raise ValueError("multiplier: ecp5_dsp computes complete products; pe_style tpe needs "
                                 "'inferred' (its partial products are compressed with the partial sums)")

    @property
    def carry_save(self) -> bool:
        """PEs keep partial sums in carry-save form (``pe_style="tpe"``): no product register, a
        Booth / 3:2-compressor accumulate, one registered carry-propagate adder per column."""
        return self.pe_style in ("tpe", "tpe_pipelined")

    @property
    def drain_cycles(self) -> int:
        """Extra cycles of a value on its way out: the second stage of the pipelined edge adder."""
        return 1 if self.pe_style == "tpe_pipelined" else 0

    @property
    def has_os(self) -> bool:
        return self.dataflow in ("os", "auto")

    @property
    def has_wsis(self) -> bool:
        return self.dataflow != "os"

    @property
    def dataflows(self) -> tuple[str, ...]:
        """Tile dataflows this build executes (WS and IS share one datapath)."""
        return tuple(d for d in ("ws", "os", "is") if (d == "os" and self.has_os) or (d != "os" and self.has_wsis))

    @property
    def lane_bits(self) -> int:
        """Width of a left/top buffer lane: both operands fit (WS/IS swap them)."""
        return max(self.input_bits, self.weight_bits)

    @property
    def addr_bits(self) -> int:
        return max(1, ceil_log2(max(self.left_depth, self.top_depth, self.out_depth)))

    @property
    def dim_bits(self) -> int:
        return max(self.left_depth, self.top_depth, self.out_depth, self.rows, self.cols).bit_length()

    @property
    def wr_data_bits(self) -> int:
        return max(max(self.rows, self.cols) * self.lane_bits, self.cols * self.acc_bits)

    @property
    def rd_data_bits(self) -> int:
        return self.cols * self.acc_bits

    def tile_cycles(self, dataflow: str, m: int, k: int, n: int, preload_hidden: bool = False) -> int:
        """Cycles the hardware takes for one tile (equals the contract's formula)."""
        streamed = {"ws": m, "is": n, "os": k}[dataflow]
        preload = 0 if (dataflow == "os" or (preload_hidden and self.double_buffered)) else self.rows
        return preload + streamed + self.rows + self.cols - 2 + self.mult_pipeline_stages + self.drain_cycles

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def counter_bits(self) -> int:
        """Width of the controller's cycle counters, with a spare bit so that "boundary - 1" of a
        zero boundary is never reached."""
        depth = max(self.left_depth, self.top_depth, self.out_depth)
        return 1 + max(self.dim_bits + 1, (depth + 2 * self.rows + self.cols + 2).bit_length())


def command_layout(cfg: SystolicConfig) -> data.StructLayout:
    """One tile command (the payload of the command stream), least significant field first."""
    aw, dw = cfg.addr_bits, cfg.dim_bits
    return data.StructLayout({
        "dataflow": 2, "m": dw, "k": dw, "n": dw, "accumulate": 1, "preload_hidden": 1,
        "left_base": aw, "top_base": aw, "out_base": aw,
    })


def command_signature(cfg: SystolicConfig) -> stream.Signature:
    """valid/ready stream of tile commands (taken when both are high at a rising edge)."""
    return stream.Signature(command_layout(cfg))


def write_signature(cfg: SystolicConfig) -> wiring.Signature:
    """Host write port: one buffer entry, all lanes (``buf``: 0 = left, 1 = top, 2 = out)."""
    return wiring.Signature({"en": Out(1), "buf": Out(2), "addr": Out(cfg.addr_bits),
                             "data": Out(cfg.wr_data_bits)})


def read_signature(cfg: SystolicConfig) -> wiring.Signature:
    """Host read port of the output buffer (``data`` one cycle after ``en``)."""
    return wiring.Signature({"en": Out(1), "addr": Out(cfg.addr_bits),
                             "data": In(cfg.rd_data_bits), "valid": In(1)})


def out_token_layout(cfg: SystolicConfig) -> data.StructLayout:
    """What the controller says about an output column in the cycle its value is presented."""
    return data.StructLayout({"present": 1, "we": 1, "addr": cfg.addr_bits, "acc": 1, "last": 1})


def lane_shape(cfg: SystolicConfig):
    return signed(cfg.lane_bits)


def acc_shape(cfg: SystolicConfig):
    return signed(cfg.acc_bits)
