"""A generated corpus of malformed inputs for the ``archsim`` CLI, and the harness that runs it in-process.

A :class:`Case` is a command line plus the files it needs, created in a fresh
folder that also holds *sentinel* files around the output folder (the user's
own work: beside it, in its parent, inside a folder of theirs). Every
malformed case must exit non-zero with a one-line error, no traceback, within
a few seconds, and leave each sentinel byte for byte as it was; every
control case (valid input) must succeed.

The corpus is a table of case builders, :data:`BUILDERS`, one per input
format or kind of argument. To cover a new input format or template, add a
builder (a function returning a list of cases) to the table; the arch spec
builder already walks every template and preset the registry lists
(:func:`archsim.templates.template_names`, the arch preset listing), so a new
template or preset is fuzzed without an edit here.

``python -m tests.fuzz.corpus DIR`` writes the static files of every case
(plus a ``cases.json`` index) into DIR for inspection.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import io
import json
import os
import signal
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "workloads" / "examples" / "tiny_cnn.yaml"
CASE_TIMEOUT_S = 10
SENTINELS = ("sentinel.txt", "../parent_sentinel.txt", "userdir/notes.txt", "userdir/report.json", "out.json")

Setup = Callable[[Path], None]


@dataclass
class Case:
    """One command line: ``argv`` may use ``{d}`` (the case folder). ``files``: name -> bytes."""

    id: str
    cls: str
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    setup: Setup | None = None
    expect: str = "error"  # "error" | "ok"
    #: text an error message must not contain (e.g. a secret line of the input file)
    must_not_echo: str = ""


def _yaml(doc: Any) -> bytes:
    return yaml.safe_dump(doc, sort_keys=False).encode()


# ----------------------------------------------------------------------------- arch specs

def arch_presets() -> list[str]:
    from archsim.spec.load import preset_names

    return preset_names()


def _preset_raw(name: str) -> dict:
    return copy.deepcopy(_preset_raw_cached(name))


@functools.lru_cache(maxsize=None)
def _preset_raw_cached(name: str) -> dict:
    from archsim.spec.load import ARCH_PRESET_PACKAGE, _preset_files

    return yaml.safe_load(_preset_files(ARCH_PRESET_PACKAGE)[name].read_text(encoding="utf-8"))


def _leaves(doc: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _leaves(v, path + (k,))
    elif not isinstance(doc, list):
        out.append((path, doc))
    return out


def _mappings(doc: Any, path: tuple = ()) -> list[tuple]:
    out = [path] if isinstance(doc, dict) else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _mappings(v, path + (k,))
    return out


def _set(doc: dict, path: tuple, value: Any) -> dict:
    doc = copy.deepcopy(doc)
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return doc


def _run_arch(d: str = "{d}") -> list[str]:
    return ["run", "--arch", f"{d}/arch.yaml", "--workload", str(TINY), "--out", f"{d}/simout", "--no-plots"]


#: values that no numeric spec field accepts
BAD_NUMBERS = {"str": "abc", "list": [1, 2], "nan": float("nan"), "sexagesimal": "1:30", "map": {"a": 1}}
#: leaves whose value is free text or a label (any scalar is fine there)
_FREE_TEXT = ("name", "description", "source", "note", "extends")


def _spread(items: list, n: int) -> list:
    """At most ``n`` items spread evenly over ``items`` (deterministic)."""
    if len(items) <= n:
        return items
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)] if n > 1 else items[:1]


#: per template, its first preset gets this many mutated leaves and mappings; its other presets a few
LEAVES_FIRST, LEAVES_OTHER = 4, 1
MAPPINGS_FIRST, MAPPINGS_OTHER = 4, 1
#: the non-numbers a first preset's leaves get (others get "str")
FIRST_KINDS = ("str", "nan", "sexagesimal", "list")


def spec_cases() -> list[Case]:
    """Per arch preset (every template the registry lists): numeric leaves made non-numeric, an unknown
    key in a mapping, broken structure. A template's first preset is covered most."""
    cases = []
    seen_templates: set[str] = set()
    for preset in arch_presets():
        raw = _preset_raw(preset)
        first = raw.get("template") not in seen_templates
        seen_templates.add(raw.get("template"))
        numeric = [(p, v) for p, v in _leaves(raw) if isinstance(v, (int, float)) and not isinstance(v, bool)
                   and p[-1] not in _FREE_TEXT]
        for path, _ in _spread(numeric, LEAVES_FIRST if first else LEAVES_OTHER):
            for kind in (FIRST_KINDS if first else ("str",)):
                key = ".".join(map(str, path))
                cases.append(Case(f"spec-{preset}-{key}-{kind}", "spec", _run_arch(),
                                  {"arch.yaml": _yaml(_set(raw, path, BAD_NUMBERS[kind]))}))
        mappings = [p for p in _mappings(raw) if not (p and p[-1] in ("energy_pj", "area_um2", "cycles_per_op",
                                                                       "options"))
                    and not (len(p) >= 2 and p[0] == "params")]  # open tables: new names are allowed there
        for path in _spread(mappings, MAPPINGS_FIRST if first else MAPPINGS_OTHER):
            key = ".".join(map(str, path)) or "top"
            cases.append(Case(f"spec-{preset}-{key}-unknown-key", "spec", _run_arch(),
                              {"arch.yaml": _yaml(_set(raw, path + ("no_such_key",), 1) if path
                                                  else {**raw, "no_such_key": 1})}))
        if not first:
            continue
        if "template" in raw:
            cases.append(Case(f"spec-{preset}-missing-template", "spec", _run_arch(),
                              {"arch.yaml": _yaml({k: v for k, v in raw.items() if k != "template"})}))
        cases.append(Case(f"spec-{preset}-params-list", "spec", _run_arch(),
                          {"arch.yaml": _yaml({**raw, "params": [1, 2]})}))
        cases.append(Case(f"spec-{preset}-template-unknown", "spec", _run_arch(),
                          {"arch.yaml": _yaml({**raw, "template": "no_such_template"})}))
    base = _preset_raw("systolic-32x32-ws")
    tech = base.get("tech", {})
    specials = {
        "neg-energy": _set(base, ("tech", "energy_pj", "dram_bit"), -1.0),
        "inf-energy": _set(base, ("tech", "energy_pj", "dram_bit"), float("inf")),
        "neg-energy-value": _set(base, ("tech", "energy_pj", "dram_bit"), {"value": -5, "source": "x"}),
        "cycles-per-op-typo": _set(base, ("vector_unit", "cycles_per_op", "expp"), 3),
        "cycles-per-op-zero": _set(base, ("vector_unit", "cycles_per_op", "exp"), 0),
        "tech-extends-typo": _set(base, ("tech", "energy_pj", "dram_bti"), 5.0) if tech else base,
        "tech-unknown": {**base, "tech": "no-such-tech"},
        "clock-sexagesimal": {**base, "clock_mhz": "16:40"},
        "clock-zero": {**base, "clock_mhz": 0},
        "clock-inf": {**base, "clock_mhz": float("inf")},
        "rows-yes": _set(base, ("params", "rows"), "yes"),
        "rows-huge": _set(base, ("params", "rows"), 10 ** 30),
        "rows-float": _set(base, ("params", "rows"), 4.5),
        "buffer-size-junk": _set(base, ("buffers", "input", "bytes"), "256 KiBB"),
        "buffer-size-neg": _set(base, ("buffers", "input", "bytes"), -1),
        "dram-bpc-neg": _set(base, ("dram", "bytes_per_cycle"), -32),
        "top-list": [1, 2, 3],
        "top-scalar": "systolic",
        "top-null": None,
    }
    for name, doc in specials.items():
        cases.append(Case(f"spec-special-{name}", "spec", _run_arch(), {"arch.yaml": _yaml(doc)}))
    texts = {
        "deep-flow": b"[" * 5000 + b"]" * 5000,
        "deep-block": ("".join("  " * i + "a:\n" for i in range(300)) + "  " * 300 + "1\n").encode(),
        "syntax": b"name: [unclosed\n",
        "tabs": b"name:\n\t- x\n",
        "binary": bytes(range(256)) * 4,
        "nul": b"name: a\x00b\n",
        "latin1": "name: caf\xe9\n".encode("latin-1"),
        "empty": b"",
        "only-comment": b"# nothing\n",
        "alias-bomb": b"a: &a [1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b]\n"
                      b"d: &d [*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d]\n",
        "dup-anchor-tag": b"!!python/object:os.system ls\n",
        "huge-int": b"template: systolic\nparams: {rows: 99999999999999999999999999999999999999}\n",
        "int-5000-digits": b"template: systolic\nparams: {rows: " + b"9" * 5000 + b"}\n",  # int() refuses > 4300
    }
    for name, data in texts.items():
        cases.append(Case(f"spec-text-{name}", "spec", _run_arch(), {"arch.yaml": data}))
    cases.append(Case("spec-passwd-excerpt", "spec", _run_arch(),
                      {"arch.yaml": b"root:x:0:0:root:/root:/bin/bash-secret-line-here\n"},
                      must_not_echo="/bin/bash-secret-line-here"))
    return cases


# ----------------------------------------------------------------------------- workloads

def _run_workload(name: str, extra: tuple = ()) -> list[str]:
    return ["run", "--arch", "systolic-32x32-ws", "--workload", f"{{d}}/{name}", "--out", "{d}/simout", "--no-plots",
            *extra]


def _tiny() -> dict:
    return yaml.safe_load(TINY.read_text())


def workload_yaml_cases() -> list[Case]:
    cases = []
    tiny = _tiny()
    for i, layer in enumerate(tiny["layers"]):
        for key, value in list(layer.items())[:4]:  # the first fields of each layer (the rest alike)
            if key in ("name", "op", "fn", "mode", "inputs"):
                continue
            if isinstance(value, bool):
                bad = {"str": "true-ish", "int": 2}
            elif isinstance(value, int):
                bad = {"neg": -3, "str": "abc", "list": [[1]]}
                if key not in ("padding",):  # 0 is a valid padding
                    bad["zero"] = 0
                if key not in ("stride",):  # a stride past the input is legal (one output)
                    bad["huge"] = 10 ** 18
            else:
                continue
            for kind, v in bad.items():
                doc = copy.deepcopy(tiny)
                doc["layers"][i][key] = v
                cases.append(Case(f"wl-yaml-{layer['name']}-{key}-{kind}", "workload_yaml",
                                  _run_workload("w.yaml"), {"w.yaml": _yaml(doc)}))
        doc = copy.deepcopy(tiny)
        doc["layers"][i]["no_such_field"] = 1
        cases.append(Case(f"wl-yaml-{layer['name']}-unknown-field", "workload_yaml", _run_workload("w.yaml"),
                          {"w.yaml": _yaml(doc)}))
    edits: dict[str, Callable[[dict], None]] = {
        "channel-mismatch": lambda d: d["layers"][3].update(in_channels=8),
        "input-channels-mismatch": lambda d: d["layers"][0].update(in_channels=4),
        "cycle": lambda d: d["layers"][0].update(inputs=["prob"]),
        "self-loop": lambda d: d["layers"][1].update(inputs=["relu1"]),
        "missing-input": lambda d: d["layers"][5].update(inputs=["dw3", "nope"]),
        "duplicate-name": lambda d: d["layers"][1].update(name="conv1"),
        "input-shape-neg": lambda d: d.update(input=[1, -3, 32, 32]),
        "input-shape-str": lambda d: d.update(input="1x3x32x32"),
        "input-shape-empty": lambda d: d.update(input=[]),
        "input-huge": lambda d: d.update(input=[1, 3, 10 ** 7, 10 ** 7]),
        "layers-empty": lambda d: d.update(layers=[]),
        "layers-map": lambda d: d.update(layers={"a": 1}),
        "layer-scalar": lambda d: d["layers"].append(5),
        "op-unknown": lambda d: d["layers"][1].update(op="no_such_op"),
        "op-list": lambda d: d["layers"][1].update(op=[]),  # found by the hypothesis property
        "name-list": lambda d: d["layers"][1].update(name=["a"]),
        "inputs-map": lambda d: d["layers"][5].update(inputs={"a": 1}),
        "precision-bad": lambda d: d.update(precision={"weights": "float7"}),
        "precision-unknown-key": lambda d: d.update(precision={"weightz": "int8"}),
        "top-unknown": lambda d: d.update(extra=1),
        "kernel-gt-input": lambda d: d["layers"][0].update(kernel=99, padding=0),
        "matmul-k-mismatch": lambda d: d["layers"][8].update(k=7),
        "add-shape-mismatch": lambda d: d["layers"][5].update(inputs=["dw3", "conv1"]),
    }
    for name, edit in edits.items():
        doc = copy.deepcopy(tiny)
        edit(doc)
        cases.append(Case(f"wl-yaml-{name}", "workload_yaml", _run_workload("w.yaml"), {"w.yaml": _yaml(doc)}))
    texts = {"deep": b"layers: " + b"[" * 3000 + b"]" * 3000, "binary": os.urandom(0) + bytes(range(256)),
             "empty": b"", "scalar": b"42\n", "syntax": b"layers: [\n", "yaml11-sexagesimal":
             b"input: [1, 3, 1:30, 32]\nlayers:\n  - {name: c, op: conv2d, out_channels: 4, kernel: 3}\n"}
    for name, data in texts.items():
        cases.append(Case(f"wl-yaml-text-{name}", "workload_yaml", _run_workload("w.yaml"), {"w.yaml": data}))
    return cases


def _onnx_bytes(kind: str) -> bytes:
    """A small Conv -> Relu -> Flatten -> Gemm model made with the onnx helper API, broken as ``kind`` says."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    cin, cout, size = 3, 4, 8
    in_ch = {"channel-mismatch": 5}.get(kind, cin)
    w = numpy_helper.from_array(np.ones((cout, in_ch, 3, 3), np.float32), "w")
    fc_in = {"gemm-mismatch": 7}.get(kind, cout * size * size)
    fc = numpy_helper.from_array(np.ones((fc_in, 10), np.float32), "fc")
    x_dims = {"zero-dim": [1, cin, 0, size], "neg-dim": [1, cin, -4, size], "huge-dim": [1, cin, 10 ** 9, 10 ** 9],
              "symbolic": ["N", cin, "H", "W"]}.get(kind, [1, cin, size, size])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    conv_in = "y_relu" if kind == "cycle" else "x"
    nodes = [
        helper.make_node("Conv", [conv_in, "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["y_relu"], name="relu"),
        helper.make_node("Flatten", ["y_relu"], ["f"], name="flat"),
        helper.make_node("Gemm" if kind != "unknown-op" else "NoSuchOp", ["f", "fc"], ["y"], name="fc"),
    ]
    if kind == "missing-input":
        nodes[1] = helper.make_node("Relu", ["nowhere"], ["y_relu"], name="relu")
    if kind == "duplicate-output":
        nodes.insert(2, helper.make_node("Relu", ["c"], ["y_relu"], name="relu2"))
    if kind == "no-nodes":
        nodes = []
    if kind == "kernel-too-big":
        w = numpy_helper.from_array(np.ones((cout, cin, 99, 99), np.float32), "w")
        nodes[0] = helper.make_node("Conv", ["x", "w"], ["c"], name="conv")
    graph = helper.make_graph(nodes, "g", [x], [y], [w, fc])
    opset = {"opset-999": 999, "opset-0": 0}.get(kind, 13)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    data = model.SerializeToString()
    if kind == "truncated":
        return data[: len(data) // 2]
    if kind == "bitflip":
        return bytes(b ^ 0x5A if i % 7 == 3 else b for i, b in enumerate(data))
    return data


ONNX_BROKEN = ("channel-mismatch", "gemm-mismatch", "cycle", "opset-999", "opset-0", "zero-dim", "neg-dim", "huge-dim",
               "symbolic", "unknown-op", "missing-input", "duplicate-output", "no-nodes", "kernel-too-big",
               "truncated", "bitflip")


def onnx_cases() -> list[Case]:
    cases = [Case(f"onnx-{kind}", "onnx", _run_workload("m.onnx"), {"m.onnx": _onnx_bytes(kind)})
             for kind in ONNX_BROKEN]
    for name, data in {"empty": b"", "text": b"this is not a protobuf\n", "random": bytes(range(256)) * 64,
                       "yaml-as-onnx": TINY.read_bytes()}.items():
        cases.append(Case(f"onnx-file-{name}", "onnx", _run_workload("m.onnx"), {"m.onnx": data}))
    return cases


CONV_HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,"
GEMM_HEADER = "Layer, M, N, K,"


def csv_cases() -> list[Case]:
    good_conv = "conv1, 32, 32, 3, 3, 3, 16, 1,"
    rows = {
        "huge": "conv1, 99999999999999999999999999, 32, 3, 3, 3, 16, 1,",
        "huge-gemm": None,
        "unicode-digits": "conv1, \u0663\u0662, 32, 3, 3, 3, 16, 1,",
        "fullwidth-digits": "conv1, \uff13\uff12, 32, 3, 3, 3, 16, 1,",
        "superscript": "conv1, 3\u00b2, 32, 3, 3, 3, 16, 1,",
        "neg": "conv1, -32, 32, 3, 3, 3, 16, 1,",
        "zero": "conv1, 32, 32, 3, 3, 0, 16, 1,",
        "float": "conv1, 32.5, 32, 3, 3, 3, 16, 1,",
        "stride-zero": "conv1, 32, 32, 3, 3, 3, 16, 0,",
        "filter-too-big": "conv1, 4, 4, 9, 9, 3, 16, 1,",
        "short": "conv1, 32, 32, 3,",
        "no-name": ", 32, 32, 3, 3, 3, 16, 1,",
        "plus-sign": "conv1, +32, 32, 3, 3, 3, 16, 1,",
        "hex": "conv1, 0x20, 32, 3, 3, 3, 16, 1,",
        "exp": "conv1, 1e3, 32, 3, 3, 3, 16, 1,",
        "nan": "conv1, nan, 32, 3, 3, 3, 16, 1,",
        "big-image": "conv1, 1000000, 1000000, 3, 3, 3, 16, 1,",
        "5000-digits": "conv1, " + "9" * 5000 + ", 32, 3, 3, 3, 16, 1,",
    }
    cases = []
    for name, row in rows.items():
        text = f"{GEMM_HEADER}\ng1, 99999999999999999999, 4, 4,\n" if row is None else f"{CONV_HEADER}\n{row}\n"
        cases.append(Case(f"csv-{name}", "csv", _run_workload("t.csv"), {"t.csv": text.encode()}))
    files = {
        "empty": b"", "header-only": f"{CONV_HEADER}\n".encode(), "bad-header": b"a, b, c,\n1, 2, 3,\n",
        "binary": bytes(range(256)), "nul": f"{CONV_HEADER}\n{good_conv}\x00\n".encode(),
        "latin1": f"{CONV_HEADER}\ncaf\xe9, 32, 32, 3, 3, 3, 16, 1,\n".encode("latin-1"),
        "gemm-zero": f"{GEMM_HEADER}\ng1, 0, 4, 4,\n".encode(),
        "gemm-words": f"{GEMM_HEADER}\ng1, four, 4, 4,\n".encode(),
        "only-blank": b"\n\n\n",
        "quoted": f'{CONV_HEADER}\n"conv1", "32", 32, 3, 3, 3, 16, 1,\n'.encode(),
    }
    for name, data in files.items():
        cases.append(Case(f"csv-file-{name}", "csv", _run_workload("t.csv"), {"t.csv": data}))
    secret = b"root:x:0:0:root:/root:/bin/bash,daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin-secret\n"
    cases.append(Case("csv-file-passwd-excerpt", "csv", _run_workload("t.csv"), {"t.csv": secret},
                      must_not_echo="nologin-secret"))
    return cases


# ----------------------------------------------------------------------------- sweeps

def sweep_cases() -> list[Case]:
    base = {"name": "s", "base": "systolic-32x32-ws", "axes": {"rows": [8, 16]}, "workloads": [str(TINY)]}
    edits = {
        "simulate-objective": {"simulate": {"objective": "speed"}},
        "simulate-detailed": {"simulate": {"detailed": "yes"}},
        "simulate-weights-only": {"simulate": {"weights": "int8"}},
        "simulate-weights-bad": {"simulate": {"weights": "int3", "activations": "int8"}},
        "simulate-unknown": {"simulate": {"no_such": 1}},
        "synth-target": {"area": "synth", "synth": {"target": "no-fpga"}},
        "synth-pnr": {"area": "synth", "synth": {"pnr": "yes"}},
        "axis-empty": {"axes": {"rows": []}},
        "axis-scalar": {"axes": {"rows": 8}},
        "axis-range-step0": {"axes": {"rows": {"range": [8, 16, 0]}}},
        "axis-range-huge": {"axes": {"rows": {"range": [1, 10 ** 9, 1]}}},
        "axis-log2-bad": {"axes": {"rows": {"log2_range": [3, 16]}}},
        "axis-unknown-key": {"axes": {"no_such_param": [1, 2]}},
        "axes-all-invalid": {"axes": {"rows": [-1, 0]}},
        "workload-missing": {"workloads": ["no_such_model"]},
        "workload-file-missing": {"workloads": ["nope.yaml"]},
        "workloads-empty": {"workloads": []},
        "objective-unknown": {"objectives": {"speed": "min"}},
        "objective-sense": {"objectives": {"cycles": "smallest"}},
        "constraint-junk": {"constraints": ["area is small"]},
        "name-bad": {"name": "../escape"},
        "base-missing": {"base": "no-such-preset"},
        "top-unknown": {"extra": 1},
        "sample-zero": {"sample": {"n": 0}},
        "set-list": {"set": {"clock_mhz": [1, 2]}},
    }
    cases = []
    for name, edit in edits.items():
        cases.append(Case(f"sweep-{name}", "sweep", ["sweep", "{d}/s.yaml", "--out", "{d}/sweep_out", "--no-plots",
                                                     "--no-progress", "--workers", "1"], {"s.yaml": _yaml({**base, **edit})}))
    texts = {"deep": b"[" * 3000, "empty": b"", "list": b"[1, 2]\n", "binary": bytes(range(256))}
    for name, data in texts.items():
        cases.append(Case(f"sweep-text-{name}", "sweep", ["sweep", "{d}/s.yaml", "--out", "{d}/sweep_out"],
                          {"s.yaml": data}))
    return cases


# ----------------------------------------------------------------------------- CLI arguments

def cli_cases() -> list[Case]:
    run = ["run", "--arch", "systolic-32x32-ws", "--workload", "resnet50", "--out", "{d}/simout", "--no-plots"]
    args = {
        "batch-zero": run + ["--batch", "0"], "batch-neg": run + ["--batch", "-1"],
        "batch-huge": run + ["--batch", "1000000000"], "batch-words": run + ["--batch", "ten"],
        "image-size-huge": run + ["--image-size", "1000000"], "image-size-zero": run + ["--image-size", "0"],
        "seq-zero": ["run", "--arch", "systolic-32x32-ws", "--workload", "gpt2", "--seq", "0", "--out", "{d}/o"],
        "seq-huge": ["run", "--arch", "systolic-32x32-ws", "--workload", "gpt2", "--seq", "100000000", "--out", "{d}/o"],
        "kv-len-neg": ["run", "--arch", "systolic-32x32-ws", "--workload", "gpt2", "--phase", "decode", "--kv-len",
                       "-1", "--out", "{d}/o"],
        "trace-layers-words": run + ["--trace-layers", "x"],
        "work-limit-zero": run + ["--work-limit", "0"], "work-limit-nan": run + ["--work-limit", "nan"],
        "set-no-equals": run + ["--set", "rows"], "set-unknown": run + ["--set", "no_such=1"],
        "set-rows-str": run + ["--set", "rows=abc"], "set-rows-sexagesimal": run + ["--set", "rows=1:30"],
        "set-rows-zero": run + ["--set", "rows=0"], "set-rows-5000-digits": run + ["--set", "rows=" + "9" * 5000], "set-deep": run + ["--set", "rows=" + "[" * 2000],
        "set-nested-unknown": run + ["--set", "dram.no_such=1"], "set-empty-key": run + ["--set", "=4"],
        "weights-only": run + ["--weights", "int8"], "weights-bad": run + ["--weights", "int3", "--activations", "int8"],
        "dataflow-bad": run + ["--dataflow", "diagonal"], "objective-bad": run + ["--objective", "speed"],
        "arch-unknown": ["run", "--arch", "no-such-arch", "--workload", "resnet50", "--out", "{d}/o"],
        "arch-empty": ["run", "--arch", "", "--workload", "resnet50", "--out", "{d}/o"],
        "workload-unknown": ["run", "--arch", "systolic-32x32-ws", "--workload", "no_such_model", "--out", "{d}/o"],
        "workload-empty": ["run", "--arch", "systolic-32x32-ws", "--workload", "", "--out", "{d}/o"],
        "workload-param-unknown": ["run", "--arch", "systolic-32x32-ws", "--workload", str(TINY), "--seq", "4",
                                   "--out", "{d}/o"],
        "no-command-arg": ["run"], "unknown-command": ["frobnicate"], "unknown-option": ["run", "--frob"],
        "synth-freq-zero": ["rtl", "synth", "--arch", "systolic-32x32-ws", "--freq", "0"],
        "synth-freq-nan": ["rtl", "synth", "--arch", "systolic-32x32-ws", "--freq", "nan"],
        "synth-freq-neg": ["rtl", "synth", "--arch", "systolic-32x32-ws", "--freq", "-5"],
        "synth-freq-inf": ["rtl", "synth", "--arch", "systolic-32x32-ws", "--freq", "inf"],
        "cosim-max-stream-zero": ["rtl", "cosim", "--arch", "systolic-32x32-ws", "--max-stream", "0"],
        "cosim-max-stream-neg": ["rtl", "cosim", "--arch", "systolic-32x32-ws", "--max-stream", "-2"],
        "cosim-tiles-zero": ["rtl", "cosim", "--arch", "systolic-32x32-ws", "--tiles", "0"],
        "rtl-depth-neg": ["rtl", "generate", "--arch", "systolic-32x32-ws", "--depth", "-1", "--out", "{d}/rtl"],
        "rtl-banks-on-systolic": ["rtl", "generate", "--arch", "systolic-32x32-ws", "--banks", "4", "--out", "{d}/rtl"],
        "sweep-workers-zero": ["sweep", "resnet50-array-dataflow-buffer", "--workers", "0", "--out", "{d}/sw"],
        "sweep-unknown": ["sweep", "no-such-sweep", "--out", "{d}/sw"],
        "sweep-address-local": ["sweep", "resnet50-array-dataflow-buffer", "--address", "x", "--out", "{d}/sw"],
        "workload-show-unknown": ["workload", "show", "no_such_model"],
        "workload-show-batch-zero": ["workload", "show", "resnet50", "--batch", "0"],
    }
    from archsim.templates import template_names

    for name in template_names():  # every registered template: an override its params do not have
        preset = next((p for p in arch_presets() if _preset_raw(p).get("template") == name), None)
        if preset:
            args[f"set-unknown-param-{name}"] = ["run", "--arch", preset, "--workload", str(TINY), "--set",
                                                 "no_such_param=3", "--out", "{d}/o"]
    return [Case(f"cli-{name}", "cli", argv) for name, argv in args.items()]


# ----------------------------------------------------------------------------- paths of every kind

def _mkfifo(name: str) -> Setup:
    return lambda d: os.mkfifo(d / name)


def _symlink_loop(name: str) -> Setup:
    def make(d: Path) -> None:
        os.symlink(d / f"{name}.b", d / name)
        os.symlink(d / name, d / f"{name}.b")
    return make


def _dangling(name: str) -> Setup:
    return lambda d: os.symlink(d / "nowhere", d / name)


def _folder(name: str) -> Setup:
    return lambda d: (d / name).mkdir()


def _big(name: str) -> Setup:
    def make(d: Path) -> None:
        with open(d / name, "wb") as handle:
            handle.truncate(65 * 1024 * 1024)  # sparse: above the 64 MiB limit, costs no disk
    return make


def path_cases() -> list[Case]:
    kinds: dict[str, Setup | str] = {
        "fifo": _mkfifo, "symlink-loop": _symlink_loop, "dangling-symlink": _dangling, "folder": _folder,
        "too-big": _big, "dev-zero": "/dev/zero", "dev-null": "/dev/null", "proc-self-mem": "/proc/self/mem",
        "root": "/",
    }
    slots = {
        "arch": (lambda p: ["run", "--arch", p, "--workload", str(TINY), "--out", "{d}/o"], "a.yaml"),
        "workload-yaml": (lambda p: ["run", "--arch", "systolic-32x32-ws", "--workload", p, "--out", "{d}/o"], "w.yaml"),
        "workload-onnx": (lambda p: ["run", "--arch", "systolic-32x32-ws", "--workload", p, "--out", "{d}/o"], "w.onnx"),
        "workload-csv": (lambda p: ["run", "--arch", "systolic-32x32-ws", "--workload", p, "--out", "{d}/o"], "w.csv"),
        "sweep": (lambda p: ["sweep", p, "--out", "{d}/o"], "s.yaml"),
        "workload-show": (lambda p: ["workload", "show", p], "w.yaml"),
    }
    cases = []
    for slot, (argv_of, fname) in slots.items():
        for kind, how in kinds.items():
            if isinstance(how, str):
                if slot.startswith("workload") and not slot.endswith(("yaml", "show")):
                    continue  # a device path has no workload suffix: covered by the yaml slot's zoo lookup
                cases.append(Case(f"path-{slot}-{kind}", "path", argv_of(how)))
            else:
                cases.append(Case(f"path-{slot}-{kind}", "path", argv_of(f"{{d}}/{fname}"), setup=how(fname)))
    # output paths: the user's folders and files, and impossible places
    run = ["run", "--arch", "systolic-32x32-ws", "--workload", str(TINY), "--no-plots", "--out"]
    gen = ["rtl", "generate", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2", "--out"]
    sweep = ["sweep", "{d}/s.yaml", "--no-plots", "--no-progress", "--workers", "1", "--out"]
    sweep_file = {"s.yaml": _yaml({"name": "s", "base": "systolic-32x32-ws", "axes": {"rows": [8]},
                                   "workloads": [str(TINY)]})}
    outs = {"dot": ".", "dotdot": "..", "userdir": "{d}/userdir", "userdir-slash": "{d}/userdir/",
            "a-file": "{d}/sentinel.txt", "under-a-file": "{d}/sentinel.txt/sub", "root": "/", "dev-null": "/dev/null",
            "proc": "/proc/self", "empty-name": ""}
    for name, out in outs.items():
        cases.append(Case(f"out-run-{name}", "output", run + [out]))
        cases.append(Case(f"out-rtl-{name}", "output", gen + [out]))
        cases.append(Case(f"out-sweep-{name}", "output", sweep + [out], dict(sweep_file)))
    synth = ["rtl", "synth", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2", "--target", "generic",
             "--json"]
    cosim = ["rtl", "cosim", "--arch", "systolic-32x32-ws", "--set", "rows=2", "--set", "cols=2", "--tiles", "1",
             "--json"]
    jsons = {"user-json": "{d}/out.json", "user-report": "{d}/userdir/report.json", "folder": "{d}/userdir",
             "dev-null": "/dev/null", "missing-folder": "{d}/nope/x.json", "empty": ""}
    for name, target in jsons.items():
        cases.append(Case(f"out-synth-json-{name}", "output", synth + [target]))
        cases.append(Case(f"out-cosim-json-{name}", "output", cosim + [target]))
    for name, target in {"userdir": "{d}/userdir", "dot": ".", "a-file": "{d}/sentinel.txt"}.items():
        cases.append(Case(f"out-cosim-build-dir-{name}", "output", cosim[:-1] + ["--build-dir", target]))
    return cases


# ----------------------------------------------------------------------------- valid controls

def control_cases() -> list[Case]:
    tiny_onnx = _onnx_bytes("valid")
    csv = f"{CONV_HEADER}\nconv1, 16, 16, 3, 3, 3, 8, 1,\nconv2, 14, 14, 3, 3, 8, 8, 1,\n".encode()
    run = ["run", "--arch", "systolic-32x32-ws", "--no-plots", "--out", "{d}/simout", "--workload"]
    cases = [
        Case("ok-run-yaml", "control", run + [str(TINY)], expect="ok"),
        Case("ok-run-onnx", "control", run + ["{d}/m.onnx"], {"m.onnx": tiny_onnx}, expect="ok"),
        Case("ok-run-csv", "control", run + ["{d}/t.csv"], {"t.csv": csv}, expect="ok"),
        Case("ok-run-twice-replaces-own", "control", ["run", "--arch", "systolic-32x32-ws", "--workload", str(TINY),
                                                      "--no-plots", "--out", "{d}/twice"], expect="ok",
             setup=lambda d: _run_quietly(["run", "--arch", "systolic-32x32-ws", "--workload", str(TINY),
                                           "--no-plots", "--out", str(d / "twice")])),
        Case("ok-run-empty-folder", "control", run[:-3] + ["--out", "{d}/empty", "--workload", str(TINY)],
             setup=_folder("empty"), expect="ok"),
        Case("ok-rtl-generate", "control", ["rtl", "generate", "--arch", "systolic-32x32-ws", "--set", "rows=2",
                                            "--set", "cols=2", "--out", "{d}/rtl"], expect="ok"),
        Case("ok-workload-show", "control", ["workload", "show", str(TINY)], expect="ok"),
        Case("ok-presets", "control", ["presets"], expect="ok"),
        Case("ok-sweep-dry-run", "control", ["sweep", "resnet50-array-dataflow-buffer", "--dry-run"], expect="ok"),
    ]
    presets = arch_presets()
    from archsim.templates import template_names

    for template in template_names():  # one preset per template the registry lists, on the tiny CNN
        preset = next((p for p in presets if _preset_raw(p).get("template") == template), None)
        if preset and template not in ("systolic",):
            cases.append(Case(f"ok-run-{preset}", "control", ["run", "--arch", preset, "--workload", str(TINY),
                                                              "--no-plots", "--out", "{d}/simout"], expect="ok"))
    return cases


def _run_quietly(argv: list[str]) -> None:
    from archsim.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) == 0


#: input format or kind of argument -> case builder; add a row for a new format
BUILDERS: dict[str, Callable[[], list[Case]]] = {
    "spec": spec_cases,
    "workload_yaml": workload_yaml_cases,
    "onnx": onnx_cases,
    "csv": csv_cases,
    "sweep": sweep_cases,
    "cli": cli_cases,
    "path": path_cases,
    "control": control_cases,
}


def build_cases() -> list[Case]:
    """Every case of every builder in :data:`BUILDERS` (ids are unique)."""
    cases = [case for builder in BUILDERS.values() for case in builder()]
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    return cases


# ----------------------------------------------------------------------------- running a case

class _Timeout(BaseException):
    pass


def _on_alarm(signum, frame):  # noqa: ARG001
    raise _Timeout()


@dataclass
class Outcome:
    case: Case
    status: int | None
    stdout: str
    stderr: str
    seconds: float
    verdict: str  # ok | traceback | hang | silent_accept | not_one_line | data_loss | echo | failed_control


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def prepare(case: Case, root: Path) -> Path:
    """Make the case folder ``root/work`` with its files and sentinels; return it."""
    work = root / "work"
    (work / "userdir").mkdir(parents=True)
    (root / "parent_sentinel.txt").write_text("the user's file beside the case folder\n")
    (work / "sentinel.txt").write_text("the user's own file\n")
    (work / "userdir" / "notes.txt").write_text("notes\n")
    (work / "userdir" / "report.json").write_text('{"mine": true}\n')
    (work / "out.json").write_text('{"user": "data"}\n')
    for name, data in case.files.items():
        (work / name).write_bytes(data)
    if case.setup is not None:
        case.setup(work)
    return work


def run_case(case: Case, root: Path, timeout_s: float = CASE_TIMEOUT_S,
             main: Callable[[list[str]], int] | None = None) -> Outcome:
    """Run ``case`` in-process (``main``, default ``archsim.cli.main``) in a fresh folder under ``root``
    and judge it."""
    if main is None:
        from archsim.cli import main

    work = prepare(case, root)
    sentinels = {name: _digest(work / name) for name in SENTINELS}
    argv = [a.replace("{d}", str(work)) for a in case.argv]
    out, err = io.StringIO(), io.StringIO()
    status: int | None = None
    verdict = ""
    cwd = os.getcwd()
    old = signal.signal(signal.SIGALRM, _on_alarm)
    start = time.monotonic()
    try:
        os.chdir(work)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as exc:  # argparse
                status = exc.code if isinstance(exc.code, int) else 2
    except _Timeout:
        verdict = "hang"
    except BaseException:  # noqa: BLE001 - what we are looking for
        err.write(traceback.format_exc())
        verdict = "traceback"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        os.chdir(cwd)
    seconds = time.monotonic() - start
    text = err.getvalue()
    if not verdict:
        lines = [line for line in text.splitlines() if line.strip()]
        errors = [line for line in lines if "error:" in line]
        if any(_digest(work / name) != digest for name, digest in sentinels.items()):
            verdict = "data_loss"
        elif "Traceback" in text:
            verdict = "traceback"
        elif case.expect == "ok":
            verdict = "ok" if status == 0 else "failed_control"
        elif status == 0:
            verdict = "silent_accept"
        elif len(errors) != 1 or (lines and not lines[-1].startswith(("archsim: error:", "archsim ")) and
                                  "error:" not in lines[-1]) or any(len(line) > 2000 for line in lines):
            verdict = "not_one_line"
        elif case.must_not_echo and case.must_not_echo in text:
            verdict = "echo"
        else:
            verdict = "ok"
    return Outcome(case, status, out.getvalue(), text, seconds, verdict)


def write_corpus(folder: Path) -> int:
    """Write every case's static files and an index into ``folder``; return the number of cases."""
    cases = build_cases()
    index = []
    for case in cases:
        for name, data in case.files.items():
            target = folder / case.id / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        index.append({"id": case.id, "class": case.cls, "argv": case.argv, "expect": case.expect,
                      "setup": getattr(case.setup, "__qualname__", None) if case.setup else None})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.json").write_text(json.dumps(index, indent=1) + "\n")
    return len(cases)


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(write_corpus(Path(sys.argv[1] if len(sys.argv) > 1 else "fuzz_corpus")), "cases")
