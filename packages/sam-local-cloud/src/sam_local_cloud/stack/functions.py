"""Functions and the layers they name: ``FunctionSpec`` and ``LayerSpec`` from their template properties."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sam_local_cloud.lambda_service import FunctionSpec
from sam_local_cloud.lambda_service.code_archives import CodeArchiveError, extracted_code, inline_code_root
from sam_local_cloud.lambda_service.layers import MAX_LAYERS_PER_FUNCTION, LayerSpec
from sam_local_cloud.stack.function_checks import (
    check_code_location,
    check_runtime,
    handler_problem,
)
from sam_local_cloud.stack.model import LocalStack, TemplateError, note_unhonoured

LAYER_TYPES = ("AWS::Serverless::LayerVersion", "AWS::Lambda::LayerVersion")
_LOG = logging.getLogger("sam_local_cloud.stack")


def add_layer(
    stack: LocalStack,
    logical_id: str,
    resource: Mapping[str, Any],
    physical: Mapping[str, Mapping[str, str]],
    base_dir: Path,
) -> None:
    """A layer version whose content is a local folder or zip (``ContentUri``, or ``Content`` as
    ``sam package``/``aws cloudformation package`` take it before uploading)."""
    kind = resource["Type"]
    props: dict[str, Any] = resource.get("Properties") or {}
    content_property = "ContentUri" if kind == "AWS::Serverless::LayerVersion" else "Content"
    path = local_code_path(logical_id, content_property, props.get(content_property), base_dir)
    if not path.exists():
        raise TemplateError(f"{logical_id}: layer content {path} does not exist")
    arn = physical[logical_id]["Ref"]
    stack.layers[arn] = LayerSpec(name=arn.split(":")[-2], arn=arn, content=path)
    build_method = (resource.get("Metadata") or {}).get("BuildMethod")
    if build_method:
        stack.not_honoured.append(
            f"{logical_id}: used as its folder is, not built (Metadata BuildMethod {build_method}); "
            "`sam build`, then run .aws-sam/build/template.yaml"
        )
    note_unhonoured(stack, logical_id, kind, props)


def layers_of(stack: LocalStack, logical_id: str, props: Mapping[str, Any]) -> tuple[LayerSpec, ...]:
    """The function's layers the template defines, in its order; others (published ARNs) are named."""
    found = []
    for arn in props.get("Layers") or []:
        layer = stack.layers.get(str(arn))
        if layer is None:
            stack.not_honoured.append(
                f"{logical_id}.Layers: {arn} is not defined in the template; not in its /opt"
            )
        else:
            found.append(layer)
    if len(found) > MAX_LAYERS_PER_FUNCTION:
        raise TemplateError(f"{logical_id}: {len(found)} layers; Lambda allows {MAX_LAYERS_PER_FUNCTION}")
    return tuple(found)


def function_spec(
    logical_id: str, name: str, props: Mapping[str, Any], base_dir: Path, layers: tuple[LayerSpec, ...] = ()
) -> FunctionSpec:
    if props.get("PackageType") == "Image":
        raise TemplateError(f"{logical_id}: image functions need a container runtime; use --lambda-endpoint")
    runtime = str(props.get("Runtime", "python3.12"))
    check_runtime(logical_id, runtime)
    code_uri = props.get("CodeUri")
    if isinstance(code_uri, str) and not code_uri.startswith("s3://"):
        # Lexically, not resolved: a folder linked into the project is the project's, as `sam build` sees it.
        check_code_location(
            logical_id, "CodeUri", code_uri, Path(os.path.normpath(base_dir / code_uri)), base_dir
        )
    inline_code = props.get("InlineCode")
    if inline_code is not None:
        if not isinstance(inline_code, str):
            raise TemplateError(
                f"{logical_id}: InlineCode must be a string (got {type(inline_code).__name__})"
            )
        code_dir = inline_code_root(inline_code, runtime)
    else:
        code_dir = task_root(logical_id, "CodeUri", code_uri, base_dir)
    # A handler that is not there fails its invokes, as on AWS, not the deploy: said once in the log.
    if runtime.startswith("python") and "Handler" in props and inline_code is None:
        problem = handler_problem(logical_id, str(props["Handler"]), runtime, code_dir, layers)
        if problem is not None:
            _LOG.warning("%s", problem)
    environment = ((props.get("Environment") or {}).get("Variables")) or {}
    reserved = props.get("ReservedConcurrentExecutions")
    durable_config = props.get("DurableConfig")
    if durable_config is not None and not isinstance(durable_config, Mapping):
        raise TemplateError(f"{logical_id}: DurableConfig must be an object (got {durable_config!r})")
    return FunctionSpec(
        name=name,
        handler=str(props["Handler"]),
        code_dir=code_dir,
        runtime=runtime,
        timeout_seconds=int(props.get("Timeout", 3)),
        memory_mb=int(props.get("MemorySize", 128)),
        environment={key: _env_string(value) for key, value in environment.items()},
        reserved_concurrency=int(reserved) if reserved is not None else None,
        layers=layers,
        durable_config=dict(durable_config) if durable_config is not None else None,
        aliases=(str(props["AutoPublishAlias"]),) if props.get("AutoPublishAlias") else (),
    )


def local_code_path(logical_id: str, property_name: str, location: object, base_dir: Path) -> Path:
    """A code location as ``sam deploy`` takes it before uploading: a folder or a .zip, relative to the
    template. One already in S3 (an ``s3://`` URI or ``{Bucket, Key}``) is AWS's to fetch, not ours."""
    in_s3 = isinstance(location, Mapping) and bool({"Bucket", "S3Bucket"} & set(location))
    if in_s3 or (isinstance(location, str) and location.startswith("s3://")):
        raise TemplateError(
            f"{logical_id}: {property_name} {location!r} is in Amazon S3, which AWS would fetch; the local "
            "cloud runs code from a local folder or .zip (the source, or `sam build` output)"
        )
    if not isinstance(location, str):
        raise TemplateError(
            f"{logical_id}: {property_name} must be a local folder or .zip to run locally (got {location!r})"
        )
    return (base_dir / location).resolve()


def task_root(logical_id: str, property_name: str, location: object, base_dir: Path) -> Path:
    """The folder the function runs from (/var/task): its code folder, or its .zip extracted as Lambda
    extracts it (once per content, in the build cache)."""
    path = local_code_path(logical_id, property_name, location, base_dir)
    if not path.is_file():
        return path
    try:
        return extracted_code(path)
    except CodeArchiveError as error:
        raise TemplateError(f"{logical_id}: {property_name} {path}: {error}") from error


def _env_string(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
