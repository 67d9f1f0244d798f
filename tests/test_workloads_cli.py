"""``archsim workload list`` and ``archsim workload show``."""
from __future__ import annotations

from pathlib import Path

import workloads
from archsim.cli import main

EXAMPLE = Path(workloads.__file__).parent / "examples" / "tiny_cnn.yaml"


def test_list(capsys):
    assert main(["workload", "list"]) == 0
    names = capsys.readouterr().out.split()
    assert names == workloads.zoo_names() and "llama2-7b" in names


def test_show_yaml_table(capsys):
    assert main(["workload", "show", str(EXAMPLE)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["name", "op"]
    conv1 = next(line for line in lines if line.startswith("conv1 "))
    # 32*32*16*27 MACs, 16*27+16 params, bytes 3*32*32 + 448 + 16*32*32
    assert conv1.split()[-3:] == ["442,368", "448", "19,904"]
    assert lines[-1].startswith("total: 10 ops, 1,069,216 MACs, 3,066 params")


def test_show_decode_params(capsys):
    assert main(["workload", "show", "gpt2", "--phase", "decode", "--kv-len", "7", "--batch", "2"]) == 0
    out = capsys.readouterr().out
    attn = next(line for line in out.splitlines() if line.startswith("h0.self_attn.attn "))
    # 2 sequences * 12 heads * 8 keys * 64 * 2 (QK^T and AV)
    assert f"{2 * 12 * 8 * 64 * 2:,}" in attn.split()


def test_show_errors_are_one_line(capsys):
    assert main(["workload", "show", "resnet50", "--seq", "4"]) == 2
    err = capsys.readouterr().err
    assert err == ("archsim: error: resnet50: parameter 'seq_len' (--seq) does not apply to this model; its "
                   "parameters: batch, image_size, num_classes, weight_precision, act_precision, acc_precision\n")
    assert main(["workload", "show", "nope.onnx"]) == 2
    assert capsys.readouterr().err == "archsim: error: nope.onnx: no such workload file\n"
