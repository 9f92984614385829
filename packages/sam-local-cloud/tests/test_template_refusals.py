"""SAM templates `orderbatch local up` refuses before creating anything, naming the resource and why.

Given a template with a function whose code folder is missing or outside the project, or whose runtime
Lambda does not know, or resources whose ``DependsOn`` names nothing or goes round in a circle, loading
the stack must raise ``TemplateError`` naming the resource, in the words CloudFormation, Lambda or ``sam
build`` would use; a template AWS accepts (a loop of DependsOn-free resources, a handler in a package,
``../`` inside the project, a handler that is not there: AWS fails its invokes, not its deploy) must
still load. A refused start must leave no thread, child process or listening port behind.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from sam_local_cloud import LocalCloud, LocalCloudConfig
from sam_local_cloud.stack import TemplateError, load_stack

HANDLER_SOURCE = "def handler(event, context):\n    return event\n"


def function(
    code_uri: str = "src", handler: str = "app.handler", runtime: str = "python3.12"
) -> dict[str, Any]:
    return {
        "Type": "AWS::Serverless::Function",
        "Properties": {"CodeUri": code_uri, "Handler": handler, "Runtime": runtime},
    }


def template_in(folder: Path, resources: dict[str, Any], *, with_code: bool = True) -> Path:
    """A SAM template in ``folder`` (JSON is YAML) beside ``src/app.py`` defining ``handler``."""
    if with_code:
        (folder / "src").mkdir(exist_ok=True)
        (folder / "src" / "app.py").write_text(HANDLER_SOURCE)
    template = folder / "template.yaml"
    template.write_text(
        json.dumps({"Transform": "AWS::Serverless-2016-10-31", "Resources": resources}, indent=2)
    )
    return template


def refusal(template: Path) -> str:
    with pytest.raises(TemplateError) as refused:
        load_stack(template)
    return str(refused.value)


def test_a_template_aws_accepts_loads_with_its_function(tmp_path: Path) -> None:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "src" / "pkg" / "entry.py").write_text("from app import handler as main\n")
    resources = {
        "Hello": function(),
        "Packaged": {**function(handler="pkg.entry.main"), "DependsOn": ["Hello", "HelloRole"]},
    }

    stack = load_stack(template_in(tmp_path, resources))

    assert sorted(spec.handler for spec in stack.functions) == ["app.handler", "pkg.entry.main"]


def test_a_code_folder_that_does_not_exist_is_refused_naming_the_function(tmp_path: Path) -> None:
    message = refusal(template_in(tmp_path, {"Hello": function(code_uri="hello_world/")}))

    assert message.startswith("Hello: CodeUri 'hello_world/' does not exist (resolved against the template's")
    assert str(tmp_path / "hello_world") in message


def test_a_code_folder_climbing_out_of_the_project_is_refused_and_says_why(tmp_path: Path) -> None:
    project = tmp_path / "a" / "b" / "project"
    project.mkdir(parents=True)
    (tmp_path / "a" / "elsewhere").mkdir()

    message = refusal(template_in(project, {"Hello": function(code_uri="../../elsewhere")}))

    assert message.startswith(
        f"Hello: CodeUri '../../elsewhere' resolves to {tmp_path / 'a' / 'elsewhere'}, "
    )
    assert f"outside the project {project}; the local cloud runs a function's code in place" in message


def test_an_absolute_code_folder_is_taken_as_written(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "app.py").write_text(HANDLER_SOURCE)
    (tmp_path / "project").mkdir()

    stack = load_stack(template_in(tmp_path / "project", {"Hello": function(code_uri=str(shared))}))

    assert [spec.code_dir for spec in stack.functions] == [shared]


def test_a_code_folder_beside_the_template_in_the_same_work_tree_is_accepted(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "app.py").write_text(HANDLER_SOURCE)
    (tmp_path / "infra").mkdir()

    stack = load_stack(template_in(tmp_path / "infra", {"Hello": function(code_uri="../shared")}))

    assert [spec.code_dir for spec in stack.functions] == [tmp_path / "shared"]


@pytest.mark.parametrize(
    ("handler", "warning"),
    [
        (
            "missing.handler",
            "Hello: Handler 'missing.handler': no module 'missing' in {src}: every invoke will fail with "
            "Runtime.ImportModuleError, as on AWS",
        ),
        (
            "app.lambda_handler",
            "Hello: Handler 'app.lambda_handler': {src}/app.py defines no 'lambda_handler': every invoke "
            "will fail with Runtime.HandlerNotFound, as on AWS",
        ),
        (
            "handler",
            "Hello: Handler 'handler' is not <module>.<function>: every invoke will fail with "
            "Runtime.MalformedHandlerName, as on AWS",
        ),
    ],
)
def test_a_handler_that_is_not_there_deploys_as_on_aws_and_the_log_says_what_invokes_will_meet(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, handler: str, warning: str
) -> None:
    with caplog.at_level("WARNING", logger="sam_local_cloud.stack"):
        stack = load_stack(template_in(tmp_path, {"Hello": function(handler=handler)}))

    assert [spec.handler for spec in stack.functions] == [handler]
    assert [record.getMessage() for record in caplog.records] == [warning.format(src=tmp_path / "src")]


@pytest.mark.parametrize(
    ("handler", "constraint"),
    [
        ("app .handler", r"Member must satisfy regular expression pattern: [^\s]+"),
        ("a" * 127 + ".h", "Member must have length less than or equal to 128"),
    ],
)
def test_a_handler_create_function_refuses_is_refused_in_its_words(
    tmp_path: Path, handler: str, constraint: str
) -> None:
    message = refusal(template_in(tmp_path, {"Hello": function(handler=handler)}))

    assert message == f"Hello: Value '{handler}' at 'handler' failed to satisfy constraint: {constraint}"


def test_a_handler_that_is_not_there_fails_each_invoke_with_aws_s_error(tmp_path: Path) -> None:
    resources = {
        "NoModule": function(handler="missing.handler"),
        "NoFunction": function(handler="app.lambda_handler"),
        "NoDot": function(handler="handler"),
    }
    config = LocalCloudConfig(template=template_in(tmp_path, resources), port=0, state_dir=tmp_path / "state")
    with LocalCloud(config) as cloud:
        lambda_client = cloud.client("lambda")
        answers = {}
        for logical_id in resources:
            name = cloud.stack.physical_ids[logical_id]
            for _ in range(2):  # no environment stays warm: each invoke runs the init again, and fails
                answer = lambda_client.invoke(FunctionName=name, Payload=b"{}")
                answers.setdefault(logical_id, []).append(
                    (answer["StatusCode"], answer.get("FunctionError"), json.loads(answer["Payload"].read()))
                )

    assert (
        answers["NoModule"]
        == [
            (
                200,
                "Unhandled",
                {
                    "errorMessage": "Unable to import module 'missing': No module named 'missing'",
                    "errorType": "Runtime.ImportModuleError",
                    "requestId": "",
                    "stackTrace": [],
                },
            )
        ]
        * 2
    )
    assert (
        answers["NoFunction"]
        == [
            (
                200,
                "Unhandled",
                {
                    "errorMessage": "Handler 'lambda_handler' missing on module 'app'",
                    "errorType": "Runtime.HandlerNotFound",
                    "requestId": "",
                    "stackTrace": [],
                },
            )
        ]
        * 2
    )
    assert (
        answers["NoDot"]
        == [
            (
                200,
                "Unhandled",
                {
                    "errorMessage": "Bad handler 'handler': not enough values to unpack (expected 2, got 1)",
                    "errorType": "Runtime.MalformedHandlerName",
                    "requestId": "",
                    "stackTrace": [],
                },
            )
        ]
        * 2
    )


@pytest.mark.parametrize("runtime", ["python2.9", "nodejs1"])
def test_a_runtime_lambda_does_not_know_is_refused_listing_the_valid_ones(
    tmp_path: Path, runtime: str
) -> None:
    message = refusal(template_in(tmp_path, {"Hello": function(runtime=runtime)}))

    prefix = (
        f"Hello: Value '{runtime}' at 'runtime' failed to satisfy constraint: "
        "Member must satisfy enum value set: ["
    )
    assert message.startswith(prefix)
    assert {"python3.12", "python3.13", "nodejs22.x"} <= set(message[len(prefix) : -1].split(", "))


def test_resources_depending_on_each_other_are_a_circular_dependency(tmp_path: Path) -> None:
    resources = {
        "First": {**function(), "DependsOn": "Second"},
        "Second": {**function(), "DependsOn": ["Third"]},
        "Third": {**function(), "DependsOn": "First"},
        "Apart": function(),
    }

    assert (
        refusal(template_in(tmp_path, resources))
        == "Circular dependency between resources: [First, Second, Third]"
    )


def test_a_dependency_on_no_resource_is_unresolved(tmp_path: Path) -> None:
    resources = {"Hello": {**function(), "DependsOn": ["Helo"]}}

    assert refusal(template_in(tmp_path, resources)) == (
        "Template format error: Unresolved resource dependencies [Helo] "
        "in the Resources block of the template"
    )


def _listening_ports() -> set[str]:
    """This process's listening TCP sockets (local address column of /proc/net/tcp*, state 0A)."""
    inodes = set()
    for descriptor in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(descriptor)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                ports.add(fields[1])
    return ports


def _children() -> set[int]:
    """This process's children, but the reaper of process groups, which lives as long as this process
    once any local cloud has started a group (process_groups.py): whichever test did so first."""
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    return {int(pid) for pid in children if not _is_reaper(int(pid))}


def _is_reaper(pid: int) -> bool:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(part.endswith(b"process_groups.py") for part in command)


def test_a_state_machine_refused_at_start_leaves_nothing_running(tmp_path: Path) -> None:
    machine = {
        "Type": "AWS::Serverless::StateMachine",
        "Properties": {
            "Definition": {
                "StartAt": "Go",
                "States": {"Go": {"Type": "Pass", "End": True}, "Orphan": {"Type": "Pass", "End": True}},
            }
        },
    }
    template = template_in(tmp_path, {"Hello": function(), "Machine": machine})
    threads, children, ports = set(threading.enumerate()), _children(), _listening_ports()

    with pytest.raises(TemplateError) as refused:
        LocalCloud(LocalCloudConfig(template=template, account_concurrency=10)).__enter__()

    assert str(refused.value) == (
        "Machine: Invalid State Machine Definition: "
        "'MISSING_TRANSITION_TARGET: State \"Orphan\" is not reachable. at /States/Orphan'"
    )
    assert {thread for thread in threading.enumerate() if thread.is_alive()} <= threads
    assert _children() <= children
    assert _listening_ports() <= ports
