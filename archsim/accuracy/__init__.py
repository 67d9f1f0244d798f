"""Values carried through a network at chosen precisions, and their error against fp32.

- :mod:`.executor`: an ONNX graph executed with numpy, every GEMM at a weight x
  activation format pair (group-wise weight scales), per-layer and output SQNR;
- :mod:`.network`: ``archsim run --sqnr``, the executor run at the precisions a
  simulation gave each layer (any template whose model reports ``compute_formats``).

A template may supply a bit-exact GEMM on the codes (``Precision.exact_gemm``; the
SIMD datapath's is :func:`archsim.templates.simd.accuracy.exact_gemm`).
"""
