"""The local Lambda service's pure parts: quota arithmetic, name resolution, fault plans, error shapes."""

from __future__ import annotations

import json
import os
import random
import stat
import zipfile
from pathlib import Path
from typing import Any

import pytest

from orderbatch.app_batches import order_event_keys
from sam_local_cloud import FaultPlan, runtime_shim
from sam_local_cloud.faults import ErrorBeforeBody, FaultInjector
from sam_local_cloud.lambda_service.accounting import Accounting
from sam_local_cloud.lambda_service.backends import is_function_error_payload
from sam_local_cloud.lambda_service.errors import InvalidParameterValueError, TooManyRequestsError
from sam_local_cloud.lambda_service.exit_status import (
    process_state_text,
    runtime_exit_text,
    with_lambda_exit_wording,
)
from sam_local_cloud.lambda_service.functions import FunctionRegistry, FunctionSpec
from sam_local_cloud.lambda_service.layers import LayerCache, LayerError, LayerSpec, python_layer_dirs
from sam_local_cloud.lambda_service.runtimes import RuntimeStatus, runtime_status


def test_unreserved_functions_share_what_reservations_leave() -> None:
    accounting = Accounting(account_limit=4)
    accounting.register("Reserved", 2)
    accounting.register("Shared", None)

    shared = [accounting.acquire("Shared") for _ in range(2)]
    with pytest.raises(TooManyRequestsError) as unreserved_full:
        accounting.acquire("Shared")
    reserved = [accounting.acquire("Reserved") for _ in range(2)]
    with pytest.raises(TooManyRequestsError) as reservation_full:
        accounting.acquire("Reserved")

    assert unreserved_full.value.reason == "ConcurrentInvocationLimitExceeded"
    assert reservation_full.value.reason == "ReservedFunctionConcurrentInvocationLimitExceeded"
    assert unreserved_full.value.body() == {
        "Type": "User",
        "message": "Rate Exceeded.",
        "Reason": "ConcurrentInvocationLimitExceeded",
    }
    for slot in shared + reserved:
        accounting.release(slot, 1.0, error=False, timed_out=False)
    snapshot = accounting.snapshot()
    assert snapshot["account"] == {
        "limit": 4,
        "unreserved_limit": 2,
        "current": 0,
        "max": 4,
        "noisy_neighbour_slots": 0,
    }
    assert snapshot["functions"]["Shared"]["throttles"] == {"ConcurrentInvocationLimitExceeded": 1}


def test_a_slot_returns_to_the_pool_it_came_from_when_the_reservation_changes() -> None:
    accounting = Accounting(account_limit=2)
    accounting.register("F", None)
    slot = accounting.acquire("F")
    accounting.set_reserved("F", 1)
    accounting.release(slot, 1.0, error=False, timed_out=False)
    accounting.set_reserved("F", None)

    assert [accounting.acquire("F").from_reservation for _ in range(2)] == [False, False]


def test_reservations_may_not_exceed_the_account_less_the_unreserved_floor() -> None:
    accounting = Accounting(account_limit=10, minimum_unreserved=2)
    accounting.register("A", 5)
    accounting.register("B", None)
    accounting.set_reserved("B", 3)
    with pytest.raises(InvalidParameterValueError, match=r"minimum value of \[2\]"):
        accounting.set_reserved("B", 4)
    accounting.set_reserved("A", 5)  # re-setting its own reservation does not count it twice


def test_a_noisy_neighbour_only_takes_free_unreserved_slots() -> None:
    accounting = Accounting(account_limit=3)
    accounting.register("F", 1)
    accounting.register("G", None)
    accounting.acquire("G")

    assert accounting.hold_unreserved(5) == 1
    with pytest.raises(TooManyRequestsError):
        accounting.acquire("G")
    accounting.acquire("F")  # a reservation is untouched by the neighbour


@pytest.mark.parametrize(
    ("identifier", "qualifier"),
    [
        ("Fn", None),
        ("Fn:$LATEST", None),
        ("Fn", "$LATEST"),
        ("123456789012:function:Fn", None),
        ("arn:aws:lambda:us-east-1:123456789012:function:Fn", None),
        ("arn%3Aaws%3Alambda%3Aus-east-1%3A123456789012%3Afunction%3AFn%3A%24LATEST", None),
    ],
)
def test_every_name_form_resolves(identifier: str, qualifier: str | None) -> None:
    registry = FunctionRegistry("us-east-1", "123456789012")
    registry.add(FunctionSpec("Fn", "app.handler", Path(".")))

    assert registry.resolve(identifier, qualifier).name == "Fn"


@pytest.mark.parametrize(
    "identifier",
    [
        "Other",
        "Fn:1",
        "Fn:alias",
        "999999999999:function:Fn",
        "arn:aws:lambda:eu-west-1:123456789012:function:Fn",
    ],
)
def test_other_names_are_not_found(identifier: str) -> None:
    registry = FunctionRegistry("us-east-1", "123456789012")
    registry.add(FunctionSpec("Fn", "app.handler", Path(".")))

    with pytest.raises(Exception, match="Function not found: arn:aws:lambda:") as error:
        registry.resolve(identifier)
    assert type(error.value).__name__ == "ResourceNotFoundError"


def test_error_documents_are_told_apart_from_results() -> None:
    assert is_function_error_payload(
        b'{"errorMessage": "x", "errorType": "E", "requestId": "r", "stackTrace": []}'
    )
    assert not is_function_error_payload(b'{"errorType": "E", "errorMessage": "x"}')
    assert not is_function_error_payload(
        b'{"errorType": "E", "errorMessage": "x", "requestId": "r", "data": 1}'
    )
    assert not is_function_error_payload(b'"errorType"')


def test_fault_plans_parse_validate_and_round_trip() -> None:
    document = {
        "seed": 1,
        "latency": {"A": 0.25},
        "functions": {"B": [{"kind": "timeout", "phase": "before_body", "attempts": [2, 1]}]},
        "noisy_neighbour": {"slots": 3, "duration_seconds": 5},
    }
    plan = FaultPlan.from_dict(document)

    assert plan.to_dict() == {
        "seed": 1,
        "functions": {
            "B": [{"kind": "timeout", "phase": "before_body", "attempts": [1, 2]}],
            "A": [{"kind": "latency", "seconds": 0.25}],
        },
        "noisy_neighbour": {"slots": 3, "duration_seconds": 5, "start_after_seconds": 0.0},
    }
    rejected: list[tuple[dict[str, Any], str]] = [
        ({"functions": {"A": [{"kind": "nap"}]}}, "unknown fault kind"),
        ({"functions": {"A": [{"kind": "timeout", "attempts": [1], "probability": 0.5}]}}, "not both"),
        ({"functions": {"A": [{"kind": "latency"}]}}, "seconds must be positive"),
        ({"functions": {"A": [{"kind": "timeout", "attempts": [0]}]}}, "numbered from 1"),
        ({"fault": {}}, "unknown fault plan fields"),
    ]
    for bad, message in rejected:
        with pytest.raises(ValueError, match=message):
            FaultPlan.from_dict(bad)


def test_attempts_are_counted_per_function_and_order_key() -> None:
    injector = FaultInjector(
        FaultPlan.from_dict({"functions": {"F": [{"kind": "error_before_body", "attempts": [2]}]}}),
        event_keys=order_event_keys(),
    )
    first = b'{"order": {"order_id": "o-1"}}'
    other = b'{"order_id": "o-2"}'

    decisions = [injector.decide("F", payload) for payload in (first, other, first, other, first)]

    assert [(d.attempt, d.outcome is not None) for d in decisions if d] == [
        (1, False),
        (1, False),
        (2, True),
        (2, True),
        (3, False),
    ]
    assert injector.decide("G", first) is None


def test_without_the_apps_keys_attempts_count_per_payload_and_batch_filters_never_fire() -> None:
    plan = {
        "functions": {
            "F": [
                {"kind": "error_before_body", "attempts": [2]},
                {"kind": "error_after_body", "batch_ids": ["b-1"], "error_type": "ByBatch"},
            ]
        }
    }
    injector = FaultInjector(FaultPlan.from_dict(plan))
    one = b'{"batch_id": "b-1", "order_id": "o-1"}'
    other = b'{"batch_id": "b-1", "order_id": "o-2"}'

    decisions = [injector.decide("F", payload) for payload in (one, other, one, b"[1, 2]", b"[1, 2]")]

    assert [(d.attempt, d.outcome.kind if d.outcome else None) for d in decisions if d] == [
        (1, None),
        (1, None),
        (2, "error_before_body"),
        (1, None),
        (2, "error_before_body"),
    ]
    keyed = FaultInjector(FaultPlan.from_dict(plan), event_keys=order_event_keys())
    decision = keyed.decide("F", one)
    assert decision is not None
    assert decision.outcome is not None
    assert (decision.item_key, decision.outcome.kind) == ("o-1", "error_after_body")


def test_probabilities_are_reproducible_with_a_seed() -> None:
    rule = ErrorBeforeBody(probability=0.5)
    first, second = random.Random(7), random.Random(7)

    assert [rule.fires(1, first) for _ in range(20)] == [rule.fires(1, second) for _ in range(20)]
    assert ErrorBeforeBody().fires(5, first), "a rule without a condition always fires"


# -- layers: one /opt per function, merged in its order -----------------------------------------------------


def _layer(folder: Path, name: str, files: dict[str, str]) -> LayerSpec:
    for relative, text in files.items():
        (folder / name / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / name / relative).write_text(text)
    return LayerSpec(name, f"arn:aws:lambda:us-east-1:123456789012:layer:{name}:1", folder / name)


def test_a_later_layer_replaces_an_earlier_ones_file_and_an_edit_gives_a_new_opt(tmp_path: Path) -> None:
    first = _layer(tmp_path, "first", {"python/shared.py": "first", "python/only_first.py": "1"})
    second = _layer(tmp_path, "second", {"python/shared.py": "second"})
    cache = LayerCache(tmp_path / "cache")

    opt = cache.opt_view([first, second])
    again = cache.opt_view([first, second])
    reversed_opt = cache.opt_view([second, first])
    (second.content / "python" / "shared.py").write_text("second, edited")
    edited = cache.opt_view([first, second])

    assert opt is not None
    assert reversed_opt is not None
    assert edited is not None
    assert (opt / "python" / "shared.py").read_text() == "second"
    assert (opt / "python" / "only_first.py").read_text() == "1"
    assert again == opt  # built once, reused
    assert (reversed_opt / "python" / "shared.py").read_text() == "first"
    assert edited != opt
    assert (edited / "python" / "shared.py").read_text() == "second, edited"
    assert cache.opt_view([]) is None


def test_a_zip_layer_is_extracted_with_its_file_modes(tmp_path: Path) -> None:
    archive = tmp_path / "tools.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        tool = zipfile.ZipInfo("bin/tool")
        tool.external_attr = (stat.S_IFREG | 0o755) << 16
        zipped.writestr(tool, "#!/bin/sh\necho tool\n")
        zipped.writestr("python/module.py", "VALUE = 1\n")
    layer = LayerSpec("tools", "arn:aws:lambda:us-east-1:123456789012:layer:tools:1", archive)

    opt = LayerCache(tmp_path / "cache").opt_view([layer])

    assert opt is not None
    assert stat.S_IMODE((opt / "bin" / "tool").stat().st_mode) == 0o755
    assert (opt / "python" / "module.py").read_text() == "VALUE = 1\n"


def test_a_layer_that_is_neither_a_folder_nor_a_zip_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a zip")
    missing = LayerSpec("gone", "arn:aws:lambda:us-east-1:123456789012:layer:gone:1", tmp_path / "gone")
    text = LayerSpec("text", "arn:aws:lambda:us-east-1:123456789012:layer:text:1", tmp_path / "notes.txt")

    with pytest.raises(LayerError, match=r"layer gone: its content .* does not exist"):
        LayerCache(tmp_path / "cache").opt_view([missing])
    with pytest.raises(LayerError, match=r"layer text: .* is neither a folder nor a zip"):
        LayerCache(tmp_path / "cache").opt_view([text])


def test_python_imports_layers_from_the_runtimes_site_packages_then_python() -> None:
    assert python_layer_dirs(Path("/x/opt"), "python3.13") == [
        Path("/x/opt/python/lib/python3.13/site-packages"),
        Path("/x/opt/python"),
    ]


def test_a_function_may_have_five_layers_at_most() -> None:
    layers = tuple(
        LayerSpec(f"l{number}", f"arn:aws:lambda:us-east-1:123456789012:layer:l{number}:1", Path("/x"))
        for number in range(6)
    )

    with pytest.raises(ValueError, match="F has 6 layers; Lambda allows 5"):
        FunctionSpec("F", "app.handler", Path("."), layers=layers)


# -- Lambda's runtime table ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("runtime", "status"),
    [
        ("python3.14", RuntimeStatus.SUPPORTED),
        ("python3.10", RuntimeStatus.SUPPORTED),
        ("python3.9", RuntimeStatus.DEPRECATED),
        ("python3.8", RuntimeStatus.BLOCKED),
        ("python3.7", RuntimeStatus.BLOCKED),
        ("python3.99", None),
        ("nodejs22.x", None),
    ],
)
def test_runtimes_stand_where_lambdas_table_has_them(runtime: str, status: RuntimeStatus | None) -> None:
    assert runtime_status(runtime) is status


# -- stack traces: /var/task and /opt -----------------------------------------------------------------------


def test_frames_under_the_task_root_and_a_layer_folder_are_named_as_on_aws(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, opt = tmp_path / "code", tmp_path / "layers" / "abc" / "opt"
    site_packages = opt / "python" / "lib" / "python3.12" / "site-packages"
    monkeypatch.setenv("LAMBDA_TASK_ROOT", str(code))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(map(str, [code, site_packages, opt / "python"])))

    folders = runtime_shim._aws_folders()

    assert runtime_shim.as_on_aws(str(code / "app.py"), folders) == "/var/task/app.py"
    assert runtime_shim.as_on_aws(str(site_packages / "pkg" / "m.py"), folders) == (
        "/opt/python/lib/python3.12/site-packages/pkg/m.py"
    )
    assert runtime_shim.as_on_aws(str(opt / "python" / "m.py"), folders) == "/opt/python/m.py"
    assert runtime_shim.as_on_aws("/usr/lib/python3.12/json/__init__.py", folders) == (
        "/usr/lib/python3.12/json/__init__.py"
    )


@pytest.mark.parametrize(
    ("returncode", "text"),
    [
        (-9, "signal: killed"),
        (-11, "signal: segmentation fault"),
        (-6, "signal: aborted"),
        (1, "exit status 1"),
        (0, "exit status 0"),
        (-64, "signal: signal 64"),
    ],
)
def test_a_process_end_is_worded_as_go_words_it(returncode: int, text: str) -> None:
    assert process_state_text(returncode) == text


def test_a_stub_exit_status_above_128_is_the_signal_the_runtime_died_of() -> None:
    assert [runtime_exit_text(status) for status in (137, 139, 143, 2, 200)] == [
        "signal: killed",
        "signal: segmentation fault",
        "signal: terminated",
        "exit status 2",
        "exit status 200",
    ]


def test_only_a_runtime_exit_document_is_reworded() -> None:
    emulator = {
        "errorType": "Runtime.ExitError",
        "errorMessage": "RequestId: r-1 Error: Runtime exited with error: exit status 137",
    }
    handler_error = {"errorType": "ValueError", "errorMessage": "Runtime exited with error: exit status 137"}

    reworded = json.loads(with_lambda_exit_wording(json.dumps(emulator).encode()))

    assert reworded == {
        "errorType": "Runtime.ExitError",
        "errorMessage": "RequestId: r-1 Error: Runtime exited with error: signal: killed",
    }
    assert with_lambda_exit_wording(json.dumps(handler_error).encode()) == json.dumps(handler_error).encode()
    assert with_lambda_exit_wording(b"not json Runtime.ExitError") == b"not json Runtime.ExitError"
