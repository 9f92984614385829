"""Publishes the service's counters as CloudWatch ``AWS/Lambda`` metrics, as Lambda does."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sam_local_cloud.lambda_service.accounting import MetricsWindow

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch.client import CloudWatchClient
    from mypy_boto3_cloudwatch.literals import StandardUnitType
    from mypy_boto3_cloudwatch.type_defs import DimensionTypeDef, MetricDatumTypeDef, StatisticSetTypeDef

    from sam_local_cloud.lambda_service.service import LambdaService

logger = logging.getLogger(__name__)

NAMESPACE = "AWS/Lambda"
# PutMetricData accepted 20 datums per call for years; staying under that works with any endpoint.
_DATUMS_PER_CALL = 20


def _datums(
    window: MetricsWindow, dimensions: list[DimensionTypeDef], timestamp: datetime
) -> list[MetricDatumTypeDef]:
    def datum(
        name: str,
        unit: StandardUnitType,
        *,
        value: float | None = None,
        statistics: StatisticSetTypeDef | None = None,
    ) -> MetricDatumTypeDef:
        metric: MetricDatumTypeDef = {
            "MetricName": name,
            "Dimensions": dimensions,
            "Timestamp": timestamp,
            "Unit": unit,
        }
        if value is not None:
            metric["Value"] = value
        if statistics is not None:
            metric["StatisticValues"] = statistics
        return metric

    def single(value: float) -> StatisticSetTypeDef:
        return {"SampleCount": 1, "Sum": value, "Minimum": value, "Maximum": value}

    datums = [
        datum("Invocations", "Count", value=window.invocations),
        datum("Throttles", "Count", value=window.throttles),
        datum("Errors", "Count", value=window.errors),
        datum("ConcurrentExecutions", "Count", statistics=single(window.concurrency_peak)),
    ]
    if window.duration_count:
        statistics: StatisticSetTypeDef = {
            "SampleCount": window.duration_count,
            "Sum": window.duration_sum_ms,
            "Minimum": window.duration_min_ms,
            "Maximum": window.duration_max_ms,
        }
        datums.append(datum("Duration", "Milliseconds", statistics=statistics))
    return datums


def _account_window(windows: Iterable[MetricsWindow], account_peak: int) -> MetricsWindow:
    total = MetricsWindow(concurrency_peak=account_peak)
    for window in windows:
        total.invocations += window.invocations
        total.throttles += window.throttles
        total.errors += window.errors
        if window.duration_count:
            if total.duration_count == 0 or window.duration_min_ms < total.duration_min_ms:
                total.duration_min_ms = window.duration_min_ms
            total.duration_max_ms = max(total.duration_max_ms, window.duration_max_ms)
            total.duration_count += window.duration_count
            total.duration_sum_ms += window.duration_sum_ms
    return total


class MetricsPublisher:
    """Every ``interval_seconds`` (and on close) puts Invocations, Throttles, Errors, Duration and
    ConcurrentExecutions per function (dimension ``FunctionName``) and for the account (no dimensions).

    ConcurrentExecutions is the peak of the interval, so read it with the ``Maximum`` statistic.
    Intervals with no activity publish nothing.
    """

    def __init__(
        self,
        service: LambdaService,
        cloudwatch_client: CloudWatchClient,
        *,
        interval_seconds: float = 1.0,
        namespace: str = NAMESPACE,
    ) -> None:
        self.service = service
        self.cloudwatch = cloudwatch_client
        self.interval_seconds = interval_seconds
        self.namespace = namespace
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> MetricsPublisher:
        self._thread = threading.Thread(target=self._loop, name="lambda-metrics", daemon=True)
        self._thread.start()
        return self

    def publish_once(self) -> int:
        """Publish what happened since the previous call; returns the number of datums sent."""
        account_peak, windows = self.service.take_metrics_windows()
        timestamp = datetime.now(UTC)
        datums: list[MetricDatumTypeDef] = []
        for name, window in windows.items():
            if not window.is_empty():
                datums += _datums(window, [{"Name": "FunctionName", "Value": name}], timestamp)
        account = _account_window(windows.values(), account_peak)
        if not account.is_empty():
            datums += _datums(account, [], timestamp)
        for start in range(0, len(datums), _DATUMS_PER_CALL):
            self.cloudwatch.put_metric_data(
                Namespace=self.namespace, MetricData=datums[start : start + _DATUMS_PER_CALL]
            )
        return len(datums)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self._publish_logging_errors()

    stop = close

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_seconds):
            self._publish_logging_errors()

    def _publish_logging_errors(self) -> None:
        try:
            self.publish_once()
        except Exception:  # metrics must never take the service down; the next interval tries again
            logger.exception("publishing Lambda metrics failed")

    def __enter__(self) -> MetricsPublisher:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()
