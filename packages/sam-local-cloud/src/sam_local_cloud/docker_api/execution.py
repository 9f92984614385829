"""How a container runs: as a local Lambda execution environment, shaped like SAM CLI's container.

That is the Runtime Interface Emulator (the binary SAM CLI put in its image, or the one it ships) with the
function's runtime as its child, as in a container: the Python its image's runtime names (found as the
local cloud finds it, in that Python's cached build) running awslambdaric on the handler, started afresh
for each container. The emulator listens on the host port SAM CLI bound container port 8080 to.

The container's paths are mapped onto host folders (``PathMap``): /var/task is the folder SAM CLI
bind-mounts, /var/rapid and /opt are the image's own files (the emulator and any local layers), and
container paths in the environment are rewritten to those folders. Where mount namespaces can be had
(root, or unprivileged user namespaces), the emulator and its runtime get one of their own
(``container_mounts.py``) holding the container's mounts: its read-only binds (the code) are read-only,
and the image's /opt lies over this machine's /opt, so the layers are at /opt as in the container.
The runtime writes no compiled bytecode (PYTHONDONTWRITEBYTECODE), so never into the code folder.

What the runtime imports, as on AWS: the code folder first; for code ``sam build`` did not build, the
packages of its requirements.txt, installed into a cached build as the local cloud installs them (``sam
build`` output already holds them, so its folder alone is the path); then layers (/opt/python); then the
runtime's own packages (boto3, awslambdaric).
"""

from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sam_local_cloud import mount_namespace, runtime_shim
from sam_local_cloud.credentials import DUMMY_CREDENTIALS
from sam_local_cloud.docker_api import container_mounts
from sam_local_cloud.docker_api.config import RIE_ENTRYPOINTS, TASK_ROOT, BindMount, ContainerConfig
from sam_local_cloud.lambda_service.emulator import PORTS, find_rie_binary
from sam_local_cloud.lambda_service.environments import LaunchSettings, environment_variables
from sam_local_cloud.lambda_service.functions import LATEST, FunctionSpec
from sam_local_cloud.lambda_service.runtimes import (
    Interpreter,
    RuntimeBuild,
    RuntimeCache,
    RuntimeUnavailableError,
    find_interpreter,
    python_version_of,
    requirements_text,
)
from sam_local_cloud.process_groups import start_session

# Variables whose container values describe the container's own system: the host's values are used.
HOST_VARIABLES = frozenset({"PATH", "LD_LIBRARY_PATH", "LAMBDA_RUNTIME_DIR", "LANG", "TZ", "HOME"})
DEFAULT_REGION = "us-east-1"
LAYERS_ROOT = "/opt"
CONTAINER_MOUNTS_SCRIPT = Path(container_mounts.__file__)
SHIM_SCRIPT = Path(runtime_shim.__file__)
# Variables the local cloud gives its own runtime server; a container's runtime is its emulator's child.
_LOCAL_CLOUD_PREFIX = "SAM_LOCAL_CLOUD_"
# The shim run as its own program, but without its folder (the local cloud's modules) on sys.path.
_RUN_SHIM = (
    "import runpy, sys; sys.path.remove('') if '' in sys.path else None; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/@-])/[\w.@+-]+(?:/[\w.@+-]*)*")
_FUNCTION_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]")
# dex-local-runner start-server's options that take no value.
_EMULATOR_SWITCHES = frozenset({"--skip-time", "--no-skip-time"})
# The folder that holds the sam_local_cloud package (its src/ in a checkout): docker_api, sam_local_cloud, up.
_OWN_SOURCE_ROOT = str(Path(__file__).resolve().parents[2])


class PathMap:
    """Container paths -> host paths: bind mounts first, then the image's files, then a scratch folder."""

    def __init__(self, binds: tuple[BindMount, ...], rootfs: Path | None, scratch: Path) -> None:
        # Longest destination first, so a mount inside another mount wins for its paths.
        self._binds = sorted(
            ((bind.destination.rstrip("/") or "/", bind.source) for bind in binds), reverse=True
        )
        self.rootfs = rootfs
        self.scratch = scratch

    def bound(self, container_path: str) -> Path | None:
        """The host path of a container path under a bind mount or in the image's files, else None."""
        for destination, source in self._binds:
            if container_path == destination or container_path.startswith(destination.rstrip("/") + "/"):
                rest = container_path[len(destination) :].lstrip("/")
                return source / rest if rest else source
        if self.rootfs is not None:
            candidate = self.rootfs / container_path.lstrip("/")
            if container_path.strip("/") and candidate.exists():
                return candidate
        return None

    def to_host(self, container_path: str) -> Path:
        """Where a container path lives on the host; unmapped paths are the container's own scratch files."""
        return self.bound(container_path) or self.scratch / container_path.lstrip("/")

    def translate(self, text: str) -> str:
        """``text`` with every absolute container path under a mount or the image's files made a host path."""

        def replace(match: re.Match[str]) -> str:
            host = self.bound(match[0])
            return str(host) if host is not None else match[0]

        return _ABSOLUTE_PATH.sub(replace, text)


@dataclass(frozen=True)
class Launch:
    """A started environment: its emulator process and the loopback address it serves invocations on."""

    process: subprocess.Popen[bytes]
    host_ip: str
    host_port: int
    runtime_api_port: int
    function_name: str


def is_built(code_dir: Path) -> bool:
    """Whether ``sam build`` (pip install --target) put the packages beside the code already."""
    return any(code_dir.glob("*.dist-info"))


def function_name_of(config: ContainerConfig) -> str:
    name = config.environment.get("AWS_LAMBDA_FUNCTION_NAME") or config.labels.get("sam.cli.function.name")
    return (_FUNCTION_NAME_CHARACTERS.sub("-", name or "function").strip("-") or "function")[:64]


@dataclass(frozen=True)
class ContainerMounts:
    """What a container's own mount namespace holds (``container_mounts.py``)."""

    read_only: tuple[Path, ...]
    # The image's /opt, laid over this machine's /opt; None when the image has none or it cannot be.
    opt: Path | None

    def wrap(self, command: list[str]) -> list[str]:
        """``command`` started inside that namespace."""
        wrapper = [sys.executable, "-I", "-S", str(CONTAINER_MOUNTS_SCRIPT)]
        for folder in self.read_only:
            wrapper += ["--read-only", str(folder)]
        if self.opt is not None:
            wrapper += ["--overlay", LAYERS_ROOT, str(self.opt)]
        return [*wrapper, "--", *command]


@functools.cache
def container_mounts_supported() -> bool:
    """Whether containers here can have their own mounts (root, or unprivileged user namespaces)."""
    return mount_namespace.probe_succeeds(
        [sys.executable, "-I", "-S", str(CONTAINER_MOUNTS_SCRIPT), "--probe"]
    )


def _mountable(folder: Path) -> bool:
    return not (set(str(folder)) & container_mounts.UNMOUNTABLE_CHARACTERS)


class ExecutionEnvironments:
    """Starts containers' environments; the runtime builds are shared by all of them."""

    def __init__(
        self,
        log_dir: Path,
        *,
        aws_endpoint_url: str | None = None,
        runtime_fallback: bool = False,
        runtime_cache: RuntimeCache | None = None,
        isolate: bool | None = None,
        notify: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
    ) -> None:
        self.log_dir = log_dir
        self.aws_endpoint_url = aws_endpoint_url
        self.runtime_fallback = runtime_fallback
        self.cache = runtime_cache or RuntimeCache()
        # None: give containers their own mounts wherever that works here.
        self._isolate = isolate
        self.notify = notify
        self._fallback_noted: set[str] = set()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def isolates(self) -> bool:
        """Whether containers get mount namespaces of their own (asked of this machine once)."""
        if self._isolate is None:
            self._isolate = container_mounts_supported()
        return self._isolate

    # -- what a function runs on --------------------------------------------------------------------

    def build_for(self, runtime: str, code_dir: Path, function_name: str) -> RuntimeBuild:
        """The cached build this function runs on, built first if needed (pip: can take a minute)."""
        version = python_version_of(runtime)
        if version is None:
            raise RuntimeUnavailableError(f"runtime {runtime} is not supported here (Python runtimes only)")
        interpreter = find_interpreter(version) or self._fallback(runtime, function_name)
        requirements = "" if is_built(code_dir) else requirements_text(code_dir)
        return self.cache.environment(interpreter, requirements, needed_by=[function_name])

    def _fallback(self, runtime: str, function_name: str) -> Interpreter:
        if not self.runtime_fallback:
            raise RuntimeUnavailableError(
                f"{runtime} is not installed (not on PATH, not in pyenv); needed by {function_name}. Install "
                f"it (for example `pyenv install {runtime.removeprefix('python')}`) or start `orderbatch "
                "local docker --runtime-fallback` to run it on this tool's own Python"
            )
        substitute = Interpreter(executable=sys.executable, version=platform.python_version())
        if runtime not in self._fallback_noted:
            self._fallback_noted.add(runtime)
            self.notify(
                f"sam-local-cloud: {runtime} not found; its containers run on Python {substitute.version} "
                f"({substitute.executable}) instead (--runtime-fallback)"
            )
        return substitute

    def mounts_for(self, config: ContainerConfig, paths: PathMap) -> ContainerMounts | None:
        """The container's own mounts, or None where containers cannot have them here."""
        if not self.isolates:
            return None
        read_only = tuple(
            bind.source
            for bind in config.binds
            if bind.read_only and bind.source.is_dir() and _mountable(bind.source)
        )
        image_opt = paths.rootfs / LAYERS_ROOT.lstrip("/") if paths.rootfs is not None else None
        opt = (
            image_opt
            if image_opt is not None
            and image_opt.is_dir()
            and Path(LAYERS_ROOT).is_dir()
            and _mountable(image_opt)
            and not any(bind.destination.rstrip("/") == LAYERS_ROOT for bind in config.binds)
            else None
        )
        return ContainerMounts(read_only, opt)

    # -- starting one -------------------------------------------------------------------------------

    def emulator_binary(self, config: ContainerConfig, paths: PathMap) -> Path:
        """The emulator the entrypoint names: the image's own copy (SAM CLI ADDs it), else SAM CLI's."""
        own = paths.bound(config.entrypoint[0])
        if own is not None and own.is_file() and os.access(own, os.X_OK):
            return own
        assert config.entrypoint[0] in RIE_ENTRYPOINTS
        return find_rie_binary()

    def start(self, config: ContainerConfig, runtime: str, paths: PathMap, host_port: int) -> Launch:
        """Start the emulator on the bound host port; it starts its runtime with the first invocation."""
        with self._lock:
            if self._closed:
                raise RuntimeUnavailableError("the Docker API is shutting down")
        code_dir = paths.to_host(TASK_ROOT)
        code_dir.mkdir(parents=True, exist_ok=True)
        name = function_name_of(config)
        build = self.build_for(runtime, code_dir, name)
        mounts = self.mounts_for(config, paths)
        variables = self._environment(config, runtime, paths, code_dir, build, name, mounts)
        runtime_api_port = PORTS.take()
        command = [
            str(self.emulator_binary(config, paths)),
            *config.rie_flags,
            "--runtime-interface-emulator-address",
            f"{config.published_port.host_ip}:{host_port}",
            # Between the emulator and its runtime; in a container it is the fixed 127.0.0.1:9001.
            "--runtime-api-address",
            f"127.0.0.1:{runtime_api_port}",
            build.python,
            "-c",
            _RUN_SHIM,
            str(SHIM_SCRIPT),
            config.handler,
        ]
        if mounts is not None:
            command = mounts.wrap(command)
        working_dir = paths.to_host(config.working_dir)
        try:
            process = start_session(
                command,
                cwd=working_dir if working_dir.is_dir() else code_dir,
                env=variables,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError:
            PORTS.give_back(runtime_api_port)
            raise
        return Launch(process, config.published_port.host_ip, host_port, runtime_api_port, name)

    def start_durable_emulator(self, config: ContainerConfig, paths: PathMap, host_port: int) -> Launch:
        """SAM CLI's durable execution emulator: its command, run by the durable testing SDK installed
        here (``durable_emulator.py``), serving on the bound host port."""
        with self._lock:
            if self._closed:
                raise RuntimeUnavailableError("the Docker API is shutting down")
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
        arguments = emulator_arguments(config, paths, host_port, self.aws_endpoint_url, region)
        command = [
            sys.executable,
            "-m",
            "sam_local_cloud.docker_api.durable_emulator",
            *(f"--extra-host={name}={address}" for name, address in config.extra_hosts.items()),
            "--region",
            region,
            *(["--chained-invoke-endpoint", self.aws_endpoint_url] if self.aws_endpoint_url else []),
            "--",
            *arguments,
        ]
        variables = {
            key: value for key, value in os.environ.items() if not key.startswith(_LOCAL_CLOUD_PREFIX)
        }
        variables.update(
            {key: value for key, value in config.environment.items() if key not in HOST_VARIABLES}
        )
        # Signed calls need some credentials: the operator's, which the local cloud's signature check knows.
        variables.setdefault("AWS_ACCESS_KEY_ID", DUMMY_CREDENTIALS["aws_access_key_id"])
        variables.setdefault("AWS_SECRET_ACCESS_KEY", DUMMY_CREDENTIALS["aws_secret_access_key"])
        variables["PYTHONPATH"] = os.pathsep.join(
            entry for entry in [_OWN_SOURCE_ROOT, variables.get("PYTHONPATH", "")] if entry
        )
        working_dir = paths.to_host(config.working_dir)
        working_dir.mkdir(parents=True, exist_ok=True)
        process = start_session(
            command,
            cwd=working_dir,
            env=variables,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        return Launch(process, config.published_port.host_ip, host_port, 0, "durable-execution-emulator")

    def _environment(
        self,
        config: ContainerConfig,
        runtime: str,
        paths: PathMap,
        code_dir: Path,
        build: RuntimeBuild,
        name: str,
        mounts: ContainerMounts | None,
    ) -> dict[str, str]:
        """What the local cloud gives a function, then the container's own variables, paths made host ones.

        The container's values win (SAM CLI's function name, region, credentials, log group): they are
        what the function would see in SAM CLI's container.
        """
        container_variables = {
            key: resolve_hosts_in_urls(paths.translate(value), config.extra_hosts)
            for key, value in config.environment.items()
            if key not in HOST_VARIABLES
        }
        spec = FunctionSpec(
            name=name,
            handler=config.handler,
            code_dir=code_dir,
            runtime=runtime,
            timeout_seconds=max(1, int(config.environment.get("AWS_LAMBDA_FUNCTION_TIMEOUT") or 3)),
            memory_mb=int(config.environment.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE") or 128),
        )
        settings = LaunchSettings(
            python_executable=sys.executable,
            endpoint_url=self.aws_endpoint_url or "",
            region=container_variables.get("AWS_REGION") or DEFAULT_REGION,
            log_dir=self.log_dir,
        )
        log_stream = f"{datetime.now(UTC):%Y/%m/%d}/[{LATEST}]{uuid.uuid4().hex}"
        variables = {
            key: value
            for key, value in environment_variables(spec, settings, log_stream, build).items()
            if not key.startswith(_LOCAL_CLOUD_PREFIX)
        }
        own_python_path = container_variables.pop("PYTHONPATH", "")
        variables.update(container_variables)
        layer_dirs = _layer_python_dirs(
            paths, runtime, in_place=mounts is not None and mounts.opt is not None
        )
        variables["PYTHONPATH"] = os.pathsep.join(
            entry
            for entry in [own_python_path, str(code_dir), *map(str, build.package_dirs), *layer_dirs]
            if entry
        )
        # The code is read-only, as on Lambda: bytecode already there (and the build's) is read, none is
        # written. A pycache prefix would not do: it hides every existing __pycache__, so the runtime's
        # packages would compile afresh on each cold start (seconds for boto3 and Powertools).
        variables["PYTHONDONTWRITEBYTECODE"] = "1"
        if not variables.get("AWS_ENDPOINT_URL"):
            variables.pop("AWS_ENDPOINT_URL", None)
        if "AWS_SAM_LOCAL" not in container_variables:
            variables.pop("AWS_SAM_LOCAL", None)  # the local cloud's marker; SAM CLI sets its own
        return variables

    def close(self) -> None:
        with self._lock:
            self._closed = True


def resolve_hosts_in_urls(value: str, hosts: dict[str, str]) -> str:
    """URLs naming a container's extra host (``http://host.docker.internal:9014``, which SAM CLI gives a
    durable function as AWS_ENDPOINT_URL_LAMBDA) with its address: the runtime, a process on this
    machine, has no container /etc/hosts to find it in."""
    for name, address in hosts.items():
        value = re.sub(rf"(?<=://){re.escape(name)}(?=[:/]|$)", address, value)
    return value


def emulator_arguments(
    config: ContainerConfig, paths: PathMap, host_port: int, aws_endpoint_url: str | None, region: str
) -> list[str]:
    """SAM CLI's ``dex-local-runner start-server ...`` for this machine: the published host port, the
    data folder's host path, and the local cloud as the Lambda endpoint of chained invokes, if given."""
    given = [*config.entrypoint, *config.command][2:]
    replaced = {
        "--port": str(host_port),
        "--host": config.published_port.host_ip or "0.0.0.0",
    }
    if aws_endpoint_url:
        replaced["--lambda-endpoint"] = aws_endpoint_url
    arguments: list[str] = ["start-server"]
    index = 0
    while index < len(given):
        argument = given[index]
        name, separator, inline = argument.partition("=")
        if not name.startswith("--") or name in _EMULATOR_SWITCHES:
            arguments.append(argument)
            index += 1
            continue
        value = inline if separator else (given[index + 1] if index + 1 < len(given) else "")
        index += 1 if separator else 2
        if name in replaced:
            value = replaced.pop(name)
        elif name == "--store-path":
            value = str(paths.to_host(value)) if value.startswith("/") else value
        arguments += [name, value]
    for name, value in replaced.items():
        arguments += [name, value]
    if "--local-runner-region" not in arguments:
        arguments += ["--local-runner-region", region]
    return arguments


def _layer_python_dirs(paths: PathMap, runtime: str, *, in_place: bool) -> list[str]:
    """Where Lambda's Python runtimes import layers from: /opt/python/lib/pythonX.Y/site-packages and
    /opt/python. ``in_place``: the image's /opt is at /opt for the runtime, else its host folder."""
    candidates = [f"{LAYERS_ROOT}/python/lib/{runtime}/site-packages", f"{LAYERS_ROOT}/python"]
    found = [(candidate, paths.bound(candidate)) for candidate in candidates]
    return [
        candidate if in_place else str(host)
        for candidate, host in found
        if host is not None and host.is_dir()
    ]
