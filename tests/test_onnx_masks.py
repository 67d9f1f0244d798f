"""The causal-mask reading of exported attention (workloads/onnx_masks.py), on masks built here by
hand: additive (-inf / finfo.min / -10000) and Where forms, decode offsets, and masks that are not
causal (sliding window, padding that differs per batch item, nothing hidden)."""
from __future__ import annotations

import numpy as np

from workloads.onnx_masks import causal_pattern, classify, hidden_keys


def _additive(sq: int, skv: int, fill: float) -> np.ndarray:
    m = np.zeros((1, 1, sq, skv), np.float32)
    for i in range(sq):
        m[..., i, skv - sq + i + 1:] = fill  # query i is position skv - sq + i: later keys hidden
    return m


def test_causal_masks_in_every_exported_form_are_read_as_causal():
    for fill in (-np.inf, np.finfo(np.float32).min, -10000.0):
        assert classify([hidden_keys("add", _additive(16, 16, fill))], 16, 16) == "causal"
    assert classify([hidden_keys("add", _additive(1, 9, -np.inf))], 1, 9) == "none"  # decode: sees every key
    assert classify([hidden_keys("add", _additive(4, 9, -np.inf))], 4, 9) == "causal"  # chunked prefill
    keep = np.tril(np.ones((16, 16), bool))[None, None]  # HF legacy: Where(bias, scores, min)
    assert classify([hidden_keys("where", keep, scores_first=True)], 16, 16) == "causal"
    assert classify([hidden_keys("where", ~keep, scores_first=False)], 16, 16) == "causal"


def test_masks_that_are_not_causal_are_not_called_causal():
    assert classify([hidden_keys("add", np.zeros((1, 1, 16, 16)))], 16, 16) == "none"
    assert classify([hidden_keys("add", np.random.default_rng(0).normal(size=(1, 4, 16, 16)))], 16, 16) == "none"
    window = causal_pattern(16, 16) | (np.arange(16)[None, :] < np.arange(16)[:, None] - 4)  # sliding window 5
    assert classify([window], 16, 16) == "other"
    padded = np.stack([causal_pattern(16, 16), causal_pattern(16, 16) | (np.arange(16) >= 12)])[:, None]
    assert classify([padded], 16, 16) == "other"  # batch item 1 pads its last 4 keys
    anti = causal_pattern(16, 16).T
    assert classify([anti], 16, 16) == "other"
    # two masks whose union is causal (a padding mask of nothing + the causal one), as T5's decoder adds
    assert classify([np.zeros((1, 1, 1, 16), bool), causal_pattern(16, 16)], 16, 16) == "causal"
