"""moto's private members of its other services and its core that the local cloud needs, read here only.

As ``interpreter_internals`` for Step Functions: one function per member, under a name of the local
cloud's own, so that nothing outside the seam reads moto's private names (``tests/test_private_reads.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def validate_metric_datum(backend: object, member: Mapping[str, Any], number: int) -> None:
    """CloudWatch's checks of one PutMetricData member (``number`` from 1), raising what moto raises."""
    moto_backend: Any = backend  # moto's CloudWatchBackend: the check is private, unannotated
    moto_backend._validate_parameters_put_metric_data(member, number)


def recorder_enabled() -> bool:
    """Whether moto's request recorder was switched on (it then sees every request)."""
    from sam_local_cloud.moto_seam.services import recorder

    enabled: bool = recorder._user_enabled
    return enabled
