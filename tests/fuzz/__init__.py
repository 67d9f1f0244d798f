"""Reliability harnesses: the generated fuzz corpus (:mod:`tests.fuzz.corpus`) and the
sweep kill loop (:mod:`tests.fuzz.sweep_kill`)."""
