"""Where archsim keeps on-disk caches (synthesis figures, RTL builds).

One setting for all of them: ``$ARCHSIM_CACHE_DIR``, else
``$XDG_CACHE_HOME/archsim``, else ``~/.cache/archsim``.
"""
from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    base = os.environ.get("ARCHSIM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "archsim"
    )
    return Path(base)
