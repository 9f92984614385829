"""A container's configuration, read from ``POST /containers/create`` and checked for what can run here.

SAM CLI creates a Lambda container with its code folder bound to /var/task, the Runtime Interface
Emulator as the entrypoint (``/var/rapid/aws-lambda-rie --log-level error``), the function's variables
(the handler in ``AWS_LAMBDA_FUNCTION_HANDLER``) and container port 8080 bound to a loopback host port,
which it then POSTs invocations to. What has no local equivalent is refused here, at create, so SAM CLI
reports it as a failed container creation with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orderbatch.localcloud.docker_api.errors import bad_request

RIE_CONTAINER_PORT = "8080/tcp"
TASK_ROOT = "/var/task"
HANDLER_VARIABLE = "AWS_LAMBDA_FUNCTION_HANDLER"
# Entrypoints that start the Runtime Interface Emulator in SAM CLI's images and AWS's base images.
RIE_ENTRYPOINTS = frozenset(
    {"/var/rapid/aws-lambda-rie", "/lambda-entrypoint.sh", "/usr/local/bin/aws-lambda-rie"}
)
_RIE_FLAG = re.compile(r"^--log-level(=\w+)?$")
_LOG_LEVELS = frozenset({"trace", "debug", "info", "warn", "error", "fatal", "panic"})
DEBUG_PORTS_REFUSED = (
    "debugging ports (sam local --debug-port) are not supported: the runtime runs as a process on this "
    "machine, not in a container, so attach a debugger to that process instead"
)


@dataclass(frozen=True)
class PortBinding:
    container_port: str
    host_ip: str
    host_port: int  # 0: any free port


@dataclass(frozen=True)
class BindMount:
    source: Path
    destination: str
    read_only: bool
    mode: str

    def describe(self) -> dict[str, Any]:
        return {
            "Type": "bind",
            "Source": str(self.source),
            "Destination": self.destination,
            "Mode": self.mode,
            "RW": not self.read_only,
            "Propagation": "rprivate",
        }


@dataclass(frozen=True)
class ContainerConfig:
    image_reference: str
    environment: dict[str, str]
    entrypoint: list[str]
    command: list[str]
    working_dir: str
    labels: dict[str, str]
    binds: tuple[BindMount, ...]
    rie_binding: PortBinding
    tty: bool
    # The request itself, echoed by inspect as Config and HostConfig.
    request: dict[str, Any]

    @property
    def handler(self) -> str:
        return self.environment.get(HANDLER_VARIABLE) or (self.command[0] if self.command else "")

    @property
    def rie_flags(self) -> list[str]:
        return self.entrypoint[1:]


def parse_create(body: dict[str, Any], image_config: dict[str, Any]) -> ContainerConfig:
    """The container to run, or a 400 naming what cannot run here."""
    host_config = body.get("HostConfig") or {}
    environment = _environment([*(image_config.get("Env") or []), *(body.get("Env") or [])])
    entrypoint = list(body.get("Entrypoint") or image_config.get("Entrypoint") or [])
    command = list(body.get("Cmd") or image_config.get("Cmd") or [])
    config = ContainerConfig(
        image_reference=body.get("Image", ""),
        environment=environment,
        entrypoint=entrypoint,
        command=command,
        working_dir=body.get("WorkingDir") or image_config.get("WorkingDir") or TASK_ROOT,
        labels={**(image_config.get("Labels") or {}), **(body.get("Labels") or {})},
        binds=_binds(host_config),
        rie_binding=_rie_binding(body, host_config),
        tty=bool(body.get("Tty")),
        request=body,
    )
    _check_entrypoint(config)
    if not config.handler:
        raise bad_request(
            f"no handler: set {HANDLER_VARIABLE} (SAM CLI does) or give it as the command, as the Lambda "
            "base images take it"
        )
    return config


def _environment(pairs: list[str]) -> dict[str, str]:
    environment: dict[str, str] = {}
    for pair in pairs:
        name, separator, value = pair.partition("=")
        if separator:
            environment[name] = value
    return environment


def _binds(host_config: dict[str, Any]) -> tuple[BindMount, ...]:
    if any(mount.get("Type") != "bind" for mount in host_config.get("Mounts") or []):
        raise bad_request("only bind mounts are supported: there are no volumes here")
    mounts = [
        f"{mount['Source']}:{mount['Target']}:{'ro' if mount.get('ReadOnly') else 'rw'}"
        for mount in host_config.get("Mounts") or []
    ]
    binds = []
    for spec in [*(host_config.get("Binds") or []), *mounts]:
        parts = spec.split(":")
        if len(parts) < 2 or not parts[0].startswith("/"):
            raise bad_request(f"invalid bind {spec!r}: only host folders bound by absolute path work here")
        source, destination = Path(parts[0]), parts[1]
        mode = parts[2] if len(parts) > 2 else "rw"
        if not source.exists():
            raise bad_request(
                f'invalid mount config for type "bind": bind source path does not exist: {source}'
            )
        binds.append(BindMount(source, destination, "ro" in mode.split(","), mode))
    return tuple(binds)


def _rie_binding(body: dict[str, Any], host_config: dict[str, Any]) -> PortBinding:
    bindings = host_config.get("PortBindings") or {}
    exposed = set(body.get("ExposedPorts") or {}) | set(bindings)
    others = sorted(port for port in exposed if port != RIE_CONTAINER_PORT)
    if others:
        raise bad_request(f"port {', '.join(others)}: {DEBUG_PORTS_REFUSED}")
    host_side = bindings.get(RIE_CONTAINER_PORT) or []
    if not host_side:
        raise bad_request(
            f"container port {RIE_CONTAINER_PORT} must be bound to a host port: the Runtime Interface "
            "Emulator listens there on this machine (SAM CLI binds it)"
        )
    host_port = host_side[0].get("HostPort") or "0"
    if not host_port.isdigit():
        raise bad_request(f"invalid host port {host_port!r} for {RIE_CONTAINER_PORT}")
    return PortBinding(RIE_CONTAINER_PORT, host_side[0].get("HostIp") or "0.0.0.0", int(host_port))


def _check_entrypoint(config: ContainerConfig) -> None:
    if not config.entrypoint or config.entrypoint[0] not in RIE_ENTRYPOINTS:
        raise bad_request(
            f"entrypoint {config.entrypoint or '(none)'}: a container runs as a Lambda execution environment "
            f"here, started by the Runtime Interface Emulator ({', '.join(sorted(RIE_ENTRYPOINTS))})"
        )
    flags = config.rie_flags
    index = 0
    while index < len(flags):
        flag = flags[index]
        if not _RIE_FLAG.match(flag):
            raise bad_request(
                f"entrypoint argument {flag!r}: only the emulator's --log-level is supported here"
            )
        if "=" not in flag:
            if index + 1 >= len(flags) or flags[index + 1] not in _LOG_LEVELS:
                raise bad_request(f"--log-level needs one of {', '.join(sorted(_LOG_LEVELS))}")
            index += 1
        index += 1
