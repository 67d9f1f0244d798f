"""SpAtten's claims (archsim.validate.spatten): the pruned decode step's attention DRAM bytes equal
the authors' trace's fetch counts; the paper's 10.0x average is printed as an explained difference."""
from archsim.validate import spatten


def test_claims_pass_or_differ_for_their_reason():
    claims = {c.name: c for c in spatten.claims()}
    trace = next(c for n, c in claims.items() if "DRAM bytes" in n)
    assert trace.status == "pass"
    reduction = next(c for n, c in claims.items() if "reduction" in n)
    assert reduction.status in ("pass", "differs")
    # token pruning keeps 3065 of 12 x 1024 keys: on its own a 4.0x cut of the K/V bytes, so the
    # full reduction (also V pruning and 6-bit K/V) must exceed it
    assert reduction.ours > 12 * 1024 / sum(spatten.TRACE_KEYS)


def test_trace_closed_form_by_hand():
    # (3065 keys + 607 V rows) x 64 x 6 bits / 8 + 12 layers x (Q + O rows of 128 B), x 12 heads
    assert spatten.trace_dram_bytes() == 12 * ((3065 + 607) * 48 + 12 * 256)


def test_a_planted_trace_deviation_fails(monkeypatch):
    monkeypatch.setattr(spatten, "TRACE_VALUES", tuple(v + 5 for v in spatten.TRACE_VALUES))
    trace = next(c for c in spatten.claims() if "DRAM bytes" in c.name)
    assert trace.status == "FAIL"
