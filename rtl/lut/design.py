"""Amaranth design of the LUT tensor core: table precompute unit, double-buffered tables,
``tile_m x tile_n`` lookup array with bit-serial shift-add, output accumulators, controller.

The timing and value contract is :mod:`archsim.templates.lut.tile`; a tile
command runs in exactly ``pre' + (steps - 1) * max(pre', look) + look +
pipeline_cycles`` cycles, ``pre' = pre + precompute_pipeline_cycles``. Ports and
buffer layouts: :data:`rtl.lut.rtl_design.PORT_DOCS` and ``docs/lut_rtl.md``; the
host-signature engine around the core: :mod:`rtl.lut.host`.

Datapath of one step (row block mb, K-group g):

- **precompute** (``pre`` cycles, :class:`rtl.lut.precompute.PrecomputeUnit`):
  each cycle ``precompute_entries_per_cycle`` generators each start one stored
  entry ``T[idx] = sum_j +-a_j`` of one row (entries row-major), reading the
  step's activations from the activation buffer (asynchronous read); the
  entries land ``precompute_pipeline_cycles`` later in the free table bank
  ``step % 2``. fp: the first term exact, then fp32 adds RNE in j order.
- **lookup** (``look = col_blocks * b`` cycles, MSB plane first): stage 0
  reads one weight-plane word (``tile_n`` columns x K bits); stage t1 forms
  each column's index and reads its row's table (negated when the top index bit
  is 0, with ``symmetric``); stage 1 shift-adds ``p = rne(2p + T)`` (the first
  plane loads ``p = T``) -- t1 and 1 are one stage unless ``pipeline_cycles``
  leaves room for a register between them (``LutConfig.lookup_register``);
  after the last plane stage 2 forms ``r = rne(p - S) * 0.5`` (``r = p`` for
  int1) and reads the accumulators; stage 3 writes ``rne(acc + r)`` (0 instead
  of acc for the first group unless ``accumulate``; the previous cycle's write
  is forwarded).

The precompute of step s+1 starts in the cycle the lookups of step s start;
the lookups of a step start in the cycle after its tables are complete. A
tile's last write lands ``rtl_pipeline`` cycles after its last lookup cycle;
``tile_done`` is raised ``pipeline_cycles`` (>= ``rtl_pipeline``) cycles after it.
Operand buffers have two banks (``cmd_bank``): the host fills one while a tile
reads the other.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from math import ceil
from types import SimpleNamespace

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from rtl.lut.arith import FpArith, IntArith, fp32_double, fp32_half
from rtl.lut.config import AFMT, DIM_BITS, PLANES, WFMT, _bits  # noqa: F401 - re-exported
from rtl.lut.controller import LutController
from rtl.lut.precompute import PrecomputeUnit, fp32_adder, fp_add_max_stages
from rtl.lib.fp import fp32_mul_finite as fp32_mul, int_to_fp32
from rtl.lib.pipe import delay as pipe_delay

BUFS = {"act": 0, "weight": 1, "out": 2, "table": 3, "scale": 4}
#: the RTL's own pipeline: weight read, lookup + shift-add, r + accumulator read, accumulator write
#: (one more, a registered lookup, when ``pipeline_cycles`` leaves room: :attr:`LutConfig.lookup_register`)
RTL_PIPELINE = 3
#: stages the scales add: per_group r x scale (1); per_channel sum x scale, + psum (2)
SCALE_STAGES = {"none": 0, "per_group": 1, "per_channel": 2}
DEPTHS = {"act_depth": 64, "weight_depth": 128, "out_depth": 64, "table_depth": 64, "scale_depth": 64}
ACC_BITS = 32


def fp_add_latency(room_cycles: int) -> int:
    """Cycles an interleaved fp32 add takes given ``room_cycles`` to spare: up to the library adder's
    ``max_stages``, plus one for its operands registered beside its first stage (at ``max_stages`` that
    stage starts at its inputs, and those came from registers placed anywhere: the A16 build's limit);
    with room for one more, the adder with its significand add split over two stages
    (:func:`rtl.lut.precompute.fp32_adder`'s ``split_add``: round 3e's A16 limit), and its operands registered."""
    return min(room_cycles, fp_add_max_stages(split_add=True) + 1)


def fp_add_plan(latency: int) -> tuple[int, bool]:
    """``(stages, split_add)`` of the fp32 adder of an interleaved add of ``latency`` cycles
    (:func:`fp_add_latency`): the split adder at its every stage when ``latency`` has room for it and its
    operand register, else the plain one at up to its ``max_stages``; the rest (0 or 1) registers the operands."""
    split = latency >= fp_add_max_stages(split_add=True) + 1
    return min(latency, fp_add_max_stages(split)), split


@dataclass(frozen=True)
class LutConfig:
    """Everything the hardware depends on (derived from ``LutParams`` + RTL options)."""

    tile_m: int
    tile_n: int
    group_k: int
    symmetric: bool
    entries_per_cycle: int
    weight_formats: tuple[str, ...]
    activation_formats: tuple[str, ...]
    pipeline_cycles: int
    precompute_latency: int = 0
    act_depth: int = 64
    weight_depth: int = 128
    out_depth: int = 64
    table_depth: int = 64
    external_buffers: bool = False
    scale: str = "none"
    scale_group: int = 0
    scale_depth: int = 64
    lookup_interleave: int = 1

    @classmethod
    def from_params(cls, p, options: dict | None = None) -> "LutConfig":
        p.validate()
        stages = RTL_PIPELINE + SCALE_STAGES[p.scale]
        if p.pipeline_cycles < stages:
            with_scale = f" with {p.scale} scales" if p.scale != "none" else ""
            raise ValueError(f"pipeline_cycles: the lut RTL's pipeline{with_scale} has {stages} stages, "
                             f"got {p.pipeline_cycles}")
        d = p.lookup_interleave
        if d & (d - 1):
            raise ValueError(f"lookup_interleave: the lut RTL interleaves a power of two of column blocks, got {d}")
        opts = dict(options or {})
        for key, default in DEPTHS.items():
            v = opts.get(key, default)
            if isinstance(v, bool) or not isinstance(v, int) or v < 2:
                raise ValueError(f"{key}: expected an integer >= 2, got {v!r}")
            opts[key] = v
        ext = opts.get("external_buffers", False)
        if not isinstance(ext, bool):
            raise ValueError(f"external_buffers: expected true or false, got {ext!r}")
        unknown = set(opts) - set(DEPTHS) - {"external_buffers"}
        if unknown:
            raise ValueError(f"{', '.join(sorted(unknown))}: not an option of the lut RTL "
                             f"(it has {', '.join(DEPTHS)}, external_buffers)")
        order_w = [f for f in WFMT if f in p.weight_formats]
        order_a = [f for f in AFMT if f in p.activation_formats]
        cfg = cls(p.tile_m, p.tile_n, p.group_k, p.symmetric, p.precompute_entries_per_cycle,
                  tuple(order_w), tuple(order_a), p.pipeline_cycles, p.precompute_pipeline_cycles, scale=p.scale,
                  scale_group=p.scale_group if p.scale == "per_group" else 0, lookup_interleave=d, **opts)
        if p.pipeline_cycles < cfg.base_stages:
            extra = cfg.base_stages - stages
            raise ValueError(f"pipeline_cycles: the lut RTL's pipeline with lookup_interleave {d} has "
                             f"{cfg.base_stages} stages ({extra} of them its pipelined fp32 adds'), got {p.pipeline_cycles}")
        return cfg

    # ---- derived sizes
    @property
    def entries(self) -> int:
        return 2 ** (self.group_k - 1) if self.symmetric else 2 ** self.group_k

    @property
    def pre_cycles(self) -> int:
        return ceil(self.tile_m * self.entries / self.entries_per_cycle)

    @property
    def has_int(self) -> bool:
        return "int8" in self.activation_formats

    @property
    def has_fp(self) -> bool:
        return any(f != "int8" for f in self.activation_formats)

    @property
    def max_planes(self) -> int:
        return max(PLANES[WFMT[f]] for f in self.weight_formats)

    @property
    def act_bits(self) -> int:
        """Bits of one activation lane: 16 when fp16/bf16 are built, else 8."""
        return 16 if self.has_fp else 8

    @property
    def int_entry_bits(self) -> int:
        return (self.group_k * 128).bit_length() + 1

    @property
    def entry_bits(self) -> int:
        """Bits of one stored table entry (fp32 when any fp format is built)."""
        return 32 if self.has_fp else self.int_entry_bits

    @property
    def p_bits(self) -> int:
        """Bits of the shift-add register and of ``r``."""
        return 32 if self.has_fp else self.int_entry_bits + self.max_planes

    @property
    def act_word(self) -> int:
        return self.tile_m * self.group_k * self.act_bits

    @property
    def weight_word(self) -> int:
        return self.tile_n * self.group_k

    @property
    def out_word(self) -> int:
        return self.tile_m * self.tile_n * ACC_BITS

    @property
    def table_word(self) -> int:
        return self.tile_m * self.entries * self.entry_bits

    @property
    def scale_word(self) -> int:
        """One scale-buffer entry: ``tile_n`` fp32 scales (0 without scales)."""
        return self.tile_n * 32 if self.scale != "none" else 0

    @property
    def shift_add_stages(self) -> int:
        """Register stages of the fp32 shift-add ``p = rne(2p + T)`` (``lookup_interleave`` D > 1: a
        column block's next plane comes D cycles later, so its adder can take up to D - 1 of them;
        :func:`fp_add_latency`)."""
        if self.lookup_interleave == 1 or not self.has_fp:
            return 0
        return fp_add_latency(self.lookup_interleave - 1)

    @property
    def half_sub_stages(self) -> int:
        """Register stages of the fp32 ``p - S`` of ``r = rne(p - S) * 0.5`` (feed-forward; with
        ``lookup_interleave`` > 1 as many as the shift-add's)."""
        return self.shift_add_stages

    @property
    def acc_stages(self) -> int:
        """Register stages of the fp32 accumulate ``acc + r`` (``lookup_interleave`` D > 2, no scales:
        two updates of one accumulator are at least D cycles apart, so its adder can take D - 2 cycles
        and needs no forwarding; :func:`fp_add_latency`)."""
        if self.lookup_interleave <= 2 or not self.has_fp or self.scale != "none":
            return 0
        return fp_add_latency(self.lookup_interleave - 2)

    @property
    def fp_forcing_as_data(self) -> bool:
        """Builds with the pipelined fp32 adds (``lookup_interleave`` > 1, the timing builds) build every
        pipelined fp32 adder, the precompute's too, with its forcing as data (:func:`rtl.lut.precompute.fp32_adder`:
        same bits and latency); the others keep their Verilog (the preset's measured clock is on it)."""
        return self.lookup_interleave > 1

    @property
    def base_stages(self) -> int:
        """Stages the build always has: :data:`RTL_PIPELINE`, the scales', the pipelined fp32 adds'."""
        return (RTL_PIPELINE + SCALE_STAGES[self.scale] + self.shift_add_stages + self.half_sub_stages
                + self.acc_stages)

    @property
    def lookup_register(self) -> bool:
        """A register between the table lookup (+ negate) and the shift-add, built when
        ``pipeline_cycles`` has room for it (it cuts the lookup stage's path in two)."""
        return self.pipeline_cycles >= self.base_stages + 1

    @property
    def table_register(self) -> bool:
        """A register stage before the lookup (with :attr:`lookup_register`), built when
        ``pipeline_cycles`` has room for both: the step's table is selected (bank or table buffer),
        negated (int) and registered with the weight word, so that the lookup stage is only the
        index's 2 x E:1 mux into the lookup register (the bank select's fan-out to every lane and the
        negation's carry chain leave the lookup path)."""
        return self.pipeline_cycles >= self.base_stages + 2

    @property
    def rtl_pipeline(self) -> int:
        return self.base_stages + int(self.lookup_register) + int(self.table_register)

    @property
    def data_bits(self) -> int:
        return max(self.act_word, self.weight_word, self.out_word, self.table_word, self.scale_word)

    @property
    def addr_bits(self) -> int:
        depths = [self.act_depth, self.weight_depth, self.out_depth, self.table_depth]
        return _bits(max(depths + ([self.scale_depth] if self.scale != "none" else [])))

    def as_dict(self) -> dict:
        d = asdict(self)
        d["weight_formats"] = list(self.weight_formats)
        d["activation_formats"] = list(self.activation_formats)
        if self.scale == "none":  # a scale-free build's description (and Verilog header) names no scale fields
            for key in ("scale", "scale_group", "scale_depth"):
                del d[key]
        d.update(entries=self.entries, pre_cycles=self.pre_cycles, entry_bits=self.entry_bits,
                 p_bits=self.p_bits, act_bits=self.act_bits, acc_bits=ACC_BITS, rtl_pipeline=self.rtl_pipeline,
                 lookup_register=self.lookup_register)
        if self.table_register:  # (builds without it keep their description and Verilog header)
            d["table_register"] = True
        if self.lookup_interleave == 1:  # (likewise)
            del d["lookup_interleave"]
        else:
            d.update(shift_add_stages=self.shift_add_stages, half_sub_stages=self.half_sub_stages,
                     acc_stages=self.acc_stages)
        return d


def buffer_ports(c: LutConfig) -> dict:
    """The datapath's ports to its buffers (as the datapath sees them): act asynchronous read; weight,
    table, out, scale data the next cycle; ``bank`` is the operand bank the running tile reads."""
    ports = {
        "bank": Out(1),
        "act_raddr": Out(_bits(c.act_depth)), "act_rdata": In(c.act_word),
        "weight_raddr": Out(_bits(c.weight_depth)), "weight_rdata": In(c.weight_word),
        "table_raddr": Out(_bits(c.table_depth)), "table_rdata": In(c.table_word),
        "out_raddr": Out(_bits(c.out_depth)), "out_rdata": In(c.out_word),
        "out_waddr": Out(_bits(c.out_depth)), "out_wdata": Out(c.out_word), "out_we": Out(1),
    }
    if c.scale != "none":
        ports.update({"scale_raddr": Out(_bits(c.scale_depth)), "scale_rdata": In(c.scale_word)})
    return ports


def host_ports(c: LutConfig) -> dict:
    """The host's buffer write / output read ports of a build with its own buffers."""
    return {"wr_en": In(1), "wr_buf": In(3 if c.scale != "none" else 2), "wr_bank": In(1),
            "wr_addr": In(c.addr_bits), "wr_data": In(c.data_bits),
            "rd_en": In(1), "rd_addr": In(c.addr_bits), "rd_data": Out(c.out_word), "wr_ready": Out(1),
            "rd_bank": In(1), "rd_ready": Out(1)}


def lut_signature(c: LutConfig) -> dict:
    sig = {
        "cmd_valid": In(1), "cmd_ready": Out(1),
        "cmd_row_blocks": In(DIM_BITS), "cmd_groups": In(DIM_BITS), "cmd_col_blocks": In(DIM_BITS),
        "cmd_wfmt": In(3), "cmd_afmt": In(2), "cmd_accumulate": In(1), "cmd_precomputed": In(1),
        "cmd_bank": In(1),
    }
    sig.update(buffer_ports(c) if c.external_buffers else host_ports(c))
    sig.update({
        "busy": Out(1), "tile_start": Out(1), "tile_done": Out(1),
        "tile_cycles": Out(32), "tiles_done": Out(32), "error": Out(1),
    })
    return sig


class OperandBuffer(wiring.Component):
    """A two-bank operand buffer: ``depth`` entries per bank (the bank is the top address bit). The
    host writes ``w_addr`` of bank ``w_bank``; the datapath reads ``r_addr`` of bank ``bank`` (data the
    next cycle, or in the same cycle with ``async_read``)."""

    def __init__(self, width: int, depth: int, async_read: bool = False):
        self.width, self.depth, self.async_read = width, depth, async_read
        bits = _bits(depth)
        super().__init__({"w_addr": In(bits), "w_bank": In(1), "w_data": In(width), "w_en": In(1),
                          "bank": In(1), "r_addr": In(bits), "r_data": Out(width)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = Memory(shape=self.width, depth=2 << _bits(self.depth), init=[])
        w, r = mem.write_port(), mem.read_port(domain="comb" if self.async_read else "sync")
        m.d.comb += [w.addr.eq(Cat(self.w_addr, self.w_bank)), w.data.eq(self.w_data), w.en.eq(self.w_en),
                     r.addr.eq(Cat(self.r_addr, self.bank)), self.r_data.eq(r.data)]
        return m


class LutBuffers(wiring.Component):
    """The core's own buffers around its datapath: two-bank operand buffers (act, weight, table,
    scale: the running tile reads bank ``bank``, the host writes bank ``wr_bank``) and a two-bank
    output buffer (the running tile accumulates in bank ``bank``; the host writes psums into bank
    ``wr_bank`` and reads results from bank ``rd_bank``).

    Ports: :func:`host_ports`, the datapath's :func:`buffer_ports` flipped, ``busy`` (a tile runs)
    and ``write_error`` (sticky: a host write refused). While a tile runs, the host's writes and
    reads of the banks it does not use are taken (the overlap of loads and stores with compute the
    models assume: the mapper's two slots per operand); a write into its bank (or into the output
    buffer in a cycle the datapath writes it) is refused (dropped, ``write_error``; ``wr_ready`` low),
    a read of its output bank waits (``rd_ready`` low)."""

    def __init__(self, cfg: LutConfig):
        self.cfg = cfg
        ports = {**host_ports(cfg), **{k: v.flip() for k, v in buffer_ports(cfg).items()}}
        super().__init__({**ports, "busy": In(1), "write_error": Out(1)})

    def operands(self) -> list[tuple[str, int, int, bool]]:
        """(name, width, depth, asynchronous read) of each operand buffer."""
        c = self.cfg
        out = [("act", c.act_word, c.act_depth, True), ("weight", c.weight_word, c.weight_depth, False),
               ("table", c.table_word, c.table_depth, False)]
        if c.scale != "none":  # tile_n fp32 scales an entry
            out.append(("scale", c.scale_word, c.scale_depth, False))
        return out

    def elaborate(self, platform):
        c = self.cfg
        m = Module()
        running = self.busy
        to_out = self.wr_buf == BUFS["out"]
        m.d.comb += [self.wr_ready.eq(~(running & (self.wr_bank == self.bank)) & ~(to_out & self.out_we)),
                     self.rd_ready.eq(~(running & (self.rd_bank == self.bank)))]
        refused = self.wr_en & ~self.wr_ready
        host_wr = self.wr_en & ~refused
        with m.If(refused):
            m.d.sync += self.write_error.eq(1)
        for name, width, depth, async_read in self.operands():
            m.submodules[f"{name}_buf"] = buf = OperandBuffer(width, depth, async_read)
            m.d.comb += [buf.bank.eq(self.bank), buf.w_bank.eq(self.wr_bank), buf.w_addr.eq(self.wr_addr),
                         buf.w_data.eq(self.wr_data), buf.w_en.eq(host_wr & (self.wr_buf == BUFS[name])),
                         buf.r_addr.eq(getattr(self, f"{name}_raddr")), getattr(self, f"{name}_rdata").eq(buf.r_data)]
        # two banks (the bank is the top address bit): the datapath's read port (its tile's bank, while
        # it runs) and the host's (bank rd_bank); one write port, the datapath's writes first
        ob = _bits(c.out_depth)
        m.submodules.out_buf = obuf = Memory(shape=c.out_word, depth=2 << ob, init=[])
        out_w, out_r, host_r = obuf.write_port(), obuf.read_port(), obuf.read_port()
        m.d.comb += [out_r.addr.eq(Cat(self.out_raddr, self.bank)), out_r.en.eq(running | self.rd_en),
                     self.out_rdata.eq(out_r.data),
                     host_r.addr.eq(Cat(self.rd_addr[:ob], self.rd_bank)), host_r.en.eq(self.rd_en),
                     self.rd_data.eq(host_r.data)]
        with m.If(self.out_we):
            m.d.comb += [out_w.addr.eq(Cat(self.out_waddr, self.bank)), out_w.data.eq(self.out_wdata), out_w.en.eq(1)]
        with m.Else():
            m.d.comb += [out_w.addr.eq(Cat(self.wr_addr[:ob], self.wr_bank)), out_w.data.eq(self.wr_data),
                         out_w.en.eq(host_wr & to_out)]
        return m


def attach_buffers(m: Module, c: LutConfig, outer, datapath) -> None:
    """Build ``c``'s own buffers (:class:`LutBuffers`) around ``datapath`` -- anything with the
    ports of the ``external_buffers`` build (the core itself, or its synthesized netlist's
    instance) -- and connect both to ``outer``, which has the ports of the build with buffers."""
    m.submodules.buffers = bufs = LutBuffers(c)
    inner = buffer_ports(c)
    for name, member in lut_signature(replace(c, external_buffers=True)).items():
        other = bufs if name in inner else outer
        if name == "error":  # the datapath's, or a refused host write
            continue
        if member.flow == Out:
            m.d.comb += getattr(other, name).eq(getattr(datapath, name))
        else:
            m.d.comb += getattr(datapath, name).eq(getattr(other, name))
    for name, member in host_ports(c).items():
        if member.flow == In:
            m.d.comb += getattr(bufs, name).eq(getattr(outer, name))
        else:
            m.d.comb += getattr(outer, name).eq(getattr(bufs, name))
    m.d.comb += [bufs.busy.eq(datapath.busy), outer.error.eq(datapath.error | bufs.write_error)]


class LutCore(wiring.Component):
    """The LUT tensor core with its operand / output buffers (see the module docstring)."""

    def __init__(self, cfg: LutConfig):
        self.cfg = cfg
        super().__init__(lut_signature(cfg))

    # ------------------------------------------------------------------ helpers
    def _arithmetics(self):
        c = self.cfg
        out = []
        if c.has_int:
            out.append(("int", IntArith(c.p_bits)))
        if c.has_fp:
            out.append(("fp", FpArith()))
        return out

    def _fp_add(self, m: Module, a, b, latency: int, name: str):
        """fp32 ``rne(a + b)`` ``latency`` cycles later: the core's fp32 adder (:func:`rtl.lut.precompute.fp32_adder`)
        at up to its ``max_stages``, and one cycle more as its operands registered beside it (:func:`fp_add_latency`)."""
        stages, split = fp_add_plan(latency)
        m.submodules[name] = add = fp32_adder(stages, self.cfg.fp_forcing_as_data, split)
        assert add.latency == stages and latency - stages in (0, 1)
        ops = [pipe_delay(m, x[:32], latency - stages, f"{name}_{n}") for n, x in (("a", a), ("b", b))]
        m.d.comb += [add.a.eq(ops[0]), add.b.eq(ops[1]), add.in_valid.eq(1)]
        return add.out

    def _shift_add(self, m: Module, ar, p, t, stages: int, name: str):
        """``2p + t`` in ``ar``'s arithmetic, ``stages`` cycles later (fp: RNE; int: exact, then a delay)."""
        if ar.kind == "int":
            return pipe_delay(m, ar.double_add(m, p, t, name), stages, f"{name}_w")
        return self._fp_add(m, fp32_double(p[:32]), t, stages, name)

    def _half_sub(self, m: Module, ar, p, s, stages: int, name: str):
        """``r = rne(p - S) * 0.5`` in ``ar``'s arithmetic, ``stages`` cycles later (fp: the subtraction
        pipelined, the halving after it; int: exact, then a delay)."""
        if ar.kind == "int" or stages == 0:
            return pipe_delay(m, ar.half_sub(m, p, s, name), stages, f"{name}_w")
        diff = self._fp_add(m, p, Cat(s[:31], ~s[31]), stages, f"{name}_d")
        return fp32_half(m, diff, name)

    #: bits of a table entry one copy of a lane's select register drives (:meth:`_lane_lookup`)
    SELECT_GROUP_BITS = 8

    def _lane_lookup(self, m: Module, raw, entries, t_raw, r: int, col: int):
        """Table register builds: ``t_raw`` = ``entries[local]`` of the weight bits ``raw`` (read from the
        buffer this cycle), on select registers of the lane's own, registered with the weight word: the
        entry's index ``local`` is formed before the register (not after it, on the lookup's path), and
        each :attr:`SELECT_GROUP_BITS` bits of the entry read their own copy, so a select flip-flop drives
        one group's E:1 muxes, not every lane's every bit (the A16 build's limit: weight word -> 8:1 entry
        mux across the device). Copy ``x`` stores ``local ^ x`` and reads the entries permuted by ``x``
        (``entries[e ^ x]`` at position e): the same entry, and distinct flip-flops that synthesis cannot
        merge back into one. Returns the lane's registered top bit (the sign select; 1 without
        ``symmetric``)."""
        c = self.cfg
        K, E, eb = c.group_k, c.entries, c.entry_bits
        if c.symmetric:
            top_raw = raw[K - 1]
            local_raw = Mux(top_raw, raw[:K - 1], ~raw[:K - 1])
            top = Signal(name=f"t2_top_r{r}_c{col}")
            m.d.sync += top.eq(top_raw)
        else:
            top, local_raw = Const(1, 1), raw
        gb = self.SELECT_GROUP_BITS
        groups = -(-eb // gb)
        parts = []
        for g in range(groups):
            x = (r * groups + g) % E
            sel = Signal(range(E), name=f"t2_sel_r{r}_c{col}_g{g}")
            m.d.sync += sel.eq(local_raw ^ x)
            lo, hi = g * gb, min(eb, (g + 1) * gb)
            parts.append(Array(entries[e ^ x][lo:hi] for e in range(E))[sel])
        m.d.comb += t_raw.eq(Cat(*parts))
        return top

    @staticmethod
    def _by_kind(values: dict, is_fp):
        """One value from the per-arithmetic values (a mux when both are built)."""
        if len(values) == 1:
            return next(iter(values.values()))
        return Mux(is_fp, values["fp"], values["int"])

    def _to_fp32(self, m: Module, x, width: int, is_fp, name: str):
        """fp32 bits of a lane: as is when fp; an int lane (``width`` bits) converted RNE."""
        c = self.cfg
        if not c.has_int:
            return x[:32]
        conv = int_to_fp32(m, x[:width], width, f"{name}_i2f")
        return Mux(is_fp, x[:32], conv) if c.has_fp else conv

    def _group_scale(self, m: Module, rreg, valid, oaddr, fg, saddr, sc_r, is_fp):
        """Stage 2b of ``per_group`` scales: ``rs = rne(fp32(r) * scale[sg, n])`` (the scale entry is read
        in stage 2); returns the accumulator stage's valid, address, first-group flag and lanes."""
        c = self.cfg
        m.d.comb += sc_r.addr.eq(saddr)
        v, a, f = Signal(name="s2b_valid"), Signal.like(oaddr, name="s2b_oaddr"), Signal(name="s2b_fg")
        m.d.sync += [v.eq(valid), a.eq(oaddr), f.eq(fg)]
        lanes = []
        for r in range(c.tile_m):
            row = []
            for col in range(c.tile_n):
                name = f"gs_r{r}_c{col}"
                x = self._to_fp32(m, rreg[r][col], c.p_bits, is_fp, name)
                rs = Signal(32, name=name)
                m.d.sync += rs.eq(fp32_mul(m, x, sc_r.data[col * 32:(col + 1) * 32], f"{name}_mul"))
                row.append(rs)
            lanes.append(row)
        return v, a, f, lanes

    def _channel_scale(self, m: Module, sums, valid, oaddr, nb, sc_r, out_r, running, acc_cmd, is_fp):
        """Stages 4-5 of ``per_channel`` scales after a column block's last group (stage 3 = ``sums``,
        the tile's sum): ``out = rne(fp32(sum) * scale[n])`` (scale read in stage 3), then with
        ``accumulate`` ``out = rne(psum + out)`` (psum read from the output buffer in stage 4).
        Returns the output write's valid, address and data."""
        c = self.cfg
        m.d.comb += sc_r.addr.eq(nb)
        v4, a4 = Signal(name="s4_valid"), Signal.like(oaddr, name="s4_oaddr")
        m.d.sync += [v4.eq(valid), a4.eq(oaddr)]
        acc4 = [Signal(ACC_BITS, name=f"s4_acc{i}") for i in range(len(sums))]
        with m.If(valid):
            m.d.sync += [x.eq(y) for x, y in zip(acc4, sums)]
        with m.If(running):
            m.d.comb += out_r.addr.eq(a4)
        v5, a5 = Signal(name="s5_valid"), Signal.like(oaddr, name="s5_oaddr")
        m.d.sync += [v5.eq(v4), a5.eq(a4)]
        outs = []
        for i, acc in enumerate(acc4):
            name = f"cs{i}"
            x = self._to_fp32(m, acc, ACC_BITS, is_fp, name)
            prod = Signal(32, name=f"{name}_prod")
            col = i % c.tile_n
            m.d.sync += prod.eq(fp32_mul(m, x, sc_r.data[col * 32:(col + 1) * 32], f"{name}_mul"))
            psum = out_r.data[i * ACC_BITS:(i + 1) * ACC_BITS]
            out = Signal(32, name=f"{name}_out")
            m.d.comb += out.eq(Mux(acc_cmd, FpArith().add(m, psum, prod, f"{name}_psum"), prod))
            outs.append(out)
        return v5, a5, Cat(*outs)

    def elaborate(self, platform):
        c = self.cfg
        m = Module()
        if not c.external_buffers:  # the datapath of the external_buffers build inside the core's own buffers
            m.submodules.datapath = datapath = LutCore(replace(c, external_buffers=True))
            attach_buffers(m, c, self, datapath)
            return m
        m.submodules.controller = ctrl = LutController(c)
        io = self._buffer_ports(m)
        st = self._control_stages(m, ctrl, io)
        tab = self._table_stage(m, ctrl, io, st)
        lanes = self._lookup_stage(m, io, st, tab)
        acc = self._half_sub_stage(m, io, st, tab, lanes)
        self._accumulate_stage(m, io, st, acc)
        return m

    # ------------------------------------------------------------------ the datapath's stages (elaborate's builders)
    def _buffer_ports(self, m: Module) -> SimpleNamespace:
        """The buffers' ports as read / write ports (the core's own :class:`LutBuffers` or SRAM macros),
        and ``per_channel``'s scratch memory of the tile's running sums."""
        c = self.cfg
        io = SimpleNamespace(act_r=SimpleNamespace(addr=self.act_raddr, data=self.act_rdata),
                             wgt_r=SimpleNamespace(addr=self.weight_raddr, data=self.weight_rdata),
                             tab_r=SimpleNamespace(addr=self.table_raddr, data=self.table_rdata),
                             out_r=SimpleNamespace(addr=self.out_raddr, data=self.out_rdata),
                             out_w=SimpleNamespace(addr=self.out_waddr, data=self.out_wdata, en=self.out_we),
                             sc_r=None, scr_w=None, scr_r=None)
        if c.scale != "none":  # scale buffer: tile_n fp32 scales an entry (data the next cycle)
            io.sc_r = SimpleNamespace(addr=self.scale_raddr, data=self.scale_rdata)
        if c.scale == "per_channel":  # the tile's running sums by column block (psum stays in the output buffer)
            m.submodules.acc_scratch = scr = Memory(shape=c.out_word, depth=c.out_depth, init=[])
            scr_w, scr_r = scr.write_port(), scr.read_port()  # (named by their variables)
            io.scr_w, io.scr_r = scr_w, scr_r
        return io

    def _control_stages(self, m: Module, ctrl, io) -> SimpleNamespace:
        """The controller's ports (stage 0, t1 control) and the lookup's control through the table
        register (t2), the lookup register (s1) and the shift-add's stages (x1)."""
        c = self.cfg
        wgt_r, tab_r = io.wgt_r, io.tab_r
        running, is_fp, fp16, int1 = ctrl.busy, ctrl.is_fp, ctrl.fp16, ctrl.int1
        acc_cmd, precomp = ctrl.acc_cmd, ctrl.precomp
        m.d.comb += [getattr(ctrl, n).eq(getattr(self, n)) for n in (
            "cmd_valid", "cmd_row_blocks", "cmd_groups", "cmd_col_blocks", "cmd_wfmt", "cmd_afmt", "cmd_accumulate",
            "cmd_precomputed", "cmd_bank")]
        m.d.comb += [self.cmd_ready.eq(ctrl.cmd_ready), self.busy.eq(running), self.tile_start.eq(ctrl.tile_start),
                     self.tile_done.eq(ctrl.tile_done), self.tile_cycles.eq(ctrl.tile_cycles),
                     self.tiles_done.eq(ctrl.tiles_done), self.error.eq(ctrl.cmd_error), self.bank.eq(ctrl.bank),
                     wgt_r.addr.eq(ctrl.w_addr), tab_r.addr.eq(ctrl.tab_addr)]
        t1_valid, t1_first, t1_last, t1_bank, t1_fg = ctrl.t1_valid, ctrl.t1_first, ctrl.t1_last, ctrl.t1_bank, ctrl.t1_fg
        t1_oaddr = ctrl.t1_oaddr
        t1_saddr = ctrl.t1_saddr if c.scale == "per_group" else None
        t1_nb, t1_lastg = (ctrl.t1_nb, ctrl.t1_lastg) if c.scale == "per_channel" else (None, None)
        wword = wgt_r.data  # the weight-plane word the lookup indexes with
        if c.table_register:  # stage t2 (table register): the lookup's control and weight word one cycle later
            t2 = [Signal.like(x, name=f"t2_{x.name[3:]}") for x in (t1_valid, t1_first, t1_last, t1_fg, t1_oaddr)]
            m.d.sync += [x.eq(y) for x, y in zip(t2, (t1_valid, t1_first, t1_last, t1_fg, t1_oaddr))]
            t1_valid, t1_first, t1_last, t1_fg, t1_oaddr = t2
            wword = Signal.like(wgt_r.data, name="t2_wword")
            m.d.sync += wword.eq(wgt_r.data)
            if t1_saddr is not None:
                t1_saddr = pipe_delay(m, t1_saddr, 1, "t2_saddr")
            if t1_nb is not None:
                t1_nb, t1_lastg = pipe_delay(m, t1_nb, 1, "t2_nb"), pipe_delay(m, t1_lastg, 1, "t2_lastg")
        lk_dom = m.d.sync if c.lookup_register else m.d.comb  # t1 -> s1: a register or a wire
        s1_valid, s1_first, s1_last, s1_fg = Signal(), Signal(), Signal(), Signal()
        s1_oaddr = Signal.like(t1_oaddr)
        lk_dom += [s1_valid.eq(t1_valid), s1_first.eq(t1_first), s1_last.eq(t1_last), s1_oaddr.eq(t1_oaddr),
                   s1_fg.eq(t1_fg)]
        # the shift-add's own stages (lookup_interleave): stage 2's control waits for its result
        sa = c.shift_add_stages
        x1_valid, x1_last, x1_oaddr, x1_fg = (pipe_delay(m, x, sa, f"x1_{x.name[3:]}")
                                              for x in (s1_valid, s1_last, s1_oaddr, s1_fg))
        s2_saddr = s2_nb = s3_lastg = None
        if c.scale == "per_group":
            s1_saddr, s2_saddr = (Signal(range(c.scale_depth), name=f"{x}_saddr") for x in ("s1", "s2"))
            m.d.sync += s2_saddr.eq(pipe_delay(m, s1_saddr, sa, "x1_saddr"))
            lk_dom += s1_saddr.eq(t1_saddr)
        if c.scale == "per_channel":
            s1_nb, s2_nb = (Signal(range(c.out_depth), name=f"{x}_nb") for x in ("s1", "s2"))
            s1_lastg, s2_lastg, s3_lastg = Signal(), Signal(), Signal()
            m.d.sync += [s2_nb.eq(pipe_delay(m, s1_nb, sa, "x1_nb")),
                         s2_lastg.eq(pipe_delay(m, s1_lastg, sa, "x1_lastg")),
                         s3_lastg.eq(pipe_delay(m, s2_lastg, c.half_sub_stages, "x2_lastg"))]
            lk_dom += [s1_nb.eq(t1_nb), s1_lastg.eq(t1_lastg)]
        return SimpleNamespace(running=running, is_fp=is_fp, fp16=fp16, int1=int1, acc_cmd=acc_cmd, precomp=precomp,
                               t1_bank=t1_bank, wword=wword, lk_dom=lk_dom, s1_valid=s1_valid, s1_first=s1_first,
                               s1_oaddr=s1_oaddr, sa=sa, x1_valid=x1_valid, x1_last=x1_last, x1_oaddr=x1_oaddr,
                               x1_fg=x1_fg, s2_saddr=s2_saddr, s2_nb=s2_nb, s3_lastg=s3_lastg)

    def _table_stage(self, m: Module, ctrl, io, st) -> SimpleNamespace:
        """The precompute unit, each row's table entries as the lookup reads them (bank or table buffer;
        with the table register, registered, the int ones negated beside them) and, for the int one-hot
        lookup, each lane's select registers."""
        c = self.cfg
        tm, tn, K, E, eb = c.tile_m, c.tile_n, c.group_k, c.entries, c.entry_bits
        ariths = self._arithmetics()
        act_r, wgt_r, tab_r = io.act_r, io.wgt_r, io.tab_r
        m.submodules.precompute = pre = PrecomputeUnit(c)
        m.d.comb += [pre.restart.eq(ctrl.accept), pre.build.eq(~self.cmd_precomputed), pre.go.eq(ctrl.pre_go),
                     pre.is_fp.eq(st.is_fp), pre.fp16.eq(st.fp16), act_r.addr.eq(pre.act_addr),
                     pre.act_data.eq(act_r.data)]
        tables = [[[pre.tables[((b * tm + r) * E + e) * eb:((b * tm + r) * E + e + 1) * eb] for e in range(E)]
                   for r in range(tm)] for b in range(2)]
        row_tab = []
        for r in range(tm):
            entries = []
            for e in range(E):
                v = Signal(eb, name=f"look_r{r}_e{e}")
                base = (r * E + e) * eb
                m.d.comb += v.eq(Mux(st.precomp, tab_r.data[base:base + eb],
                                     Mux(st.t1_bank, tables[1][r][e], tables[0][r][e])))
                entries.append(v)
            row_tab.append(entries)
        neg_tab = {}  # table register: the int entries negated, registered beside them
        if c.table_register:
            reg_tab = [[Signal(eb, name=f"tab_r{r}_e{e}") for e in range(E)] for r in range(tm)]
            m.d.sync += [reg_tab[r][e].eq(row_tab[r][e]) for r in range(tm) for e in range(E)]
            for kind, ar in ariths:
                if kind == "int" and c.symmetric:
                    neg_tab[kind] = [[Signal(ar.width, name=f"ntab_r{r}_e{e}") for e in range(E)] for r in range(tm)]
                    m.d.sync += [neg_tab[kind][r][e].eq(ar.neg(m, row_tab[r][e], f"ntab_r{r}_e{e}_n"))
                                 for r in range(tm) for e in range(E)]
            row_tab = reg_tab
        lane_idx = {}  # table register, int: each (column, row) lane's own one-hot select registers (below)
        if neg_tab:
            for col in range(tn):
                raw = wgt_r.data[col * K:(col + 1) * K]
                for r in range(tm):
                    # one-hot selects, registered with the weight word: bit e of the positive half is
                    # ``top & lo == e``, of the negated half ``~top & ~lo == e`` (exactly one of the 2E set), so
                    # the lookup is an AND-OR of 2E terms (3 LUT levels, not the 2 E:1 muxes + 2:1's 4). Odd
                    # rows store them inverted (active low): distinct flip-flops that synthesis cannot merge, so
                    # no select register fans out to more than one row's lane (the lookup's path is routing)
                    top_b, lo, inv = raw[K - 1], raw[:K - 1], r % 2 == 1
                    sp, sn = Signal(E, name=f"t2_sp_r{r}_c{col}"), Signal(E, name=f"t2_sn_r{r}_c{col}")
                    for e in range(E):
                        vp, vn = top_b & (lo == e), ~top_b & (~lo == e)
                        m.d.sync += [sp[e].eq(~vp if inv else vp), sn[e].eq(~vn if inv else vn)]
                    lane_idx[col, r] = (sp, sn, inv)
        return SimpleNamespace(row_tab=row_tab, neg_tab=neg_tab, lane_idx=lane_idx)

    def _lookup_term(self, m: Module, ar, kind: str, io, st, tab, t_raw, lane_top, r: int, col: int, name: str):
        """Stage t1 of one lane and arithmetic: the looked-up term, signed (registered with the lookup register):
        the int one-hot AND-OR of the 2E entries, or the entry ``t_raw`` negated unless ``lane_top``."""
        tv = Signal(ar.width, name=f"{name}_t")  # the looked-up term, signed (registered: lookup_register)
        if kind in tab.neg_tab:  # an AND-OR of the 2E entries on the lane's one-hot select registers
            sp, sn, inv = tab.lane_idx[col, r]
            terms = []
            for e in range(self.cfg.entries):
                for sel, val in ((sp[e], ar._s(tab.row_tab[r][e])), (sn[e], tab.neg_tab[kind][r][e])):
                    terms.append(val & (~sel if inv else sel).replicate(ar.width))
            acc = terms[0]
            for t in terms[1:]:
                acc = acc | t
            st.lk_dom += tv.eq(acc)
        else:
            st.lk_dom += tv.eq(Mux(lane_top, ar._s(t_raw) if kind == "int" else t_raw,
                                   ar.neg(m, t_raw, f"{name}_n")))
        return tv

    def _lookup_stage(self, m: Module, io, st, tab) -> SimpleNamespace:
        """Stages t1 (lookup, negate) and 1 (shift-add ``p = rne(2p + T)``, the first plane ``p = T``) of every
        lane, and the step's ``S`` (the all-ones entry) for stage 2. Returns each lane's newest ``p`` and stage
        2's control."""
        c = self.cfg
        tm, tn, K, E, eb, pb = c.tile_m, c.tile_n, c.group_k, c.entries, c.entry_bits, c.p_bits
        ariths = self._arithmetics()
        wgt_r, wword, row_tab, sa, lk_dom = io.wgt_r, st.wword, tab.row_tab, st.sa, st.lk_dom
        D = c.lookup_interleave
        # D == 1: one plane register a lane. D > 1: a line of D - sa registers after the sa-stage adder, so a
        # column block's p comes back D cycles later, for its next plane (the blocks of a batch in turn)
        lines = [[[Signal(pb, name=f"p{i or ''}_r{r}_c{col}") for i in range(D - sa)] for col in range(tn)]
                 for r in range(tm)]
        preg = [[lines[r][col][0] for col in range(tn)] for r in range(tm)]  # (D > 1: the newest, for stage 2)
        first_sa = pipe_delay(m, st.s1_first, sa, "first_sa")
        # table register: the lookups that read t_raw (not the int one-hot AND-OR) do so on select registers
        lane_selects = c.table_register and E > 1 and any(kind not in tab.neg_tab for kind, _ar in ariths)
        s2_S = [Signal(eb, name=f"S_r{r}") for r in range(tm)]
        for col in range(tn):
            idx = wword[col * K:(col + 1) * K]
            if c.symmetric:
                top = idx[K - 1]
                local = Mux(top, idx[:K - 1], ~idx[:K - 1]) if K > 1 else Const(0, 1)
            else:
                top, local = Const(1, 1), idx
            for r in range(tm):
                t_raw = Signal(eb, name=f"t_r{r}_c{col}")
                lane_top = top
                if lane_selects:  # the lane's own select registers
                    lane_top = self._lane_lookup(m, wgt_r.data[col * K:(col + 1) * K], row_tab[r], t_raw, r, col)
                else:
                    m.d.comb += t_raw.eq(Array(row_tab[r])[local])
                new = {}
                for kind, ar in ariths:
                    name = f"l_{kind}_r{r}_c{col}"
                    tv = self._lookup_term(m, ar, kind, io, st, tab, t_raw, lane_top, r, col, name)
                    if c.max_planes == 1:  # int1-only build: one plane, no shift-add
                        new[kind] = pipe_delay(m, tv, sa, f"{name}_tsa")
                    elif D == 1:
                        new[kind] = Mux(st.s1_first, tv, ar.double_add(m, preg[r][col], tv, f"{name}_sa"))
                    else:
                        new[kind] = Mux(first_sa, pipe_delay(m, tv, sa, f"{name}_tsa"),
                                        self._shift_add(m, ar, lines[r][col][-1], tv, sa, f"{name}_sa"))
                if D == 1:
                    with m.If(st.s1_valid):
                        m.d.sync += preg[r][col].eq(self._by_kind(new, st.is_fp))
                else:  # every cycle: the line keeps its spacing through idle slots and between steps
                    line = lines[r][col]
                    m.d.sync += [line[0].eq(self._by_kind(new, st.is_fp))] + [line[i].eq(line[i - 1])
                                                                             for i in range(1, len(line))]
        s1_oaddr, x1_valid, x1_last = st.s1_oaddr, st.x1_valid, st.x1_last
        s2_valid, s2_fg = Signal(), Signal()
        s2_oaddr = Signal.like(s1_oaddr)
        m.d.sync += [s2_valid.eq(x1_valid & x1_last), s2_oaddr.eq(st.x1_oaddr), s2_fg.eq(st.x1_fg)]
        s1_S = [Signal(eb, name=f"S1_r{r}") for r in range(tm)]
        lk_dom += [s1_S[r].eq(row_tab[r][E - 1]) for r in range(tm)]
        x1_S = [pipe_delay(m, s1_S[r], sa, f"x1_S_r{r}") for r in range(tm)]
        with m.If(x1_valid & x1_last):
            m.d.sync += [s2_S[r].eq(x1_S[r]) for r in range(tm)]
        return SimpleNamespace(preg=preg, s2_S=s2_S, s2_valid=s2_valid, s2_oaddr=s2_oaddr, s2_fg=s2_fg)

    def _half_sub_stage(self, m: Module, io, st, tab, lanes) -> SimpleNamespace:
        """Stage 2: ``r = rne(p - S) * 0.5`` (``r = p`` for int1) of every lane after its last plane, the
        accumulator read (and ``per_group``'s scale multiply, stage 2b). Returns stage 3's inputs."""
        c = self.cfg
        tm, tn, pb = c.tile_m, c.tile_n, c.p_bits
        ariths = self._arithmetics()
        preg, s2_S, is_fp = lanes.preg, lanes.s2_S, st.is_fp
        s2_valid, s2_oaddr, s2_fg, s2_saddr, s2_nb = lanes.s2_valid, lanes.s2_oaddr, lanes.s2_fg, st.s2_saddr, st.s2_nb
        rreg = [[Signal(pb, name=f"r_r{r}_c{col}") for col in range(tn)] for r in range(tm)]
        hs = c.half_sub_stages  # (lookup_interleave: p - S pipelined, the rest of stage 2 waits for it)
        for r in range(tm):
            for col in range(tn):
                vals = {}
                p_hs = pipe_delay(m, preg[r][col], hs, f"p_hs_r{r}_c{col}")
                for kind, ar in ariths:
                    if c.weight_formats == ("int1",):
                        vals[kind] = p_hs
                        continue
                    half = self._half_sub(m, ar, preg[r][col], s2_S[r], hs, f"h_{kind}_r{r}_c{col}")
                    vals[kind] = Mux(st.int1, p_hs, half) if "int1" in c.weight_formats else half
                m.d.sync += rreg[r][col].eq(self._by_kind(vals, is_fp))
        s2_valid, s2_oaddr, s2_fg = (pipe_delay(m, x, hs, f"x2_{x.name[3:]}") for x in (s2_valid, s2_oaddr, s2_fg))
        if s2_saddr is not None:
            s2_saddr = pipe_delay(m, s2_saddr, hs, "x2_saddr")
        if s2_nb is not None:
            s2_nb = pipe_delay(m, s2_nb, hs, "x2_nb")
        acc_valid, acc_oaddr, acc_fg, r_in = s2_valid, s2_oaddr, s2_fg, rreg
        if c.scale == "per_group":  # stage 2b: rs = rne(fp32(r) * scale) before the (fp32) accumulator
            acc_valid, acc_oaddr, acc_fg, r_in = self._group_scale(m, rreg, s2_valid, s2_oaddr, s2_fg, s2_saddr,
                                                                   io.sc_r, is_fp)
        # per_channel: the tile's sum goes to a scratch (by column block), scaled after its last group
        acc_rd = io.out_r if c.scale != "per_channel" else io.scr_r
        with m.If(st.running):
            m.d.comb += acc_rd.addr.eq(acc_oaddr if c.scale != "per_channel" else s2_nb)
        s1_oaddr = st.s1_oaddr
        s3_valid, s3_fg = Signal(), Signal()
        s3_oaddr = Signal.like(s1_oaddr)
        m.d.sync += [s3_valid.eq(acc_valid), s3_oaddr.eq(acc_oaddr), s3_fg.eq(acc_fg)]
        return SimpleNamespace(acc_oaddr=acc_oaddr, r_in=r_in, acc_rd=acc_rd, s2_nb=s2_nb, s3_valid=s3_valid,
                               s3_oaddr=s3_oaddr, s3_fg=s3_fg)

    def _accumulate_stage(self, m: Module, io, st, acc) -> None:
        """Stage 3: ``rne(acc + r)`` of every lane into the output buffer (the previous cycle's write
        forwarded; ``per_channel``: into the scratch, then the scale stages)."""
        c = self.cfg
        tm, tn = c.tile_m, c.tile_n
        ariths = self._arithmetics()
        is_fp, out_r, out_w, r_in, acc_rd = st.is_fp, io.out_r, io.out_w, acc.r_in, acc.acc_rd
        s2_nb, s3_valid, s3_oaddr, s3_fg, acc_oaddr = acc.s2_nb, acc.s3_valid, acc.s3_oaddr, acc.s3_fg, acc.acc_oaddr
        # the previous cycle's write (fw_data) is forwarded when it went to this entry: that compare is
        # made a stage early and registered (fwd), keeping it off the accumulate loop (entry -> fp32 add)
        fw_data = Signal(c.out_word)
        fwd = Signal()
        if c.scale == "per_channel":  # the scratch is addressed by column block
            s3_nb = Signal.like(s2_nb)
            m.d.sync += [s3_nb.eq(s2_nb), fwd.eq(s3_valid & (s3_nb == s2_nb))]
            old = Mux(fwd, fw_data, acc_rd.data)
        elif c.acc_stages:  # updates of one entry are lookup_interleave cycles apart: nothing to forward
            old = out_r.data
        else:
            m.d.sync += fwd.eq(s3_valid & (s3_oaddr == acc_oaddr))
            old = Mux(fwd, fw_data, out_r.data)
        sums = []
        acc_int = IntArith(ACC_BITS)
        acc_kinds = [("fp", None)] if c.scale == "per_group" else ariths  # per_group: fp32 even for int8
        for r in range(tm):
            for col in range(tn):
                lane = (r * tn + col) * ACC_BITS
                acc_old = Signal(ACC_BITS, name=f"acc_r{r}_c{col}")
                m.d.comb += acc_old.eq(Mux(s3_fg, 0, old[lane:lane + ACC_BITS]))
                vals = {}
                for kind, _ar in acc_kinds:
                    if kind == "int":
                        vals[kind] = pipe_delay(m, acc_int.add(m, acc_old, r_in[r][col][:c.p_bits],
                                                               f"sum_int_r{r}_c{col}"), c.acc_stages, f"sum_int_r{r}_c{col}_w")
                    elif c.acc_stages:
                        vals[kind] = self._fp_add(m, acc_old, r_in[r][col], c.acc_stages, f"sum_fp_r{r}_c{col}")
                    else:
                        vals[kind] = FpArith().add(m, acc_old, r_in[r][col], f"sum_fp_r{r}_c{col}")
                v = Signal(ACC_BITS, name=f"sum_r{r}_c{col}")
                m.d.comb += v.eq(self._by_kind(vals, is_fp))
                sums.append(v)
        if c.scale == "per_channel":
            m.d.sync += fw_data.eq(Cat(*sums))
            m.d.comb += [io.scr_w.addr.eq(s3_nb), io.scr_w.data.eq(Cat(*sums)), io.scr_w.en.eq(s3_valid)]
            fin_valid, fin_addr, fin_data = self._channel_scale(m, sums, s3_valid & st.s3_lastg, s3_oaddr, s3_nb,
                                                                 io.sc_r, out_r, st.running, st.acc_cmd, is_fp)
        elif c.acc_stages:
            fin_valid, fin_addr = pipe_delay(m, s3_valid, c.acc_stages, "x3_valid"), pipe_delay(m, s3_oaddr, c.acc_stages, "x3_oaddr")
            fin_data = Cat(*sums)
        else:
            m.d.sync += fw_data.eq(Cat(*sums))
            fin_valid, fin_addr, fin_data = s3_valid, s3_oaddr, Cat(*sums)

        m.d.comb += [out_w.addr.eq(fin_addr), out_w.data.eq(fin_data), out_w.en.eq(fin_valid)]
