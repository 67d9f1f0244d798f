"""The event engine: runs a Program against the timelines of an arch's units.

See :mod:`archsim.engine.core` for the timing rules.
"""
from archsim.engine.core import ArchContext, LayerTiming, clear_cache, layer_energy, memo_key, memo_stats, run_program, schedule_layer, simulate_layer

__all__ = ["ArchContext", "LayerTiming", "clear_cache", "layer_energy", "memo_key", "memo_stats", "run_program", "schedule_layer", "simulate_layer"]
