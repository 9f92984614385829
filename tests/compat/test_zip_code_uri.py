"""A function whose CodeUri names a .zip, as `sam deploy` accepts it: the archive is the code Lambda runs.

Given a template whose function's CodeUri is a zip built from a source folder (its handler module and a
package at the archive's root), the local cloud must extract it outside the user's tree, once per
content, and run the handler from there as Lambda does; code already in S3 cannot run locally and must be
refused naming the resource.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sam_local_cloud import LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.stack import TemplateError, load_stack

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "zip_code_uri"
SOURCE = FIXTURE / "greeter"


def zipped(folder: Path, archive: Path) -> Path:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as writer:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                writer.write(path, path.relative_to(folder).as_posix())
    return archive


def app_in(folder: Path, code_uri: object = "greeter.zip") -> Path:
    """The fixture's template in ``folder`` beside a zip of its source, its CodeUri set to ``code_uri``."""
    zipped(SOURCE, folder / "greeter.zip")
    text = (FIXTURE / "template.yaml").read_text()
    template = folder / "template.yaml"
    template.write_text(text.replace("CodeUri: greeter.zip", f"CodeUri: {json.dumps(code_uri)}"))
    return template


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    with LocalCloud(LocalCloudConfig(template=app_in(tmp_path_factory.mktemp("zip_app")))) as started:
        yield started


def test_the_committed_archive_holds_the_source_folder() -> None:
    with zipfile.ZipFile(FIXTURE / "greeter.zip") as archive:
        committed = {name: archive.read(name) for name in archive.namelist()}

    assert committed == {
        path.relative_to(SOURCE).as_posix(): path.read_bytes() for path in SOURCE.rglob("*") if path.is_file()
    }


@pytest.mark.e2e
def test_the_zipped_function_runs_from_its_archive(cloud: LocalCloud) -> None:
    template_folder = cloud.config.template.parent
    sfn, lambda_client = cloud.client("stepfunctions"), cloud.client("lambda")

    answer = lambda_client.invoke(FunctionName="Greeter", Payload=b'{"name": "ann"}')
    execution = sfn.start_execution(stateMachineArn=cloud.stack.outputs["GreetArn"], input='{"name": "bo"}')

    assert "FunctionError" not in answer
    assert json.loads(answer["Payload"].read()) == {"greeting": "hello, ann"}
    assert wait_for_execution(sfn, execution["executionArn"], timeout=30) == "SUCCEEDED"
    output = sfn.describe_execution(executionArn=execution["executionArn"])["output"]
    assert json.loads(output) == {"greeting": "hello, bo"}
    # Extracted into the build cache, never beside the archive.
    assert sorted(path.name for path in template_folder.iterdir()) == ["greeter.zip", "template.yaml"]
    (function,) = cloud.stack.functions
    assert not function.code_dir.is_relative_to(template_folder)


def test_one_archive_content_is_extracted_once(tmp_path: Path) -> None:
    first = load_stack(app_in(tmp_path)).functions[0].code_dir
    again = tmp_path / "again"
    again.mkdir()

    assert load_stack(app_in(again)).functions[0].code_dir == first
    assert sorted(path.name for path in first.iterdir()) == ["greet.py", "greetings"]


@pytest.mark.parametrize(
    "code_uri", ["s3://artifacts/greeter.zip", {"Bucket": "artifacts", "Key": "greeter.zip"}]
)
def test_code_in_s3_is_refused_naming_the_function(tmp_path: Path, code_uri: object) -> None:
    with pytest.raises(TemplateError, match=r"^Greeter: CodeUri .* is in Amazon S3, which AWS would fetch"):
        load_stack(app_in(tmp_path, code_uri))


def test_a_file_that_is_not_a_zip_is_refused_as_lambda_refuses_it(tmp_path: Path) -> None:
    template = app_in(tmp_path)
    (tmp_path / "greeter.zip").write_text("not a zip")

    with pytest.raises(TemplateError, match=r"^Greeter: CodeUri .*Could not unzip uploaded file"):
        load_stack(template)
