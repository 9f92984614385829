"""An S3 operation moto has no code for is refused as a gap of the local cloud, never run as another.

moto's S3 runs the plain object operation for a query marker it does not know: ListObjectAnnotations
answered the object's bytes with status 500, DeleteObjectAnnotation deleted the object.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sam_local_cloud import LocalCloud, LocalCloudConfig

BUCKET = "annotated-things"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("s3-gaps")
    template = folder / "template.yaml"
    resources = {"Things": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": BUCKET}}}
    template.write_text(json.dumps({"Transform": "AWS::Serverless-2016-10-31", "Resources": resources}))
    config = LocalCloudConfig(template=Path(template), port=0, state_dir=folder / "state")
    with LocalCloud(config) as cloud:
        client = cloud.client("s3", retries=False)
        client.put_object(Bucket=BUCKET, Key="report.csv", Body=b"id,total\n1,9.99\n")
        yield client


def _refusal(call: Any, **request: Any) -> tuple[int, str, str]:
    with pytest.raises(ClientError) as raised:
        call(**request)
    response = raised.value.response
    return (
        response["ResponseMetadata"]["HTTPStatusCode"],
        response["Error"]["Code"],
        response["Error"]["Message"],
    )


def test_annotation_operations_are_refused_and_the_object_is_untouched(s3: Any) -> None:
    key = {"Bucket": BUCKET, "Key": "report.csv"}
    assert _refusal(s3.list_object_annotations, **key) == (
        400,
        "UnsupportedOperationException",
        "The local cloud does not implement S3 GetObjectAnnotation or ListObjectAnnotations.",
    )
    assert _refusal(s3.delete_object_annotation, **key, AnnotationName="owner") == (
        400,
        "UnsupportedOperationException",
        "The local cloud does not implement S3 DeleteObjectAnnotation.",
    )
    assert s3.get_object(**key)["Body"].read() == b"id,total\n1,9.99\n"


def test_operations_moto_knows_still_reach_it(s3: Any) -> None:
    # Tagging is named by a marker moto implements; GetObject by none (botocore's ?x-id only routes).
    s3.put_object_tagging(
        Bucket=BUCKET, Key="report.csv", Tagging={"TagSet": [{"Key": "owner", "Value": "finance"}]}
    )
    assert s3.get_object_tagging(Bucket=BUCKET, Key="report.csv")["TagSet"] == [
        {"Key": "owner", "Value": "finance"}
    ]
    assert s3.head_object(Bucket=BUCKET, Key="report.csv")["ContentLength"] == 16
