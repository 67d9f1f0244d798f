"""Parameters of the PIM template (the same dataclass the RTL generator takes).

An arch spec's ``params:`` section for ``template: pim`` is read into
:class:`PimParams`. All DRAM timings are in cycles of the DRAM command clock,
which is the arch's ``clock_mhz`` (the engine's cycle); the ASIC beside the
DRAM is the spec's ``vector_unit`` on the same clock.

Meaning of each timing (JEDEC names; "X -> Y >= t" means command Y may be
issued no earlier than ``t`` cycles after command X):

==========  ===============================================================
``tRCD``    ACT -> first read (RD, RD-MAC) of that bank (JEDEC tRCDRD)
``tRCDWR``  ACT -> first WR of that bank
``tRAS``    ACT -> PRE of the same bank
``tRASmax`` longest a row may stay open (ACT -> PRE at most)
``tRP``     PRE -> next ACT (or REF) of that bank
``tRTP``    RD / RD-MAC -> PRE of the same bank
``tWR``     WR -> PRE of the same bank, **measured from the WR command**
            (i.e. JEDEC's WL + burst + tWR, folded into one figure)
``tCCD_S``  column command -> column command, different bank groups
``tCCD_L``  column command -> column command, same bank group
            (all-bank RD-MAC -> RD-MAC too: a MACAB touches every group)
``tRRD``    ACT -> ACT, two banks of different bank groups (tRRD_S)
``tRRD_L``  ACT -> ACT, two banks of the same bank group
``tFAW``    at most four ACTs in any window of ``tFAW`` cycles
``tWTR``    WR -> RD / RD-MAC of the same bank group, **from the WR command**
            (JEDEC's WL + burst + tWTR_L folded into one figure)
``tWTR_S``  WR -> RD / RD-MAC of another bank group, from the WR command
            (WL + burst + tWTR_S)
``tRTW``    RD / RD-MAC -> WR anywhere in the channel, and RD / RDACC ->
            GBWR (bus turnaround: RL + burst + 2 - WL; counted from an RDACC's
            data, ``rdacc_turnaround``, when its reduction outlasts ``tCL``)
``tPPD``    PRE -> PRE in the channel
``tREFI``   average interval between all-bank REF commands
``tRFC``    REF -> any command to the channel
``tRFCpb``  per-bank REF (REFpb) -> ACT of that bank
``tRREFD``  REFpb -> REFpb (and REFpb -> ACT of another bank)
``tCL``     RD / RD-MAC -> its data at the bank's MAC unit (read latency)
``act_bus_cycles``  cycles an ACT occupies the row command bus (HBM: 2)
==========  ===============================================================
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from archsim.numerics import bits_of
from archsim.templates.base import TemplateParams

MAC_PRECISIONS = ("int8", "bf16")
#: accumulator width of each MAC precision: int8 products summed in int32, bf16 in fp32
ACC_PRECISION = {"int8": "int32", "bf16": "fp32"}
ELEMENT_BYTES = {name: bits_of(name) // 8 for name in ("int8", "bf16")}  # the registry's widths
ACC_BYTES = {"int8": 4, "bf16": 4}
#: accumulator_interleave values (powers of two: the partials' pairwise reduction has no padding)
INTERLEAVES = (1, 2, 4, 8, 16)
#: cycles from an RDACC to its ``P`` partials in the near-bank unit's read-out (rtl.pim.interleaved declares
#: its latency with this figure): the command registered twice (the 'partial written' flags are the column
#: counters selected in two registered 8:1 steps), then the partial memories' synchronous read; one cycle
#: of slack for the accumulate's registered write-back (the RDACC follows the last MAC by ``mac_drain``)
RDACC_PARTIALS_READ_CYCLES = 3
MAX_CHANNELS = 65536  # channels x stacks: 5 HBM stacks are 80, a 64-stack system 1024

TIMING_NAMES = ("tRCD", "tRCDWR", "tRP", "tRAS", "tRTP", "tWR", "tCCD_S", "tCCD_L", "tRRD", "tRRD_L", "tFAW", "tWTR",
                "tWTR_S", "tRTW", "tRASmax", "tPPD", "tREFI", "tRFC", "tRFCpb", "tRREFD", "tCL", "act_bus_cycles")


@dataclass
class PimParams(TemplateParams):
    """DRAM channels of banks with a MAC unit beside each bank's row buffer.

    Attributes
    ----------
    channels : int
        Independent DRAM (pseudo-)channels of one stack / device set; each has
        its own command bus.
    stacks : int
        Copies of that memory (HBM stacks, GDDR device sets): the system has
        ``channels * stacks`` channels (:attr:`n_channels`).
    banks_per_channel, bank_groups : int
        Banks of a channel and how many bank groups they form
        (``banks_per_channel`` must be a multiple of ``bank_groups``).
    rows_per_bank : int
        DRAM rows per bank (capacity = channels x banks x rows x row_bytes).
    row_bytes : int
        Row (page) size of one bank.
    column_bytes : int
        Bytes one column access (RD, RD-MAC, WR) moves: bus width x burst.
    mac_lanes : int
        Multipliers per bank's MAC unit (an adder tree sums their products).
    mac_precision : str
        ``"int8"`` (int32 accumulators) or ``"bf16"`` (fp32 accumulators).
        Weights and KV cache are stored in this format.
    mac_pipeline_cycles : int
        Cycles from a column's data reaching the MAC unit to its accumulator
        update (the drain after the last RD-MAC).
    acc_registers : int
        Accumulators per bank (output rows a bank can hold in flight).
    input_buffer_bytes : int
        Per-channel global buffer holding the broadcast input vector.
    tRCD, tRCDWR, tRP, tRAS, tRASmax, tRTP, tWR, tCCD_S, tCCD_L, tRRD, tRRD_L, tFAW, tWTR, tWTR_S,
    tRTW, tPPD, tREFI, tRFC, tRFCpb, tRREFD, tCL, act_bus_cycles : int
        DRAM timings in command-clock cycles (see the module docstring).
    max_postponed_refreshes : int
        REF commands a controller may postpone (JEDEC: 8).
    accumulator_interleave : int
        ``P`` partial accumulators per output row in dot mode (a power of two, 1..16; default 1, the
        plain sequential accumulate): column ``c`` of a row goes into partial ``c mod P``, so the
        fp32 accumulate loop may take ``P`` cycles (the RTL pipelines its adder ``P`` deep), and an
        RDACC sums the partials pairwise, one adder per level reused over time
        (:attr:`rdacc_reduction_cycles`); when that takes longer than ``tCL`` the RDACC's data come
        later (:attr:`rdacc_latency`), and two RDACCs are :attr:`rdacc_spacing_cycles` apart; both
        models charge both.
        Changes the fp32 summation order (:func:`archsim.templates.pim.values.gemv_dot`).

    The ASIC beside the DRAM (non-linear ops, cross-bank reductions) is the
    arch spec's ``vector_unit`` and runs at ``clock_mhz``.
    """

    channels: int = 16
    stacks: int = 1
    banks_per_channel: int = 16
    bank_groups: int = 4
    rows_per_bank: int = 32768
    row_bytes: int = 1024
    column_bytes: int = 32
    mac_lanes: int = 16
    mac_precision: str = "bf16"
    mac_pipeline_cycles: int = 1
    acc_registers: int = 64
    input_buffer_bytes: int = 2048
    tRCD: int = 14
    tRCDWR: int = 14
    tRP: int = 14
    tRAS: int = 34
    tRTP: int = 4
    tWR: int = 22
    tCCD_S: int = 2
    tCCD_L: int = 4
    tRRD: int = 4
    tRRD_L: int = 6
    tFAW: int = 30
    tWTR: int = 14
    tWTR_S: int = 12
    tRTW: int = 14
    tRASmax: int = 35100
    tPPD: int = 1
    tREFI: int = 3900
    tRFC: int = 260
    tRFCpb: int = 160
    tRREFD: int = 8
    tCL: int = 14
    act_bus_cycles: int = 2
    max_postponed_refreshes: int = 8
    accumulator_interleave: int = 1

    def validate(self) -> None:
        """Raise ``ValueError("key: expected ...")`` for an impossible value."""
        positive = ("channels", "stacks", "banks_per_channel", "bank_groups", "rows_per_bank", "row_bytes", "column_bytes",
                    "mac_lanes", "acc_registers", "input_buffer_bytes") + TIMING_NAMES
        for key in positive:
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{key}: expected a positive integer, got {v!r}")
        if self.n_channels > MAX_CHANNELS:  # the model keeps one unit per channel: 1e20 would never finish
            raise ValueError(f"channels: expected channels x stacks <= {MAX_CHANNELS}, got {self.n_channels:.3g}")
        v = self.mac_pipeline_cycles
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"mac_pipeline_cycles: expected an integer >= 0, got {v!r}")
        v = self.max_postponed_refreshes
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 8:
            raise ValueError(f"max_postponed_refreshes: expected 1..8 (refresh waits for the end of a row burst), "
                             f"got {v!r}")
        v = self.accumulator_interleave
        if isinstance(v, bool) or not isinstance(v, int) or v not in INTERLEAVES:
            raise ValueError(f"accumulator_interleave: expected one of {', '.join(map(str, INTERLEAVES))}, got {v!r}")
        if self.mac_precision not in MAC_PRECISIONS:
            raise ValueError(f"mac_precision: expected one of {', '.join(MAC_PRECISIONS)}, got {self.mac_precision!r}")
        if self.banks_per_channel % self.bank_groups:
            raise ValueError(f"bank_groups: expected a divisor of banks_per_channel ({self.banks_per_channel}), "
                             f"got {self.bank_groups}")
        if self.row_bytes % self.column_bytes:
            raise ValueError(f"column_bytes: expected a divisor of row_bytes ({self.row_bytes}), got {self.column_bytes}")
        if self.column_bytes % ELEMENT_BYTES[self.mac_precision]:
            raise ValueError(f"column_bytes: expected a multiple of the {self.mac_precision} element size")
        if self.input_buffer_bytes < self.row_bytes:
            raise ValueError(f"input_buffer_bytes: expected at least row_bytes ({self.row_bytes}), "
                             f"got {self.input_buffer_bytes}")
        # impossible combinations of timings (one line each)
        if self.tRAS < self.tRCD:
            raise ValueError(f"tRAS: expected >= tRCD ({self.tRCD}): a row cannot close before it can be read, "
                             f"got {self.tRAS}")
        if self.tCCD_L < self.tCCD_S:
            raise ValueError(f"tCCD_L: expected >= tCCD_S ({self.tCCD_S}), got {self.tCCD_L}")
        if self.tCCD_L > self.tRCD:
            raise ValueError(f"tCCD_L: expected <= tRCD ({self.tRCD}), got {self.tCCD_L}")
        if self.tWTR_S > self.tWTR:
            raise ValueError(f"tWTR_S: expected <= tWTR ({self.tWTR}), got {self.tWTR_S}")
        if self.tRRD_L < self.tRRD:
            raise ValueError(f"tRRD_L: expected >= tRRD ({self.tRRD}), got {self.tRRD_L}")
        if self.act_bus_cycles > 2:
            raise ValueError(f"act_bus_cycles: expected 1 or 2, got {self.act_bus_cycles}")
        if self.tRAS < self.act_bus_cycles:
            raise ValueError(f"tRAS: expected >= act_bus_cycles ({self.act_bus_cycles}), got {self.tRAS}")
        if self.tFAW < self.tRRD:
            raise ValueError(f"tFAW: expected >= tRRD ({self.tRRD}), got {self.tFAW}")
        if self.tFAW < self.tRRD_L:
            raise ValueError(f"tFAW: expected >= tRRD_L ({self.tRRD_L}), got {self.tFAW}")
        if self.tPPD > self.tRAS + self.tRP:
            raise ValueError(f"tPPD: expected <= tRC = tRAS + tRP ({self.tRAS + self.tRP}), got {self.tPPD}")
        if self.tFAW > self.tRAS + self.tRP:
            raise ValueError(f"tFAW: expected <= tRC = tRAS + tRP ({self.tRAS + self.tRP}), got {self.tFAW}")
        if self.tREFI <= self.tRFC:
            raise ValueError(f"tREFI: expected > tRFC ({self.tRFC}), got {self.tREFI}")
        burst = self.tRCD + (self.row_bytes // self.column_bytes) * self.column_spacing + self.tRP + self.tRAS
        if burst >= self.tREFI:
            raise ValueError(f"tREFI: expected longer than one row burst ({burst} cycles), got {self.tREFI}")
        if self.tRASmax < burst:
            raise ValueError(f"tRASmax: expected at least one row burst ({burst} cycles), got {self.tRASmax}")

    # -- derived figures -------------------------------------------------------------

    @property
    def element_bytes(self) -> int:
        return ELEMENT_BYTES[self.mac_precision]

    @property
    def acc_bytes(self) -> int:
        return ACC_BYTES[self.mac_precision]

    @property
    def column_elements(self) -> int:
        """Weight elements one RD-MAC reads."""
        return self.column_bytes // ELEMENT_BYTES[self.mac_precision]

    @property
    def row_columns(self) -> int:
        """Column accesses per DRAM row."""
        return self.row_bytes // self.column_bytes

    @property
    def mac_cycles_per_column(self) -> int:
        """Cycles the MAC unit needs for one column (``ceil(column_elements / mac_lanes)``)."""
        return -(-self.column_elements // self.mac_lanes)

    @property
    def column_spacing(self) -> int:
        """Cycles between two all-bank RD-MACs: ``max(tCCD_L, mac_cycles_per_column)``."""
        return max(self.tCCD_L, self.mac_cycles_per_column)

    @property
    def mac_drain(self) -> int:
        """Cycles from an RD-MAC command to its accumulator update:
        ``tCL + mac_cycles_per_column - 1 + mac_pipeline_cycles``."""
        return self.tCL + self.mac_cycles_per_column - 1 + self.mac_pipeline_cycles

    @property
    def rdacc_reduction_cycles(self) -> int:
        """Cycles from an RDACC to its column of reduced partials: 0 for ``P = 1``; else
        :data:`RDACC_PARTIALS_READ_CYCLES` (read the partials) + ``P / 2 - 1`` (the first level's pairs
        enter its adder one a cycle) + ``log2(P)`` levels of ``P`` cycles each (one ``P``-deep adder
        per level, reused over time: the last pair of each level enters as soon as its odd operand is out)."""
        P = self.accumulator_interleave
        return 0 if P == 1 else RDACC_PARTIALS_READ_CYCLES + P // 2 - 1 + (P.bit_length() - 1) * P

    @property
    def rdacc_spacing_cycles(self) -> int:
        """Least cycles between two RDACCs (beside ``tCCD_S``): the reduction's first-level adder takes
        the ``P / 2`` pairs of an RDACC one a cycle, so ``P / 2``; 1 for ``P = 1`` (no reduction)."""
        return max(1, self.accumulator_interleave // 2)

    @property
    def rdacc_latency(self) -> int:
        """Cycles from an RDACC to its data on the channel's bus: ``tCL``, or the reduction of the
        interleaved partials when that is longer (``max(tCL, rdacc_reduction_cycles)``; ``tCL`` for
        ``P = 1``)."""
        return max(self.tCL, self.rdacc_reduction_cycles)

    @property
    def rdacc_turnaround(self) -> int:
        """Cycles from an RDACC to a WR / GBWR (bus turnaround): ``tRTW`` counted from the RDACC's
        data, so ``tRTW + rdacc_latency - tCL`` (``tRTW`` when the reduction fits ``tCL``)."""
        return self.tRTW + self.rdacc_latency - self.tCL

    @property
    def n_channels(self) -> int:
        """Channels of the whole system: ``channels * stacks``."""
        return self.channels * self.stacks

    @property
    def banks(self) -> int:
        return self.n_channels * self.banks_per_channel

    @property
    def capacity_bytes(self) -> int:
        return self.n_channels * self.banks_per_channel * self.rows_per_bank * self.row_bytes

    @property
    def macs(self) -> int:
        """Multipliers in all banks."""
        return self.banks * self.mac_lanes

    def min_buffer_bytes(self) -> tuple[dict[str, int], str]:
        """No operand buffers: the banks hold the weights, the global buffer is a parameter."""
        return {}, ""

    def with_precision(self, weights: str, activations: str) -> "PimParams":
        """The banks' MAC units for one format used for weights and activations alike."""
        if weights != activations or weights not in MAC_PRECISIONS:
            pairs = ", ".join(f"{p}/{p}" for p in MAC_PRECISIONS)
            raise ValueError(f"pim runs weights/activations {pairs}, got {weights}/{activations}")
        return replace(self, mac_precision=weights)
