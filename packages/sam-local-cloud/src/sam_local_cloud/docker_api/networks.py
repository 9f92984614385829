"""Networks, as SAM CLI asks for them (``--docker-network``): every one of them is this machine's loopback.

There is no network isolation: a container's emulator listens on the host, and a function reaches
anything this machine reaches. So a network is only a name: Docker's predefined ones (bridge, host,
none) and those created (``docker network create``); connecting a container to one is recorded for
inspect, nothing more. A name never created is not found, as Docker answers it (SAM CLI then stops
with Docker's message).
"""

from __future__ import annotations

import hashlib
import threading
from datetime import UTC, datetime
from typing import TypedDict

from sam_local_cloud.docker_api.errors import bad_request, conflict, not_found
from sam_local_cloud.json_types import JsonObject, JsonValue

PREDEFINED = ("bridge", "host", "none")


class NetworkContainer(TypedDict):
    Name: str
    IPv4Address: str


class Network(TypedDict):
    """A network as Docker's inspect answers it."""

    Name: str
    Id: str
    Created: str
    Scope: str
    Driver: str
    EnableIPv6: bool
    Internal: bool
    Attachable: bool
    Ingress: bool
    IPAM: JsonObject
    Containers: dict[str, NetworkContainer]
    Options: dict[str, str]
    Labels: JsonValue


class EndpointSettings(TypedDict):
    """A container's endpoint on a network, as Docker's container inspect answers it."""

    NetworkID: str
    EndpointID: str
    Gateway: str
    IPAddress: str
    IPPrefixLen: int


class Networks:
    def __init__(self) -> None:
        self._networks: dict[str, Network] = {}
        self._lock = threading.Lock()
        for name in PREDEFINED:
            self._add(name, "null" if name == "none" else name)

    def _add(self, name: str, driver: str) -> Network:
        network: Network = {
            "Name": name,
            "Id": hashlib.sha256(f"sam-local-cloud network {name}".encode()).hexdigest(),
            "Created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "Scope": "local",
            "Driver": driver,
            "EnableIPv6": False,
            "Internal": False,
            "Attachable": True,
            "Ingress": False,
            "IPAM": {"Driver": "default", "Config": [{"Subnet": "127.0.0.0/8", "Gateway": "127.0.0.1"}]},
            "Containers": {},
            "Options": {},
            "Labels": {},
        }
        self._networks[network["Id"]] = network
        return network

    def get(self, reference: str) -> Network:
        """The network by ID, ID prefix or name; 404 in Docker's words when there is none."""
        with self._lock:
            network = self._find(reference)
        if network is None:
            raise not_found(f"network {reference} not found")
        return network

    def _find(self, reference: str) -> Network | None:
        for network in self._networks.values():
            if reference in {network["Name"], network["Id"]} or (
                len(reference) >= 12 and network["Id"].startswith(reference)
            ):
                return network
        return None

    def all(self) -> list[Network]:
        with self._lock:
            return list(self._networks.values())

    def create(self, body: JsonObject) -> dict[str, str]:
        name = str(body.get("Name") or "")
        if not name:
            raise bad_request("network name is required")
        with self._lock:
            if self._find(name) is not None:
                raise conflict(f"network with name {name} already exists")
            network = self._add(name, str(body.get("Driver") or "bridge"))
            network["Labels"] = body.get("Labels") or {}
        return {"Id": network["Id"], "Warning": ""}

    def connect(self, reference: str, container_id: str, container_name: str) -> EndpointSettings:
        network = self.get(reference)
        endpoint: EndpointSettings = {
            "NetworkID": network["Id"],
            "EndpointID": hashlib.sha256(f"{network['Id']}:{container_id}".encode()).hexdigest(),
            "Gateway": "127.0.0.1",
            "IPAddress": "127.0.0.1",
            "IPPrefixLen": 8,
        }
        with self._lock:
            network["Containers"][container_id] = {"Name": container_name, "IPv4Address": "127.0.0.1/8"}
        return endpoint

    def disconnect(self, reference: str, container_id: str) -> None:
        network = self.get(reference)
        with self._lock:
            network["Containers"].pop(container_id, None)

    def forget(self, container_id: str) -> None:
        with self._lock:
            for network in self._networks.values():
                network["Containers"].pop(container_id, None)

    def remove(self, reference: str) -> None:
        with self._lock:
            network = self._find(reference)
            if network is None:
                return
            if network["Name"] in PREDEFINED:
                raise bad_request(f"{network['Name']} is a pre-defined network and cannot be removed")
            if network["Containers"]:
                raise conflict(f"error while removing network: {network['Name']} has active endpoints")
            del self._networks[network["Id"]]
