"""CloudWatch's PutMetricData keeps a value and its count as one aggregated point, as CloudWatch does.

A ``Values`` member may give each value a count (``Counts``: doubles, with no upper bound in the API), the
number of times the value was seen. moto stored such a member as one data point per count: a count of a
billion appended a billion objects inside one request, and the local cloud stopped answering while its
memory grew past 5 GB (the 20,000-request fuzz run drew such a request). Here each value with its count is
one aggregated point (sum value x count, minimum and maximum the value, sample count the count), which
every statistic moto computes from stored points (Sum, Average, Minimum, Maximum, SampleCount) reads
exactly as it read the copies. moto's own checks of the member (the two lists of one size, no NaN, Value
and Values not both) still run first, on the member as it was sent.
"""

from __future__ import annotations

from typing import Any


def aggregated_members(metric_data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``metric_data`` with every value of a ``Values`` member as a ``StatisticValues`` member of its own.

    A count below or at zero adds no sample (moto added no copy for it either).
    """
    members: list[dict[str, Any]] = []
    for member in metric_data:
        values = member.get("Values")
        if not values:
            members.append(member)
            continue
        counts = member.get("Counts") or [1.0] * len(values)
        common = {key: value for key, value in member.items() if key not in ("Values", "Counts")}
        for value, count in zip(values, counts, strict=True):
            value, count = float(value), float(count)
            if count <= 0:
                continue
            # 0 x an unbounded count is 0, not NaN.
            total = value * count if value else 0.0
            statistics = {"Sum": total, "Minimum": value, "Maximum": value, "SampleCount": count}
            members.append({**common, "StatisticValues": statistics})
    return members


def register_hooks() -> None:
    """PutMetricData stores ``aggregated_members`` of what moto validated (installers.install_cloudwatch)."""
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.backend_internals import validate_metric_datum
    from sam_local_cloud.moto_seam.services import CloudWatchBackend

    @hooks.around(CloudWatchBackend, "put_metric_data", concern="cloudwatch")
    def put_metric_data(proceed: Any, self: Any, namespace: str, metric_data: list[dict[str, Any]]) -> None:
        for number, member in enumerate(metric_data, start=1):
            validate_metric_datum(self, member, number)
        proceed(self, namespace, aggregated_members(metric_data))
