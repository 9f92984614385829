"""The locks `make setup`, `sam build` and the local cloud install from: every package exactly, with hashes.

Offline: reads pyproject.toml, the `.in` files and the locks `make lock` compiles from them, and the
environment the tests run in. A lock that no longer satisfies what it was compiled from means someone
changed a dependency without running `make lock`.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = PROJECT_ROOT / "pyproject.toml"
LOCAL_CLOUD_PYPROJECT = PROJECT_ROOT / "packages" / "sam-local-cloud" / "pyproject.toml"
DEV_LOCK = PROJECT_ROOT / "requirements" / "dev.lock"
VENV_IN = PROJECT_ROOT / "requirements" / "venv.in"
UV_IN = PROJECT_ROOT / "requirements" / "uv.in"
UV_LOCK = PROJECT_ROOT / "requirements" / "uv.txt"
FUNCTIONS_IN = PROJECT_ROOT / "functions" / "requirements.in"
FUNCTIONS_LOCK = PROJECT_ROOT / "functions" / "requirements.txt"
ALL_LOCKS = (DEV_LOCK, UV_LOCK, FUNCTIONS_LOCK)

_HASH_OPTION = re.compile(r"--hash=(\S+)")
_EXACT_PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;]+)\s*(?:;(?P<marker>.+))?$"
)


@dataclass(frozen=True)
class Pin:
    name: str  # canonical
    version: str
    marker: Marker | None
    hashes: tuple[str, ...]


def read_lock(path: Path) -> dict[str, Pin]:
    """The lock's pins by canonical name; a line that is not `name==version [; marker]` fails the test."""
    logical_lines = path.read_text().replace("\\\n", " ").splitlines()
    pins: dict[str, Pin] = {}
    for line in logical_lines:
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        hashes = tuple(_HASH_OPTION.findall(text))
        requirement = _HASH_OPTION.sub("", text).strip()
        match = _EXACT_PIN.match(requirement)
        assert match, f"{path.name}: not an exact pin: {requirement!r}"
        name = canonicalize_name(match["name"])
        marker = Marker(match["marker"]) if match["marker"] else None
        pins[name] = Pin(name, match["version"], marker, hashes)
    return pins


def read_requirements_in(path: Path) -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [Requirement(line) for line in lines if line]


def pyproject_requirements() -> list[Requirement]:
    """What the dev lock is compiled from: the dependencies, the dev extra and the build backend, and the
    dependencies of the local cloud's package, which the lock holds but not the package itself (it is
    installed from its folder, as the project is)."""
    pyproject = tomllib.loads(PYPROJECT.read_text())
    local_cloud = tomllib.loads(LOCAL_CLOUD_PYPROJECT.read_text())
    named = [
        *pyproject["project"]["dependencies"],
        *pyproject["project"]["optional-dependencies"]["dev"],
        *pyproject["build-system"]["requires"],
        *local_cloud["project"]["dependencies"],
    ]
    members = {canonicalize_name(local_cloud["project"]["name"])}
    return [Requirement(text) for text in named if canonicalize_name(Requirement(text).name) not in members]


def unsatisfied(requirements: list[Requirement], pins: dict[str, Pin]) -> list[str]:
    problems = []
    for requirement in requirements:
        pin = pins.get(canonicalize_name(requirement.name))
        if pin is None:
            problems.append(f"{requirement} is not in the lock")
        elif not requirement.specifier.contains(pin.version, prereleases=True):
            problems.append(f"{requirement} but the lock has {pin.version}")
    return problems


@pytest.mark.parametrize("lock", ALL_LOCKS, ids=lambda path: path.relative_to(PROJECT_ROOT).as_posix())
def test_every_pin_is_exact_and_hashed(lock: Path) -> None:
    pins = read_lock(lock)

    assert pins, f"{lock.name} pins nothing"
    unhashed = sorted(pin.name for pin in pins.values() if not pin.hashes)
    assert not unhashed, f"{lock.name}: pins without a hash: {unhashed}"
    assert all(digest.startswith("sha256:") for pin in pins.values() for digest in pin.hashes)


def test_the_dev_lock_satisfies_pyproject_and_the_build_backend() -> None:
    assert unsatisfied(pyproject_requirements(), read_lock(DEV_LOCK)) == []
    assert unsatisfied(read_requirements_in(VENV_IN), read_lock(DEV_LOCK)) == []


def test_the_installer_lock_satisfies_its_input() -> None:
    assert unsatisfied(read_requirements_in(UV_IN), read_lock(UV_LOCK)) == []


def test_moto_is_pinned_exactly_in_the_local_clouds_pyproject_and_locked_at_that_version() -> None:
    moto = next(req for req in pyproject_requirements() if canonicalize_name(req.name) == "moto")
    (clause,) = moto.specifier

    assert clause.operator == "=="
    assert read_lock(DEV_LOCK)["moto"].version == clause.version


def test_the_functions_lock_satisfies_its_input_on_the_tools_versions() -> None:
    functions = read_lock(FUNCTIONS_LOCK)
    tools = read_lock(DEV_LOCK)

    assert unsatisfied(read_requirements_in(FUNCTIONS_IN), functions) == []
    # Compiled with the dev lock as constraints: the handlers' tests run on what Lambda gets.
    differing = {
        name: (pin.version, tools[name].version)
        for name, pin in functions.items()
        if name in tools and tools[name].version != pin.version
    }
    assert differing == {}


def test_the_test_environment_is_the_dev_lock() -> None:
    """`make setup` syncs .venv from the lock: a mismatch means it is stale or was installed otherwise."""
    wrong = {}
    for pin in read_lock(DEV_LOCK).values():
        if pin.marker is not None and not pin.marker.evaluate():
            continue
        try:
            installed = metadata.version(pin.name)
        except metadata.PackageNotFoundError:
            installed = "missing"
        if installed != pin.version:
            wrong[pin.name] = f"lock {pin.version}, installed {installed}"

    assert wrong == {}, "run `make setup` (or re-create .venv): " + repr(wrong)
