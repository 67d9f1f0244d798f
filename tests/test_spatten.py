"""SpAtten on the attention template: cascade pruning (workloads.transforms.spatten), the top-k
layers, and the DRAM bytes of pruned, quantized K/V -- against the authors' own trace
(mit-han-lab/spatten, hardware/workloads/summary-gpt2-small-wikitext2-per8.csv, steady state:
keys fetched 921, 716, 204, 102; V rows 184, 143, 40, 20; top-k targets 716, 204, 102, 921;
K and V at 6 bits) and closed forms worked by hand."""
import dataclasses

import pytest

import mappers
import workloads.zoo as zoo
from archsim.errors import ArchsimError, MappingError, WorkloadError
from archsim.spec import load_arch
from workloads.transforms.spatten import cascade_prune

#: the steady-state schedule of the authors' GPT-2-small trace (keys read per layer / 1024)
GPT2_KEEP = [0.9, 0.7, 0.2, 0.2, 0.2, 0.2, 0.1]
#: keys fetched per layer and V rows fetched per layer, as printed in the authors' trace
TRACE_KEYS = [921, 716, 204, 204, 204, 204, 102, 102, 102, 102, 102, 102]
TRACE_VALUES = [184, 143, 40, 40, 40, 40, 20, 20, 20, 20, 20, 20]
TRACE_TOPK = [(0, 716), (1, 204), (5, 102), (11, 921)]  # (layer, target) rows with if_topk=True


def _gpt2_decode():
    return zoo.build("gpt2", phase="decode", kv_len=1023)  # 1024 keys with the new token


def test_decode_schedule_matches_the_authors_trace():
    g = cascade_prune(_gpt2_decode(), GPT2_KEEP)
    atts = [op for op in g.ops() if op.kind == "attention"]
    assert [a.seq_kv for a in atts] == TRACE_KEYS
    assert all(a.seq_q == 1 and a.heads == 12 for a in atts)
    topks = [op for op in g.ops() if op.kind == "topk"]
    layer_of = {a.name: i for i, a in enumerate(atts)}
    got = [(layer_of[t.name.rsplit(".topk", 1)[0]], t.k) for t in topks]
    assert got == TRACE_TOPK
    assert topks[-1].n == 1024  # the last layer ranks every token for the next step's first layer


def test_decode_keeps_the_new_tokens_mlp_and_projections():
    base, pruned = _gpt2_decode(), cascade_prune(_gpt2_decode(), GPT2_KEEP)
    macs = {op.name: op.macs() for op in base.ops() if op.kind == "matmul"}
    assert {op.name: op.macs() for op in pruned.ops() if op.kind == "matmul"} == macs
    # attention MACs: 2 * heads * keys * head_dim per layer, keys from the trace
    att = sum(op.macs() for op in pruned.ops() if op.kind == "attention")
    assert att == sum(2 * 12 * k * 64 for k in TRACE_KEYS)


def _bert_macs(tokens_in, tokens_out, L=128, h=768, f=3072, heads=12):
    """One BERT layer by hand: QKV on the tokens it reads, attention over them, O and MLP on the
    tokens kept after it."""
    return 3 * tokens_in * h * h + 2 * heads * tokens_in * tokens_in * (h // heads) + tokens_out * h * h \
        + 2 * tokens_out * h * f


def test_encoder_cascade_by_hand():
    base = zoo.build("bert-base")
    keep = [1.0, 0.5, 0.25]
    pruned = cascade_prune(base, keep)
    t = [128, 64] + [32] * 10
    dense_layers = sum(_bert_macs(128, 128) for _ in range(12))
    pruned_layers = sum(_bert_macs(t[i], t[i + 1] if i + 1 < 12 else t[i]) for i in range(12))
    other = base.total_macs() - dense_layers  # embeddings, pooler: outside the layers
    assert other >= 0
    assert pruned.total_macs() - other == pruned_layers
    assert [op.seq_q for op in pruned.ops() if op.kind == "attention"] == t


def test_prefill_first_layer_reads_every_token():
    pruned = cascade_prune(zoo.build("bert-base"), [0.5, 0.25])
    assert [op.seq_q for op in pruned.ops() if op.kind == "attention"] == [128] + [32] * 11


def test_graph_without_attention_unchanged():
    g = zoo.build("resnet18")
    assert cascade_prune(g, [0.5]) is g


def test_head_pruning_shrinks_attention_only():
    base = zoo.build("bert-base")
    pruned = cascade_prune(base, None, [1.0, 0.5])
    atts = [op for op in pruned.ops() if op.kind == "attention"]
    assert [a.heads for a in atts] == [12] + [6] * 11
    heads_topk = [op for op in pruned.ops() if op.kind == "topk" and op.target == "heads"]
    assert [(op.n, op.k) for op in heads_topk] == [(12, 6)]
    proj = [op.macs() for op in pruned.ops() if op.kind == "matmul"]
    assert proj == [op.macs() for op in base.ops() if op.kind == "matmul"]


@pytest.mark.parametrize("keep,heads,match", [
    ([0.5, 0.9], None, "non-increasing"),
    ([1.5], None, r"fractions in \(0, 1\]"),
])
def test_bad_schedules_refused(keep, heads, match):
    with pytest.raises(WorkloadError, match=match):
        cascade_prune(zoo.build("bert-base"), keep, heads)


def test_gqa_head_pruning_refused():
    with pytest.raises(WorkloadError, match="grouped-query"):
        cascade_prune(zoo.build("llama3-8b", phase="decode", kv_len=15), None, [0.5])


def _attention_dram(program):
    return sum(sum(c.nbytes for c in lp.commands if type(c).__name__ in ("Load", "Store")) * lp.repeat
               for lp in program.layers if lp.op in ("attention", "topk"))


def test_pruned_quantized_kv_bytes_equal_the_trace_closed_form():
    arch = load_arch("spatten")
    program = mappers.compile(_gpt2_decode(), arch)
    d, heads = 64, 12
    q_and_out = 2 * d * 2  # the query row in, the output row out, 16-bit
    per_head = [k * d * 6 // 8 + v * d * 6 // 8 + q_and_out for k, v in zip(TRACE_KEYS, TRACE_VALUES)]
    assert _attention_dram(program) == heads * sum(per_head)


def test_unpruned_bytes_are_sixteen_bit_kv():
    spatten = load_arch("spatten")
    dense = {k: v for k, v in spatten.options.items() if k not in ("token_keep", "progressive_quant")}
    arch = dataclasses.replace(spatten, options={**dense, "value_keep": 1.0})
    program = mappers.compile(_gpt2_decode(), arch)
    d, heads, L = 64, 12, 1024
    assert _attention_dram(program) == 12 * heads * (2 * L * d * 2 + 2 * d * 2)
    assert not any(lp.op == "topk" for lp in program.layers)


def test_requant_fraction_adds_lsb_bytes():
    """Every row refetches: the K LSBs of every head's kept keys, in lsb_refetch layers."""
    arch = load_arch("spatten")
    full = {"msb_bits": 6, "lsb_bits": 4, "requant_fraction": 1.0}
    program = mappers.compile(_gpt2_decode(), arch, progressive_quant=full)
    d, heads = 64, 12
    per_head = [k * d * 6 // 8 + v * d * 6 // 8 + 2 * d * 2 for k, v in zip(TRACE_KEYS, TRACE_VALUES)]
    assert _attention_dram(program) == heads * sum(per_head)
    refetch = [lp for lp in program.layers if lp.op == "lsb_refetch"]
    assert [lp.repeat for lp in refetch] == [heads] * 12
    assert [sum(c.nbytes for c in lp.commands if type(c).__name__ == "Load") for lp in refetch] == \
        [k * d * 4 // 8 for k in TRACE_KEYS]


@pytest.mark.parametrize("detailed", [False, True])
def test_lsb_refetch_bytes_and_cycles_by_hand(detailed):
    """GPT-2-small decode, 64 keys, no pruning, 6-bit K/V, a quarter of the rows refetch 4 LSBs, on the
    spatten preset (1 x 1024 array, 64 1D PEs at one op per cycle, 512 B/cycle DRAM, 100 cycles'
    latency). Per layer ceil(0.25 * 12 heads * 1 query) = 3 rows, each (serially):
    K LSBs 64 keys x 64 x 4 bit = 2048 B: 2048 / 512 + 100 = 104 cycles; Q.K of one row:
    skew 1 + 1024 - 2 = 1023 + one key block x 64 = 1087 cycles; softmax over 64 scores on 64 PEs:
    max, m*c, s*c - m*c, exp, sum, 1/l, normalise = 7 cycles. 3 x 1198 = 3594 cycles, 6144 B per
    layer; both models (the refetch's tiles have data-independent cycles)."""
    import archsim

    pq = "progressive_quant={msb_bits: 6, lsb_bits: 4, requant_fraction: 0.25}"
    result = archsim.simulate("gpt2", "spatten", overrides=["token_keep=null", "value_keep=1", pq],
                              phase="decode", kv_len=63, detailed=detailed)
    refetch = [l for l in result.layers if l.op == "lsb_refetch"]
    assert len(refetch) == 12
    assert all(l.dram_bytes == 3 * 2048 and l.cycles == 3 * (104 + 1087 + 7) for l in refetch)
    assert all(l.macs == 3 * 64 * 64 for l in refetch)
    # the attention layers fetch K and V at the 6 MSBs only
    att = [l for l in result.layers if l.op == "attention"]
    assert all(l.dram_bytes == 12 * (2 * 64 * 64 * 6 // 8 + 2 * 64 * 2) for l in att)


def test_no_refetch_layers_without_a_fraction():
    arch = load_arch("spatten")
    program = mappers.compile(_gpt2_decode(), arch)  # the preset: requant_fraction 0
    assert not any(lp.op == "lsb_refetch" for lp in program.layers)
    with pytest.raises(ArchsimError, match="requant_fraction"):
        mappers.compile(_gpt2_decode(), arch, progressive_quant={"requant_fraction": 1.5})


def test_topk_layers_run_on_the_engine():
    arch = load_arch("spatten")
    program = mappers.compile(_gpt2_decode(), arch)
    topk = [lp for lp in program.layers if lp.op == "topk"]
    assert len(topk) == 4
    units = {c.unit for lp in topk for c in lp.commands}
    assert units == {"topk", "array1d"}


def test_pruning_without_an_engine_refused():
    arch = load_arch("fusemax-edge")
    with pytest.raises(MappingError, match="topk_parallelism"):
        mappers.compile(_gpt2_decode(), arch, token_keep=[0.5])


def test_bad_options_refused():
    arch = load_arch("spatten")
    with pytest.raises(ArchsimError, match="value_keep"):
        mappers.compile(_gpt2_decode(), arch, value_keep=0)
    with pytest.raises(ArchsimError, match="progressive_quant"):
        mappers.compile(_gpt2_decode(), arch, progressive_quant={"msb_bits": 12, "lsb_bits": 8})


def test_prefill_with_a_lower_rank_residual_input():
    """Llama's embedding output is [tokens, hidden]; the pruned first residual add reads [1, T, hidden]."""
    pruned = cascade_prune(zoo.build("llama2-7b", seq_len=32), [1.0, 0.7])
    assert [op.seq_q for op in pruned.ops() if op.kind == "attention"][:3] == [32, 22, 22]


def test_lsb_refetch_in_a_prefill_shares_a_heads_lsbs():
    """BERT-base prefill, 32 tokens, 0.1 of the rows: ceil(0.1 * 12 heads * 32 queries) = 39 rows over
    min(39, 12) = 12 heads; each head loads its 32 keys' 4-bit LSBs once (32 x 64 x 4 / 8 = 1024 B)
    and recomputes ceil(39 / 12) = 4 rows, one Q.K and one softmax tile per row on a 1-row array."""
    spatten = load_arch("spatten")
    unpruned = {k: v for k, v in spatten.options.items() if k != "token_keep"}
    arch = dataclasses.replace(spatten, options={**unpruned, "value_keep": 1.0})
    pq = {"msb_bits": 6, "lsb_bits": 4, "requant_fraction": 0.1}
    program = mappers.compile(zoo.build("bert_base", seq_len=32), arch, progressive_quant=pq)
    refetch = [lp for lp in program.layers if lp.op == "lsb_refetch"]
    assert len(refetch) == 12 and all(lp.repeat == 12 for lp in refetch)
    for lp in refetch:
        assert [c.nbytes for c in lp.commands if type(c).__name__ == "Load"] == [1024]
        tiles = [c.tile for c in lp.commands if type(c).__name__ == "Compute"]
        assert [t.phase for t in tiles] == ["qk", "softmax"] * 4 and {t.q_rows for t in tiles} == {1}
        assert lp.macs == 39 * 32 * 64
