"""What `sam build` packages for a Python function, built once per runtime and requirements and cached.

On AWS a function runs on its ``Runtime``'s Python with two things on its path: its deployment package
(the code plus whatever ``requirements.txt`` lists, which ``sam build`` installs beside it in /var/task)
and what the Lambda runtime itself ships (boto3 and botocore, and the runtime interface client). Nothing
else. A local runtime gets exactly that, so an import that would fail on AWS fails here too:

    <cache>/<key>/venv/   a virtual environment of that Python with the runtime's packages (BASE_PACKAGES)
    <cache>/<key>/task/   ``pip install --target`` of the requirements (absent without requirements.txt)

The key hashes the interpreter (path and full version), the requirements text and the base pins, so an
environment is reused by every function and every local cloud that needs the same one. It is built in a
temporary folder and renamed into place under a file lock: two processes needing it at once build it once.
Each environment is built by the pip its own interpreter bundles (``venv`` runs ``ensurepip``), so every
Python from 3.9 on builds whatever pip the tools themselves run.

Which runtimes a function may name follows Lambda's runtime table (``PYTHON_RUNTIMES``): the supported
ones run on their own Python, a deprecated one too with a note, and one AWS no longer lets anyone create
is refused with CreateFunction's own error unless ``--runtime-fallback`` substitutes a Python for it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from sam_local_cloud.lambda_service.build_cache import cache_root, locked
from sam_local_cloud.lambda_service.functions import FunctionSpec

# What the Lambda Python runtimes ship: boto3/botocore as the managed python3.12 and python3.13 runtimes
# carried them in 2025 (AWS lists the current ones under "Runtime-included SDK versions" in the Lambda
# developer guide, and updates them without notice), and the runtime interface client the emulator runs,
# at the last release with wheels for every Python from 3.9 to 3.13.
BASE_PACKAGES = ("boto3==1.38.36", "botocore==1.38.36", "awslambdaric==3.1.1")
REQUIREMENTS_FILE = "requirements.txt"
# Bumped when the layout of a built environment changes, so old ones are not reused.
# 2: the environment has its interpreter's own pip (Lambda's Python images carry pip too).
_BUILD_FORMAT = 2


class RuntimeStatus(Enum):
    """Where a runtime stands in Lambda's runtime table (docs: "Lambda runtimes", December 2026)."""

    SUPPORTED = "supported"
    # Past its deprecation date: no more patches, but CreateFunction and UpdateFunctionConfiguration
    # still accept it until the table's "block function create" date.
    DEPRECATED = "deprecated"
    # CreateFunction refuses it (InvalidParameterValueException).
    BLOCKED = "blocked"


PYTHON_RUNTIMES: Mapping[str, RuntimeStatus] = {
    "python3.14": RuntimeStatus.SUPPORTED,
    "python3.13": RuntimeStatus.SUPPORTED,
    "python3.12": RuntimeStatus.SUPPORTED,
    "python3.11": RuntimeStatus.SUPPORTED,
    "python3.10": RuntimeStatus.SUPPORTED,
    "python3.9": RuntimeStatus.DEPRECATED,  # deprecated 2025-12-15
    "python3.8": RuntimeStatus.BLOCKED,
    "python3.7": RuntimeStatus.BLOCKED,
    "python3.6": RuntimeStatus.BLOCKED,
    "python2.7": RuntimeStatus.BLOCKED,
}
_PYTHON_RUNTIME = re.compile(r"python(3\.\d+)")
_BUILD_LOG_TAIL_CHARACTERS = 3000
_PROBE_SCRIPT = "import sys; print(sys.executable); print('.'.join(map(str, sys.version_info[:3])))"


class RuntimeUnavailableError(RuntimeError):
    """A function's runtime cannot run here: its interpreter is missing or the runtime is not Python."""


class RuntimeNotCreatableError(RuntimeUnavailableError):
    """AWS no longer creates functions on this runtime: CreateFunction answers 400 with this message."""

    code = "InvalidParameterValueException"


def runtime_status(runtime: str) -> RuntimeStatus | None:
    """The runtime's place in Lambda's table; None for a name Lambda does not know."""
    return PYTHON_RUNTIMES.get(runtime)


def create_function_refusal(runtime: str) -> str:
    """CreateFunction's message for a runtime past its "block function create" date, as AWS words it."""
    return (
        f"The runtime parameter of {runtime} is no longer supported for creating or updating AWS Lambda "
        "functions. We recommend you use a supported runtime while creating or updating functions."
    )


class RuntimeBuildError(RuntimeError):
    """pip could not install a runtime environment's packages."""


@dataclass(frozen=True)
class Interpreter:
    executable: str
    version: str  # full, e.g. "3.12.1"

    @property
    def minor_version(self) -> str:
        return ".".join(self.version.split(".")[:2])


@dataclass(frozen=True)
class RuntimeBuild:
    """One built environment: the Python a function runs on and the folders its imports come from."""

    key: str
    root: Path
    interpreter: Interpreter
    # Folders that go on PYTHONPATH after the code, in order: the requirements' packages. The runtime's
    # own packages (boto3, awslambdaric) come with the environment's interpreter, after them.
    package_dirs: tuple[Path, ...]

    @property
    def python(self) -> str:
        return str(self.root / "venv" / "bin" / "python")


def default_cache_dir() -> Path:
    return cache_root() / "runtimes"


def python_version_of(runtime: str) -> str | None:
    """``python3.12`` -> ``3.12``; None for a runtime that is not Python."""
    match = _PYTHON_RUNTIME.fullmatch(runtime)
    return match[1] if match else None


def find_interpreter(minor_version: str) -> Interpreter | None:
    """``pythonX.Y`` on PATH, else the newest pyenv installation of X.Y; None when neither runs."""
    return _find_interpreter(
        minor_version, os.environ.get("PATH", ""), os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    )


@functools.cache
def _find_interpreter(minor_version: str, search_path: str, pyenv_root: str) -> Interpreter | None:
    on_path = shutil.which(f"python{minor_version}", path=search_path)
    # A pyenv shim runs only when that version is selected, and costs a shell and pyenv to find out
    # (about 0.1 s); the installation it would run is tried directly first.
    shims = Path(pyenv_root) / "shims"
    is_shim = on_path is not None and Path(on_path).parent == shims
    installed = Path(pyenv_root) / "versions"
    releases = sorted(
        (
            entry
            for entry in installed.glob(f"{minor_version}.*")
            if re.fullmatch(r"\d+\.\d+\.\d+", entry.name)
        ),
        key=lambda entry: [int(part) for part in entry.name.split(".")],
        reverse=True,
    )
    candidates = [on_path] if on_path and not is_shim else []
    candidates += [str(release / "bin" / f"python{minor_version}") for release in releases]
    candidates += [on_path] if on_path and is_shim else []
    for candidate in candidates:
        interpreter = _probe(candidate)
        if interpreter is not None and interpreter.minor_version == minor_version:
            return interpreter
    return None


def _probe(executable: str) -> Interpreter | None:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    try:
        answer = subprocess.run(
            [executable, "-I", "-c", _PROBE_SCRIPT],
            capture_output=True,
            text=True,
            env=environment,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = answer.stdout.split()
    if answer.returncode != 0 or len(lines) != 2:
        return None
    return Interpreter(executable=lines[0], version=lines[1])


def requirements_text(code_dir: Path) -> str:
    path = code_dir / REQUIREMENTS_FILE
    return path.read_text() if path.is_file() else ""


class RuntimeCache:
    """Built environments under one folder, keyed by interpreter, requirements and base pins."""

    def __init__(self, root: Path | None = None, *, base_packages: tuple[str, ...] = BASE_PACKAGES) -> None:
        self.root = root or default_cache_dir()
        self.base_packages = base_packages

    def key(self, interpreter: Interpreter, requirements: str) -> str:
        identity = json.dumps(
            {
                "format": _BUILD_FORMAT,
                "interpreter": interpreter.executable,
                "python": interpreter.version,
                "requirements": requirements,
                "base": list(self.base_packages),
            },
            sort_keys=True,
        )
        return f"py{interpreter.minor_version}-{hashlib.sha256(identity.encode()).hexdigest()[:16]}"

    def environment(
        self, interpreter: Interpreter, requirements: str, *, needed_by: Iterable[str] = ()
    ) -> RuntimeBuild:
        """The environment for this interpreter and requirements, built first if it is not cached yet."""
        key = self.key(interpreter, requirements)
        build = self._built(key, interpreter, requirements)
        if build is not None:
            return build
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.root / f"{key}.lock"):
            build = self._built(key, interpreter, requirements)  # another process may have built it meanwhile
            if build is not None:
                return build
            self._build(key, interpreter, requirements, sorted(needed_by))
        build = self._built(key, interpreter, requirements)
        assert build is not None, f"runtime environment {key} missing right after its build"
        return build

    def _built(self, key: str, interpreter: Interpreter, requirements: str) -> RuntimeBuild | None:
        root = self.root / key
        if not (root / "build.json").is_file():
            return None
        package_dirs = (root / "task",) if requirements.strip() else ()
        return RuntimeBuild(key, root, interpreter, package_dirs)

    def _build(self, key: str, interpreter: Interpreter, requirements: str, needed_by: list[str]) -> None:
        described = "its requirements.txt" if requirements.strip() else "no requirements.txt"
        print(
            f"sam-local-cloud: building the Python {interpreter.version} runtime environment for "
            f"{', '.join(needed_by) or key} ({described}) in {self.root / key}; once, then cached",
            file=sys.stderr,
            flush=True,
        )
        started = time.monotonic()
        staging = Path(tempfile.mkdtemp(prefix=f".build-{key}-", dir=self.root))
        try:
            venv = staging / "venv"
            # With its own pip (ensurepip, offline): the tools' pip may no longer run on an older Python.
            _run([interpreter.executable, "-m", "venv", str(venv)], what="venv")
            _pip(venv, ["install", *self.base_packages], what="the runtime's packages")
            if requirements.strip():
                requirements_file = staging / REQUIREMENTS_FILE
                requirements_file.write_text(requirements)
                task = staging / "task"
                _pip(
                    venv,
                    ["install", "--target", str(task), "-r", str(requirements_file)],
                    what="requirements",
                )
            metadata = {
                "python": interpreter.version,
                "interpreter": interpreter.executable,
                "base": list(self.base_packages),
                "requirements": requirements,
                "needed_by": needed_by,
            }
            (staging / "build.json").write_text(json.dumps(metadata, indent=2) + "\n")
            os.rename(staging, self.root / key)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        print(
            f"sam-local-cloud: built runtime environment {key} in {time.monotonic() - started:.1f} s",
            file=sys.stderr,
            flush=True,
        )


def _pip(venv: Path, arguments: list[str], *, what: str) -> None:
    command = [str(venv / "bin" / "python"), "-m", "pip", *arguments]
    _run([*command, "--quiet", "--no-input", "--disable-pip-version-check"], what=what)


def _run(command: list[str], *, what: str) -> None:
    environment = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "PYTHONHOME"}}
    result = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    if result.returncode != 0:
        output = (result.stdout + result.stderr)[-_BUILD_LOG_TAIL_CHARACTERS:]
        raise RuntimeBuildError(f"installing {what} failed ({' '.join(command)}):\n{output}")


class RuntimeResolver:
    """Which built environment each function runs on; everything a local cloud needs, checked at start-up.

    Each function's ``Runtime`` is checked against Lambda's table first. One AWS no longer creates
    functions on (python3.8 and older) fails the start-up with CreateFunction's error; a supported or
    deprecated one whose ``pythonX.Y`` is not installed fails it naming what to install. Unless
    ``fallback`` is set: then those functions run on ``fallback_python`` (the local cloud's own), still
    with only their requirements and the runtime's packages, and a line says so.
    """

    def __init__(
        self,
        cache: RuntimeCache | None = None,
        *,
        fallback: bool = False,
        fallback_python: str = sys.executable,
    ) -> None:
        self.cache = cache or RuntimeCache()
        self.fallback = fallback
        self.fallback_python = fallback_python
        self._builds: dict[tuple[str, str], RuntimeBuild] = {}
        self._noted: set[str] = set()

    def resolve(self, specs: Iterable[FunctionSpec]) -> dict[str, RuntimeBuild]:
        """Function name -> its environment, building what is missing."""
        specs = list(specs)
        interpreters = self._interpreters(specs)
        needs: dict[tuple[Interpreter, str], list[str]] = {}
        for spec in specs:
            requirements = requirements_text(spec.code_dir)
            needs.setdefault((interpreters[spec.name], requirements), []).append(spec.name)
        builds: dict[str, RuntimeBuild] = {}
        for (interpreter, requirements), names in needs.items():
            build = self._environment(interpreter, requirements, names)
            builds.update(dict.fromkeys(names, build))
        return builds

    def interpreter_for(self, runtime: str, names: Iterable[str]) -> Interpreter:
        """The Python functions ``names`` on ``runtime`` run on, or the error that stops them.

        Raises ``RuntimeNotCreatableError`` (a runtime AWS no longer creates functions on) or
        ``RuntimeUnavailableError`` (not Python, not a Lambda runtime, or not installed) unless the
        fallback applies; prints one line per runtime the first time it substitutes or is deprecated.
        """
        names = sorted(names)
        status = runtime_status(runtime)
        version = python_version_of(runtime)
        if status is None:
            raise RuntimeUnavailableError(_unknown_message(runtime, names, python=version is not None))
        if status is RuntimeStatus.BLOCKED:
            if not self.fallback:
                raise RuntimeNotCreatableError(_not_creatable_message(runtime, names))
            return self._substitute(runtime, names, "is no longer accepted by AWS's CreateFunction")
        interpreter = find_interpreter(version) if version is not None else None
        if interpreter is None:
            if not self.fallback:
                raise RuntimeUnavailableError(_missing_message({runtime: names}))
            return self._substitute(runtime, names, "not found")
        if status is RuntimeStatus.DEPRECATED:
            self._note(
                runtime,
                f"sam-local-cloud: {runtime} is deprecated on AWS since {DEPRECATED_SINCE.get(runtime, '?')} "
                "(no more patches; CreateFunction will refuse it later); "
                f"{', '.join(names)} run on it as on AWS",
            )
        return interpreter

    def _environment(self, interpreter: Interpreter, requirements: str, names: list[str]) -> RuntimeBuild:
        memo_key = (self.cache.key(interpreter, requirements), interpreter.executable)
        build = self._builds.get(memo_key)
        if build is None:
            build = self._builds[memo_key] = self.cache.environment(
                interpreter, requirements, needed_by=names
            )
        return build

    def _interpreters(self, specs: list[FunctionSpec]) -> dict[str, Interpreter]:
        by_runtime: dict[str, list[str]] = {}
        for spec in specs:
            by_runtime.setdefault(spec.runtime, []).append(spec.name)
        found: dict[str, Interpreter] = {}
        refusals: list[RuntimeUnavailableError] = []
        for runtime, names in by_runtime.items():
            try:
                found.update(dict.fromkeys(names, self.interpreter_for(runtime, names)))
            except RuntimeUnavailableError as error:
                refusals.append(error)
        if refusals:
            # CreateFunction's refusal first: installing an interpreter would not help those functions.
            refusals.sort(key=lambda error: not isinstance(error, RuntimeNotCreatableError))
            raise type(refusals[0])(" ".join(str(error) for error in refusals))
        return found

    def _substitute(self, runtime: str, names: list[str], reason: str) -> Interpreter:
        substitute = _probe(self.fallback_python)
        if substitute is None:
            raise RuntimeUnavailableError(f"{self.fallback_python} does not run; {runtime} {reason}")
        self._note(
            runtime,
            f"sam-local-cloud: {runtime} {reason}; {', '.join(names)} run on Python {substitute.version} "
            f"({substitute.executable}) instead (--runtime-fallback)",
        )
        return substitute

    def _note(self, runtime: str, line: str) -> None:
        if runtime not in self._noted:
            self._noted.add(runtime)
            print(line, file=sys.stderr, flush=True)


DEPRECATED_SINCE = {"python3.9": "2025-12-15"}


def _not_creatable_message(runtime: str, names: list[str]) -> str:
    supported = [name for name, status in PYTHON_RUNTIMES.items() if status is RuntimeStatus.SUPPORTED]
    return (
        f"InvalidParameterValueException: {create_function_refusal(runtime)} (CreateFunction of "
        f"{', '.join(names)}). Move them to a supported runtime ({', '.join(supported)}), or pass "
        "--runtime-fallback to run them on the local cloud's own Python anyway."
    )


def _unknown_message(runtime: str, names: list[str], *, python: bool) -> str:
    if not python:
        return f"runtime {runtime} of {', '.join(names)} is not supported locally (Python runtimes only)"
    known = ", ".join(PYTHON_RUNTIMES)
    return (
        f"runtime {runtime} of {', '.join(names)} is not a Lambda runtime (Lambda's Python runtimes: {known})"
    )


# How a deploy says this machine lacks a runtime's interpreter (what a tool driving `up` sets apart).
RUNTIME_NOT_INSTALLED = "is not installed (not on PATH, not in pyenv)"


def _missing_message(missing: Mapping[str, list[str]]) -> str:
    lines = [
        f"{runtime} {RUNTIME_NOT_INSTALLED}; needed by {', '.join(names)}"
        for runtime, names in missing.items()
    ]
    return (
        "; ".join(lines)
        + ". Install it (for example `pyenv install "
        + next(iter(missing)).removeprefix("python")
        + "`) or pass --runtime-fallback to run these functions on the local cloud's own Python."
    )
