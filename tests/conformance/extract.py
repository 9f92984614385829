"""Regenerate src/orderbatch/conformance/cases/ from LocalStack's AWS-recorded Step Functions tests.

    .venv/bin/python tests/conformance/extract.py --repo PATH_TO_LOCALSTACK_GIT [--commit SHA]

PATH_TO_LOCALSTACK_GIT is a clone (or bare mirror) of github.com/localstack/localstack. The script
exports tests/aws/services/stepfunctions at the commit, runs its v2 tests under pytest with
localstack_shim.py standing in for LocalStack and AWS (so the tests' own code builds every definition
and input), pairs each execution a test started with what AWS recorded for it in the test's
*.snapshot.json, and writes one folder per recorded execution plus skipped.json (what was left out
and why). Needs `json5` (pip install json5), which LocalStack's template loader reads definitions with.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orderbatch.conformance.outcome import Outcome, outcome_from_description, outcome_from_events

HERE = Path(__file__).resolve().parent
CASES_DIR = HERE.parents[1] / "src" / "orderbatch" / "conformance" / "cases"
SOURCE_REPOSITORY = "localstack/localstack"
TESTS_ROOT = "tests/aws/services/stepfunctions"
EXPORTED_PATHS = ["tests/__init__.py", "tests/aws/__init__.py", "tests/aws/services/__init__.py", TESTS_ROOT]
LOCAL_ACCOUNT = "123456789012"
LOCAL_REGION = "us-east-1"
# Waits longer than this are shrunk to one second; the recorded outcome does not depend on their length.
LONGEST_WAIT_SECONDS = 5
SHRUNK_WAIT_SECONDS = 1
# Services the local cloud serves besides Step Functions itself (moto, plus our Lambda service).
SERVED_SERVICES = {"lambda", "s3", "dynamodb", "sns", "states", "sfn", "cloudwatch", "logs"}
FUNCTION_ARN = re.compile(rf"arn:aws:lambda:{LOCAL_REGION}:{LOCAL_ACCOUNT}:function:([A-Za-z0-9_-]+)")
STATE_MACHINE_ARN = re.compile(
    rf"arn:aws:states:{LOCAL_REGION}:{LOCAL_ACCOUNT}:stateMachine:([A-Za-z0-9_-]+)"
)


# What a LocalStack fixture the recording does not provide stands for.
FIXTURE_REASONS = {
    "sfn_create_log_group": "reads the execution's CloudWatch Logs (logging, Express async)",
    "sqs_create_queue": "needs an SQS queue the test creates (not replayed)",
    "dynamodb_create_table": "needs a DynamoDB table the test creates (not replayed)",
    "sns_create_topic": "needs an SNS topic the test creates (not replayed)",
    "events_to_sqs_queue": "reads EventBridge events through SQS",
    "secondary_aws_client": "runs across two AWS accounts",
    "mock_config_file": "Step Functions Local mock configuration",
    "create_activity": "activity task needs a worker",
    "aws_client_no_sync_prefix": "StartSyncExecution or TestState API",
    "deploy_cfn_template": "deploys a CloudFormation stack",
    "create_state_machine_alias": "state machine versions and aliases",
}


@dataclass
class Skip:
    test: str
    reason: str
    executions: int

    def to_json(self) -> dict[str, Any]:
        return {"test": self.test, "reason": self.reason, "executions": self.executions}


@dataclass
class Extraction:
    commit: str
    cases: list[dict[str, Any]] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)


# ------------------------------------------------------------------------------------------ recording
def export_tests(repo: Path, commit: str, destination: Path) -> str:
    git = ["git", f"--git-dir={_git_dir(repo)}"]
    sha = subprocess.run(
        [*git, "rev-parse", commit], check=True, capture_output=True, text=True
    ).stdout.strip()
    archive = subprocess.run([*git, "archive", sha, *EXPORTED_PATHS], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(destination)], input=archive, check=True)
    (destination / "pytest.ini").write_text("[pytest]\n")
    return sha


def _git_dir(repo: Path) -> Path:
    return repo / ".git" if (repo / ".git").exists() else repo


def record_tests(exported: Path) -> dict[str, Any]:
    """Run the exported tests with the shim and return what they did."""
    out = exported / "record.json"
    environment = {
        **os.environ,
        "PYTHONPATH": str(HERE),
        "CONFORMANCE_RECORD_OUT": str(out),
    }
    command = [
        sys.executable,
        "-m",
        "pytest",
        f"{TESTS_ROOT}/v2",
        "-p",
        "localstack_shim",
        "-p",
        "no:cacheprovider",
        "-c",
        "pytest.ini",
        "--rootdir",
        ".",
        "-o",
        "addopts=",
        "-q",
        "--continue-on-collection-errors",
        "-W",
        "ignore::pytest.PytestUnknownMarkWarning",
    ]
    subprocess.run(command, cwd=exported, env=environment, capture_output=True, check=False)
    if not out.exists():
        raise RuntimeError("the recording run wrote no record; run it by hand in the export to see why")
    return dict(json.loads(out.read_text()))


# ------------------------------------------------------------------------------------------ pairing
def recorded_outcomes(test: Mapping[str, Any], recorded: Mapping[str, Any]) -> dict[int, Outcome]:
    """Each execution's outcome as AWS recorded it, found through the snapshot keys the test matched."""
    outcomes: dict[int, Outcome] = {}
    for matched in test["matches"]:
        if matched["key"] not in recorded:
            continue
        for ref in matched["refs"]:
            value = _at(recorded[matched["key"]], ref["path"])
            if value is _MISSING:
                continue
            outcome = _outcome_of(ref["kind"], value)
            if outcome is None:
                continue
            known = outcomes.get(ref["execution"])
            # A history says more than a description or an output alone.
            if known is None or (known.event_types is None and outcome.event_types is not None):
                outcomes[ref["execution"]] = outcome
    return outcomes


_MISSING = object()


def _at(value: Any, path: list[Any]) -> Any:
    for step in path:
        in_dict = isinstance(value, dict) and step in value
        in_list = isinstance(value, list) and isinstance(step, int) and step < len(value)
        if not (in_dict or in_list):
            return _MISSING
        value = value[step]
    return value


def _outcome_of(kind: str, value: Any) -> Outcome | None:
    events = value.get("events") if kind == "history" and isinstance(value, dict) else value
    if kind in ("history", "events") and isinstance(events, list):
        try:
            return outcome_from_events(events)
        except ValueError:  # recorded before the execution ended: no outcome to compare
            return None
    if kind in ("describe", "sync") and isinstance(value, dict) and "status" in value:
        return outcome_from_description(value)
    if kind in ("output", "output_parsed"):
        return Outcome(status="SUCCEEDED", output=value)
    return None


# ------------------------------------------------------------------------------------------ skipping
def test_level_skip(test: Mapping[str, Any], snapshot_content: Mapping[str, Any] | None) -> str | None:
    if "validated" not in test["aws_markers"]:
        markers = ", ".join(test["aws_markers"]) or "none"
        return f"not validated against AWS (aws markers: {markers})"
    if test["error"]:
        fixture = re.fullmatch(r"needs the (\w+) fixture", test["error"])
        if fixture:
            return FIXTURE_REASONS.get(fixture.group(1), f"needs LocalStack's {fixture.group(1)} fixture")
        if "stateMachineVersionArn" in test["error"] or "state_machine" in test["error"]:
            return "state machine versions and aliases"
        return f"does not run without LocalStack ({test['error'].splitlines()[0][:120]})"
    if snapshot_content is None:
        return "no AWS recording in the snapshot file"
    services = sorted(set(test["services"]) - {"stepfunctions", "s3"})
    if services:
        return f"drives {', '.join(services)} around the execution (not replayed)"
    active = sorted(set(test["sfn_calls"]) - _passive_calls())
    if active:
        return f"drives the execution with {', '.join(active)}"
    return None


def recorded_executions(content: Any) -> int:
    """How many execution outcomes (histories, descriptions) a snapshot entry holds."""
    if isinstance(content, dict):
        if isinstance(content.get("events"), list) and any(
            isinstance(e, dict) and e.get("type") == "ExecutionStarted" for e in content["events"]
        ):
            return 1
        if "status" in content and ("executionArn" in content or "startDate" in content):
            return 1
        return sum(recorded_executions(value) for value in content.values())
    if isinstance(content, list):
        return sum(recorded_executions(value) for value in content)
    return 0


def _passive_calls() -> set[str]:
    """Step Functions calls (besides create, start, describe and history) that leave the outcome alone."""
    return {
        "delete_state_machine",
        "describe_state_machine",
        "describe_state_machine_for_execution",
        "list_executions",
        "list_map_runs",
        "describe_map_run",
    }


def execution_skip(execution: Mapping[str, Any], functions: Mapping[str, Any]) -> str | None:
    if execution["api"] == "start_sync_execution":
        return "StartSyncExecution (Express) is not served by the local cloud"
    if execution["state_machine_type"] == "EXPRESS":
        return "Express workflow: its recorded outcome comes from CloudWatch Logs"
    definition = json.loads(execution["definition"])
    for name in set(FUNCTION_ARN.findall(execution["definition"] + execution["input"])):
        spec = functions.get(name)
        if spec is not None and not spec["runtime"].startswith("python"):
            return f"Lambda function {name} runs on {spec['runtime']}"
    for resource in _resources(definition):
        reason = _resource_skip(resource)
        if reason:
            return reason
    return None


def _resource_skip(resource: str) -> str | None:
    if ".waitForTaskToken" in resource:
        return "callback pattern (.waitForTaskToken) needs an external worker"
    if ":activity:" in resource:
        return "activity task needs a worker"
    match = re.match(r"arn:aws:states:::(?:aws-sdk:)?([a-z0-9-]+)", resource)
    if match and match.group(1) not in SERVED_SERVICES:
        return f"needs the {match.group(1)} service, which the local cloud does not serve"
    return None


def _resources(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        resource = node.get("Resource")
        if node.get("Type") == "Task" and isinstance(resource, str):
            yield resource
        for value in node.values():
            yield from _resources(value)
    elif isinstance(node, list):
        for value in node:
            yield from _resources(value)


# ------------------------------------------------------------------------------------------ waits
def shrink_waits(definition: Any, execution_input: Any) -> list[str]:
    """Shorten long Wait states in place (definition and the input fields their SecondsPath reads)."""
    notes: list[str] = []
    execution_timeout = definition.get("TimeoutSeconds") if isinstance(definition, dict) else None
    for name, state in _states(definition):
        if state.get("Type") != "Wait":
            continue
        seconds = state.get("Seconds")
        if isinstance(execution_timeout, int) and execution_timeout <= LONGEST_WAIT_SECONDS:
            continue  # the execution's own TimeoutSeconds ends the wait: its length is the outcome
        if isinstance(seconds, int | float) and seconds > LONGEST_WAIT_SECONDS:
            state["Seconds"] = SHRUNK_WAIT_SECONDS
            notes.append(f"Wait {name!r}: Seconds {seconds} shrunk to {SHRUNK_WAIT_SECONDS}")
        path = state.get("SecondsPath")
        if isinstance(path, str) and re.fullmatch(r"\$(\.[A-Za-z0-9_]+)+", path):
            container, key = _container(execution_input, path)
            value = container.get(key) if isinstance(container, dict) else None
            if (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and value > LONGEST_WAIT_SECONDS
            ):
                container[key] = SHRUNK_WAIT_SECONDS
                notes.append(f"Wait {name!r}: {path} {value} shrunk to {SHRUNK_WAIT_SECONDS}")
    return notes


def _container(document: Any, path: str) -> tuple[Any, str]:
    *parents, key = path[2:].split(".")
    for parent in parents:
        document = document.get(parent) if isinstance(document, dict) else None
    return document, key


def _states(node: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        for name, state in (node.get("States") or {}).items():
            if isinstance(state, dict):
                yield name, state
                for key in ("Iterator", "ItemProcessor"):
                    yield from _states(state.get(key))
                for branch in state.get("Branches") or []:
                    yield from _states(branch)


# ------------------------------------------------------------------------------------------ cases
def case_id(nodeid: str, index: int, executions: int) -> str:
    path, _, test_name = nodeid.partition("::")
    relative = Path(path).relative_to(f"{TESTS_ROOT}/v2")
    area = relative.parent.name or relative.stem.removeprefix("test_")
    function = test_name.split("::")[-1]
    base, _, parameter = function.partition("[")
    name = f"{area}.{base}" + (f".{parameter.rstrip(']')}" if parameter else "")
    if executions > 1:
        name += f".{index}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def build_cases(record: Mapping[str, Any], exported: Path, commit: str) -> Extraction:
    extraction = Extraction(commit=commit)
    taken: set[str] = set()
    snapshots: dict[str, dict[str, Any]] = {}
    for nodeid, test in sorted(record["tests"].items()):
        path = nodeid.partition("::")[0]
        snapshot_path = path.removesuffix(".py") + ".snapshot.json"
        if snapshot_path not in snapshots:
            file = exported / snapshot_path
            snapshots[snapshot_path] = json.loads(file.read_text()) if file.exists() else {}
        entry = snapshots[snapshot_path].get(nodeid)
        content = entry.get("recorded-content") if entry else None
        reason = test_level_skip(test, content)
        if reason is not None:
            recorded_count = recorded_executions(content)
            if recorded_count:
                extraction.skips.append(Skip(nodeid, reason, recorded_count))
            continue
        assert entry is not None
        assert content is not None
        outcomes = recorded_outcomes(test, content)
        recorded = [e for e in test["executions"] if e["id"] in outcomes]
        for index, execution in enumerate(recorded):
            reason = execution_skip(execution, test["functions"])
            if reason is not None:
                extraction.skips.append(Skip(f"{nodeid} (execution {index})", reason, 1))
                continue
            case = _case(nodeid, index, len(recorded), execution, outcomes[execution["id"]], test, entry)
            case["id"] = _unique(case["id"], taken)
            case["source"].update({"commit": commit, "snapshot": snapshot_path})
            extraction.cases.append(case)
    for module, error in sorted(record["collection_errors"].items()):
        file = exported / (module.removesuffix(".py") + ".snapshot.json")
        entries = json.loads(file.read_text()) if file.exists() else {}
        count = sum(recorded_executions(e.get("recorded-content")) for e in entries.values())
        if count:
            missing = re.search(r"No module named '([^']+)'", error)
            reason = f"imports LocalStack test code outside the Step Functions suite ({missing.group(1)})"
            extraction.skips.append(Skip(module, reason if missing else f"does not import: {error}", count))
    return extraction


def _case(
    nodeid: str,
    index: int,
    count: int,
    execution: Mapping[str, Any],
    outcome: Outcome,
    test: Mapping[str, Any],
    entry: Mapping[str, Any],
) -> dict[str, Any]:
    definition = json.loads(execution["definition"])
    try:
        execution_input: Any = json.loads(execution["input"])
    except ValueError:  # not JSON: AWS refuses it, and the case shows whether the local cloud does too
        adjustments = shrink_waits(definition, None)
        input_text = execution["input"]
    else:
        adjustments = shrink_waits(definition, execution_input)
        input_text = json.dumps(execution_input)
    definition_text = json.dumps(definition, indent=2)
    used = set(FUNCTION_ARN.findall(execution["definition"] + execution["input"]))
    used |= {name for name in test["functions"] if name in execution["definition"] + execution["input"]}
    machines = set(STATE_MACHINE_ARN.findall(execution["definition"] + execution["input"]))
    buckets = {c["bucket"] for c in test["s3_setup"]}
    text = execution["definition"] + execution["input"]
    return {
        "id": case_id(nodeid, index, count),
        "source": {
            "repository": SOURCE_REPOSITORY,
            "test": nodeid,
            "snapshot_key": nodeid,
            "recorded_date": entry.get("recorded-date"),
        },
        "definition": _with_placeholders(definition_text),
        "input": _with_placeholders(input_text),
        "state_machine_name": execution["state_machine_name"],
        "functions": {name: test["functions"][name] for name in sorted(used) if name in test["functions"]},
        "nested_state_machines": {
            name: json.loads(_with_placeholders(test["state_machines"][name]["definition"]))
            for name in sorted(machines - {execution["state_machine_name"]})
            if name in test["state_machines"]
        },
        "s3_setup": [c for c in test["s3_setup"] if c["bucket"] in buckets],
        "dynamodb_tables": [t for t in test["dynamodb_tables"] if t["table"] in text],
        "snapshot_transformers": {
            "regex": test["regex_transformers"],
            "jsonpath": test["jsonpath_transformers"],
            "parallel_events": test["parallel_events_normalised"],
        },
        "adjustments": adjustments,
        "expected": outcome.to_json(),
    }


def _unique(name: str, taken: set[str]) -> str:
    """Parameter ids that differ only in punctuation sanitise alike; later ones get a number."""
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name}.v{number}"
    taken.add(candidate)
    return candidate


def _with_placeholders(text: str) -> str:
    """Function and state machine ARNs become ${...} placeholders that DefinitionSubstitutions fill."""
    text = FUNCTION_ARN.sub(lambda m: "${FunctionArn_" + m.group(1) + "}", text)
    return STATE_MACHINE_ARN.sub(lambda m: "${StateMachineArn_" + m.group(1) + "}", text)


# ------------------------------------------------------------------------------------------ writing
def write_cases(extraction: Extraction, record: Mapping[str, Any], out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for case in extraction.cases:
        folder = out / case["id"]
        folder.mkdir()
        handlers = folder / "handlers"
        for name, spec in case["functions"].items():
            handlers.mkdir(exist_ok=True)
            # Verbatim third-party source: kept out of the project's linters by its extension.
            (handlers / f"{name}.py.txt").write_text(spec.pop("source"))
        (folder / "definition.json").write_text(case.pop("definition") + "\n")
        (folder / "case.json").write_text(json.dumps(case, indent=2) + "\n")
    skipped = {
        "source": {"repository": SOURCE_REPOSITORY, "commit": extraction.commit},
        "by_reason": dict(Counter(s.reason for s in extraction.skips).most_common()),
        "collection_errors": record["collection_errors"],
        "skips": [s.to_json() for s in extraction.skips],
    }
    (out.parent / "skipped.json").write_text(json.dumps(skipped, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repo", type=Path, required=True, help="a clone or bare mirror of localstack")
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--out", type=Path, default=CASES_DIR)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="conformance-extract-") as scratch:
        exported = Path(scratch)
        commit = export_tests(args.repo, args.commit, exported)
        record = record_tests(exported)
        extraction = build_cases(record, exported, commit)
        write_cases(extraction, record, args.out)
    reasons = Counter(s.reason for s in extraction.skips)
    skipped = sum(s.executions for s in extraction.skips)
    print(f"{len(extraction.cases)} cases written to {args.out}; {skipped} recorded executions skipped")
    for reason, count in reasons.most_common(15):
        print(f"  {count:4d}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
