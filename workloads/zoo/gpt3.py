"""GPT-3 (Brown et al., "Language Models are Few-Shot Learners", 2020) in the sizes of its
Table 2.1 up to 2.7B, prefill or decode.

GPT-3 is GPT-2's architecture (pre-norm layers with biased projections, GELU MLP of 4x width,
learned position embeddings, the 50257-token BPE vocabulary, LM head tied to the token
embedding) with a 2048-token context; its alternating dense / locally banded sparse attention
does not change the parameters or the decode-step work at batch 1 modelled here (dense
attention over the cache is used). Shapes from Table 2.1 (n_layers, d_model, n_heads x d_head):

=========== ======== ======= ================= ===================== =========================
name        layers   d_model heads x d_head    Table 2.1 n_params    parameters here
=========== ======== ======= ================= ===================== =========================
gpt3-small  12       768     12 x 64           125M                  125,226,240 (+0.2 %)
gpt3-medium 24       1024    16 x 64           350M                  355,871,744 (+1.7 %)
gpt3-large  24       1536    16 x 96           760M                  760,300,032 (+0.04 %)
gpt3-xl     24       2048    16 x 128          1.3B                  1,315,723,264 (+1.2 %)
gpt3-2.7b   32       2560    32 x 80           2.7B                  2,651,553,280 (-1.8 %)
=========== ======== ======= ================= ===================== =========================

Table 2.1's n_params are rounded names: its own shapes give the counts on the right
(``L (12 d^2 + 13 d) + 50257 d + 2048 d + 2 d``). For XL the table lists 24 heads of 128,
which does not multiply to d_model = 2048 (and 24 x 128 attention would make 1.5B); 16 heads of
128 are used, the split whose parameter count matches the 1.3B name.
"""
from __future__ import annotations

from archsim.errors import WorkloadError
from workloads.graph import Graph
from workloads.zoo.gpt2 import gpt_decoder

MAX_POSITIONS = 2048
SIZES = {  # size: (hidden, layers, heads)
    "small": (768, 12, 12),
    "medium": (1024, 24, 16),
    "large": (1536, 24, 16),
    "xl": (2048, 24, 16),
    "2.7b": (2560, 32, 32),
}


def gpt3(*, size: str = "small", batch: int = 1, seq_len: int = 128, phase: str = "prefill",
         kv_len: int | None = None, weight_precision: str = "int8", act_precision: str = "int8",
         acc_precision: str = "int32") -> Graph:
    """GPT-3 of ``size`` small/medium/large/xl/2.7b; decode runs one token against ``kv_len`` cached ones."""
    if size not in SIZES:
        raise WorkloadError(f"gpt3: size: expected one of {', '.join(SIZES)}, got {size!r}")
    return gpt_decoder(f"gpt3-{size}", *SIZES[size], max_positions=MAX_POSITIONS, batch=batch, seq_len=seq_len,
                       phase=phase, kv_len=kv_len, weight_precision=weight_precision,
                       act_precision=act_precision, acc_precision=acc_precision)
