"""The metrics publisher puts Lambda's CloudWatch metrics where get_metric_statistics finds them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from sam_local_cloud import DUMMY_CREDENTIALS
from sam_local_cloud.lambda_service import MetricsPublisher, TooManyRequestsError
from sam_local_cloud.moto_seam.testing import mock_aws


def statistic(cloudwatch: Any, metric: str, stat: str, function_name: str | None = None) -> float:
    dimensions = [{"Name": "FunctionName", "Value": function_name}] if function_name else []
    now = datetime.now(UTC)
    datapoints = cloudwatch.get_metric_statistics(
        Namespace="AWS/Lambda",
        MetricName=metric,
        Dimensions=dimensions,
        StartTime=now - timedelta(minutes=5),
        EndTime=now + timedelta(minutes=5),
        Period=60,
        Statistics=[stat],
    )["Datapoints"]
    return sum(point[stat] for point in datapoints) if stat == "Sum" else max(p[stat] for p in datapoints)


def test_invocations_throttles_errors_duration_and_concurrency_are_published(
    serve_lambda: Callable[..., Any], probe_function: Callable[..., Any]
) -> None:
    served = serve_lambda([probe_function("Measured"), probe_function("Blocked", reserved_concurrency=0)])
    service = served.service
    service.invoke("Measured", b"{}")
    service.invoke("Measured", b'{"raise": "boom"}')
    with pytest.raises(TooManyRequestsError):
        service.invoke("Blocked", b"{}")

    with mock_aws():
        cloudwatch = boto3.client(
            "cloudwatch",
            region_name="us-east-1",
            **DUMMY_CREDENTIALS,
        )
        publisher = MetricsPublisher(service, cloudwatch)
        assert publisher.publish_once() > 0
        assert publisher.publish_once() == 0, "an interval without activity publishes nothing"

        assert statistic(cloudwatch, "Invocations", "Sum", "Measured") == 2
        assert statistic(cloudwatch, "Errors", "Sum", "Measured") == 1
        assert statistic(cloudwatch, "Throttles", "Sum", "Blocked") == 1
        assert statistic(cloudwatch, "Invocations", "Sum", "Blocked") == 0
        assert statistic(cloudwatch, "ConcurrentExecutions", "Maximum", "Measured") == 1
        assert statistic(cloudwatch, "Duration", "SampleCount", "Measured") == 2
        # moto's get_metric_statistics ignores an empty dimension filter, so look for the account-level
        # series (no dimensions) by listing them.
        listed = cloudwatch.list_metrics(Namespace="AWS/Lambda", MetricName="Throttles")["Metrics"]
        assert sorted(str(metric["Dimensions"]) for metric in listed) == sorted(
            [
                "[]",
                str([{"Name": "FunctionName", "Value": "Blocked"}]),
                str([{"Name": "FunctionName", "Value": "Measured"}]),
            ]
        )
