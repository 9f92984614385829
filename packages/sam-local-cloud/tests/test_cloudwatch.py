"""PutMetricData with counts: one point per value, the statistics as CloudWatch gives them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from sam_local_cloud import DUMMY_CREDENTIALS
from sam_local_cloud.cloudwatch import aggregated_members
from sam_local_cloud.moto_seam.installers import install_cloudwatch
from sam_local_cloud.moto_seam.testing import mock_aws

STATISTICS = ["Sum", "Average", "Minimum", "Maximum", "SampleCount"]


@pytest.fixture
def cloudwatch() -> Iterator[Any]:
    install_cloudwatch()
    with mock_aws():
        yield boto3.client("cloudwatch", region_name="us-east-1", **DUMMY_CREDENTIALS)


def statistics(cloudwatch: Any, metric: str) -> dict[str, float]:
    now = datetime.now(UTC)
    points = cloudwatch.get_metric_statistics(
        Namespace="Orders",
        MetricName=metric,
        StartTime=now - timedelta(minutes=5),
        EndTime=now + timedelta(minutes=5),
        Period=600,
        Statistics=STATISTICS,
    )["Datapoints"]
    assert len(points) == 1, points
    return {name: points[0][name] for name in STATISTICS}


def test_a_billion_counts_are_one_answer_with_the_statistics_of_a_billion_samples(cloudwatch: Any) -> None:
    # Before: moto appended a billion data points inside the request and never answered.
    finished = threading.Event()

    def put() -> None:
        cloudwatch.put_metric_data(
            Namespace="Orders",
            MetricData=[{"MetricName": "Latency", "Values": [2.0, 5.0, 7.0], "Counts": [1e9, 3.0, 0.0]}],
        )
        finished.set()

    threading.Thread(target=put, daemon=True).start()
    assert finished.wait(30), "PutMetricData with a count of a billion did not answer within 30 s"

    assert statistics(cloudwatch, "Latency") == {
        "Sum": 2e9 + 15.0,
        "Average": (2e9 + 15.0) / (1e9 + 3.0),
        "Minimum": 2.0,
        "Maximum": 5.0,  # a count of 0 adds no sample
        "SampleCount": 1e9 + 3.0,
    }


def test_small_counts_give_what_the_same_values_sent_one_by_one_give(cloudwatch: Any) -> None:
    cloudwatch.put_metric_data(
        Namespace="Orders",
        MetricData=[{"MetricName": "Counted", "Values": [1.5, 4.0], "Counts": [2.0, 3.0]}],
    )
    for value in (1.5, 1.5, 4.0, 4.0, 4.0):
        cloudwatch.put_metric_data(
            Namespace="Orders", MetricData=[{"MetricName": "OneByOne", "Value": value}]
        )

    assert statistics(cloudwatch, "Counted") == statistics(cloudwatch, "OneByOne")
    assert statistics(cloudwatch, "Counted")["SampleCount"] == 5.0


def test_moto_checks_the_member_as_it_was_sent(cloudwatch: Any) -> None:
    with pytest.raises(ClientError) as raised:
        cloudwatch.put_metric_data(
            Namespace="Orders", MetricData=[{"MetricName": "Bad", "Values": [1.0, 2.0], "Counts": [1.0]}]
        )

    error = raised.value.response["Error"]
    assert error["Code"] == "InvalidParameterValue"
    assert error["Message"] == (
        "The parameters MetricData.member.1.Values and MetricData.member.1.Counts must be of the same size."
    )


def test_members_without_values_pass_unchanged_and_other_fields_are_kept() -> None:
    single = {"MetricName": "One", "Value": 3.0}
    counted = {"MetricName": "Two", "Values": [0.0, 2.0], "Counts": [float("inf"), 4.0], "Unit": "Count"}

    assert aggregated_members([single, counted]) == [
        single,
        {
            "MetricName": "Two",
            "Unit": "Count",
            "StatisticValues": {"Sum": 0.0, "Minimum": 0.0, "Maximum": 0.0, "SampleCount": float("inf")},
        },
        {
            "MetricName": "Two",
            "Unit": "Count",
            "StatisticValues": {"Sum": 8.0, "Minimum": 2.0, "Maximum": 2.0, "SampleCount": 4.0},
        },
    ]
