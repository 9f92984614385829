"""What the interpreter no longer copies or re-parses per item, and that executions read the same for it.

Inline Maps whose ItemSelector reads the whole Map input share that input instead of deep-copying it per
item (``shared_inputs``); ResultPath's jsonpath_ng expression is parsed once per path (``jsonpath``).
Every test runs real executions on the local cloud and reads them back as boto3 sees them.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.deployment import LOCAL_ROLE_ARN

pytestmark = pytest.mark.e2e

# Nothing to build: the state machines are created by the tests.
TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Placeholder:
    Type: AWS::Serverless::StateMachine
    Properties:
      Name: interpreter-copies
      Definition:
        StartAt: Done
        States:
          Done:
            Type: Succeed
"""
_names = itertools.count()


@pytest.fixture(scope="module")
def sfn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("interpreter-copies")
    template = Path(folder / "template.yaml")
    template.write_text(TEMPLATE)
    with LocalCloud(LocalCloudConfig(template=template, state_dir=folder / "state")) as cloud:
        yield cloud.client("stepfunctions")


def succeeded_output(sfn: Any, definition: dict[str, Any], execution_input: Any) -> Any:
    arn = sfn.create_state_machine(
        name=f"copies-{next(_names)}", definition=json.dumps(definition), roleArn=LOCAL_ROLE_ARN
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=arn, input=json.dumps(execution_input))["executionArn"]
    wait_for_execution(sfn, execution, timeout=60, poll_seconds=0.1)
    described = sfn.describe_execution(executionArn=execution)
    assert described["status"] == "SUCCEEDED", described
    return json.loads(described["output"])


def map_over_items(
    item_selector: Any, iteration: dict[str, Any], query_language: str = "JSONPath"
) -> dict[str, Any]:
    items = "{% $states.input.items %}" if query_language == "JSONata" else None
    map_state: dict[str, Any] = {
        "Type": "Map",
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "INLINE"},
            "StartAt": "Change the iteration's input",
            "States": {"Change the iteration's input": {**iteration, "End": True}},
        },
        "ItemSelector": item_selector,
        "MaxConcurrency": 1,
        "End": True,
    }
    if items:
        map_state["Items"] = items
    else:
        map_state["ItemsPath"] = "$.items"
    return {"QueryLanguage": query_language, "StartAt": "Each item", "States": {"Each item": map_state}}


def test_an_iteration_that_changes_what_its_selector_took_from_the_map_input_leaves_the_next_item_alone(
    sfn: Any,
) -> None:
    # Given a Map whose ItemSelector takes the whole array, an object of the input and a merge of both,
    # and whose iteration writes into each of them
    items = [{"n": 0}, {"n": 1}, {"n": 2}]
    selector = {
        "index.$": "$$.Map.Item.Index",
        "all.$": "$.items",
        "shared.$": "$.shared",
        "merged.$": "States.JsonMerge($.shared, $$.Map.Item.Value, false)",
        "whole.$": "$",
    }
    iteration = {
        "Type": "Pass",
        "Parameters": {
            "index.$": "$.index",
            "all.$": "$.all",
            "shared.$": "$.shared",
            "merged.$": "$.merged",
        },
        "ResultPath": "$.all[0].touched_by",
    }
    definition = map_over_items(selector, iteration)
    execution_input = {"items": items, "shared": {"k": "v"}}

    # When it runs
    output = succeeded_output(sfn, definition, execution_input)

    # Then every item saw the Map input as it was given, whatever the items before it did
    for index, result in enumerate(output):
        assert result["index"] == index
        assert result["shared"] == {"k": "v"}
        assert result["merged"] == {"k": "v", "n": index}
        assert result["whole"] == execution_input
        assert result["all"][1:] == items[1:]
        assert result["all"][0] == {
            "n": 0,
            "touched_by": {
                "index": index,
                **{"all": items, "shared": {"k": "v"}, "merged": {"k": "v", "n": index}},
            },
        }


def test_jsonata_selectors_that_build_on_states_input_see_it_unchanged_in_every_item(sfn: Any) -> None:
    # Given a JSONata Map whose ItemSelector appends to, sorts and reverses arrays of $states.input
    selector = {
        "appended": "{% $append($states.input.items, [$states.context.Map.Item.Index]) %}",
        "sorted": "{% $sort($states.input.numbers) %}",
        "reversed": "{% $reverse($states.input.numbers) %}",
        "input": "{% $states.input %}",
    }
    iteration = {
        "Type": "Pass",
        "Output": "{% $merge([$states.input, {'seen': $count($states.input.appended)}]) %}",
    }
    definition = map_over_items(selector, iteration, query_language="JSONata")
    execution_input = {"items": [10, 20, 30], "numbers": [3, 1, 2]}

    # When it runs
    output = succeeded_output(sfn, definition, execution_input)

    # Then each item's selector saw the input as given
    assert [result["appended"] for result in output] == [[10, 20, 30, index] for index in range(3)]
    assert all(result["sorted"] == [1, 2, 3] and result["reversed"] == [2, 1, 3] for result in output)
    assert all(result["input"] == execution_input and result["seen"] == 4 for result in output)


def test_a_500_item_map_does_not_deep_copy_its_input_per_item(
    sfn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sam_local_cloud.moto_seam.testing import interpreter_states as states

    # Given a 500-item inline Map whose ItemSelector reads the Map input, and deep copies counted by size
    items = list(range(500))
    whole_input_copies: list[int] = []

    def counting_deepcopy(value: Any, memo: Any = None) -> Any:
        if isinstance(value, dict) and len(value.get("items") or ()) == len(items):
            whole_input_copies.append(1)
        return copy.deepcopy(value, memo)

    class CountingCopy:
        deepcopy = staticmethod(counting_deepcopy)

    monkeypatch.setattr(states, "copy", CountingCopy)
    selector = {"value.$": "$$.Map.Item.Value", "label.$": "$.label"}
    definition = map_over_items(selector, {"Type": "Pass"})

    # When it runs
    output = succeeded_output(sfn, definition, {"items": items, "label": "batch"})

    # Then every item got its selection, and the whole input was copied a few times, not once per item
    assert output == [{"value": item, "label": "batch"} for item in items]
    assert 0 < len(whole_input_copies) < 10


def test_a_result_path_is_parsed_once_however_many_states_write_it(
    sfn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jsonpath_ng import parser

    # Given a 100-item Map whose iteration writes its result under a ResultPath no other test uses
    parsers_built: list[int] = []
    original_init = parser.JsonPathParser.__init__

    def counting_init(self: Any, *args: Any, **kwargs: Any) -> None:
        parsers_built.append(1)
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(parser.JsonPathParser, "__init__", counting_init)
    iteration = {"Type": "Pass", "Result": "done", "ResultPath": "$.outcome_of_this_item"}
    definition = map_over_items({"value.$": "$$.Map.Item.Value"}, iteration)

    # When it runs
    output = succeeded_output(sfn, definition, {"items": list(range(100))})

    # Then every item's result is where the path says, and the path was parsed once
    assert output == [{"value": item, "outcome_of_this_item": "done"} for item in range(100)]
    assert len(parsers_built) == 1


def test_map_iterations_reuse_parked_threads_instead_of_starting_one_each(
    sfn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    # Given a 300-item Map, and every thread start counted
    starts: list[str] = []
    original_start = threading.Thread.start

    def counting_start(self: threading.Thread) -> None:
        starts.append(self.name)
        original_start(self)

    monkeypatch.setattr(threading.Thread, "start", counting_start)
    definition = map_over_items({"value.$": "$$.Map.Item.Value"}, {"Type": "Pass"})
    definition["States"]["Each item"]["MaxConcurrency"] = 10

    # When it runs
    output = succeeded_output(sfn, definition, {"items": list(range(300))})

    # Then every item ran, on far fewer new threads than items (HTTP requests start some of them)
    assert output == [{"value": item} for item in range(300)]
    assert len(starts) < 100, starts[:20]


def test_an_execution_still_times_out_while_its_program_runs_on_a_parked_thread(sfn: Any) -> None:
    # Given a state machine whose TimeoutSeconds ends before its Wait state does
    definition = {
        "TimeoutSeconds": 1,
        "StartAt": "Wait longer than allowed",
        "States": {"Wait longer than allowed": {"Type": "Wait", "Seconds": 30, "End": True}},
    }
    arn = sfn.create_state_machine(
        name=f"copies-{next(_names)}", definition=json.dumps(definition), roleArn=LOCAL_ROLE_ARN
    )["stateMachineArn"]

    # When it runs
    execution = sfn.start_execution(stateMachineArn=arn, input="{}")["executionArn"]
    status = wait_for_execution(sfn, execution, timeout=20, poll_seconds=0.1)

    # Then it times out after about a second, as before
    described = sfn.describe_execution(executionArn=execution)
    assert status == "TIMED_OUT"
    assert (described["stopDate"] - described["startDate"]).total_seconds() < 10


def test_iterations_and_states_without_a_timeout_hand_no_work_to_another_thread(
    sfn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sam_local_cloud.stepfunctions import worker_threads

    # Given a 50-item Map whose iterations pass through a Parallel state (no TimeoutSeconds anywhere),
    # and every job handed to the parked threads counted
    handed_over: list[Any] = []
    original_submit = worker_threads.POOL.submit

    def counting_submit(job: Any) -> None:
        handed_over.append(job)
        original_submit(job)

    monkeypatch.setattr(worker_threads.POOL, "submit", counting_submit)
    branch = {"StartAt": "Keep", "States": {"Keep": {"Type": "Pass", "End": True}}}
    definition = map_over_items(
        {"value.$": "$$.Map.Item.Value"}, {"Type": "Parallel", "Branches": [branch], "OutputPath": "$[0]"}
    )
    definition["States"]["Each item"]["MaxConcurrency"] = 10

    # When it runs
    output = succeeded_output(sfn, definition, {"items": list(range(50))})

    # Then every item ran, and no program or state waited on a thread of its own: the Map, each
    # iteration's program and each Parallel state ran where moto would have waited for them
    assert output == [{"value": item} for item in range(50)]
    assert handed_over == []
