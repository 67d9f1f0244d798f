"""YAML list-of-layers files and SCALE-Sim topology CSVs."""
from __future__ import annotations

from pathlib import Path

import pytest

import workloads
from archsim.errors import WorkloadError

DATA = Path(__file__).parent / "data" / "workloads"
# the SCALE-Sim topology files, one copy shared with the engine golden tests
TOPO = Path(__file__).resolve().parents[1] / "archsim" / "validate" / "scalesim_reference" / "topologies"
EXAMPLE = Path(workloads.__file__).parent / "examples" / "tiny_cnn.yaml"


# -- SCALE-Sim --------------------------------------------------------------------------------------------------
def test_scalesim_gemm_form():
    g = workloads.load(str(TOPO / "vit_s.csv"))
    assert [op.name for op in g.ops()] == ["L0", "L1", "L2", "L3", "L4"]
    l1 = g.op("L1")  # L1,196,1176,64: M=196, N=1176, K=64
    assert (l1.kind, l1.m, l1.n, l1.k) == ("matmul", 196, 1176, 64)
    assert l1.source == "scalesim:vit_s.csv:3"
    # sum of M*N*K over the five rows of the file
    assert g.total_macs() == (196 * 192 * 384 + 196 * 1176 * 64 + 196 * 64 * 1176 + 196 * 1536 * 384
                              + 196 * 384 * 1536)
    assert workloads.load(str(TOPO / "gemm256.csv")).total_macs() == 256 ** 3


def test_scalesim_conv_form_uses_scalesim_ofmap_rule():
    """SCALE-Sim: ofmap = ceil((H - F + S) / S) (topology_utils.calc_hyper_params), no padding;
    Sr = ofmap pixels, T = Fh*Fw*C, Sc = filters."""
    g = workloads.load(str(TOPO / "Resnet18.csv"))
    assert len(g) == 21 and g.nx.number_of_edges() == 0
    conv1 = g.op("Conv1")  # Conv1,224,224,7,7,3,64,2: ceil((224 - 7 + 2) / 2) = ceil(109.5) = 110
    assert (conv1.out_h, conv1.out_w) == (110, 110)
    assert conv1.gemm_dims() == (1, 110 * 110, 7 * 7 * 3, 64)
    assert conv1.macs() == 110 * 110 * 147 * 64
    c2 = g.op("Conv2_1a")  # 56,56,3,3,64,64,1: (56 - 3 + 1) / 1 = 54 (no padding)
    assert c2.gemm_dims() == (1, 54 * 54, 576, 64)
    s3 = g.op("Conv3_s")  # 56,56,1,1,64,128,2: ceil((56 - 1 + 2) / 2) = ceil(28.5) = 29
    assert s3.out_h == 29
    fc = g.op("FC")  # 1,1,1,1,512,1000,1
    assert fc.macs() == 512 * 1000
    r50 = workloads.load(str(TOPO / "Resnet50.csv"))
    assert len(r50) == 54


@pytest.mark.parametrize("name,message", [
    ("bad_field.csv", r"bad_field\.csv:3: Filter Width: expected a positive integer, got 'x3'$"),
    ("bad_filter.csv", r"bad_filter\.csv:4: Filter Height: expected at most the IFMAP's 5, got 7$"),
    ("bad_header.csv", r"bad_header\.csv:1: header: expected the conv form \(Layer name, IFMAP Height, .*\) or "
                       r"the GEMM form \(Layer, M, N, K,\), got 'Layer, M, N'$"),
    ("short_row.csv", r"short_row\.csv:2: expected 4 fields \(Layer, M, N, K\), got 3$"),
])
def test_scalesim_errors(name, message):
    with pytest.raises(WorkloadError, match=message):
        workloads.load(str(DATA / name))


# -- YAML -------------------------------------------------------------------------------------------------------
def test_example_yaml():
    g = workloads.load(str(EXAMPLE))
    assert g.name == "tiny_cnn"
    # conv1: 32*32 px * 16 filters * 27 taps; conv2 (16x16 after pool): 256 * 16 * 144;
    # dw3 (depthwise, groups 16): 256 * 16 * 9; fc: 16 -> 10
    assert g.op("conv1").macs() == 32 * 32 * 16 * 27
    assert g.op("conv2").macs() == 16 * 16 * 16 * 144
    assert g.op("dw3").macs() == 16 * 16 * 16 * 9 and g.op("dw3").depthwise
    assert g.total_macs() == 442_368 + 589_824 + 36_864 + 160
    # params: conv1 16*27 + 16 bias; conv2 16*144; dw3 16*9; fc 16*10 + 10
    assert g.total_params() == 448 + 2304 + 144 + 170
    assert g.inputs_of("add") == ["dw3", "pool1"]
    assert g.op("gap").output_shape() == (1, 16, 1, 1)


def test_yaml_transformer_layers(tmp_path):
    path = tmp_path / "attn.yaml"
    path.write_text("""
precision: {weights: int4, activations: bf16, accumulators: fp32}
input: [2, 10, 64]
layers:
  - {name: q, op: matmul, n: 64}
  - {name: k, op: matmul, n: 32, inputs: []}
  - {name: v, op: matmul, n: 32, inputs: []}
  - {name: attn, op: attention, heads: 4, causal: true, inputs: [q, k, v]}
  - {name: parts, op: split, axis: -1, sizes: [32, 32]}
  - {name: joined, op: concat, axis: -1, inputs: ["parts:1", "parts:0"]}
  - {name: norm, op: rmsnorm}
""")
    g = workloads.load(str(path))
    attn = g.op("attn")
    # Q [2,10,64] -> 4 heads of 16; K [2,10,32] -> 2 KV heads; causal 10 tokens -> 55 pairs
    assert (attn.batch, attn.seq_q, attn.seq_kv, attn.head_dim, attn.kv_heads) == (2, 10, 10, 16, 2)
    assert attn.macs() == 2 * 2 * 4 * 55 * 16
    assert (g.op("q").batch, g.op("q").m) == (2, 10) and g.op("q").weight_precision == "int4"
    assert g.op("joined").output_shape() == (2, 10, 64)
    assert g.op("norm").params() == 64


@pytest.mark.parametrize("name,message", [
    ("bad_key.yaml", r"bad_key\.yaml: line 4: layers\[1\] \(conv2\): out_channel: unknown key for conv2d; "
                     r"expected one of name, op, inputs, .*out_channels"),
    ("bad_layer.yaml", r"bad_layer\.yaml: line 5: layers\[1\] \(conv2\): groups: expected in_channels \(8\) and "
                       r"out_channels \(8\) divisible by groups \(3\)$"),
    ("bad_syntax.yaml", r"bad_syntax\.yaml: line 3: invalid YAML \(expected ',' or '}', but got '{'\)"),
    ("mismatch.yaml", r"mismatch\.yaml: line 3: layers\[1\] \(b\): graph 'mismatch': shape mismatch a -> b: a "
                      r"produces \[1, 4, 16\] but b \(matmul\) expects input 0 of \[1, 4, 8\]$"),
])
def test_yaml_errors(name, message):
    with pytest.raises(WorkloadError, match=message):
        workloads.load(str(DATA / name))


@pytest.mark.parametrize("text,message", [
    ("layers: []", r"layers: expected a non-empty list of layers$"),
    ("layer: []", r"layer: unknown key; expected one of name, precision, input, layers$"),
    ("input: [1, 3, 4, 4]\nlayers:\n  - {name: c, op: conv2d, kernel: 7}",
     r"line 3: layers\[0\] \(c\): kernel 7x7 \(dilated 7x7\) is larger than the padded input 4x4; "
     r"expected a window that fits$"),
    ("layers:\n  - {name: c, op: conv3d}", r"line 2: layers\[0\] \(c\): op: expected one of conv2d, .*, got 'conv3d'"),
    ("layers:\n  - {name: s, op: softmax}", r"line 2: layers\[0\] \(s\): inputs: expected 1 input\(s\) with known shapes"),
    ("precision: {weights: int5}\nlayers:\n  - {name: s, op: softmax, shape: [4]}",
     r"line 3: layers\[0\] \(s\): weight_precision: expected one of int1, .*, got 'int5'$"),
    ("input: [1, 8]\nlayers:\n  - {name: m, op: matmul, n: 0}", r"line 3: layers\[0\] \(m\): n: expected a positive integer"),
])
def test_yaml_error_texts(tmp_path, text, message):
    path = tmp_path / "w.yaml"
    path.write_text(text)
    with pytest.raises(WorkloadError, match=r"^\S*w\.yaml: " + message):
        workloads.load(str(path))


def test_file_params_are_checked():
    with pytest.raises(WorkloadError, match=r"tiny_cnn\.yaml: unknown parameter 'batch'; expected one of \(none\)$"):
        workloads.load(str(EXAMPLE), batch=2)
    with pytest.raises(WorkloadError, match=r"^missing\.csv: no such workload file$"):
        workloads.load("missing.csv")
