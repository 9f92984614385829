"""The compatibility manifest: which apps, from where, started how, ending how (tests/compat/*.yaml)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

_Value = TypeVar("_Value")

STATUSES = ("SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


class ManifestError(ValueError):
    """A manifest entry is malformed; the message names the app and the field."""


@dataclass(frozen=True)
class ResourceRef:
    """A resource of the deployed stack by logical ID, or a literal physical name."""

    ref: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class S3Object:
    bucket: ResourceRef
    key: str
    body: bytes


@dataclass(frozen=True)
class TableItem:
    table: ResourceRef
    item: dict[str, object]


@dataclass(frozen=True)
class HttpCall:
    method: str
    path: str  # after the API's ID: a REST API's starts with its stage (/Prod/orders)
    body: object = None
    api: str | None = None  # the API's logical ID, where the stack has more than one


@dataclass(frozen=True)
class Invocation:
    """A function the README has you invoke once the execution runs (an activity worker, a console test)."""

    function: str  # the function's logical ID
    payload: object = None
    # Invoke once the execution has entered this state (the README's "when the workflow reaches ...").
    when_entered: str | None = None


@dataclass(frozen=True)
class Expectation:
    status: str
    output: object = None
    error: str | None = None
    http_status: int | None = None
    # States the README says the execution passes through (Standard workflows: read from the history).
    entered: tuple[str, ...] = ()


@dataclass(frozen=True)
class AwsRefusal:
    """Why AWS itself cannot run the app as its README says (a runtime CreateFunction no longer accepts, a
    template CloudFormation rejects), and how the local cloud must refuse it too: at ``stage``, with a
    cause matching ``cause`` (a regular expression)."""

    stage: str  # deploy | run | compare
    cause: str
    why: str


REFUSAL_STAGES = ("deploy", "run", "compare")


@dataclass(frozen=True)
class CompatApp:
    id: str
    repository: str  # owner/name, or "local" for apps that live in this repository
    commit: str | None
    path: str
    template: str
    cookiecutter: bool
    parameter_overrides: dict[str, str]
    s3_objects: tuple[S3Object, ...]
    table_items: tuple[TableItem, ...]
    state_machine: str | None
    state_machine_output: str | None
    input: object
    # Input fields naming something of the deployed stack: dotted path -> {output: Name} or {ref: LogicalId}.
    input_refs: dict[str, dict[str, str]]
    http: HttpCall | None
    expect: Expectation
    after_start: tuple[Invocation, ...] = ()
    readme: str = ""
    # How long the execution may run before it counts as stuck; None: the runner's default.
    timeout_seconds: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    aws_refusal: AwsRefusal | None = None


def load_manifest(path: Path) -> list[CompatApp]:
    """Every app in ``path``; file references (``file:``, ``input_file:``) are read when the app runs."""
    document = yaml.safe_load(path.read_text()) or {}
    entries = document.get("apps")
    if not isinstance(entries, list):
        raise ManifestError(f"{path}: expected a top-level 'apps' list")
    apps = [_app(entry, index) for index, entry in enumerate(entries)]
    seen: set[str] = set()
    for app in apps:
        if app.id in seen:
            raise ManifestError(f"{path}: app id {app.id!r} appears twice")
        seen.add(app.id)
    return apps


def _app(entry: object, index: int) -> CompatApp:
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
        raise ManifestError(f"app #{index}: needs an 'id'")
    app_id = entry["id"]

    def need(key: str, kind: type[_Value]) -> _Value:
        value = entry.get(key)
        if not isinstance(value, kind):
            raise ManifestError(f"{app_id}: '{key}' must be a {kind.__name__}")
        return value

    repository = need("repository", str)
    commit = entry.get("commit")
    if repository != "local" and not (isinstance(commit, str) and _COMMIT.match(commit)):
        raise ManifestError(f"{app_id}: 'commit' must be the 40-hex commit the app was taken at")
    run = need("run", dict)
    expect = need("expect", dict)
    status = expect.get("status", "SUCCEEDED")
    if status not in STATUSES:
        raise ManifestError(f"{app_id}: expect.status {status!r} is not one of {', '.join(STATUSES)}")
    http = run.get("http")
    if http is None and not (run.get("state_machine") or run.get("output")):
        raise ManifestError(f"{app_id}: run needs 'state_machine', 'output' or 'http'")
    setup = entry.get("setup") or {}
    return CompatApp(
        id=app_id,
        repository=repository,
        commit=commit,
        path=need("path", str),
        template=entry.get("template", "template.yaml"),
        cookiecutter=bool(entry.get("cookiecutter", False)),
        parameter_overrides={str(k): str(v) for k, v in (entry.get("parameter_overrides") or {}).items()},
        s3_objects=tuple(_s3_object(app_id, obj) for obj in setup.get("s3_objects") or []),
        table_items=tuple(
            TableItem(_resource(app_id, item.get("table")), dict(item["item"]))
            for item in setup.get("dynamodb_items") or []
        ),
        state_machine=run.get("state_machine"),
        state_machine_output=run.get("output"),
        input=_input(run),
        input_refs={str(k): dict(v) for k, v in (run.get("input_refs") or {}).items()},
        http=HttpCall(http["method"].upper(), http["path"], http.get("body"), http.get("api"))
        if http
        else None,
        expect=Expectation(
            status=status,
            output=expect.get("output"),
            error=expect.get("error"),
            http_status=expect.get("http_status"),
            entered=tuple(str(name) for name in expect.get("entered") or ()),
        ),
        after_start=tuple(_invocation(app_id, step) for step in run.get("after_start") or ()),
        readme=str(entry.get("readme", "")),
        timeout_seconds=float(run["timeout_seconds"]) if "timeout_seconds" in run else None,
        notes=tuple(entry.get("notes") or ()),
        aws_refusal=_aws_refusal(app_id, entry.get("aws_refuses")),
    )


def _aws_refusal(app_id: str, node: object) -> AwsRefusal | None:
    if node is None:
        return None
    if not (isinstance(node, dict) and node.get("stage") in REFUSAL_STAGES and node.get("why")):
        raise ManifestError(
            f"{app_id}: aws_refuses needs 'stage' ({', '.join(REFUSAL_STAGES)}), 'cause' and 'why'"
        )
    try:
        re.compile(str(node.get("cause", "")))
    except re.error as error:
        raise ManifestError(f"{app_id}: aws_refuses.cause is not a regular expression: {error}") from error
    return AwsRefusal(str(node["stage"]), str(node.get("cause", "")), str(node["why"]))


def _input(run: Mapping[str, object]) -> object:
    if "input_file" in run:
        return {"$file": run["input_file"]}
    return run.get("input", {})


def _invocation(app_id: str, node: object) -> Invocation:
    if not (isinstance(node, dict) and isinstance(node.get("invoke"), str)):
        raise ManifestError(f"{app_id}: an after_start step needs 'invoke: FunctionLogicalId'")
    when = node.get("when_entered")
    return Invocation(node["invoke"], node.get("payload", {}), str(when) if when is not None else None)


def _resource(app_id: str, node: object) -> ResourceRef:
    if isinstance(node, dict) and (node.get("ref") or node.get("name")):
        return ResourceRef(ref=node.get("ref"), name=node.get("name"))
    raise ManifestError(f"{app_id}: a setup resource needs {{ref: LogicalId}} or {{name: physical-name}}")


def _s3_object(app_id: str, node: dict[str, Any]) -> S3Object:
    if "body" in node:
        body = node["body"]
        data = body if isinstance(body, str) else json.dumps(body)
        return S3Object(_resource(app_id, node.get("bucket")), node["key"], data.encode())
    if "file" in node:
        # Read from the app's own folder when it runs (the file is part of the app, not of the manifest).
        return S3Object(_resource(app_id, node.get("bucket")), node["key"], b"$file:" + node["file"].encode())
    raise ManifestError(f"{app_id}: an s3 object needs 'body' or 'file'")
