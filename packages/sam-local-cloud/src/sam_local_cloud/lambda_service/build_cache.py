"""Where the local Lambda service keeps what it builds once and reuses (runtime environments, layers'
/opt folders), and the lock that has two processes needing the same thing build it once."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/sam-local-cloud`` (``~/.cache/sam-local-cloud``)."""
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "sam-local-cloud"


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Held by one process at a time (an exclusive lock on ``path``), for building into a shared cache."""
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
