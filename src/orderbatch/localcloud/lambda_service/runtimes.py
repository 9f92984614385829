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
"""

from __future__ import annotations

import fcntl
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
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from orderbatch.localcloud.lambda_service.functions import FunctionSpec

# What the Lambda Python runtimes ship: boto3/botocore as the managed python3.12 and python3.13 runtimes
# carried them in 2025 (AWS lists the current ones under "Runtime-included SDK versions" in the Lambda
# developer guide, and updates them without notice), and the runtime interface client the emulator runs,
# at the last release with wheels for every Python from 3.9 to 3.13.
BASE_PACKAGES = ("boto3==1.38.36", "botocore==1.38.36", "awslambdaric==3.1.1")
REQUIREMENTS_FILE = "requirements.txt"
# Bumped when the layout of a built environment changes, so old ones are not reused.
_BUILD_FORMAT = 1
_PYTHON_RUNTIME = re.compile(r"python(3\.\d+)")
_BUILD_LOG_TAIL_CHARACTERS = 3000
_PROBE_SCRIPT = "import sys; print(sys.executable); print('.'.join(map(str, sys.version_info[:3])))"


class RuntimeUnavailableError(RuntimeError):
    """A function's runtime cannot run here: its interpreter is missing or the runtime is not Python."""


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
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "orderbatch" / "runtimes"


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
        with _locked(self.root / f"{key}.lock"):
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
            f"orderbatch: building the Python {interpreter.version} runtime environment for "
            f"{', '.join(needed_by) or key} ({described}) in {self.root / key}; once, then cached",
            file=sys.stderr,
            flush=True,
        )
        started = time.monotonic()
        staging = Path(tempfile.mkdtemp(prefix=f".build-{key}-", dir=self.root))
        try:
            venv = staging / "venv"
            _run([interpreter.executable, "-m", "venv", "--without-pip", str(venv)], what="venv")
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
            f"orderbatch: built runtime environment {key} in {time.monotonic() - started:.1f} s",
            file=sys.stderr,
            flush=True,
        )


def _pip(venv: Path, arguments: list[str], *, what: str) -> None:
    # The tools' own pip, run under the environment's interpreter (pip --python): no pip inside it.
    command = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *arguments]
    _run([*command, "--quiet", "--no-input", "--disable-pip-version-check"], what=what)


def _run(command: list[str], *, what: str) -> None:
    environment = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "PYTHONHOME"}}
    result = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    if result.returncode != 0:
        output = (result.stdout + result.stderr)[-_BUILD_LOG_TAIL_CHARACTERS:]
        raise RuntimeBuildError(f"installing {what} failed ({' '.join(command)}):\n{output}")


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class RuntimeResolver:
    """Which built environment each function runs on; everything a local cloud needs, checked at start-up.

    A function whose ``pythonX.Y`` is not installed fails the start-up, naming the interpreter and the
    functions that need it, unless ``fallback`` is set: then it runs on ``fallback_python`` (the local
    cloud's own), still with only its requirements and the runtime's packages, and a line says so.
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

    def _environment(self, interpreter: Interpreter, requirements: str, names: list[str]) -> RuntimeBuild:
        memo_key = (self.cache.key(interpreter, requirements), interpreter.executable)
        build = self._builds.get(memo_key)
        if build is None:
            build = self._builds[memo_key] = self.cache.environment(
                interpreter, requirements, needed_by=names
            )
        return build

    def _interpreters(self, specs: list[FunctionSpec]) -> dict[str, Interpreter]:
        found: dict[str, Interpreter] = {}
        missing: dict[str, list[str]] = {}
        for spec in specs:
            version = python_version_of(spec.runtime)
            if version is None:
                raise RuntimeUnavailableError(
                    f"runtime {spec.runtime} of {spec.name} is not supported locally (Python runtimes only)"
                )
            interpreter = find_interpreter(version)
            if interpreter is None:
                missing.setdefault(spec.runtime, []).append(spec.name)
            else:
                found[spec.name] = interpreter
        if missing and not self.fallback:
            raise RuntimeUnavailableError(_missing_message(missing))
        if missing:
            substitute = _probe(self.fallback_python)
            if substitute is None:
                raise RuntimeUnavailableError(
                    f"{self.fallback_python} does not run; {_missing_message(missing)}"
                )
            for runtime, names in missing.items():
                print(
                    f"orderbatch: {runtime} not found; {', '.join(names)} run on Python {substitute.version} "
                    f"({substitute.executable}) instead (--runtime-fallback)",
                    file=sys.stderr,
                    flush=True,
                )
                found.update(dict.fromkeys(names, substitute))
        return found


def _missing_message(missing: Mapping[str, list[str]]) -> str:
    lines = [
        f"{runtime} is not installed (not on PATH, not in pyenv); needed by {', '.join(names)}"
        for runtime, names in missing.items()
    ]
    return (
        "; ".join(lines)
        + ". Install it (for example `pyenv install "
        + next(iter(missing)).removeprefix("python")
        + "`) or pass --runtime-fallback to run these functions on the local cloud's own Python."
    )
