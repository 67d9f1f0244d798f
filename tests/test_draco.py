"""DRACO (item 5 of issue 25): EfficientNet-B0 in the zoo, the depthwise reshaping transform,
and the PE utilization of a depthwise layer on a 64 x 64 array, each against a figure derived
by hand (published totals, closed-form MAC counts, PEs mapped)."""
import pytest

import archsim
import workloads
from archsim.errors import WorkloadError
from mappers.lower import lower_op
from workloads.graph import Graph
from workloads.ops import Conv2d
from workloads.transforms import apply, draco, parse_spec

ARRAY = "systolic-32x32-ws"
SIZE_64 = ["rows=64", "cols=64"]

#: MobileNetV1 at 224 (Howard et al. 2017, Table 1): (channels, output side) of the 13 depthwise layers
MOBILENET_DW = [(32, 112), (64, 56), (128, 56), (128, 28), (256, 28), (256, 14)] + [(512, 14)] * 5 + \
    [(512, 7), (1024, 7)]
MOBILENET_DW_MACS = sum(9 * c * side * side for c, side in MOBILENET_DW)  # 3x3 taps per output element


def test_efficientnet_b0_matches_published_totals():
    # Tan & Le 2019, Table 2: EfficientNet-B0 has 5.3 M parameters and 0.39 B FLOPs (multiply-adds)
    g = workloads.zoo.build("efficientnet-b0")
    g.validate()
    assert g.total_params() == pytest.approx(5.3e6, rel=0.015)  # BN folded: one bias per channel, not two
    assert g.total_macs() == pytest.approx(0.39e9, rel=0.015)
    convs = [op for op in g.ops() if op.kind == "conv2d"]
    assert sum(op.depthwise for op in convs) == 16  # one depthwise conv per MBConv block: 1+2+2+3+3+4+1


def test_draco_mobilenet_macs_closed_form():
    base = workloads.zoo.build("mobilenet-v1")
    assert base.total_macs() == pytest.approx(569e6, rel=0.001)  # Howard et al.: 569 M mult-adds
    dw = sum(op.macs() for op in base.ops() if op.kind == "conv2d" and op.depthwise)
    assert dw == MOBILENET_DW_MACS
    for g in (1, 2, 4, 8):
        out = draco(base, group_width=g)
        # each depthwise output element now sums 9*g products; every other layer is untouched
        assert out.total_macs() == base.total_macs() + (g - 1) * MOBILENET_DW_MACS
        kept = {op.name: op.macs() for op in base.ops() if not (op.kind == "conv2d" and op.depthwise)}
        assert all(out.op(name).macs() == macs for name, macs in kept.items())
    assert draco(base, group_width=1).total_macs() == base.total_macs()  # the identity: MACs preserved


def test_draco_changes_the_depthwise_mapping():
    base = workloads.zoo.build("mobilenet-v1")
    out = draco(base, group_width=4)
    before, after = lower_op(base.op("block13.dw")), lower_op(out.op("block13.dw"))
    assert (before.repeat, before.gemms()[0].k, before.gemms()[0].n) == (1024, 9, 1)
    assert (after.repeat, after.gemms()[0].k, after.gemms()[0].n) == (256, 36, 4)
    assert before.gemms()[0].m == after.gemms()[0].m == 7 * 7
    # shapes are the same, so the rest of the graph is the same graph, and the input is left untouched
    assert [op.output_shape() for op in out.ops() if op.kind == "conv2d"] == \
        [op.output_shape() for op in base.ops() if op.kind == "conv2d"]
    assert base.op("block13.dw").depthwise and base.name == "mobilenet-v1"
    out.validate()


def _dw_layer(channels=32, side=56) -> Graph:
    g = Graph("dw")
    g.add(Conv2d(name="dw", in_channels=channels, out_channels=channels, in_h=side, in_w=side, kernel_h=3,
                 kernel_w=3, pad_top=1, pad_left=1, pad_bottom=1, pad_right=1, groups=channels,
                 weight_precision="int8", act_precision="int8", acc_precision="int32"))
    return g


@pytest.mark.parametrize("dataflow, pes", [
    ("ws", 9 * 1),        # weights stationary: K = 9 taps on rows x N = 1 filter on columns
    ("os", 64 * 1),       # outputs stationary: 64 of the 56*56 output pixels on rows x 1 filter
    ("is", 9 * 64),       # inputs stationary: K = 9 on rows x 64 output pixels on columns
])
def test_depthwise_pe_utilization_on_64x64_by_hand(dataflow, pes):
    r = archsim.simulate(_dw_layer(), ARRAY, overrides=SIZE_64 + [f"dataflow={dataflow}"])
    layer = r.layers[0]
    assert layer.macs == 32 * 56 * 56 * 9
    assert layer.mapping_efficiency == pytest.approx(pes / 4096, rel=0.02)
    assert layer.utilization <= layer.compute_utilization <= layer.mapping_efficiency + 1e-12


def test_draco_raises_depthwise_pe_mapping_on_64x64_ws():
    # group_width 4: K = 9*4 = 36 rows x N = 4 columns of the 64 x 64 array
    r = archsim.simulate(draco(_dw_layer(), group_width=4), ARRAY, overrides=SIZE_64)
    assert r.layers[0].mapping_efficiency == pytest.approx(36 * 4 / 4096, rel=0.02)


def test_draco_refuses_bad_input():
    with pytest.raises(WorkloadError, match=r"draco: dw: 32 channels are not divisible by group_width=3"):
        draco(_dw_layer(), group_width=3)
    with pytest.raises(WorkloadError, match=r"group_width: expected a positive integer"):
        draco(_dw_layer(), group_width=0)
    with pytest.raises(WorkloadError, match=r"unknown transform 'fold'; expected one of draco"):
        apply(_dw_layer(), "fold")
    with pytest.raises(WorkloadError, match=r"unknown parameter 'width'"):
        apply(_dw_layer(), "draco", width=2)
    with pytest.raises(WorkloadError, match=r"expected NAME or NAME:key=INT"):
        parse_spec("draco:group_width")
    assert parse_spec("draco:group_width=8") == ("draco", {"group_width": 8})
    assert parse_spec("draco") == ("draco", {})


def test_transform_through_api_and_cli(capsys, tmp_path):
    from archsim.cli import main

    base = archsim.simulate("mobilenet-v1", ARRAY, overrides=SIZE_64)
    out = archsim.simulate("mobilenet-v1", ARRAY, overrides=SIZE_64, transform="draco:group_width=4")
    assert sum(l.macs for l in out.layers) == sum(l.macs for l in base.layers) + 3 * MOBILENET_DW_MACS
    code = main(["run", "--workload", "mobilenet-v1", "--arch", ARRAY, "--transform", "draco:group_width=3",
                 "--out", str(tmp_path / "run"), "-q", "--no-plots"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "not divisible by group_width=3" in err


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
def test_draco_layer_fast_equals_detailed(dataflow):
    # the transform adds no mapping: the grouped conv runs on the existing path, whose levels agree
    g = draco(_dw_layer(16, 14), group_width=4)
    over = SIZE_64 + [f"dataflow={dataflow}"]
    fast = archsim.simulate(g, ARRAY, overrides=over)
    detailed = archsim.simulate(g, ARRAY, overrides=over, detailed=True)
    assert fast.layers[0].cycles == detailed.layers[0].cycles
    assert fast.layers[0].compute_cycles == detailed.layers[0].compute_cycles


def test_transform_in_compare(capsys):
    from archsim.cli import main

    code = main(["compare", "--workload", "mobilenet-v1", "--arch", ARRAY, "--arch", "systolic-32x32-os",
                 "--transform", "draco:group_width=3"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "block1.dw: 32 channels are not divisible by group_width=3" in err
