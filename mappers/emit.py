"""Building a layer's command list: slots, dependencies, vector work, gathers.

:class:`Emitter` appends commands and derives their dependencies from the
buffer slots they touch:

- read-after-write: a command reading a slot waits for the slot's last writer;
- write-after-read: a command writing a slot (a Load, a non-accumulating
  Compute, a VectorOp's result) waits for every reader of the slot's previous
  contents, one per unit (units run their commands in list order, so the
  latest reader on a unit stands for the earlier ones);
- accumulation: an accumulating Compute reads and writes its output slot,
  so successive partial sums chain.

Slots are ``(buffer, index)``. :class:`BufferLayout` assigns them: with
per-operand buffers operand X uses buffer X, slots ``0..count-1``; with one
``unified`` buffer the operands' slot ranges are stacked (input first, then
weight, then output).
"""
from __future__ import annotations

from dataclasses import dataclass

from archsim.errors import MappingError
from archsim.program import Compute, Load, Store, VectorOp
from mappers.lower import Gather, VectorWork

OPERANDS = ("input", "weight", "output")


@dataclass(frozen=True)
class BufferLayout:
    """Where each operand's slots live and how many bytes a slot holds."""

    unified: bool
    capacity: dict  # operand -> bytes available to that operand (per-operand buffers), or {"unified": bytes}

    @classmethod
    def from_arch(cls, arch, name: str = "") -> "BufferLayout":
        bufs = arch.buffers
        if all(op in bufs for op in OPERANDS):
            return cls(False, {op: int(bufs[op].bytes) for op in OPERANDS})
        if "unified" in bufs:
            return cls(True, {"unified": int(bufs["unified"].bytes)})
        raise MappingError(f"{arch.name}: buffers: expected 'input', 'weight' and 'output' or one 'unified' buffer, "
                           f"got {', '.join(sorted(bufs)) or 'none'}")

    def fits(self, need: dict) -> bool:
        """``need``: operand -> total bytes of all its slots."""
        if self.unified:
            return sum(need.values()) <= self.capacity["unified"]
        return all(need.get(op, 0) <= self.capacity[op] for op in OPERANDS)

    def slot_bytes(self, slots: dict) -> dict:
        """Bytes per slot when the capacity is split evenly: operand -> bytes.

        ``slots``: operand -> number of slots. A unified buffer is split in
        proportion to the slot counts.
        """
        if self.unified:
            each = self.capacity["unified"] // max(1, sum(slots.values()))
            return {op: each for op in slots}
        return {op: self.capacity[op] // max(1, n) for op, n in slots.items()}


class Emitter:
    """Appends commands with their dependencies; see the module docstring."""

    __slots__ = ("commands", "unified", "after_input", "dma_unit", "vector_unit", "_base", "_writer", "_readers")

    def __init__(self, layout: BufferLayout, slot_counts: dict | None = None, *, dma_unit: str = "dma",
                 vector_unit: str = "vector"):
        """``dma_unit`` / ``vector_unit``: the names the template's model gives its DMA and
        vector units (its ``units``); compute units are named per call (``compute(unit=...)``)."""
        self.commands: list = []
        self.dma_unit = dma_unit
        self.vector_unit = vector_unit
        self.unified = layout.unified
        #: extra deps of every "input" Load (the Store that produced the data
        #: in DRAM, when one part of a layer feeds the next)
        self.after_input: tuple = ()
        counts = slot_counts or {"input": 2, "weight": 2, "output": 2}
        base, acc = {}, 0
        for op in OPERANDS:
            base[op] = acc if self.unified else 0
            acc += counts.get(op, 0)
        self._base = base
        self._writer: dict = {}
        self._readers: dict = {}

    def slot(self, operand: str, index: int) -> tuple[str, int]:
        """The (buffer, slot) of operand's ``index``-th slot."""
        if self.unified:
            return ("unified", self._base[operand] + index)
        return (operand, index)

    # -- dependency bookkeeping --------------------------------------------
    def _war(self, key, deps: set) -> None:
        readers = self._readers.get(key)
        if readers:
            deps.update(readers.values())
        w = self._writer.get(key)
        if w is not None:
            deps.add(w)

    def _raw(self, key, deps: set) -> None:
        w = self._writer.get(key)
        if w is not None:
            deps.add(w)

    def _read(self, key, cid: int, unit: str) -> None:
        r = self._readers.get(key)
        if r is None:
            self._readers[key] = {unit: cid}
        else:
            r[unit] = cid

    def _write(self, key, cid: int) -> None:
        self._writer[key] = cid
        self._readers.pop(key, None)

    # -- commands ------------------------------------------------------------
    def load(self, operand: str, index: int, nbytes: int, dram_addr: int = 0, *, into: str | None = None,
             after: tuple = ()) -> int:
        """DRAM -> slot ``index`` of ``into`` (default: operand's own slots);
        ``after``: extra deps (e.g. the Store that wrote this DRAM data)."""
        key = self.slot(into or operand, index)
        deps: set = set(after)
        if operand == "input" and self.after_input:
            deps.update(self.after_input)
        self._war(key, deps)
        cid = len(self.commands)
        self.commands.append(Load(cid, tuple(sorted(deps)), operand, key[0], key[1], int(nbytes), int(dram_addr),
                                  self.dma_unit))
        self._write(key, cid)
        return cid

    def store(self, operand: str, index: int, nbytes: int, dram_addr: int = 0, *, src: str | None = None,
              reads: tuple = ()) -> int:
        """Slot ``index`` of ``src`` (default: operand's own) -> DRAM; ``reads``:
        further ((buffer operand, index), ...) the store's data path reads (a
        fused residual added on the way out)."""
        key = self.slot(src or operand, index)
        deps: set = set()
        self._raw(key, deps)
        extra = [self.slot(o, i) for o, i in reads]
        for k in extra:
            self._raw(k, deps)
        cid = len(self.commands)
        self.commands.append(Store(cid, tuple(sorted(deps)), operand, key[0], key[1], int(nbytes), int(dram_addr),
                                   self.dma_unit))
        self._read(key, cid, self.dma_unit)
        for k in extra:
            self._read(k, cid, self.dma_unit)
        return cid

    def compute(self, tile, reads: tuple, out_index: int, accumulate: bool, unit: str = "array") -> int:
        """One compute tile reading ``reads`` ((operand, index), ...) and
        writing output slot ``out_index`` (read too when accumulating)."""
        deps: set = set()
        keys = []
        for operand, index in reads:
            key = self.slot(operand, index)
            self._raw(key, deps)
            keys.append((operand, key))
        okey = self.slot("output", out_index)
        if accumulate:
            self._raw(okey, deps)
            self._war_readers_only(okey, deps)
        else:
            self._war(okey, deps)
        cid = len(self.commands)
        slots = tuple((operand, key[1]) for operand, key in keys) + (("output", okey[1]),)
        self.commands.append(Compute(cid, tuple(sorted(deps)), tile, slots, unit))
        for _, key in keys:
            self._read(key, cid, unit)
        self._write(okey, cid)
        return cid

    def compute_block(self, tiles, reads: tuple, out_index: int, unit: str = "array") -> None:
        """Consecutive Computes of one buffer tile (same input slots, same
        output slot): the dependencies :meth:`compute` would give each, built
        once. Each tile reads ``reads`` and writes (or accumulates into)
        output slot ``out_index``; successive tiles chain on the output slot."""
        base: set = set()
        rkeys = [self.slot(operand, index) for operand, index in reads]
        for key in rkeys:
            self._raw(key, base)
        okey = self.slot("output", out_index)
        self._war_readers_only(okey, base)
        prev = self._writer.get(okey)
        slots = tuple((operand, key[1]) for (operand, _), key in zip(reads, rkeys)) + (("output", okey[1]),)
        cmds = self.commands
        cid = len(cmds)
        base_sorted = tuple(sorted(base))
        for tile in tiles:
            if prev is None or prev in base:
                deps = base_sorted
            elif not base_sorted or prev > base_sorted[-1]:
                deps = base_sorted + (prev,)
            else:
                deps = tuple(sorted(base | {prev}))
            cmds.append(Compute(cid, deps, tile, slots, unit))
            prev = cid
            cid += 1
        last = cid - 1
        for key in rkeys:
            self._read(key, last, unit)
        self._write(okey, last)

    def _war_readers_only(self, key, deps: set) -> None:
        readers = self._readers.get(key)
        if readers:
            deps.update(readers.values())

    def vector(self, op: str, elements: int, reads_per_element: int, in_index: int, out_index: int,
               extra_reads: tuple = ()) -> int:
        """A VectorOp reading input slot ``in_index`` (and ``extra_reads``:
        ((operand, index), ...)) and writing output slot ``out_index``."""
        deps: set = set()
        ikey = self.slot("input", in_index)
        self._raw(ikey, deps)
        extra_keys = [self.slot(o, i) for o, i in extra_reads]
        for key in extra_keys:
            self._raw(key, deps)
        okey = self.slot("output", out_index)
        if okey != ikey:
            self._war(okey, deps)
        cid = len(self.commands)
        self.commands.append(VectorOp(cid, tuple(sorted(deps)), op, int(elements), int(reads_per_element),
                                      self.vector_unit))
        self._read(ikey, cid, self.vector_unit)
        for key in extra_keys:
            self._read(key, cid, self.vector_unit)
        self._write(okey, cid)
        return cid


def split_even(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` integers differing by at most one (sum exact)."""
    q, r = divmod(total, parts)
    return [q + 1] * r + [q] * (parts - r)


def vector_chunks(work: VectorWork, in_slot_bytes: int, out_slot_bytes: int) -> int:
    """How many chunks ``work`` needs so each chunk's input and output fit a
    slot; chunks hold whole rows where a row fits."""
    need = max(-(-work.in_bytes // max(1, in_slot_bytes)), -(-work.out_bytes // max(1, out_slot_bytes)), 1)
    rows = max(1, work.elements // max(1, work.row))
    if need <= rows:
        # round up to a chunk count whose chunks hold whole rows where possible
        per = max(1, rows // need)
        return -(-rows // per)
    return need


def emit_vector(em: Emitter, work: VectorWork, layout: BufferLayout, dram_base: int = 0) -> None:
    """Stream ``work`` through two input and two output slots:
    Load(chunk) -> VectorOp(chunk) -> Store(chunk), software-pipelined so the
    next chunk's load is queued on the DMA before this chunk's store."""
    sb = layout.slot_bytes({"input": 2, "weight": 2, "output": 2})
    chunks = vector_chunks(work, sb["input"], sb["output"])
    streamed = work.param_bytes > sb["weight"]
    if streamed:  # a constant table larger than a slot: stream its rows with the input's
        chunks = param_chunks(work, chunks, sb["weight"])
    ins = split_even(work.in_bytes, chunks)
    outs = split_even(work.out_bytes, chunks)
    elems = split_even(work.elements, chunks)
    extra = ()
    if work.param_bytes and not streamed:
        em.load("weight", 0, work.param_bytes, dram_base + (1 << 40))
        extra = (("weight", 0),)
    param_addr = dram_base + (1 << 40)
    in_addr = dram_base
    out_addr = dram_base + (1 << 41)
    pending_store = None
    em.load("input", 0, ins[0], in_addr)
    for i in range(chunks):
        if i + 1 < chunks:
            in_addr += ins[i]
            em.load("input", (i + 1) % 2, ins[i + 1], in_addr)
        if streamed:
            nbytes = chunk_param_bytes(work, elems[i])
            em.load("weight", i % 2, nbytes, param_addr)
            param_addr += nbytes
            extra = (("weight", i % 2),)
        em.vector(work.op, elems[i], work.reads_per_element, i % 2, i % 2, extra)
        if pending_store is not None:
            em.store("output", *pending_store)
        pending_store = (i % 2, outs[i], out_addr)
        out_addr += outs[i]
    em.store("output", *pending_store)


def chunk_param_bytes(work: VectorWork, elements: int) -> int:
    """Constant bytes a chunk of ``elements`` outputs reads: its share of the
    table (the whole table at most: a table broadcast over a batch repeats)."""
    total = max(1, work.param_elements or work.elements)
    return -(-work.param_bytes * min(elements, total) // total)


def param_chunks(work: VectorWork, chunks: int, slot_bytes: int) -> int:
    """At least ``chunks``, and enough that every chunk's share of the
    constant table fits a slot of ``slot_bytes``."""
    total = max(1, work.param_elements or work.elements)
    per_chunk = slot_bytes * total // work.param_bytes  # elements whose share fits a slot
    if per_chunk < 1:
        raise MappingError(f"{work.op}: one element's share of {work.param_bytes} parameter bytes does not fit "
                           f"a weight slot of {slot_bytes}")
    chunks = max(chunks, -(-work.elements // per_chunk))
    while chunk_param_bytes(work, -(-work.elements // chunks)) > slot_bytes:  # rounding
        chunks += 1
    return chunks


def emit_gather(em: Emitter, work: Gather, layout: BufferLayout, dram_base: int = 0) -> None:
    """An embedding gather: rows DRAM -> buffer -> DRAM, no compute."""
    sb = layout.slot_bytes({"input": 2, "weight": 2, "output": 2})
    chunks = max(1, -(-work.nbytes // max(1, sb["input"])))
    sizes = split_even(work.nbytes, chunks)
    addr = dram_base
    for i, nbytes in enumerate(sizes):
        em.load("weight", i % 2, nbytes, addr, into="input")
        em.store("output", i % 2, nbytes, dram_base + (1 << 41) + addr - dram_base, src="input")
        addr += nbytes
