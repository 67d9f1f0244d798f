"""Scratchpad allocation (COSMA): which activation tensors stay on chip between ops.

:func:`plan_allocation` gives the greedy (archsim today), ILP and divide-and-conquer
heuristic plans of a graph for a scratchpad size, with their compulsory and
non-compulsory DRAM bytes, and (``addresses="ilp"``) each resident tensor's scratchpad
address chosen by the address ILP. See docs/cosma.md.
"""
from mappers.allocation.plan import (ALLOCATIONS, Addresses, Allocation, allocate, greedy_plan, heuristic_plan,
                                     layer_by_layer_traffic, plan_allocation)
from mappers.allocation.problem import Plan, Problem, Tensor, Traffic, build_problem, check_plan, traffic

__all__ = ["ALLOCATIONS", "Addresses", "Allocation", "Plan", "Problem", "Tensor", "Traffic", "allocate",
           "build_problem", "check_plan", "greedy_plan", "heuristic_plan", "layer_by_layer_traffic", "plan_allocation", "traffic"]
