"""The Runtime Interface Emulator, for what `sam local` runs through the Docker API: where its binary is,
and loopback ports for its listeners.

The local cloud's own environments serve their Runtime API themselves (``runtime_api``); `sam local`
talks to the emulator inside what it takes for a container, so the Docker API starts the real one.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import socket
import threading
from pathlib import Path


def find_rie_binary() -> Path:
    """The Runtime Interface Emulator binary shipped inside the aws-sam-cli package, for this machine."""
    spec = importlib.util.find_spec("samcli")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("aws-sam-cli is not installed; it ships the Runtime Interface Emulator")
    architecture = "arm64" if platform.machine().lower() in {"aarch64", "arm64"} else "x86_64"
    binary = (
        Path(next(iter(spec.submodule_search_locations)))
        / "local"
        / "rapid"
        / f"aws-lambda-rie-{architecture}"
    )
    if not os.access(binary, os.X_OK):
        raise FileNotFoundError(f"Runtime Interface Emulator not found or not executable: {binary}")
    return binary


class PortAllocator:
    """Loopback ports for emulators, never the same one to two live environments of this process.

    A port probed free (bound to 0, then closed) can be handed out again by the kernel moments later. If
    two environments got the same port, the second emulator would fail to bind and exit while its
    connection reached the first one: two environments sharing one emulator, whose responses then mix
    (it serves one invocation at a time). Ports stay taken here until their environment is killed.
    """

    def __init__(self) -> None:
        self._taken: set[int] = set()
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            while True:
                port = self._probe()
                if port not in self._taken:
                    self._taken.add(port)
                    return port

    @staticmethod
    def _probe() -> int:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
            return port

    def give_back(self, *ports: int) -> None:
        with self._lock:
            self._taken.difference_update(ports)


PORTS = PortAllocator()


def listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` itself holds the loopback socket listening on ``port`` (Linux; else True).

    The allocator keeps this process's environments apart; another program can still take a probed port
    first. Then the emulator exits, but a connection to the port would reach that program instead.
    """
    # A Go listener on 0.0.0.0 (SAM CLI's container_host_interface for durable functions) is one IPv6
    # socket taking IPv4 too: it is listed in tcp6 only.
    tables = [table for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")) if table.exists()]
    if not tables:
        return True
    listening_inodes = set()
    for table in tables:
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rpartition(":")[2], 16)
            if local_port == port and fields[3] == "0A":  # 0A: LISTEN
                listening_inodes.add(fields[9])
    try:
        for descriptor in Path(f"/proc/{pid}/fd").iterdir():
            target = os.readlink(descriptor)
            if target.startswith("socket:[") and target[8:-1] in listening_inodes:
                return True
    except OSError:
        return False
    return False
