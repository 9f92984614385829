"""The workflow written once: the committed definition is the rendered source, every retrier number is a
template Parameter, the documented retry table (docs/architecture.md) says what the template does, and the
definition is valid ASL."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cfnlint.decode import cfn_yaml

from orderbatch.project import PROJECT_ROOT
from orderbatch.workflow_source import RENDERED, SOURCE, WorkflowSourceError, main, render
from sam_local_cloud.stack import TemplateError, load_stack, substitute_definition

TEMPLATE = PROJECT_ROOT / "template.yaml"
RETRY_TABLE_DOC = PROJECT_ROOT / "docs" / "architecture.md"
ASL_VALIDATOR = PROJECT_ROOT / ".cache" / "npm" / "node_modules" / ".bin" / "asl-validator"
MAPS = ("Process inline orders", "Process JSON orders from S3", "Process CSV orders from S3")
SECOND_PASS_MAPS = ("Run deferred orders again", "Run deferred S3 orders again")
# State names are unique in the whole state machine: each copy of the per-order states but the inline
# first pass's carries a suffix.
MAP_SUFFIXES = {
    "Process inline orders": "",
    "Process JSON orders from S3": " (S3 JSON)",
    "Process CSV orders from S3": " (S3 CSV)",
    "Run deferred orders again": " (second pass)",
    "Run deferred S3 orders again": " (S3 second pass)",
}
THROTTLED_STATES = (
    "Validation throttled",
    "Reservation throttled",
    "Charge throttled",
    "Confirmation throttled",
    "Compensation throttled",
)
RETRY_NUMBER_FIELDS = ("IntervalSeconds", "BackoffRate", "MaxDelaySeconds", "MaxAttempts")
WHOLE_PLACEHOLDER = re.compile(r"^\$\{(\w+)\}$")
FAKE_ARN = "arn:aws:lambda:us-east-1:123456789012:function:placeholder"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return dict(cfn_yaml.load(str(TEMPLATE)))


@pytest.fixture(scope="module")
def substitutions(template: dict[str, Any]) -> dict[str, Any]:
    properties = template["Resources"]["OrderBatchStateMachine"]["Properties"]
    return dict(properties["DefinitionSubstitutions"])


@pytest.fixture(scope="module")
def deployed(template: dict[str, Any], substitutions: dict[str, Any]) -> dict[str, Any]:
    """The definition as CloudFormation hands it over with the Parameter defaults: raw text substituted,
    then parsed as YAML."""
    parameters = template["Parameters"]
    values = {
        name: str(parameters[value["Ref"]]["Default"])
        if isinstance(value, dict) and value.get("Ref") in parameters
        else FAKE_ARN
        for name, value in substitutions.items()
    }
    return dict(yaml.safe_load(substitute_definition(RENDERED.read_text(), values)))


def lambda_task_retries(definition: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    found = []
    for name, state in definition["States"].items():
        if "Retry" in state:
            found.append((name, state["Retry"]))
        if "ItemProcessor" in state:
            found += [
                (f"{name}/{inner}", retry) for inner, retry in lambda_task_retries(state["ItemProcessor"])
            ]
    return found


def test_the_committed_definition_is_the_rendered_source() -> None:
    assert RENDERED.read_text() == render(SOURCE), "run `make statemachine` after editing the source"


def test_the_template_deploys_the_rendered_file_and_it_has_no_anchors(template: dict[str, Any]) -> None:
    properties = template["Resources"]["OrderBatchStateMachine"]["Properties"]
    assert properties["DefinitionUri"] == "statemachine/order_batch.asl.yaml"
    events = list(yaml.parse(RENDERED.read_text()))
    assert not [event for event in events if isinstance(event, yaml.AliasEvent)]
    assert not [event for event in events if getattr(event, "anchor", None)]


def test_each_retrier_and_each_per_order_step_is_written_once_in_the_source() -> None:
    text = SOURCE.read_text()
    for error in (
        "Lambda.TooManyRequestsException",
        "Lambda.ServiceException",
        "IdempotencyAlreadyInProgressError",
        "States.TaskFailed",
    ):
        assert text.count(f"- {error}") == (6 if error == "Lambda.TooManyRequestsException" else 1), error
    for step in (
        "Validate order:",
        "Reserve inventory:",
        "Charge payment:",
        "Confirm order:",
        "Cancel order:",
    ):
        assert len(re.findall(rf"^\s+{step}$", text, re.M)) == 1, step
    # Five throttle catchers, one per Lambda Task, and the retriers' one entry: nothing else names it.
    assert text.count("Lambda.TooManyRequestsException") == 6 + 5, "the second pass's Results name it too"


def test_three_maps_run_the_same_per_order_steps(deployed: dict[str, Any]) -> None:
    maps = {name: state for name, state in deployed["States"].items() if state["Type"] == "Map"}
    assert set(maps) == {*MAPS, *SECOND_PASS_MAPS}
    maps = {name: maps[name] for name in MAPS}
    # The S3 copies differ only by their names' suffix: strip it and the three processors are one.
    per_order = {
        name: json.dumps(state["ItemProcessor"]["States"]).replace(MAP_SUFFIXES[name], "")
        for name, state in maps.items()
    }
    assert len(set(per_order.values())) == 1
    assert len(maps["Process inline orders"]["ItemProcessor"]["States"]) == 16
    modes = {name: state["ItemProcessor"]["ProcessorConfig"] for name, state in maps.items()}
    assert modes["Process inline orders"] == {"Mode": "INLINE"}
    assert modes["Process CSV orders from S3"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    assert all(state["MaxConcurrency"] == 8 for state in maps.values())


def _state_names(container: dict[str, Any]) -> list[str]:
    """Every state name in ``container``'s States, its Map processors' and its Parallel branches'."""
    names = []
    for name, state in container.get("States", {}).items():
        names.append(name)
        for key in ("ItemProcessor", "Iterator"):
            if key in state:
                names += _state_names(state[key])
        for branch in state.get("Branches", []):
            names += _state_names(branch)
    return names


def test_no_state_name_repeats_anywhere_in_the_definition(deployed: dict[str, Any]) -> None:
    names = _state_names(deployed)
    # 13 top-level states, 16 per-order states in each of three first passes and 17 in two second passes.
    assert len(names) == 13 + 3 * 16 + 2 * 17
    assert sorted(name for name in set(names) if names.count(name) > 1) == []


def test_each_s3_copy_suffixes_its_names_and_its_transitions(deployed: dict[str, Any]) -> None:
    inline = deployed["States"]["Process inline orders"]["ItemProcessor"]
    assert inline["StartAt"] == "Validate order"
    assert set(inline["States"]) == set(PER_ORDER_STATES)
    for map_name in ("Process JSON orders from S3", "Process CSV orders from S3"):
        suffix = MAP_SUFFIXES[map_name]
        processor = deployed["States"][map_name]["ItemProcessor"]
        assert "x-state-name-suffix" not in processor
        assert processor["StartAt"] == f"Validate order{suffix}"
        assert set(processor["States"]) == {f"{name}{suffix}" for name in PER_ORDER_STATES}
        validate = processor["States"][f"Validate order{suffix}"]
        assert [catcher["Next"] for catcher in validate["Catch"]] == [
            f"Validation throttled{suffix}",
            f"Report conflicting order{suffix}",
            f"Cancel order{suffix}",
        ]
        assert validate["Next"] == f"Is the order valid?{suffix}"
        valid = processor["States"][f"Is the order valid?{suffix}"]
        assert (valid["Choices"][0]["Next"], valid["Default"]) == (
            f"Reserve inventory{suffix}",
            f"Order finished{suffix}",
        )


def test_every_retry_number_is_a_number_once_substituted(deployed: dict[str, Any]) -> None:
    retries = lambda_task_retries(deployed)
    assert len(retries) == 5 * 5 + 3
    for name, retry in retries:
        assert len(retry) == 5, name
        for retrier in retry:
            for field in RETRY_NUMBER_FIELDS:
                if field in retrier:
                    assert isinstance(retrier[field], (int, float)), (name, retrier)


def test_every_retry_number_comes_from_a_template_parameter(
    template: dict[str, Any], substitutions: dict[str, Any]
) -> None:
    definition = yaml.safe_load(RENDERED.read_text())
    for name, retry in lambda_task_retries(definition):
        for retrier in retry:
            for field in RETRY_NUMBER_FIELDS:
                value = retrier.get(field)
                if value is None:
                    continue
                if retrier["ErrorEquals"] == ["IdempotencyValidationError"]:
                    # "Never retried" is the meaning of this retrier, not a tuning knob.
                    assert (field, value) == ("MaxAttempts", 0), name
                    continue
                placeholder = WHOLE_PLACEHOLDER.match(str(value))
                assert placeholder, (name, retrier)
                parameter = substitutions[placeholder.group(1)]["Ref"]
                assert template["Parameters"][parameter]["Type"] == "Number", parameter


def _documented_retry_table() -> dict[tuple[str, ...], str]:
    section = RETRY_TABLE_DOC.read_text().split("### Retry parameters, and why", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table = {}
    for row in rows:
        errors, values = row.split(" | ")[:2]
        table[tuple(re.findall(r"`([\w.]+)`", errors))] = values
    return table


def _numbers_in(values: str) -> dict[str, float]:
    patterns = {
        "IntervalSeconds": r"interval (\d+(?:\.\d+)?) s",
        "BackoffRate": r"rate (\d+(?:\.\d+)?)",
        "MaxDelaySeconds": r"cap (\d+(?:\.\d+)?) s",
        "MaxAttempts": r"(\d+) attempts",
    }
    return {
        field: float(found.group(1))
        for field, pattern in patterns.items()
        if (found := re.search(pattern, values))
    }


def test_documented_retry_table_gives_the_template_defaults(deployed: dict[str, Any]) -> None:
    table = _documented_retry_table()
    retry = deployed["States"]["Summarize inline batch"]["Retry"]
    assert set(table) == {tuple(retrier["ErrorEquals"]) for retrier in retry}
    for retrier in retry:
        expected = {field: float(retrier[field]) for field in RETRY_NUMBER_FIELDS if field in retrier}
        values = table[tuple(retrier["ErrorEquals"])]
        assert _numbers_in(values) == expected, values
        says_jitter = re.search(r"(?<!no )jitter", values, re.IGNORECASE) is not None
        assert says_jitter == ("JitterStrategy" in retrier), values


def test_check_mode_reports_a_stale_rendering_and_writing_fixes_it(tmp_path: Path) -> None:
    output = tmp_path / "order_batch.asl.yaml"
    output.write_text(RENDERED.read_text().replace("MaxAttempts: 0", "MaxAttempts: 1", 1))
    arguments = ["--output", str(output)]
    assert main([*arguments, "--check"]) == 1
    assert main(arguments) == 0
    assert main([*arguments, "--check"]) == 0
    assert output.read_text() == RENDERED.read_text()


def test_merge_keys_are_applied_with_explicit_keys_replacing_merged_ones_in_place(tmp_path: Path) -> None:
    source = tmp_path / "merge.workflow.yaml"
    source.write_text(
        "definition:\n"
        "  StartAt: A\n"
        "  States: &states\n"
        "    A: {Type: Pass, Next: B}\n"
        "    B: {Type: Pass, End: true}\n"
        "  x-copy:\n"
        "    <<: *states\n"
        "    A: {Type: Wait, Seconds: 1, Next: B}\n"
        "    C: {Type: Succeed}\n"
    )
    copy = yaml.safe_load(render(source))["x-copy"]
    # The merged order is kept, A is replaced where it stood, and the new key comes last.
    assert list(copy) == ["A", "B", "C"]
    assert copy["A"] == {"Type": "Wait", "Seconds": 1, "Next": "B"}
    assert copy["B"] == {"Type": "Pass", "End": True}


def test_with_a_list_of_merged_mappings_the_earlier_one_wins(tmp_path: Path) -> None:
    source = tmp_path / "merge.workflow.yaml"
    source.write_text(
        "first: &first {Type: Pass, Comment: first}\n"
        "second: &second {Comment: second, End: true}\n"
        "definition:\n  StartAt: A\n  States:\n    A:\n      <<: [*first, *second]\n"
    )
    assert yaml.safe_load(render(source))["States"]["A"] == {"Type": "Pass", "Comment": "first", "End": True}


def test_a_merge_key_naming_a_scalar_is_refused_with_its_line(tmp_path: Path) -> None:
    source = tmp_path / "merge.workflow.yaml"
    source.write_text("definition:\n  StartAt: A\n  States:\n    A:\n      <<: not-a-mapping\n")
    with pytest.raises(WorkflowSourceError, match="line 5: a merge key"):
        render(source)


_TWO_MAPS_SOURCE = """\
definition:
  StartAt: First
  States:
    First:
      Type: Map
      ItemProcessor:
        StartAt: Work
        States: &work
          Work:
            Type: Choice
            Choices:
              - {Variable: $.ok, BooleanEquals: true, Next: Done}
            Default: Retry it
          Retry it:
            Type: Task
            Resource: arn:aws:states:::lambda:invoke
            Catch:
              - {ErrorEquals: [States.ALL], Next: Done}
            Next: Done
          Done: {Type: Pass, End: true}
      Next: Second
    Second:
      Type: Map
      ItemProcessor:
        x-state-name-suffix: SUFFIX
        StartAt: Work
        States: *work
      End: true
"""


def test_the_renderer_suffixes_a_processors_names_and_every_reference_to_them(tmp_path: Path) -> None:
    source = tmp_path / "two_maps.workflow.yaml"
    source.write_text(_TWO_MAPS_SOURCE.replace("SUFFIX", '" again"'))
    rendered = yaml.safe_load(render(source))
    assert rendered["States"]["First"]["ItemProcessor"]["StartAt"] == "Work"
    second = rendered["States"]["Second"]["ItemProcessor"]
    assert second == {
        "StartAt": "Work again",
        "States": {
            "Work again": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.ok", "BooleanEquals": True, "Next": "Done again"}],
                "Default": "Retry it again",
            },
            "Retry it again": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Done again"}],
                "Next": "Done again",
            },
            "Done again": {"Type": "Pass", "End": True},
        },
    }


def test_the_renderer_refuses_a_definition_that_repeats_a_state_name(tmp_path: Path) -> None:
    source = tmp_path / "two_maps.workflow.yaml"
    # Without a suffix, the second copy repeats every name of the first.
    source.write_text(_TWO_MAPS_SOURCE.replace("        x-state-name-suffix: SUFFIX\n", ""))
    with pytest.raises(
        WorkflowSourceError, match="repeated: 'Work' at /States/Second/ItemProcessor/States/Work;"
    ):
        render(source)


def test_the_renderer_refuses_a_suffix_that_still_leaves_a_repeat(tmp_path: Path) -> None:
    source = tmp_path / "two_maps.workflow.yaml"
    # The suffix " it" turns the second copy's "Retry it" into "Retry it it", a name the first copy has.
    done = "          Done: {Type: Pass, End: true}\n"
    colliding = done + "          Retry it it: {Type: Pass, End: true}\n"
    source.write_text(_TWO_MAPS_SOURCE.replace("SUFFIX", '" it"').replace(done, colliding))
    with pytest.raises(
        WorkflowSourceError,
        match="repeated: 'Retry it it' at /States/Second/ItemProcessor/States/Retry it it",
    ):
        render(source)


def test_the_renderer_refuses_an_empty_suffix(tmp_path: Path) -> None:
    source = tmp_path / "two_maps.workflow.yaml"
    source.write_text(_TWO_MAPS_SOURCE.replace("SUFFIX", '""'))
    with pytest.raises(WorkflowSourceError, match="line 25: x-state-name-suffix must be a non-empty string"):
        render(source)


def _yaml_app(tmp_path: Path, definition: str, substitutions: str) -> Path:
    (tmp_path / "machine.asl.yaml").write_text(definition)
    template = tmp_path / "template.yaml"
    template.write_text(
        "Transform: AWS::Serverless-2016-10-31\n"
        "Resources:\n"
        "  Machine:\n"
        "    Type: AWS::Serverless::StateMachine\n"
        "    Properties:\n"
        "      DefinitionUri: machine.asl.yaml\n"
        f"      DefinitionSubstitutions: {substitutions}\n"
    )
    return template


def test_the_local_cloud_reads_a_yaml_definition_as_cloudformation_does(tmp_path: Path) -> None:
    definition = (
        "StartAt: Wait\nStates:\n  Wait:\n    Type: Wait\n    Seconds: ${WaitSeconds}\n    End: true\n"
    )
    stack = load_stack(_yaml_app(tmp_path, definition, "{WaitSeconds: 7}"))
    assert json.loads(stack.state_machine().definition)["States"]["Wait"]["Seconds"] == 7


def test_the_local_cloud_names_a_placeholder_left_in_a_yaml_definition(tmp_path: Path) -> None:
    definition = "StartAt: Wait\nStates:\n  Wait:\n    Type: Wait\n    Seconds: ${Missing}\n    End: true\n"
    with pytest.raises(TemplateError, match="unresolved placeholders: Missing"):
        load_stack(_yaml_app(tmp_path, definition, "{Other: 1}"))


PER_ORDER_STATES = (
    "Validate order",
    "Is the order valid?",
    "Reserve inventory",
    "Is the stock reserved?",
    "Charge payment",
    "Is the payment charged?",
    "Confirm order",
    "Cancel order",
    "Report conflicting order",
    "Report failed compensation",
    *THROTTLED_STATES,
    "Order finished",
)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="asl-validator needs node on PATH")
def test_the_deployed_definition_is_valid_asl(deployed: dict[str, Any], tmp_path: Path) -> None:
    if not ASL_VALIDATOR.exists():
        pytest.fail(f"{ASL_VALIDATOR} is missing: run `make asl-validator`")
    definition = tmp_path / "order_batch.json"
    definition.write_text(json.dumps(deployed))
    result = subprocess.run(
        [str(ASL_VALIDATOR), "--json-path", str(definition)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    errors = re.findall(r"^\s*([A-Z_]+: .+)$", result.stdout + result.stderr, re.M)
    assert (result.returncode, errors) == (0, []), result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="asl-validator needs node on PATH")
def test_asl_validator_rejects_a_retry_number_left_a_string(deployed: dict[str, Any], tmp_path: Path) -> None:
    if not ASL_VALIDATOR.exists():
        pytest.fail(f"{ASL_VALIDATOR} is missing: run `make asl-validator`")
    broken = json.loads(json.dumps(deployed))
    broken["States"]["Summarize S3 batch"]["Retry"][0]["MaxAttempts"] = "20"
    definition = tmp_path / "broken.json"
    definition.write_text(json.dumps(broken))
    result = subprocess.run(
        [str(ASL_VALIDATOR), "--json-path", str(definition)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert (
        "/States/Summarize S3 batch/Retry/0/MaxAttempts is invalid. must be number"
        in result.stdout + result.stderr
    )


# Each Lambda Task of the per-order states and the state its 429 catcher goes to.
THROTTLED_STATE_OF = {
    "Validate order": "Validation throttled",
    "Reserve inventory": "Reservation throttled",
    "Charge payment": "Charge throttled",
    "Confirm order": "Confirmation throttled",
    "Cancel order": "Compensation throttled",
}


def test_a_step_throttled_until_its_retrier_ran_out_defers_its_order_with_the_step_and_its_input(
    deployed: dict[str, Any],
) -> None:
    for map_name in MAPS:
        suffix = MAP_SUFFIXES[map_name]
        states = deployed["States"][map_name]["ItemProcessor"]["States"]
        for step, throttled in THROTTLED_STATE_OF.items():
            first_catcher = states[f"{step}{suffix}"]["Catch"][0]
            # ResultPath null keeps the step's input as it was: the second pass runs the step with it.
            assert first_catcher == {
                "ErrorEquals": ["Lambda.TooManyRequestsException"],
                "ResultPath": None,
                "Next": f"{throttled}{suffix}",
            }
            deferral = states[f"{throttled}{suffix}"]
            assert (deferral["Type"], deferral["End"]) == ("Pass", True)
            parameters = deferral["Parameters"]
            assert (parameters["outcome"], parameters["code"]) == ("DEFERRED", "THROTTLED")
            # The step to resume is named without the copy's suffix: the second pass has its own names.
            assert (parameters["resume_at"], parameters["resume_input.$"]) == (step, "$")


def test_the_second_pass_resumes_each_order_at_its_step_and_compensates_a_step_still_throttled(
    deployed: dict[str, Any],
) -> None:
    first = deployed["States"]["Process inline orders"]["ItemProcessor"]["States"]
    for map_name in SECOND_PASS_MAPS:
        suffix = MAP_SUFFIXES[map_name]
        second_pass = deployed["States"][map_name]
        assert second_pass["MaxConcurrency"] == 2
        processor = second_pass["ItemProcessor"]
        assert processor["StartAt"] == f"Resume order{suffix}"
        states = processor["States"]
        resume = states[f"Resume order{suffix}"]
        assert resume["OutputPath"] == "$.resume_input"
        assert {(rule["StringEquals"], rule["Next"]) for rule in resume["Choices"]} == {
            (step, f"{step}{suffix}") for step in THROTTLED_STATE_OF
        }
        # Every other per-order state is the first pass's, renamed.
        for name, state in first.items():
            if name not in THROTTLED_STATES:
                assert json.dumps(states[f"{name}{suffix}"]).replace(suffix, "") == json.dumps(state), name
        for step, throttled in THROTTLED_STATE_OF.items():
            last = states[f"{throttled}{suffix}"]
            assert last["Result"]["Error"] == "Lambda.TooManyRequestsException"
            assert last["ResultPath"] == "$.error"
            handler = "Report failed compensation" if step == "Cancel order" else "Cancel order"
            assert last["Next"] == f"{handler}{suffix}"


def test_the_summaries_get_both_passes(deployed: dict[str, Any]) -> None:
    states = deployed["States"]
    assert states["Process inline orders"]["Next"] == "Set deferred orders aside"
    # Only == in the filter: AWS's Jayway takes != too, but the ASL validators' grammar does not.
    assert states["Set deferred orders aside"]["Parameters"] == {
        "first_pass.$": "$",
        "deferred.$": "$[?(@.outcome == 'DEFERRED')]",
    }
    assert states["Run deferred orders again"]["ItemsPath"] == "$.deferred"
    assert states["Summarize inline batch"]["Parameters"]["Payload"]["second_pass.$"] == "$.second_pass"
    for map_name in ("Process JSON orders from S3", "Process CSV orders from S3"):
        assert states[map_name]["Next"] == "Set deferred S3 orders aside"
    set_aside = states["Set deferred S3 orders aside"]
    assert set_aside["Parameters"]["Payload"]["action"] == "set_aside_deferred_orders"
    # With nothing deferred, no second map run: the summary gets a null second_pass_result.
    any_deferred = states[set_aside["Next"]]
    assert any_deferred["Choices"] == [
        {
            "Variable": "$.deferred_orders.count",
            "NumericGreaterThan": 0,
            "Next": "Run deferred S3 orders again",
        }
    ]
    none_deferred = states[any_deferred["Default"]]
    assert (none_deferred["Result"], none_deferred["ResultPath"], none_deferred["Next"]) == (
        None,
        "$.second_pass_result",
        "Summarize S3 batch",
    )
    reader = states["Run deferred S3 orders again"]["ItemReader"]["Parameters"]
    assert reader == {"Bucket.$": "$.deferred_orders.Bucket", "Key.$": "$.deferred_orders.Key"}
    payload = states["Summarize S3 batch"]["Parameters"]["Payload"]
    assert payload["second_pass_result.$"] == "$.second_pass_result"
