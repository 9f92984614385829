"""A container's configuration, read from ``POST /containers/create`` and checked for what can run here.

SAM CLI creates a Lambda container with its code folder bound to /var/task, the Runtime Interface
Emulator as the entrypoint (``/var/rapid/aws-lambda-rie --log-level error``), the function's variables
(the handler in ``AWS_LAMBDA_FUNCTION_HANDLER``) and container port 8080 bound to a loopback host port,
which it then POSTs invocations to. What has no local equivalent is refused here, at create, so SAM CLI
reports it as a failed container creation with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sam_local_cloud.docker_api.errors import bad_request
from sam_local_cloud.json_types import JsonObject

if TYPE_CHECKING:
    from sam_local_cloud.docker_api.images import ImageConfig

RIE_CONTAINER_PORT = "8080/tcp"
TASK_ROOT = "/var/task"
HANDLER_VARIABLE = "AWS_LAMBDA_FUNCTION_HANDLER"
# Entrypoints that start the Runtime Interface Emulator in SAM CLI's images and AWS's base images.
RIE_ENTRYPOINTS = frozenset(
    {"/var/rapid/aws-lambda-rie", "/lambda-entrypoint.sh", "/usr/local/bin/aws-lambda-rie"}
)
_RIE_FLAG = re.compile(r"^--log-level(=\w+)?$")
_LOG_LEVELS = frozenset({"trace", "debug", "info", "warn", "error", "fatal", "panic"})
# SAM CLI's durable execution emulator container runs this program of the durable testing SDK.
DURABLE_EMULATOR_PROGRAM = "dex-local-runner"
DURABLE_EMULATOR_DEFAULT_PORT = 5000
# Docker's `host-gateway`: the host as seen from a container. A container here is a process on the host.
HOST_GATEWAY_ADDRESS = "127.0.0.1"
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

    def describe(self) -> JsonObject:
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
    published_port: PortBinding
    tty: bool
    # The request itself, echoed by inspect as Config and HostConfig.
    request: dict[str, Any]
    # HostConfig.ExtraHosts: name -> address, as the container's /etc/hosts would hold them.
    extra_hosts: dict[str, str] = field(default_factory=dict)

    @property
    def handler(self) -> str:
        return self.environment.get(HANDLER_VARIABLE) or (self.command[0] if self.command else "")

    @property
    def rie_flags(self) -> list[str]:
        return self.entrypoint[1:]


def parse_create(
    body: dict[str, Any], image_config: ImageConfig, *, durable_emulator: bool = False
) -> ContainerConfig:
    """The container to run, or a 400 naming what cannot run here.

    ``durable_emulator``: the image is SAM CLI's durable execution emulator, whose one published port is
    the port its command serves on (``--port``), rather than a Lambda image's 8080.
    """
    host_config = body.get("HostConfig") or {}
    environment = _environment([*(image_config.get("Env") or []), *(body.get("Env") or [])])
    entrypoint = list(body.get("Entrypoint") or image_config.get("Entrypoint") or [])
    command = list(body.get("Cmd") or image_config.get("Cmd") or [])
    if durable_emulator:
        check_emulator_command(entrypoint, command)
        published_port = _published(body, host_config, f"{emulator_port_of(command)}/tcp", "the emulator")
    else:
        published_port = _rie_port(body, host_config)
    config = ContainerConfig(
        image_reference=body.get("Image", ""),
        environment=environment,
        entrypoint=entrypoint,
        command=command,
        working_dir=body.get("WorkingDir") or image_config.get("WorkingDir") or TASK_ROOT,
        labels={**(image_config.get("Labels") or {}), **(body.get("Labels") or {})},
        binds=_binds(host_config),
        published_port=published_port,
        tty=bool(body.get("Tty")),
        request=body,
        extra_hosts=_extra_hosts(host_config),
    )
    if durable_emulator:
        return config
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


def _rie_port(body: dict[str, Any], host_config: dict[str, Any]) -> PortBinding:
    bindings = host_config.get("PortBindings") or {}
    exposed = set(body.get("ExposedPorts") or {}) | set(bindings)
    others = sorted(port for port in exposed if port != RIE_CONTAINER_PORT)
    if others:
        raise bad_request(f"port {', '.join(others)}: {DEBUG_PORTS_REFUSED}")
    return _published(body, host_config, RIE_CONTAINER_PORT, "the Runtime Interface Emulator")


def _published(
    body: dict[str, Any], host_config: dict[str, Any], container_port: str, listener: str
) -> PortBinding:
    bindings = host_config.get("PortBindings") or {}
    exposed = set(body.get("ExposedPorts") or {}) | set(bindings)
    others = sorted(port for port in exposed if port != container_port)
    if others:
        raise bad_request(
            f"port {', '.join(others)}: only {container_port}, where {listener} listens, is served"
        )
    host_side = bindings.get(container_port) or []
    if not host_side:
        raise bad_request(
            f"container port {container_port} must be bound to a host port: {listener} listens there on "
            "this machine (SAM CLI binds it)"
        )
    host_port = host_side[0].get("HostPort") or "0"
    if not host_port.isdigit():
        raise bad_request(f"invalid host port {host_port!r} for {container_port}")
    return PortBinding(container_port, host_side[0].get("HostIp") or "0.0.0.0", int(host_port))


def _extra_hosts(host_config: dict[str, Any]) -> dict[str, str]:
    """``name:address`` entries; ``host-gateway`` is this machine, where every container runs here."""
    hosts: dict[str, str] = {}
    for entry in host_config.get("ExtraHosts") or []:
        name, separator, address = entry.partition(":")
        if not separator:
            name, separator, address = entry.partition("=")
        if not separator or not name:
            raise bad_request(f"invalid extra host {entry!r}: expected name:address")
        hosts[name] = HOST_GATEWAY_ADDRESS if address == "host-gateway" else address
    return hosts


def emulator_port_of(command: list[str]) -> int:
    """The port ``dex-local-runner start-server`` serves on: its ``--port``, else its default."""
    value = _option(command, "--port")
    if value is None:
        return DURABLE_EMULATOR_DEFAULT_PORT
    if not value.isdigit():
        raise bad_request(f"invalid --port {value!r} for {DURABLE_EMULATOR_PROGRAM}")
    return int(value)


def check_emulator_command(entrypoint: list[str], command: list[str]) -> None:
    """The emulator image runs its server here, nothing else: it is the durable testing SDK's program."""
    full = [*entrypoint, *command]
    if full[:2] != [DURABLE_EMULATOR_PROGRAM, "start-server"]:
        raise bad_request(
            f"command {full or '(none)'}: a container of the durable execution emulator image runs "
            f"`{DURABLE_EMULATOR_PROGRAM} start-server ...` here (the durable testing SDK's server), "
            "as SAM CLI starts it"
        )


def _option(arguments: list[str], name: str) -> str | None:
    for index, argument in enumerate(arguments):
        if argument == name and index + 1 < len(arguments):
            return arguments[index + 1]
        if argument.startswith(f"{name}="):
            return argument.partition("=")[2]
    return None


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
