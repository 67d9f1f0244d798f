"""The model zoo: named builders that return a :class:`workloads.Graph`.

``build(name, **params)`` checks the parameters against the builder's
keyword arguments, so a wrong one is a one-line error listing the valid ones.
Names are spelled one way, lower case with ``-`` between words like the arch presets
(``bert-base``, ``gpt2-medium``, ``llama2-7b``); any case and any ``-`` / ``_`` / no
separator is accepted as the same name (``ResNet50``, ``resnet-50``, ``bert_base``), and a
near miss is answered with "did you mean". A built graph is named by the canonical name.
``phase="decode"`` without ``kv_len`` decodes after a prompt of ``seq_len``
tokens: the KV cache holds ``seq_len`` (the builder's default unless given).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.zoo.attn import attention_block
from workloads.zoo.bert import bert_base
from workloads.zoo.efficientnet import efficientnet_b0
from workloads.zoo.gpt2 import gpt2
from workloads.zoo.gpt3 import gpt3
from workloads.zoo.llama import decoder, llama2_7b, llama3_8b
from workloads.zoo.lowbit import bitnet_b158_2b, bitnet_b158_3b, llama2_7b_w2a16, llama2_7b_w4a16, llama3_8b_w4a16
from workloads.zoo.mobilenet import mobilenet_v1
from workloads.zoo.resnet import resnet18, resnet50
from workloads.zoo.t5 import t5_encoder
from workloads.zoo.vit import vit_b16

_ZOO: dict[str, Callable[..., Graph]] = {
    "resnet18": resnet18,
    "resnet50": resnet50,
    "mobilenet-v1": mobilenet_v1,
    "efficientnet-b0": efficientnet_b0,
    "vit-b16": vit_b16,
    "bert-base": bert_base,
    "gpt2": partial(gpt2, size="small"),
    "gpt2-medium": partial(gpt2, size="medium"),
    "gpt2-large": partial(gpt2, size="large"),
    "gpt2-xl": partial(gpt2, size="xl"),
    "gpt3-small": partial(gpt3, size="small"),
    "gpt3-medium": partial(gpt3, size="medium"),
    "gpt3-large": partial(gpt3, size="large"),
    "gpt3-xl": partial(gpt3, size="xl"),
    "gpt3-2.7b": partial(gpt3, size="2.7b"),
    "llama2-7b": llama2_7b,
    "llama3-8b": llama3_8b,
    "decoder": decoder,
    "bitnet-b1.58-2b": bitnet_b158_2b,
    "bitnet-b1.58-3b": bitnet_b158_3b,
    "llama2-7b-w4a16": llama2_7b_w4a16,
    "llama2-7b-w2a16": llama2_7b_w2a16,
    "llama3-8b-w4a16": llama3_8b_w4a16,
    "t5-small": partial(t5_encoder, size="small"),
    "t5-base": partial(t5_encoder, size="base"),
    "attn-bert": partial(attention_block, "attn_bert"),
    "attn-trxl": partial(attention_block, "attn_trxl"),
    "attn-t5": partial(attention_block, "attn_t5"),
    "attn-xlm": partial(attention_block, "attn_xlm"),
}

#: ``seq`` is accepted as a spelling of ``seq_len``
ALIASES = {"seq": "seq_len"}


def zoo_names() -> list[str]:
    return list(_ZOO)


def _key(name: str) -> str:
    """The spelling-free form of a zoo name: lower case, no ``-``, ``_`` or spaces."""
    return "".join(c for c in name.strip().lower() if c not in "-_ ")


def canonical_name(name: str) -> str:
    """The zoo's spelling of ``name`` (``ResNet50`` -> ``resnet50``, ``bert_base`` -> ``bert-base``);
    ``WorkloadError`` with the closest names for an unknown one."""
    import difflib

    by_key = {_key(n): n for n in _ZOO}
    key = _key(str(name))
    if key in by_key:
        return by_key[key]
    close = difflib.get_close_matches(key, list(by_key), n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(repr(by_key[c]) for c in close)}?)" if close else ""
    raise WorkloadError(f"unknown workload {name!r}{hint}; expected a zoo name ({', '.join(_ZOO)}) "
                        f"or a file ending in .onnx, .yaml, .yml or .csv")


def builder_params(name: str) -> list[str]:
    """The keyword parameters a zoo builder accepts."""
    fn = _lookup(name)
    fixed = fn.keywords if isinstance(fn, partial) else {}
    sig = inspect.signature(fn.func if isinstance(fn, partial) else fn)
    return [p for p in sig.parameters if p not in fixed and p != "name"]


def _lookup(name: str) -> Callable[..., Graph]:
    return _ZOO[canonical_name(name)]


def build(name: str, **params) -> Graph:
    """Build zoo model ``name``; ``WorkloadError`` for an unknown model or parameter."""
    fn = _lookup(name)
    valid = builder_params(name)
    given: dict = {}
    for key, value in params.items():
        canonical = ALIASES.get(key, key)
        if canonical in given and given[canonical] != value:
            raise WorkloadError(f"{name}: {key}: conflicts with {canonical}={given[canonical]!r}")
        given[canonical] = value
    for key in given:
        if key not in valid:
            flag = FLAGS.get(key)
            if flag:  # a common parameter this model has not (--seq on a CNN): name the flag too
                raise WorkloadError(f"{name}: parameter {key!r} ({flag}) does not apply to this model; its "
                                    f"parameters: {', '.join(valid)}")
            raise WorkloadError(f"{name}: unknown parameter {key!r}; expected one of {', '.join(valid)}")
    if given.get("phase") == "decode" and given.get("kv_len") is None and "kv_len" in valid:
        given["kv_len"] = given.get("seq_len", _default(fn, "seq_len"))
    graph = fn(**given)
    graph.name = canonical_name(name)  # one name in reports and folders, however it was typed
    return graph


#: CLI flags of the common parameters, to name the flag a user typed (``--seq`` on a CNN)
FLAGS = {"seq_len": "--seq", "batch": "--batch", "phase": "--phase", "kv_len": "--kv-len",
         "image_size": "--image-size"}


def _default(fn: Callable[..., Graph], param: str):
    """The default value of keyword ``param`` of builder ``fn``."""
    return inspect.signature(fn.func if isinstance(fn, partial) else fn).parameters[param].default
