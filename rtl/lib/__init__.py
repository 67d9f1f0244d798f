"""archsim's shared RTL arithmetic library: every template's datapath is built from these.

- :mod:`rtl.lib.pipe` -- cut points: one builder, any pipeline depth, a declared latency;
- :mod:`rtl.lib.lzc` -- leading-zero count; :mod:`rtl.lib.round` -- round-and-pack;
- :mod:`rtl.lib.formats` -- number formats and their decoders (ints, small floats, posits);
- :mod:`rtl.lib.fp` -- float add / multiply (fp8 e4m3 / e5m2, fp16, bf16, fp32), int <-> float;
- :mod:`rtl.lib.exp` -- the attention design's exp2 approximation;
- :mod:`rtl.lib.units` -- the pipelined components (``stages`` parameter, ``latency``).
"""
