"""Mapper options: moved to :mod:`archsim.spec.options` (the spec loader reads them
without importing the compiler); re-exported here for the mappers and old imports."""
from archsim.spec.options import (COMMON_OPTIONS, OBJECTIVES, MapOptions, make_options,  # noqa: F401
                                  option_names, options_for)
