"""Precision policies: moved to :mod:`archsim.spec.precision_policy` (a spec-level
feature any template's options may carry, read without the compiler); re-exported here."""
from archsim.spec.precision_policy import (OP_KINDS, RULE_KEYS, Policy, Rule, load_policy,  # noqa: F401
                                           parse_policy)
