"""Wheels of the repository's distributions, built from a copy of their sources.

setuptools writes ``build/`` and ``*.egg-info`` beside the sources it builds; built in place, they would be
left in the checkout, where the tests that read every module of ``packages/`` would find a second copy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

# What setuptools reads to build either distribution (the app's packages sit in src/ and functions/).
SOURCE_PARTS = ("pyproject.toml", "README.md", "src", "functions")
_NOT_SOURCES = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")


def built_wheel(source: Path, scratch: Path, wheels: Path) -> Path:
    """The wheel of the distribution at ``source``, built from a copy in ``scratch`` into ``wheels``."""
    copy = scratch / f"{source.name}-sources"
    copy.mkdir(parents=True)
    for part in SOURCE_PARTS:
        if (source / part).is_dir():
            shutil.copytree(source / part, copy / part, ignore=_NOT_SOURCES)
        elif (source / part).is_file():
            shutil.copy2(source / part, copy / part)
    before = set(wheels.glob("*.whl")) if wheels.exists() else set()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(copy),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"pip wheel {source}: exit {done.returncode}\n{done.stderr[-3000:]}"
    (wheel,) = set(wheels.glob("*.whl")) - before
    return wheel
