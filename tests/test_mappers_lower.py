"""Template-independent lowering (mappers.lower) and the compile driver."""
from __future__ import annotations

from pathlib import Path

import pytest

import mappers
from archsim.errors import MappingError
from mappers.lower import Gather, Gemm, VectorWork, lower_op
from workloads.ops import (Attention, Conv2d, Elementwise, Embedding, LayerNorm, MatMul, Pool, RMSNorm,
                           ShapeOp, Softmax)

RESNET18_CSV = Path(__file__).resolve().parents[1] / "archsim" / "validate" / "scalesim_reference" / "topologies" / "Resnet18.csv"


def _csv_row(name):
    for line in RESNET18_CSV.read_text().splitlines()[1:]:
        f = [x.strip() for x in line.split(",")]
        if f[0] == name:
            return [int(x) for x in f[1:8]]
    raise KeyError(name)


@pytest.mark.parametrize("layer,sr,t,sc", [
    # Conv1: 224x224 ifmap, 7x7 filter, 3 channels, 64 filters, stride 2:
    # ofmap side ceil((224 - 7 + 2) / 2) = ceil(109.5) = 110 -> Sr = 12100; T = 7*7*3 = 147; Sc = 64
    ("Conv1", 12100, 147, 64),
    # Conv3_1a: 56x56, 3x3, 64 ch, 128 filters, stride 2: ceil((56-3+2)/2) = 28 -> 784; T = 576
    ("Conv3_1a", 784, 576, 128),
    # Conv4_s: 28x28, 1x1, 128 ch, 256 filters, stride 2: ceil((28-1+2)/2) = ceil(14.5) = 15 -> 225
    # (SCALE-Sim's rule, not PyTorch's floor((28-1)/2)+1 = 14)
    ("Conv4_s", 225, 128, 256),
])
def test_scalesim_lowering_dims_by_hand(layer, sr, t, sc):
    h, w, fh, fw, c, nf, s = _csv_row(layer)
    op = Conv2d(layer, in_channels=c, out_channels=nf, in_h=h, in_w=w, kernel_h=fh, kernel_w=fw,
                stride_h=s, stride_w=s)
    low = lower_op(op, "scalesim")
    (g,) = low.parts
    assert (g.m, g.k, g.n, low.repeat) == (sr, t, sc, 1)
    assert g.a_dram_ratio == 1.0


def test_im2col_padded_honours_padding_and_groups():
    op = Conv2d("c", batch=2, in_channels=8, out_channels=12, in_h=10, in_w=9, kernel_h=3, kernel_w=3,
                pad_top=1, pad_bottom=1, pad_left=1, pad_right=1, groups=4)
    low = lower_op(op)
    (g,) = low.parts
    # per group: M = 2*10*9 = 180, K = 3*3*2 = 18, N = 3; 4 groups
    assert (g.m, g.k, g.n, low.repeat) == (180, 18, 3, 4)
    assert low.macs() == op.macs() == 4 * 180 * 18 * 3
    # A's DRAM bytes are the (per group) ifmap, not the 9x larger im2col matrix
    assert g.a_dram_ratio == pytest.approx((2 * 2 * 10 * 9) / (180 * 18))


def test_depthwise_is_one_small_gemm_repeated():
    op = Conv2d("dw", in_channels=512, out_channels=512, groups=512, in_h=14, in_w=14, kernel_h=3,
                kernel_w=3, pad_top=1, pad_bottom=1, pad_left=1, pad_right=1)
    low = lower_op(op)
    assert low.repeat == 512 and len(low.parts) == 1
    assert (low.parts[0].m, low.parts[0].k, low.parts[0].n) == (196, 9, 1)
    assert low.macs() == op.macs()


@pytest.mark.parametrize("b,h,kvh,sq,skv,d", [(1, 12, 12, 128, 128, 64), (2, 32, 8, 16, 300, 128),
                                              (1, 8, 1, 1, 4096, 64)])
def test_attention_lowering_macs_and_gqa(b, h, kvh, sq, skv, d):
    op = Attention("attn", batch=b, heads=h, kv_heads=kvh, seq_q=sq, seq_kv=skv, head_dim=d)
    low = lower_op(op)
    qk, sm, av = low.parts
    assert low.repeat == b * kvh  # one iteration per (batch, kv head): K, V loaded once per group
    g = h // kvh
    assert (qk.m, qk.k, qk.n) == (g * sq, d, skv)
    assert (av.m, av.k, av.n) == (g * sq, skv, d)
    assert not qk.b_is_param and not av.b_is_param
    assert isinstance(sm, VectorWork) and sm.op == "softmax" and sm.elements * low.repeat == b * h * sq * skv
    assert low.macs() == 2 * b * h * sq * skv * d


def test_matmul_batch_folds_into_m_only_for_shared_weights():
    lin = lower_op(MatMul("lin", batch=4, m=10, k=20, n=30))
    assert (lin.parts[0].m, lin.repeat) == (40, 1)
    act = lower_op(MatMul("bmm", batch=4, m=10, k=20, n=30, weight_is_param=False))
    assert (act.parts[0].m, act.repeat) == (10, 4)
    assert lin.macs() == act.macs() == 4 * 10 * 20 * 30


def test_vector_and_gather_lowering():
    ew = lower_op(Elementwise("add", fn="add", shape=(2, 3, 4), num_inputs=2)).parts[0]
    assert (ew.op, ew.elements, ew.reads_per_element, ew.in_bytes, ew.out_bytes) == ("add", 24, 2, 48, 24)
    pool = lower_op(Pool("p", mode="max", batch=1, channels=4, in_h=8, in_w=8, kernel_h=2, kernel_w=2,
                         stride_h=2, stride_w=2)).parts[0]
    assert (pool.op, pool.elements, pool.reads_per_element) == ("maxpool", 4 * 4 * 4, 4)
    gp = lower_op(Pool("g", mode="avg", global_pool=True, channels=8, in_h=7, in_w=7)).parts[0]
    assert (gp.op, gp.elements, gp.reads_per_element) == ("avgpool", 8, 49)
    ln = lower_op(LayerNorm("ln", shape=(5, 16), normalized_size=16)).parts[0]
    assert (ln.op, ln.row, ln.param_bytes) == ("layernorm", 16, 32)
    rms = lower_op(RMSNorm("r", shape=(5, 16), normalized_size=16)).parts[0]
    assert (rms.op, rms.param_bytes) == ("rmsnorm", 16)
    smx = lower_op(Softmax("s", shape=(3, 7))).parts[0]
    assert (smx.op, smx.elements, smx.row) == ("softmax", 21, 7)
    emb = lower_op(Embedding("e", vocab=1000, dim=64, tokens=10)).parts[0]
    assert isinstance(emb, Gather) and emb.nbytes == 10 * 64 * 1  # 10 tokens x 64-wide int8 rows gathered
    assert lower_op(ShapeOp("r")).parts == ()


def test_unknown_conv_lowering_is_one_line_error():
    op = Conv2d("c")
    with pytest.raises(MappingError, match=r"^conv_lowering: expected one of im2col_padded, scalesim, got 'x'$"):
        lower_op(op, "x")


def test_identical_ops_lower_once_names_ignored():
    a = MatMul("a", m=3, k=4, n=5)
    b = MatMul("b", m=3, k=4, n=5)
    assert lower_op(a) is lower_op(b)
    assert mappers.op_key(a) == mappers.op_key(b) != mappers.op_key(MatMul("c", m=3, k=4, n=6))


def test_registry_unknown_template():
    from mappers.registry import get_mapper_module
    with pytest.raises(MappingError, match=r"^no mapper: unknown template 'zzz'; expected one of"):
        get_mapper_module("zzz")
    assert get_mapper_module("systolic").__name__ == "mappers.systolic"
    assert Gemm("x", 2, 3, 4).macs() == 2 * 3 * 4
