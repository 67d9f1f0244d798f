"""The ECP5 ``MULT18X18D`` of the PEs: the library's (:mod:`rtl.lib.ecp5`)."""
from rtl.lib.ecp5 import mult18x18d, mult18x18d_sim_model  # noqa: F401
