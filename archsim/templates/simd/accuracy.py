"""The SIMD datapath as the value executor's bit-exact GEMM (:mod:`archsim.accuracy.executor`).

``Precision(..., exact_gemm=exact_gemm)`` makes every GEMM of an executed network run
through :func:`.values.tile_values` (one tile per GEMM) on the quantized codes instead
of float64 on the rounded values: the same numbers the RTL and the detailed model give.
"""
from __future__ import annotations

import numpy as np


def exact_gemm(ca, cw, sa, sw, af, wf, G) -> np.ndarray:
    """The SIMD datapath's values (one tile per GEMM) times the scales."""
    from .params import SimdParams
    from .tile import SimdTile
    from .values import tile_values

    M, K = ca.shape
    N = cw.shape[1]
    params = SimdParams(pes=64, lane_bits=16, weight_format=wf, activation_format=af)
    if G:
        tile = SimdTile(M, K, N, wf, af, group_size=G)
        out = tile_values(tile, {"input": ca, "weight": cw, "scale": sw.astype(np.float32)}, params)
        return out.astype(np.float64) * sa
    tile = SimdTile(M, K, N, wf, af)
    out = tile_values(tile, {"input": ca, "weight": cw}, params)
    return out.astype(np.float64) * sw[0][None, :] * sa
