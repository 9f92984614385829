"""The compatibility suite's own parts: the manifest's checks, exporting an app at its commit, the report."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

import orderbatch.compat
from orderbatch.compat.manifest import CompatApp, ManifestError, load_manifest
from orderbatch.compat.report import render, summary
from orderbatch.compat.runner import AppResult, run_app
from orderbatch.compat.sources import SourceUnavailableError, export_app

# Shipped with the package: what `orderbatch compat` runs by default.
PUBLIC_MANIFEST = Path(orderbatch.compat.__file__).resolve().parent / "public_apps.yaml"
PUBLIC_SOURCES = {
    "aws-samples/aws-stepfunctions-examples",
    "aws-samples/serverless-patterns",
    "aws-samples/serverless-test-samples",
    "aws-samples/step-functions-workflows-collection",
    "aws/aws-sam-cli-app-templates",
}


def write_manifest(tmp_path: Path, apps: list[dict[str, object]]) -> Path:
    path = tmp_path / "apps.yaml"
    path.write_text(yaml.safe_dump({"apps": apps}))
    return path


def app_entry(**overrides: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "id": "demo",
        "repository": "someone/app",
        "commit": "0" * 40,
        "path": "app",
        "run": {"state_machine": "Machine", "input": {"a": 1}},
        "expect": {"status": "SUCCEEDED"},
    }
    entry.update(overrides)
    return entry


def test_every_public_app_names_its_repository_commit_and_what_its_readme_says() -> None:
    apps = load_manifest(PUBLIC_MANIFEST)

    assert len(apps) >= 60
    for app in apps:
        assert app.repository in PUBLIC_SOURCES, app.id
        assert app.commit is not None, app.id
        assert len(app.commit) == 40, app.id
        assert app.readme, f"{app.id}: say what the README says happens"


@pytest.mark.parametrize(
    ("overrides", "complaint"),
    [
        ({"commit": "main"}, r"'commit' must be the 40-hex commit"),
        ({"expect": {"status": "DONE"}}, r"expect\.status 'DONE' is not one of"),
        ({"run": {"input": {}}}, r"run needs 'state_machine', 'output' or 'http'"),
        ({"setup": {"s3_objects": [{"bucket": {"ref": "B"}, "key": "k"}]}}, r"needs 'body' or 'file'"),
        (
            {"run": {"state_machine": "M", "after_start": [{"payload": {}}]}},
            r"an after_start step needs 'invoke: FunctionLogicalId'",
        ),
    ],
)
def test_a_malformed_entry_is_refused_with_the_app_and_the_field(
    tmp_path: Path, overrides: dict[str, object], complaint: str
) -> None:
    with pytest.raises(ManifestError, match=complaint) as refused:
        load_manifest(write_manifest(tmp_path, [app_entry(**overrides)]))
    assert str(refused.value).startswith("demo:")


def test_a_step_after_the_start_and_the_states_entered_are_read_from_the_entry(tmp_path: Path) -> None:
    entry = app_entry(
        run={
            "state_machine": "Machine",
            "after_start": [{"invoke": "Worker", "payload": {"n": 1}, "when_entered": "Wait here"}],
        },
        expect={"status": "SUCCEEDED", "entered": ["Wait here", "Done"]},
    )

    app = load_manifest(write_manifest(tmp_path, [entry]))[0]

    assert [(step.function, step.payload, step.when_entered) for step in app.after_start] == [
        ("Worker", {"n": 1}, "Wait here")
    ]
    assert app.expect.entered == ("Wait here", "Done")


def test_an_app_id_may_appear_once(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="app id 'demo' appears twice"):
        load_manifest(write_manifest(tmp_path, [app_entry(), app_entry()]))


def git(repository: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repository), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_an_app_is_exported_as_it_was_at_its_commit_and_app_templates_are_rendered(tmp_path: Path) -> None:
    # Given a clone where the app changed after the recorded commit ...
    clone = tmp_path / "sources" / "someone" / "app"
    project = clone / "python3.12" / "step-func" / "{{cookiecutter.project_name}}"
    project.mkdir(parents=True)
    (clone / "python3.12" / "step-func" / "cookiecutter.json").write_text(
        json.dumps({"project_name": "sample-app", "runtime": "python3.12"})
    )
    (project / "template.yaml").write_text("Runtime: {{ cookiecutter.runtime }}\n")
    git(clone, "init", "-q")
    git(clone, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    git(clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "recorded")
    recorded = git(clone, "rev-parse", "HEAD")
    (project / "template.yaml").write_text("Runtime: changed later\n")
    git(clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "later")
    app = load_manifest(
        write_manifest(
            tmp_path,
            [
                app_entry(
                    commit=recorded,
                    path="python3.12/step-func/{{cookiecutter.project_name}}",
                    cookiecutter=True,
                )
            ],
        )
    )[0]

    # ... when it is exported, then the recorded version is rendered with its cookiecutter defaults.
    folder = export_app(app, tmp_path / "sources", tmp_path, tmp_path / "work")
    assert folder.name == "sample-app"
    assert (folder / "template.yaml").read_text() == "Runtime: python3.12\n"


def test_a_repository_missing_from_the_sources_says_what_to_clone(tmp_path: Path) -> None:
    app = load_manifest(write_manifest(tmp_path, [app_entry()]))[0]
    with pytest.raises(SourceUnavailableError, match=re.escape("git clone https://github.com/someone/app")):
        export_app(app, tmp_path, tmp_path, tmp_path / "work")


def test_the_report_counts_rates_over_the_apps_that_ran_and_groups_alike_causes() -> None:
    results = [
        AppResult("a", True, True, "passed", "", 3.0, "SUCCEEDED"),
        AppResult("b", False, False, "deploy", "pip does not support python 3.9 (requires >=3.10)", 1.0),
        AppResult("c", False, False, "deploy", "pip does not support python 3.7 (requires >=3.10)", 1.0),
        AppResult("d", True, False, "compare", "ended FAILED, README says SUCCEEDED", 2.0, "FAILED"),
        AppResult("e", False, False, "source", "someone/app is not under /src", 0.0),
    ]

    figures = summary(results)

    assert (figures["ran"], figures["deployed"], figures["ended_as_readme"], figures["unavailable"]) == (
        4,
        2,
        1,
        1,
    )
    assert figures["causes"] == {
        "deploy: pip does not support python … (requires >=…)": 2,
        "compare: ended FAILED, README says SUCCEEDED": 1,
    }
    assert "deployed:           2 of 4 (50%)" in render(results)


OWN_MANIFEST = Path(__file__).resolve().parent / "own_apps.yaml"


@pytest.mark.e2e
@pytest.mark.slow  # each app starts a `local up` process of its own: about 20 s apiece
@pytest.mark.parametrize("app", load_manifest(OWN_MANIFEST), ids=lambda app: app.id)
def test_the_runner_deploys_and_runs_an_app_in_its_own_local_up(app: CompatApp) -> None:
    result = run_app(app, sources=None, local_root=OWN_MANIFEST.parent, deploy_timeout=180, run_timeout=60)

    assert (result.stage, result.cause) == ("passed", "")
    assert result.deployed
    assert result.ended_as_readme


def test_a_run_aws_refuses_counts_apart_when_refused_here_too_and_as_a_gap_when_run() -> None:
    results = [
        AppResult("a", True, True, "passed", "", 3.0, "SUCCEEDED"),
        AppResult("old", False, False, "aws-refused", "refused as AWS refuses it: python3.7", 1.0),
        AppResult("new", False, False, "interpreter", "python3.14 is not installed", 1.0),
        AppResult("d", True, False, "compare", "ended FAILED, README says SUCCEEDED", 2.0, "FAILED"),
    ]

    figures = summary(results)

    assert (figures["ran"], figures["refused_as_aws"], figures["runnable_on_aws"]) == (3, 1, 2)
    assert figures["no_interpreter"] == 1
    assert figures["causes"] == {"compare: ended FAILED, README says SUCCEEDED": 1}
    assert "ended as README, of the runs AWS can run: 1 of 2 (50%)" in render(results)


def test_aws_refuses_needs_a_stage_a_pattern_and_the_reason(tmp_path: Path) -> None:
    entry = app_entry(aws_refuses={"stage": "deploy", "cause": "python3[.]7"})
    with pytest.raises(ManifestError, match="demo: aws_refuses needs 'stage'"):
        load_manifest(write_manifest(tmp_path, [entry]))
    entry = app_entry(aws_refuses={"stage": "deploy", "cause": "(", "why": "old runtime"})
    with pytest.raises(ManifestError, match=r"aws_refuses\.cause is not a regular expression"):
        load_manifest(write_manifest(tmp_path, [entry]))


@pytest.mark.e2e
@pytest.mark.parametrize("refused_at", ["deploy", "compare"])
def test_an_app_aws_refuses_passes_only_when_the_local_cloud_refuses_it_where_aws_does(
    tmp_path: Path, refused_at: str
) -> None:
    entry = app_entry(
        id="own/retired-runtime",
        repository="local",
        path="fixtures/retired_runtime",
        aws_refuses={"stage": refused_at, "cause": "python3[.]7", "why": "CreateFunction refuses python3.7"},
    )
    app = load_manifest(write_manifest(tmp_path, [entry]))[0]

    result = run_app(app, sources=None, local_root=OWN_MANIFEST.parent, deploy_timeout=120, run_timeout=30)

    if refused_at == "deploy":
        assert result.stage == "aws-refused"
        assert result.cause == "refused as AWS refuses it: CreateFunction refuses python3.7"
    else:  # refused at another stage than AWS: a failure, not a match
        assert result.stage == "deploy"
        assert "python3.7" in result.cause
    assert not result.ended_as_readme
