"""Containers: created from a Lambda image, started as a local execution environment, stopped, removed.

A container's output (the emulator's START/END/REPORT lines and everything the function prints) is kept
in order per stream, for attach and logs. Memory limits are not enforced (Lambda's are not either,
locally): a container is never OOMKilled.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import signal
import socket
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from sam_local_cloud.docker_api.config import ContainerConfig, parse_create
from sam_local_cloud.docker_api.errors import ApiError, bad_request, conflict, not_found, server_error
from sam_local_cloud.docker_api.execution import (
    ExecutionEnvironments,
    Launch,
    PathMap,
    function_name_of,
)
from sam_local_cloud.docker_api.images import DURABLE_EMULATOR_RUNTIME, Image, ImageStore, Publish
from sam_local_cloud.docker_api.networks import EndpointSettings
from sam_local_cloud.docker_api.streams import STDERR, STDOUT, OutputLog
from sam_local_cloud.lambda_service.emulator import PORTS, listens_on
from sam_local_cloud.lambda_service.forkserver import ForkServerError
from sam_local_cloud.lambda_service.runtimes import RuntimeBuildError, RuntimeUnavailableError

NEVER = "0001-01-01T00:00:00Z"
_LISTEN_TIMEOUT_SECONDS = 10.0
_POLL_SECONDS = 0.01
_OUTPUT_TAIL_BYTES = 2000


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class Container:
    id: str
    name: str
    image: Image
    config: ContainerConfig
    paths: PathMap
    log_path: Path
    created: str = field(default_factory=_now)
    status: str = "created"
    exit_code: int = 0
    error: str = ""
    started_at: str = NEVER
    finished_at: str = NEVER
    host_port: int = 0
    launch: Launch | None = None
    output: OutputLog = field(default_factory=OutputLog)
    networks: dict[str, EndpointSettings] = field(default_factory=dict)
    exited: threading.Event = field(default_factory=threading.Event)
    removed: threading.Event = field(default_factory=threading.Event)

    @property
    def running(self) -> bool:
        return self.status == "running"

    @property
    def is_durable_emulator(self) -> bool:
        return self.image.runtime == DURABLE_EMULATOR_RUNTIME

    @property
    def pid(self) -> int:
        return self.launch.process.pid if self.launch is not None and self.running else 0

    def port_bindings(self) -> dict[str, list[dict[str, str]]]:
        binding = self.config.published_port
        port = self.host_port or binding.host_port
        return {binding.container_port: [{"HostIp": binding.host_ip, "HostPort": str(port)}]}

    def inspect(self) -> dict[str, object]:
        request = self.config.request
        return {
            "Id": self.id,
            "Created": self.created,
            "Path": ([*self.config.entrypoint, *self.config.command] or [""])[0],
            "Args": [*self.config.entrypoint, *self.config.command][1:],
            "State": {
                "Status": self.status,
                "Running": self.running,
                "Paused": False,
                "Restarting": False,
                "OOMKilled": False,
                "Dead": self.status == "dead",
                "Pid": self.pid,
                "ExitCode": self.exit_code,
                "Error": self.error,
                "StartedAt": self.started_at,
                "FinishedAt": self.finished_at,
            },
            "Image": self.image.id,
            "Name": f"/{self.name}",
            "RestartCount": 0,
            "Driver": "sam-local-cloud",
            "Platform": "linux",
            "Mounts": [bind.describe() for bind in self.config.binds],
            "Config": {
                "Hostname": self.id[:12],
                "Image": self.config.image_reference,
                "Env": [f"{key}={value}" for key, value in self.config.environment.items()],
                "Cmd": self.config.command or None,
                "Entrypoint": self.config.entrypoint,
                "WorkingDir": self.config.working_dir,
                "Labels": self.config.labels,
                "Tty": self.config.tty,
                "ExposedPorts": {self.config.published_port.container_port: {}},
                "AttachStdout": bool(request.get("AttachStdout", True)),
                "AttachStderr": bool(request.get("AttachStderr", True)),
            },
            "HostConfig": request.get("HostConfig") or {},
            "NetworkSettings": {
                "Ports": self.port_bindings() if self.running else {},
                "Networks": self.networks,
            },
        }

    def summary(self) -> dict[str, object]:
        binding = self.config.published_port
        return {
            "Id": self.id,
            "Names": [f"/{self.name}"],
            "Image": self.config.image_reference,
            "ImageID": self.image.id,
            "Command": " ".join([*self.config.entrypoint, *self.config.command]),
            "Created": int(datetime.fromisoformat(self.created.replace("Z", "+00:00")).timestamp()),
            "State": self.status,
            "Status": self.status,
            "Ports": [
                {
                    "IP": binding.host_ip,
                    "PrivatePort": int(binding.container_port.split("/")[0]),
                    "PublicPort": self.host_port,
                    "Type": "tcp",
                }
            ]
            if self.running
            else [],
            "Labels": self.config.labels,
            "Mounts": [bind.describe() for bind in self.config.binds],
            "NetworkSettings": {"Networks": self.networks},
        }


class ContainerStore:
    def __init__(
        self,
        images: ImageStore,
        environments: ExecutionEnvironments,
        state_dir: Path,
        *,
        publish: Publish = lambda kind, action, actor, attributes: None,
    ) -> None:
        self.images = images
        self.environments = environments
        self.state_dir = state_dir
        self.publish = publish
        self._containers: dict[str, Container] = {}
        self._lock = threading.RLock()

    # -- lookups ------------------------------------------------------------------------------------

    def get(self, reference: str) -> Container:
        with self._lock:
            if reference in self._containers:
                return self._containers[reference]
            name = reference.lstrip("/")
            for container in self._containers.values():
                if container.name == name:
                    return container
            matches = [
                container
                for container in self._containers.values()
                if len(reference) >= 3 and container.id.startswith(reference)
            ]
        if len(matches) == 1:
            return matches[0]
        raise not_found(f"No such container: {reference}")

    def summaries(self, *, include_stopped: bool, filters: dict[str, list[str]]) -> list[dict[str, object]]:
        unknown = set(filters) - {"id", "name", "label", "status", "ancestor"}
        if unknown:
            raise bad_request(f"invalid filter '{sorted(unknown)[0]}'")
        with self._lock:
            containers = list(self._containers.values())
        return [
            container.summary()
            for container in containers
            if (include_stopped or container.running) and self._matches(container, filters)
        ]

    def _matches(self, container: Container, filters: dict[str, list[str]]) -> bool:
        checks: dict[str, Callable[[str], bool]] = {
            "id": container.id.startswith,
            "name": lambda name: name.lstrip("/") in container.name,
            "status": lambda status: status == container.status,
            "label": lambda label: _has_label(container.config.labels, label),
            "ancestor": lambda reference: self._is_ancestor(reference, container.image),
        }
        return all(any(checks[key](value) for value in values) for key, values in filters.items())

    def _is_ancestor(self, reference: str, image: Image) -> bool:
        try:
            wanted = self.images.get(reference)
        except ApiError:
            return False
        return wanted.id in {image.id, image.parent_id}

    def uses_image(self, image: Image) -> bool:
        with self._lock:
            return any(container.image.id == image.id for container in self._containers.values())

    # -- lifecycle ----------------------------------------------------------------------------------

    def create(self, body: dict[str, Any], name: str | None) -> Container:
        image = self.images.get(body.get("Image") or "")
        durable_emulator = image.runtime == DURABLE_EMULATOR_RUNTIME
        config = parse_create(body, image.config, durable_emulator=durable_emulator)
        container_id = secrets.token_hex(32)
        scratch = self.state_dir / "containers" / container_id[:12]
        # The container's own files: what is neither mounted nor the image's, starting with an empty /tmp.
        (scratch / "rootfs" / "tmp").mkdir(parents=True, exist_ok=True)
        paths = PathMap(config.binds, image.rootfs, scratch / "rootfs")
        container = Container(
            id=container_id,
            name=name or f"lambda-{container_id[:12]}",
            image=image,
            config=config,
            paths=paths,
            log_path=scratch / "output.log",
        )
        try:
            # Found or built now, so a missing Python fails the create, as SAM CLI reports it.
            if not durable_emulator:
                code_dir = paths.to_host("/var/task")
                self.environments.build_for(image.runtime, code_dir, function_name_of(config))
        except (RuntimeUnavailableError, RuntimeBuildError) as error:
            raise server_error(str(error)) from None
        with self._lock:
            if any(existing.name == container.name for existing in self._containers.values()):
                raise conflict(f'Conflict. The container name "/{container.name}" is already in use')
            self._containers[container.id] = container
        self._publish(container, "create")
        return container

    def _publish(self, container: Container, action: str, **attributes: str) -> None:
        described = {"image": container.config.image_reference, "name": container.name}
        attributes = {**container.config.labels, **described, **attributes}
        self.publish("container", action, container.id, attributes)

    def start(self, reference: str) -> bool:
        """False when it was already running (Docker answers 304)."""
        container = self.get(reference)
        with self._lock:
            if container.running or container.status == "starting":
                return False
            previous, container.status = container.status, "starting"
        if previous == "exited":
            # Started again, as Docker restarts a stopped container: a fresh environment, the same output log.
            container.exited.clear()
            container.output.reopen()
        try:
            self._start(container)
        except BaseException:
            if container.status == "starting":
                container.status = previous
            raise
        return True

    def _start(self, container: Container) -> None:
        binding = container.config.published_port
        host_port = binding.host_port or PORTS.take()
        try:
            _check_port_free(binding.host_ip, host_port)
            if container.is_durable_emulator:
                launch = self.environments.start_durable_emulator(
                    container.config, container.paths, host_port
                )
            else:
                launch = self.environments.start(
                    container.config, container.image.runtime, container.paths, host_port
                )
        except BaseException as error:
            if not binding.host_port:
                PORTS.give_back(host_port)
            if isinstance(error, RuntimeUnavailableError | RuntimeBuildError | ForkServerError | OSError):
                raise server_error(f"cannot start container {container.id[:12]}: {error}") from None
            raise
        container.launch, container.host_port = launch, host_port
        container.started_at = _now()
        container.status = "running"
        self._publish(container, "start")
        readers = [
            threading.Thread(target=self._read, args=(container, stream, pipe), daemon=True)
            for stream, pipe in ((STDOUT, launch.process.stdout), (STDERR, launch.process.stderr))
        ]
        for reader in readers:
            reader.start()
        threading.Thread(target=self._watch, args=(container, readers), daemon=True).start()
        if not container.is_durable_emulator:
            # The emulator's server takes a few seconds to import; SAM CLI polls its /health itself.
            self._wait_listening(container, launch)

    def _read(self, container: Container, stream: int, pipe: IO[bytes] | None) -> None:
        if pipe is None:
            return
        with pipe, container.log_path.open("ab") as log:
            # One frame per line: SAM CLI recognises the REPORT line in a frame of its own.
            for line in pipe:
                container.output.append(stream, line)
                log.write(line)
                log.flush()

    def _watch(self, container: Container, readers: list[threading.Thread]) -> None:
        assert container.launch is not None
        code = container.launch.process.wait()
        for reader in readers:
            reader.join()
        if container.launch.runtime_api_port:
            PORTS.give_back(container.launch.runtime_api_port)
        if not container.config.published_port.host_port:
            PORTS.give_back(container.host_port)
        container.exit_code = code if code >= 0 else 128 - code
        container.finished_at = _now()
        container.status = "exited"
        container.output.close()
        container.exited.set()
        self._publish(container, "die", exitCode=str(container.exit_code))

    def _wait_listening(self, container: Container, launch: Launch) -> None:
        address = "127.0.0.1" if launch.host_ip in {"", "0.0.0.0"} else launch.host_ip
        deadline = time.monotonic() + _LISTEN_TIMEOUT_SECONDS
        while time.monotonic() < deadline and launch.process.poll() is None:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                if probe.connect_ex((address, launch.host_port)) == 0 and listens_on(
                    launch.process.pid, launch.host_port
                ):
                    return
            time.sleep(_POLL_SECONDS)
        if launch.process.poll() is None:
            self._signal(container, signal.SIGKILL)
        container.exited.wait(timeout=5)
        tail = b"".join(record.data for record in container.output.records())[-_OUTPUT_TAIL_BYTES:]
        raise server_error(
            f"the Runtime Interface Emulator of container {container.id[:12]} did not listen on "
            f"{address}:{launch.host_port}: {tail.decode(errors='replace').strip()}"
        )

    def stop(self, reference: str, timeout_seconds: float) -> bool:
        """SIGTERM, then SIGKILL after ``timeout_seconds``; False when it was not running (304)."""
        container = self.get(reference)
        if not container.running:
            return False
        self._end_output(container)
        self._signal(container, signal.SIGTERM)
        if not container.exited.wait(timeout=max(0.0, timeout_seconds)):
            self._signal(container, signal.SIGKILL)
            container.exited.wait(timeout=10)
        return True

    def kill(self, reference: str, signal_name: str) -> None:
        container = self.get(reference)
        if not container.running:
            raise conflict(f"Cannot kill container: {reference}: Container {container.id} is not running")
        number = _signal_number(signal_name)
        if number in {signal.SIGKILL, signal.SIGTERM, signal.SIGINT}:
            self._end_output(container)
        self._signal(container, number)

    @staticmethod
    def _end_output(container: Container) -> None:
        """What a stopped environment prints is not the function's: its runtime, forked apart from the
        emulator, notices the emulator gone and says so, which a container's runtime never lives to do."""
        container.output.close()

    def _signal(self, container: Container, number: int) -> None:
        if container.launch is None:
            return
        # The emulator and the runtime stub share the session the emulator was started in.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(container.launch.process.pid, number)

    def wait(self, reference: str, condition: str) -> dict[str, int | None]:
        container = self.get(reference)
        if condition == "removed":
            container.removed.wait()
        elif condition == "next-exit" or container.status in {"running", "starting", "created"}:
            container.exited.wait()
        return {"StatusCode": container.exit_code, "Error": None}

    def remove(self, reference: str, *, force: bool) -> None:
        container = self.get(reference)
        if container.running and not force:
            raise conflict(
                f"You cannot remove a running container {container.id}. Stop the container before "
                "attempting removal or force remove"
            )
        if container.running:
            self._end_output(container)
            self._signal(container, signal.SIGKILL)
            container.exited.wait(timeout=10)
        with self._lock:
            self._containers.pop(container.id, None)
        container.output.close()
        container.removed.set()
        self._publish(container, "destroy")

    def close(self) -> None:
        with self._lock:
            containers = list(self._containers.values())
        for container in containers:
            if container.running:
                self._signal(container, signal.SIGKILL)
        for container in containers:
            if container.launch is not None:
                container.exited.wait(timeout=5)
            container.output.close()

    # -- files --------------------------------------------------------------------------------------

    def get_archive(self, reference: str, path: str) -> tuple[bytes, dict[str, str | int]]:
        """A tar of one path of the container, and the stat Docker sends beside it."""
        container = self.get(reference)
        host = container.paths.to_host(path)
        if not host.exists():
            raise not_found(f"Could not find the file {path} in container {container.id[:12]}")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            archive.add(host, arcname=os.path.basename(path.rstrip("/")) or ".")
        status = host.lstat()
        stat_document: dict[str, str | int] = {
            "name": os.path.basename(path.rstrip("/")) or "/",
            "size": status.st_size,
            "mode": status.st_mode,
            "mtime": datetime.fromtimestamp(status.st_mtime, UTC).isoformat(),
            "linkTarget": os.readlink(host) if host.is_symlink() else "",
        }
        return buffer.getvalue(), stat_document

    def put_archive(self, reference: str, path: str, archive_file: IO[bytes]) -> None:
        container = self.get(reference)
        if any(
            bind.read_only and (path + "/").startswith(bind.destination.rstrip("/") + "/")
            for bind in container.config.binds
        ):
            raise ApiError(403, f"{path} is on a read-only bind mount of container {container.id[:12]}")
        target = container.paths.to_host(path)
        if not target.is_dir():
            raise not_found(f"Could not find the file {path} in container {container.id[:12]}")
        with tarfile.open(fileobj=archive_file, mode="r:*") as archive:
            archive.extractall(target, filter="data")


def _has_label(labels: dict[str, str], wanted: str) -> bool:
    key, separator, value = wanted.partition("=")
    return key in labels and (not separator or labels[key] == value)


def _signal_number(name: str) -> int:
    if name.isdigit():
        return int(name)
    try:
        return int(signal.Signals[name if name.startswith("SIG") else f"SIG{name}"])
    except KeyError:
        raise bad_request(f"Invalid signal: {name}") from None


def _check_port_free(host_ip: str, port: int) -> None:
    """Docker's own words when the host port is taken (SAM CLI recognises them and says so)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As the emulator binds (Go listeners reuse addresses): connections of an earlier run of this
        # port in TIME_WAIT do not make it taken; another listener does.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host_ip or "0.0.0.0", port))
        except OSError as error:
            raise server_error(
                f"Ports are not available: exposing port TCP {host_ip}:{port} -> 0.0.0.0:0: listen tcp "
                f"{host_ip}:{port}: bind: {error.strerror or error}"
            ) from None
