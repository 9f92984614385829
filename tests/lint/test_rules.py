"""The throttle-safety rules against fixture templates, through cfn-lint's API and its CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orderbatch.cli import main
from orderbatch.lint import RULES, RULES_DIRECTORY, LintProblem, exit_code, lint_templates

FIXTURES = Path(__file__).parent / "fixtures"
PROJECT_TEMPLATE = Path(__file__).parents[2] / "template.yaml"

# fixture -> (lint options, the rule IDs it must produce and no others)
EXPECTED: dict[str, tuple[dict[str, int], set[str]]] = {
    "good_sam_definition_uri.yaml": ({}, set()),
    "good_cfn_definition_string_sub.json": ({"account_concurrency": 10}, set()),
    "good_cfn_definition_string_join.yaml": ({}, set()),
    "good_jsonata.yaml": ({"account_concurrency": 10}, set()),
    "bad_aws_recommended_retrier.yaml": ({}, {"E9501"}),
    "bad_catch_all_retrier.yaml": ({}, {"W9502", "W9505", "W9506"}),
    "bad_retrier_shape.json": ({}, {"E9503", "W9504", "W9505", "W9506", "W9507"}),
    "bad_timeouts.yaml": ({}, {"E9511", "W9510", "W9512"}),
    "bad_unbounded_maps.yaml": ({}, {"E9520", "W9521"}),
    "bad_concurrency.yaml": ({}, {"W9522"}),
    "bad_in_progress_retry.yaml": ({}, {"W9530"}),
    "bad_not_idempotent.yaml": ({}, {"W9540"}),
    "bad_layer_per_invocation.yaml": ({}, {"W9541"}),
    "bad_unreadable_definition.yaml": ({}, {"W9550"}),
    "bad_jsonata.yaml": ({}, {"E9501", "W9512"}),
    "good_durable_env_concurrency.yaml": ({"account_concurrency": 10}, set()),
    "bad_durable_unbounded_map.yaml": ({"account_concurrency": 10}, {"W9560"}),
    "bad_durable_over_quota.yaml": ({"account_concurrency": 10}, {"W9561", "E9565"}),
    "bad_durable_unretried_invokes.yaml": ({}, {"E9563", "I9562", "I9564", "W9569"}),
}


def test_every_fixture_has_an_expectation_and_every_rule_a_failing_fixture() -> None:
    templates = {path.name for path in FIXTURES.iterdir() if path.is_file()}
    assert templates == set(EXPECTED)
    # W9523 and W9524 need options; their own tests (here and tests/plan/test_exhaustion.py) make them fail.
    covered = set().union(*(rule_ids for _, rule_ids in EXPECTED.values())) | {"W9523", "W9524"}
    assert covered == set(RULES)


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_fixture_reports_exactly_the_expected_rules(fixture: str) -> None:
    options, expected = EXPECTED[fixture]

    problems = lint_templates([FIXTURES / fixture], account_concurrency=options.get("account_concurrency"))

    assert {problem.rule_id for problem in problems} == expected, [problem.message for problem in problems]


def test_account_concurrency_flags_map_demand_over_the_quota() -> None:
    problems = lint_templates([FIXTURES / "bad_concurrency.yaml"], account_concurrency=10)

    over_quota = [problem for problem in problems if problem.rule_id == "W9523"]
    assert len(over_quota) == 1
    assert "20 x 2 concurrent Lambda task(s) per iteration = 40" in over_quota[0].message
    assert "Set MaxConcurrency to 5" in over_quota[0].message


def test_durable_map_over_the_quota_names_the_literal_and_the_fix() -> None:
    problems = lint_templates([FIXTURES / "bad_durable_over_quota.yaml"], account_concurrency=10)

    (over_quota,) = [problem for problem in problems if problem.rule_id == "W9561"]
    assert "max_concurrency 50 (the literal 50, context.parallel at batches/literal_over_quota.py:20)" in (
        over_quota.message
    )
    assert "+ 1 for its own invocation = 51 concurrent invocations" in over_quota.message
    assert "Set max_concurrency to 9" in over_quota.message
    assert over_quota.line == 18  # the function's Handler
    # Without a quota the demand is not judged, as W9523 is not for state machines.
    without_quota = lint_templates([FIXTURES / "bad_durable_over_quota.yaml"])
    assert {problem.rule_id for problem in without_quota} == {"E9565"}


def test_durable_max_concurrency_none_missing_or_zero_is_unbounded() -> None:
    problems = lint_templates([FIXTURES / "bad_durable_unbounded_map.yaml"])

    assert sorted(problem.message.split(": ", 2)[1] for problem in problems) == [
        "MapConfig without max_concurrency, so every branch runs at once and each chained invoke competes "
        "for the account's concurrency. Pass MapConfig(max_concurrency=N) with N below your unreserved "
        "concurrency (see `orderbatch doctor`).",
        "max_concurrency 0 (the literal 0), so every branch runs at once and each chained invoke competes "
        "for the account's concurrency. Pass ParallelConfig(max_concurrency=N) with N below your unreserved "
        "concurrency (see `orderbatch doctor`).",
    ]


def test_durable_concurrency_from_an_environment_variable_is_resolved_against_the_quota() -> None:
    # ORDERS_AT_ONCE = !Ref OrdersAtOnce (6), passed through run_orders(limit): 1 + 6 = 7 fits in 7, not in 6.
    assert lint_templates([FIXTURES / "good_durable_env_concurrency.yaml"], account_concurrency=7) == []
    (over,) = lint_templates([FIXTURES / "good_durable_env_concurrency.yaml"], account_concurrency=6)

    assert over.rule_id == "W9561"
    assert "environment variable ORDERS_AT_ONCE = !Ref OrdersAtOnce = 6" in over.message


def test_durable_execution_timeout_is_checked_against_the_invoked_function() -> None:
    (timeout,) = [
        problem
        for problem in lint_templates([FIXTURES / "bad_durable_over_quota.yaml"])
        if problem.rule_id == "E9565"
    ]

    assert "ExecutionTimeout 120 is not longer than the Timeout 300 of PriceFunction" in timeout.message
    assert timeout.path == (
        "Resources",
        "PriceOrdersFunction",
        "Properties",
        "DurableConfig",
        "ExecutionTimeout",
    )


def test_each_unretried_chained_invoke_is_reported_where_it_is() -> None:
    problems = lint_templates([FIXTURES / "bad_durable_unretried_invokes.yaml"])

    unretried = sorted(problem.message.split(": ")[0] for problem in problems if problem.rule_id == "E9563")
    assert unretried == [
        "Durable function BookOrdersFunction, context.invoke at batches/unretried_invokes.py:12",
        # inside a try whose handler only logs: caught, but never tried again
        "Durable function BookOrdersFunction, context.invoke at batches/unretried_invokes.py:14",
        # inside a loop whose handler returns at the first error
        "Durable function BookOrdersFunction, context.invoke at batches/unretried_invokes.py:23",
    ]
    (uncertain,) = [problem for problem in problems if problem.rule_id == "I9564"]
    assert "catching Exception catches every error, and the source never names TooManyRequestsException" in (
        uncertain.message
    )
    (unresolved,) = [problem for problem in problems if problem.rule_id == "I9562"]
    assert "len(event['orders']) // 2 is computed at run time" in unresolved.message
    # Informational findings fail the run only when asked.
    assert exit_code([problem for problem in problems if problem.severity == "informational"]) == 0


def test_a_persistence_layer_built_per_call_is_reported_where_it_is_built() -> None:
    problems = lint_templates([FIXTURES / "bad_layer_per_invocation.yaml"])

    # Reserve's handler calls run_once, which builds a layer each time; Confirm's uses one built at module
    # level and one from an lru_cache'd function, and never names run_once.
    assert [(problem.rule_id, problem.message.split(":", 1)[0]) for problem in problems] == [
        ("W9541", "Function ReserveFunction")
    ]
    assert "steps/persistence.py:13 builds a Powertools DynamoDBPersistenceLayer inside run_once()" in (
        problems[0].message
    )


def test_message_names_state_machine_state_path_and_fix() -> None:
    (problem,) = lint_templates([FIXTURES / "bad_aws_recommended_retrier.yaml"])

    assert problem.severity == "error"
    assert "State machine ProcessStateMachine, state 'Process' (States/Process/Retry)" in problem.message
    assert '"JitterStrategy": "FULL"' in problem.message
    assert problem.line == 30  # the Retry list in the fixture
    assert problem.path == (
        "Resources",
        "ProcessStateMachine",
        "Properties",
        "Definition",
        "States",
        "Process",
        "Retry",
    )


def test_definition_uri_problem_names_the_file_and_state() -> None:
    problems = lint_templates([FIXTURES / "bad_unbounded_maps.yaml"])

    distributed = next(problem for problem in problems if problem.rule_id == "E9520")
    assert (
        "'Every object' (States/Fan out/Branches/0/States/Every object in bad_unbounded_maps.asl.yaml)"
        in (distributed.message)
    )


def test_each_in_progress_timeout_finding_reports_the_waits() -> None:
    (problem,) = lint_templates([FIXTURES / "bad_in_progress_retry.yaml"])

    assert "waits 7 s in total, less than ReserveFunction's Timeout 30 s" in problem.message


def test_min_retry_budget_is_configurable() -> None:
    # The good fixture's throttle retrier waits 1+2+4+8+16+30 = 61 s.
    assert lint_templates([FIXTURES / "good_jsonata.yaml"], min_retry_budget_seconds=61) == []
    problems = lint_templates([FIXTURES / "good_jsonata.yaml"], min_retry_budget_seconds=62)
    assert {problem.rule_id for problem in problems} == {"W9507"}


def test_standard_rules_find_nothing_wrong_with_the_fixtures_themselves() -> None:
    problems = lint_templates(sorted(FIXTURES.glob("good_*")), standard_rules=True)

    assert problems == []


def _cfn_lint(*args: str) -> subprocess.CompletedProcess[str]:
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    return subprocess.run([str(cfn_lint), *args], capture_output=True, text=True, timeout=60, check=False)


def test_cfn_lint_cli_loads_the_rules_directory() -> None:
    result = _cfn_lint(
        "--format",
        "json",
        str(FIXTURES / "bad_aws_recommended_retrier.yaml"),
        str(FIXTURES / "good_sam_definition_uri.yaml"),
        "-a",
        str(RULES_DIRECTORY),
    )

    found = json.loads(result.stdout)
    assert [(Path(item["Filename"]).name, item["Rule"]["Id"]) for item in found] == [
        ("bad_aws_recommended_retrier.yaml", "E9501")
    ]
    assert result.returncode == 2  # cfn-lint's bit for "errors found"


def test_cfn_lint_cli_takes_rule_configuration() -> None:
    template = str(FIXTURES / "bad_concurrency.yaml")

    without = _cfn_lint("--format", "parseable", template, "-a", str(RULES_DIRECTORY))
    with_quota = _cfn_lint(
        "--format", "parseable", template, "-a", str(RULES_DIRECTORY), "-x", "W9523:account_concurrency=10"
    )

    assert "W9523" not in without.stdout
    assert "W9522" in without.stdout
    assert "W9523" in with_quota.stdout


def test_cfn_lint_cli_judges_durable_demand_with_the_configured_quota() -> None:
    template = str(FIXTURES / "bad_durable_over_quota.yaml")

    without = _cfn_lint("--format", "parseable", template, "-a", str(RULES_DIRECTORY))
    with_quota = _cfn_lint(
        "--format", "parseable", template, "-a", str(RULES_DIRECTORY), "-x", "W9561:account_concurrency=10"
    )

    assert "W9561" not in without.stdout
    assert "E9565" in without.stdout
    assert ":W9561:" in with_quota.stdout
    assert with_quota.returncode == 2 | 4  # cfn-lint's bits for errors and warnings


def test_orderbatch_lint_command_json_and_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = main(["lint", str(FIXTURES / "bad_timeouts.yaml"), "--format", "json"])

    found = json.loads(capsys.readouterr().out)
    assert exit_code == 2
    assert sorted(item["rule_id"] for item in found) == ["E9511", "W9510", "W9512"]


def test_orderbatch_lint_passes_warnings_unless_asked(capsys: pytest.CaptureFixture[str]) -> None:
    template = str(FIXTURES / "bad_not_idempotent.yaml")

    assert main(["lint", template]) == 0
    assert main(["lint", template, "--fail-on", "warning"]) == 4
    assert "W9540" in capsys.readouterr().out


def test_exit_code_has_cfn_lint_bits_for_each_severity_at_or_above_the_threshold(
    capsys: pytest.CaptureFixture[str],
) -> None:
    template = str(FIXTURES / "bad_timeouts.yaml")  # E9511, W9510, W9512

    assert main(["lint", template]) == 2
    assert main(["lint", template, "--fail-on", "warning"]) == 2 | 4
    assert main(["lint", template, "--non-zero-exit-code", "informational"]) == 2 | 4
    assert main(["lint", template, "--fail-on", "none"]) == 0
    assert "3 problem(s): 1 error(s), 2 warning(s), 0 informational" in capsys.readouterr().out


def test_informational_findings_count_only_when_asked() -> None:
    def finding(rule_id: str, severity: str) -> LintProblem:
        return LintProblem(rule_id, severity, "template.yaml", 1, 1, "message", ())

    informational_only = [finding("I3042", "informational")]
    everything = [finding("E9511", "error"), finding("W9510", "warning"), *informational_only]

    assert exit_code(informational_only) == 0
    assert exit_code(informational_only, "warning") == 0
    assert exit_code(informational_only, "informational") == 8
    assert exit_code(everything, "informational") == 2 | 4 | 8
    assert exit_code(everything, "error") == 2
    with pytest.raises(ValueError, match="fail_on must be one of error, warning, informational, none"):
        exit_code(everything, "fatal")


def test_project_template_is_clean() -> None:
    if not PROJECT_TEMPLATE.exists():
        pytest.fail(f"{PROJECT_TEMPLATE} does not exist yet")

    problems = lint_templates([PROJECT_TEMPLATE], account_concurrency=10)

    assert [problem.message for problem in problems] == []
