"""GetExecutionHistory's pages: ``maxResults``, ``nextToken``, ``reverseOrder`` and ``includeExecutionData``.

moto answers every event in order and ignores all four parameters. An app that reads the newest events
with ``reverseOrder=True, maxResults=6`` (a common error handler looking for the state that failed) got
the oldest events instead. AWS answers at most ``maxResults`` events (0 or absent: 100; at most 1,000),
newest first when ``reverseOrder`` is true, with a ``nextToken`` while more remain; a token is good for
the same execution only, and ``includeExecutionData=false`` leaves out each event's input and output.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any, Final

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam import interpreter_internals as internals
from sam_local_cloud.moto_seam.interpreter_objects import StepFunctionsRequest

if TYPE_CHECKING:
    from collections.abc import Callable

_CONCERN: Final = "history_pages"
DEFAULT_PAGE_SIZE: Final = 100
MAX_PAGE_SIZE: Final = 1000
# Event details whose data ``includeExecutionData=false`` leaves out.
_EXECUTION_DATA_FIELDS: Final = ("input", "output", "inputDetails", "outputDetails")


class HistoryPageError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def history_page(
    execution_arn: str,
    events: list[dict[str, Any]],
    *,
    max_results: int | None,
    next_token: str | None,
    reverse_order: bool,
    include_execution_data: bool,
) -> dict[str, Any]:
    """One page of an execution's events as GetExecutionHistory answers it."""
    if max_results is not None and not 0 <= max_results <= MAX_PAGE_SIZE:
        bound = f"less than or equal to {MAX_PAGE_SIZE}" if max_results > 0 else "greater than or equal to 0"
        raise HistoryPageError(
            "ValidationException",
            f"1 validation error detected: Value '{max_results}' at 'maxResults' failed to satisfy "
            f"constraint: Member must have value {bound}",
        )
    size = max_results or DEFAULT_PAGE_SIZE
    start = _token_offset(next_token, execution_arn, reverse_order) if next_token else 0
    ordered = events[::-1] if reverse_order else events
    page = ordered[start : start + size]
    if not include_execution_data:
        page = [_without_execution_data(event) for event in page]
    answer: dict[str, Any] = {"events": page}
    if start + size < len(ordered):
        answer["nextToken"] = _token(execution_arn, reverse_order, start + size)
    return answer


def _token(execution_arn: str, reverse_order: bool, offset: int) -> str:
    text = json.dumps({"arn": execution_arn, "reverse": reverse_order, "offset": offset})
    return base64.urlsafe_b64encode(text.encode()).decode()


def _token_offset(token: str, execution_arn: str, reverse_order: bool) -> int:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
        offset = decoded["offset"]
        same_request = decoded["arn"] == execution_arn and decoded["reverse"] == reverse_order
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise HistoryPageError("InvalidToken", f"Invalid Token: '{token}'") from None
    if not same_request or not isinstance(offset, int) or offset < 0:
        raise HistoryPageError("InvalidToken", f"Invalid Token: '{token}'")
    return offset


def _without_execution_data(event: dict[str, Any]) -> dict[str, Any]:
    trimmed = dict(event)
    for key, details in event.items():
        if key.endswith("EventDetails") and isinstance(details, dict):
            trimmed[key] = {
                name: value for name, value in details.items() if name not in _EXECUTION_DATA_FIELDS
            }
    return trimmed


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import (
        ActionResult,
        ServiceException,
        StepFunctionResponse,
    )

    class Refused(ServiceException):
        def __init__(self, refusal: HistoryPageError) -> None:
            super().__init__(refusal.code, refusal.message)

    @hooks.around(StepFunctionResponse, "get_execution_history", concern=_CONCERN)
    def get_execution_history(
        proceed: Callable[[StepFunctionsRequest], object], self: StepFunctionsRequest
    ) -> object:
        answered = proceed(self)
        full = answered.result if isinstance(answered, ActionResult) else None
        if not isinstance(full, dict) or not isinstance(full.get("events"), list):
            return answered
        include = internals.request_param(self, "includeExecutionData")
        try:
            page = history_page(
                internals.required_text(self, "executionArn"),
                full["events"],
                max_results=internals.request_int(self, "maxResults"),
                next_token=internals.request_text(self, "nextToken"),
                reverse_order=bool(internals.request_param(self, "reverseOrder")),
                include_execution_data=include is None or bool(include),
            )
        except HistoryPageError as refusal:
            raise Refused(refusal) from None
        return ActionResult(page)
