"""Function definitions and the name/ARN resolution the Lambda API accepts."""

from __future__ import annotations

import base64
import hashlib
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote

from sam_local_cloud.json_types import JsonObject
from sam_local_cloud.lambda_service.errors import ResourceNotFoundError
from sam_local_cloud.lambda_service.layers import MAX_LAYERS_PER_FUNCTION, LayerSpec

LATEST = "$LATEST"
# CreateFunction's constraint on Handler. A name without a dot is accepted, as on AWS: each invoke then
# fails with Runtime.MalformedHandlerName.
HANDLER_PATTERN = re.compile(r"[^\s]{1,128}")
# Lambda's defaults for a DurableConfig that leaves them out (CreateFunction's DurableConfig shape).
DEFAULT_RETENTION_PERIOD_DAYS = 14
DEFAULT_EXECUTION_TIMEOUT_SECONDS = 86_400

_ARN_PATTERN = re.compile(
    r"^(?:arn:(?P<partition>[\w-]+):lambda:(?P<region>[\w-]+):)?"
    r"(?:(?P<account>\d{12}):function:)?"
    r"(?P<name>[A-Za-z0-9_-]{1,140})(?::(?P<qualifier>[\w$-]+))?$"
)


@dataclass(frozen=True)
class FunctionSpec:
    """One Lambda function: what to run and with which configuration.

    ``handler`` is the real ``module.function``; ``code_dir`` becomes the task root (cwd and PYTHONPATH).
    ``runtime`` (``python3.12`` ...) and ``code_dir``'s requirements.txt decide what it runs on: that
    Python with those packages and the runtime's own (``runtimes``), as ``sam build`` would package it.
    ``layers`` are merged, in this order, into the folder that stands for its /opt (``layers``).
    """

    name: str
    handler: str
    code_dir: Path
    runtime: str = "python3.12"
    timeout_seconds: int = 3
    memory_mb: int = 128
    environment: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    reserved_concurrency: int | None = None
    layers: tuple[LayerSpec, ...] = ()
    # The template's DurableConfig (ExecutionTimeout, RetentionPeriodInDays): the function is durable.
    durable_config: Mapping[str, Any] | None = None
    # Alias names (SAM's AutoPublishAlias): locally each is an alias of the one code there is, $LATEST.
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", self.name):
            raise ValueError(f"invalid function name {self.name!r}")
        if not HANDLER_PATTERN.fullmatch(self.handler):
            raise ValueError(
                f"handler of {self.name} must be 1-128 characters without whitespace, got {self.handler!r}"
            )
        if self.timeout_seconds < 1:
            raise ValueError(f"timeout of {self.name} must be at least 1 second")
        if self.reserved_concurrency is not None and self.reserved_concurrency < 0:
            raise ValueError(f"reserved concurrency of {self.name} must not be negative")
        if len(self.layers) > MAX_LAYERS_PER_FUNCTION:
            raise ValueError(
                f"{self.name} has {len(self.layers)} layers; Lambda allows {MAX_LAYERS_PER_FUNCTION}"
            )

    def with_environment(self, environment: Mapping[str, str]) -> FunctionSpec:
        """A copy with these environment variables (replacing the old ones)."""
        return replace(self, environment=MappingProxyType(dict(environment)))


class FunctionRegistry:
    """The account's functions in one Region; resolves every name form the Lambda API accepts."""

    def __init__(self, region: str, account_id: str) -> None:
        self.region = region
        self.account_id = account_id
        self._functions: dict[str, FunctionSpec] = {}
        self._created_at: dict[str, str] = {}
        self._resolved: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, spec: FunctionSpec) -> None:
        with self._lock:
            self._functions[spec.name] = spec
            self._created_at[spec.name] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")

    def names(self) -> list[str]:
        return sorted(self._functions)

    def get(self, name: str) -> FunctionSpec:
        return self._functions[name]

    def arn(self, name: str) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account_id}:function:{name}"

    def resolve(self, identifier: str, qualifier: str | None = None) -> FunctionSpec:
        """Return the function named by a name, partial ARN or ARN, optionally URL-encoded and qualified.

        Only ``$LATEST`` and the function's own aliases (each standing for ``$LATEST``) exist locally: any
        other qualifier, a version number included, is not found.
        """
        cache_key = f"{identifier}\n{qualifier or ''}"
        name = self._resolved.get(cache_key)
        if name is None:
            name = self._resolve_uncached(identifier, qualifier)
            self._resolved[cache_key] = name
        return self._functions[name]

    def _resolve_uncached(self, identifier: str, qualifier: str | None) -> str:
        decoded = unquote(identifier)
        match = _ARN_PATTERN.match(decoded)
        not_found = ResourceNotFoundError(f"Function not found: {self._described_arn(decoded, qualifier)}")
        if match is None:
            raise not_found
        name = match["name"]
        qualifiers = {q for q in (match["qualifier"], qualifier) if q}
        if (
            name not in self._functions
            or (match["region"] and match["region"] != self.region)
            or (match["account"] and match["account"] != self.account_id)
            or qualifiers - {LATEST, *self._functions[name].aliases}
        ):
            raise not_found
        return name

    def _described_arn(self, decoded: str, qualifier: str | None) -> str:
        described = decoded if decoded.startswith("arn:") else self.arn(decoded.rsplit(":function:", 1)[-1])
        return f"{described}:{qualifier}" if qualifier else described

    def configuration(self, spec: FunctionSpec) -> JsonObject:
        """The ``FunctionConfiguration`` shape of GetFunction/ListFunctions."""
        code_sha = hashlib.sha256(f"{spec.code_dir}:{spec.handler}".encode()).digest()
        return {
            "FunctionName": spec.name,
            "FunctionArn": self.arn(spec.name),
            "Runtime": spec.runtime,
            "Role": f"arn:aws:iam::{self.account_id}:role/{spec.name}-role",
            "Handler": spec.handler,
            "CodeSize": 0,
            "Description": "",
            "Timeout": spec.timeout_seconds,
            "MemorySize": spec.memory_mb,
            "LastModified": self._created_at.get(spec.name, ""),
            "CodeSha256": base64.b64encode(code_sha).decode(),
            "Version": LATEST,
            "Environment": {"Variables": dict(spec.environment)},
            "TracingConfig": {"Mode": "PassThrough"},
            "RevisionId": hashlib.md5(spec.name.encode(), usedforsecurity=False).hexdigest(),
            "PackageType": "Zip",
            "Architectures": ["x86_64"],
            "State": "Active",
            "LastUpdateStatus": "Successful",
            "EphemeralStorage": {"Size": 512},
            **(
                {"DurableConfig": durable_config_of(spec.durable_config)}
                if spec.durable_config is not None
                else {}
            ),
            **(
                {"Layers": [{"Arn": layer.arn, "CodeSize": 0} for layer in spec.layers]}
                if spec.layers
                else {}
            ),
        }


def durable_config_of(configuration: Mapping[str, Any] | None) -> JsonObject | None:
    """A function's ``DurableConfig`` as GetFunctionConfiguration returns it (Lambda fills the defaults)."""
    if configuration is None:
        return None
    return {
        "RetentionPeriodInDays": int(
            configuration.get("RetentionPeriodInDays", DEFAULT_RETENTION_PERIOD_DAYS)
        ),
        "ExecutionTimeout": int(configuration.get("ExecutionTimeout", DEFAULT_EXECUTION_TIMEOUT_SECONDS)),
        **({"KMSKeyArn": configuration["KMSKeyArn"]} if configuration.get("KMSKeyArn") else {}),
    }
