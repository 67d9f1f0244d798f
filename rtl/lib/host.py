"""The host interface of a tile engine: one ``wiring.Signature`` shared by archsim's designs, the
AXI wrapper (:mod:`rtl.lib.axi`) and user RTL co-simulated with ``archsim rtl cosim --verilog``.

Ports (besides ``clk`` and a synchronous, active-high ``rst``), as seen from the engine; every
stream is an :mod:`amaranth.lib.stream` (a beat moves when ``valid`` and ``ready`` are both high
at a rising edge; ``valid`` never waits for ``ready``)::

    cmd      in   stream of tile commands (payload: the template's command layout)
    wr       in   stream of operand writes (payload: buf | addr | data, least significant first)
    rd_addr  in   stream of result-read requests (payload: an output-buffer address)
    rd_data  out  stream of result words, one per request, in request order
    busy     out  a command is queued or running, or results are still being written
    done     out  one-cycle pulse: a tile finished (its last result is computed)
    tile_cycles out  the hardware's cycle count of the last finished tile (see below)
    tiles_done  out  tiles finished since reset
    error    out  sticky: a command was refused (unsupported field value)

``tile_cycles`` counts the cycles of one tile, from its first cycle (the first operand moved
into the array) through the cycle in which ``done`` is high, both included. It takes the new
count in the cycle after ``done`` and holds it until the next ``done``. Co-simulation reads it
after each ``done``: the measured cycles come from the hardware, not from the testbench.
``docs/rtl_host_interface.md`` is the description for hardware engineers.
"""
from __future__ import annotations

from amaranth.hdl import Shape
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

#: width of ``tile_cycles`` and ``tiles_done``
COUNTER_BITS = 32
#: the ports of the host signature, in documented order (``clk``/``rst`` not included)
HOST_MEMBERS = ("cmd", "wr", "rd_addr", "rd_data", "busy", "done", "tile_cycles", "tiles_done", "error")


def write_layout(buf_bits: int, addr_bits: int, data_bits: int) -> data.StructLayout:
    """Payload of the operand-write stream: buffer select, address, one entry (all lanes)."""
    return data.StructLayout({"buf": buf_bits, "addr": addr_bits, "data": data_bits})


def host_members(command, *, buf_bits: int, addr_bits: int, wr_data_bits: int, rd_data_bits: int,
                 rd_addr_bits: int | None = None) -> dict:
    """The host signature's members (to extend with a design's own debug ports)."""
    return {
        "cmd": In(stream.Signature(command)),
        "wr": In(stream.Signature(write_layout(buf_bits, addr_bits, wr_data_bits))),
        "rd_addr": In(stream.Signature(rd_addr_bits if rd_addr_bits is not None else addr_bits)),
        "rd_data": Out(stream.Signature(rd_data_bits)),
        "busy": Out(1),
        "done": Out(1),
        "tile_cycles": Out(COUNTER_BITS),
        "tiles_done": Out(COUNTER_BITS),
        "error": Out(1),
    }


def host_signature(command, **sizes) -> wiring.Signature:
    """The host signature alone (see :func:`host_members` for the sizes)."""
    return wiring.Signature(host_members(command, **sizes))


def _stream(member) -> stream.Signature | None:
    """The (unflipped) stream signature of a member, or None when it is not a stream."""
    if member.is_port:
        return None
    sig = member.signature.flip() if member.flow == In else member.signature
    return sig if isinstance(sig, stream.Signature) else None


def payload_shape(member):
    """The payload shape of a stream member of a signature."""
    return _stream(member).members["payload"].shape


def implements_host(signature: wiring.Signature) -> bool:
    """Whether ``signature`` has every host member with the right direction and kind."""
    members = signature.members
    if any(name not in members for name in HOST_MEMBERS):
        return False
    for name, flow in (("cmd", In), ("wr", In), ("rd_addr", In), ("rd_data", Out)):
        if members[name].flow != flow or _stream(members[name]) is None:
            return False
    return all(members[n].is_port and members[n].flow == Out for n in HOST_MEMBERS[4:])


def host_sizes(signature: wiring.Signature) -> dict[str, int]:
    """Widths of a host signature's payloads (what a wrapper around it needs)."""
    if not implements_host(signature):
        raise ValueError("the design does not implement the host signature (rtl.lib.host)")
    members = signature.members
    wr = payload_shape(members["wr"])
    return {
        "cmd_bits": Shape.cast(payload_shape(members["cmd"])).width,
        "buf_bits": Shape.cast(wr["buf"].shape).width,
        "addr_bits": Shape.cast(wr["addr"].shape).width,
        "wr_data_bits": Shape.cast(wr["data"].shape).width,
        "rd_addr_bits": Shape.cast(payload_shape(members["rd_addr"])).width,
        "rd_data_bits": Shape.cast(payload_shape(members["rd_data"])).width,
    }


#: the flattened port names of the host signature (Verilog names; ``clk`` and ``rst`` first)
HOST_PORTS = ("clk", "rst", "cmd__payload", "cmd__valid", "cmd__ready", "wr__payload", "wr__valid", "wr__ready",
              "rd_addr__payload", "rd_addr__valid", "rd_addr__ready", "rd_data__payload", "rd_data__valid",
              "rd_data__ready", "busy", "done", "tile_cycles", "tiles_done", "error")


#: one line per host port, for manifests and port tables (a design adds its own payload details)
HOST_PORT_DOCS = {
    "clk": "clock (rising edge)",
    "rst": "synchronous reset, active high",
    "cmd__valid": "command stream: a command is taken when cmd__valid and cmd__ready are high at a rising edge",
    "cmd__ready": "high when the engine can take a command",
    "wr__valid": "operand-write stream: an entry is written when wr__valid and wr__ready are high",
    "wr__ready": "high when the engine can take a write",
    "wr__payload": "buf (lowest bits), addr, data (all lanes of one buffer entry, lane 0 lowest)",
    "rd_addr__valid": "result-read request stream: valid",
    "rd_addr__ready": "high when the engine can take a read request",
    "rd_addr__payload": "the output-buffer address to read",
    "rd_data__valid": "result stream: rd_data__payload holds the entry of the oldest pending request",
    "rd_data__ready": "the host takes the result (results wait while it is low)",
    "rd_data__payload": "one output-buffer entry, lane 0 in the lowest bits",
    "busy": "a command is queued or running, or results are still being written",
    "done": "one-cycle pulse: a tile finished",
    "tile_cycles": "hardware cycle count of the last finished tile (first cycle .. done, inclusive); "
                   "updated the cycle after done",
    "tiles_done": "tiles finished since reset",
    "error": "sticky: a command was refused",
}


def serve_result_reads(m, rd_addr, rd_data, *, en, addr, fresh, data, blocked=None) -> None:
    """The host's ``rd_addr`` / ``rd_data`` streams onto a result memory that answers a request
    (``en``, ``addr``) the next cycle (``fresh`` high, the word on ``data``): a result the host does
    not take at once waits in ``held``, and no request is taken while one waits (nor while
    ``blocked``, e.g. a tile runs)."""
    from amaranth import Mux, Signal

    held = Signal(len(rd_data.payload))
    held_valid = Signal()
    ready = ~held_valid & (~fresh | rd_data.ready)
    m.d.comb += [
        rd_addr.ready.eq(ready if blocked is None else ~blocked & ready),
        en.eq(rd_addr.valid & rd_addr.ready),
        addr.eq(rd_addr.payload),
        rd_data.valid.eq(fresh | held_valid),
        rd_data.payload.eq(Mux(held_valid, held, data)),
    ]
    with m.If(fresh & ~rd_data.ready):
        m.d.sync += [held.eq(data), held_valid.eq(1)]
    with m.Elif(held_valid & rd_data.ready):
        m.d.sync += held_valid.eq(0)
