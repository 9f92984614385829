"""Every AWS-recorded execution of orderbatch/conformance/cases, replayed on the local cloud: one test each.

The selected cases run once, side by side, on one local cloud (about a minute for all of them); each
test then checks its own case's outcome. The known differences listed in docs/fidelity.md are strict
xfails: when the local cloud starts matching AWS on one, its test fails until the list is updated.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orderbatch.conformance.cases import DEFAULT_CASES_DIR, load_cases
from orderbatch.conformance.runner import CaseResult, run_cases
from orderbatch.project import PROJECT_ROOT

FIDELITY_DOC = PROJECT_ROOT / "docs" / "fidelity.md"
KNOWN_DIFFERENCES_HEADING = "## Known differences"

pytestmark = pytest.mark.conformance


def known_differences(doc: Path = FIDELITY_DOC) -> dict[str, str]:
    """Case id -> cause, from the "Known differences" section: ``### cause`` headings over ``- `id` ``."""
    known: dict[str, str] = {}
    section = doc.read_text().split(KNOWN_DIFFERENCES_HEADING, 1)[1].split("\n## ", 1)[0]
    cause = None
    for line in section.splitlines():
        if line.startswith("### "):
            cause = line.removeprefix("### ").strip()
        elif (match := re.match(r"- `([^`]+)`", line)) and cause is not None:
            if match.group(1) in known:
                raise ValueError(f"{match.group(1)} is listed twice in {doc.name}")
            known[match.group(1)] = cause
    return known


CASE_IDS = [case.folder.name for case in load_cases(DEFAULT_CASES_DIR)]
KNOWN = known_differences()


def _case_param(case_id: str) -> object:
    if case_id in KNOWN:
        return pytest.param(case_id, id=case_id, marks=pytest.mark.xfail(strict=True, reason=KNOWN[case_id]))
    return pytest.param(case_id, id=case_id)


@pytest.fixture(scope="module")
def results(request: pytest.FixtureRequest) -> dict[str, CaseResult]:
    """The outcome of every case this session selected, all run together on one local cloud."""
    selected = {
        item.callspec.params["case_id"]
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec") and "case_id" in item.callspec.params
    }
    cases = [case for case in load_cases(DEFAULT_CASES_DIR) if case.id in selected]
    report = run_cases(cases)
    return {result.case.id: result for result in report.results}


@pytest.mark.parametrize("case_id", [_case_param(case_id) for case_id in CASE_IDS])
def test_recorded_execution(case_id: str, results: dict[str, CaseResult]) -> None:
    result = results[case_id]
    details = [difference.line() for difference in result.differences] or [result.summary()]

    assert result.passed, f"{case_id} ({result.case.source['test']}):\n  " + "\n  ".join(details)


def test_known_differences_name_existing_cases() -> None:
    unknown = sorted(set(KNOWN) - set(CASE_IDS))

    assert not unknown, f"docs/fidelity.md lists cases that do not exist: {unknown}"
