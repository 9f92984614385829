"""Wheels of the repository's distributions, built from a copy of their sources, and a fresh venv with
them installed.

setuptools writes ``build/`` and ``*.egg-info`` beside the sources it builds; built in place, they would be
left in the checkout, where the tests that read every module of ``packages/`` would find a second copy.
The venv gets the dependencies at the dev lock's versions from the installer's cache that `make setup`
filled, with the lock's override of SAM CLI's exact boto3 pin (requirements/overrides.txt says why).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
UV = REPOSITORY / ".cache" / "uv" / "bin" / "uv"
DEV_LOCK = REPOSITORY / "requirements" / "dev.lock"
OVERRIDES = REPOSITORY / "requirements" / "overrides.txt"
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


def run(*command: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, (
        f"{command}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def venv_with(venv: Path, *wheels: Path) -> Path:
    """A fresh venv at ``venv`` with ``wheels`` and their dependencies installed; its Python."""
    assert UV.exists(), f"{UV} is missing: `make setup` installs it"
    run(UV, "venv", "--quiet", "--no-python-downloads", "--python", sys.executable, venv)
    python = venv / "bin" / "python"
    run(UV, "pip", "install", "--quiet", "--python", python, "-c", DEV_LOCK, "--override", OVERRIDES, *wheels)
    return python
