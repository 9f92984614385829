"""``GET /events``: what happened to images and containers, as a stream that stays open.

SAM CLI watches image ``tag`` events while it serves (start-lambda, start-api): a rebuilt image tagged
again makes it replace the warm containers made from the old one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import TypedDict

from sam_local_cloud.docker_api.errors import bad_request


class EventActor(TypedDict):
    ID: str
    Attributes: dict[str, str]


class Event(TypedDict):
    """An event as ``GET /events`` streams it, in Docker's field names."""

    Type: str
    Action: str
    Actor: EventActor
    scope: str
    time: int
    timeNano: int
    status: str
    id: str


_FILTERS = {"type": "Type", "event": "Action", "container": "container", "image": "image"}
_KEEP = 1000
# How often a follower with nothing to send lets the server check its client is still there.
HEARTBEAT_SECONDS = 2.0


class EventLog:
    def __init__(self) -> None:
        self._events: list[tuple[int, Event]] = []  # (sequence number, event), the last _KEEP
        self._published = 0
        self._changed = threading.Condition()

    def publish(self, kind: str, action: str, actor_id: str, attributes: dict[str, str]) -> None:
        now = time.time_ns()
        event: Event = {
            "Type": kind,
            "Action": action,
            "Actor": {"ID": actor_id, "Attributes": attributes},
            "scope": "local",
            "time": now // 1_000_000_000,
            "timeNano": now,
            # The fields of the API before 1.22, which docker-py's callers still read.
            "status": action,
            "id": actor_id,
        }
        with self._changed:
            self._published += 1
            self._events.append((self._published, event))
            del self._events[:-_KEEP]
            self._changed.notify_all()

    def follow(
        self,
        filters: dict[str, list[str]],
        *,
        since: float | None,
        until: float | None,
        stop: threading.Event,
    ) -> Iterator[Event | None]:
        """Matching events (past ones from ``since`` on), then new ones until ``until`` (a time) or
        ``stop``; None now and then while idle."""
        with self._changed:
            past = [
                event
                for _, event in self._events
                if since is not None and since <= event["time"] and (until is None or event["time"] <= until)
            ]
            seen = self._published
        yield from (event for event in past if _matches(event, filters))
        while not stop.is_set() and (until is None or time.time() <= until):
            with self._changed:
                if self._published == seen:
                    wait = (
                        HEARTBEAT_SECONDS
                        if until is None
                        else max(0.0, min(HEARTBEAT_SECONDS, until - time.time()))
                    )
                    self._changed.wait(timeout=wait)
                new = [event for number, event in self._events if number > seen]
                seen = self._published
            if not new:
                yield None
            yield from (event for event in new if _matches(event, filters))


def check_filters(filters: dict[str, list[str]]) -> None:
    unknown = set(filters) - set(_FILTERS)
    if unknown:
        raise bad_request(f"invalid filter '{sorted(unknown)[0]}'")


def _matches(event: Event, filters: dict[str, list[str]]) -> bool:
    for key, values in filters.items():
        if key == "type":
            found = event["Type"]
        elif key == "event":
            found = event["Action"]
        elif key == event["Type"]:
            found = event["Actor"]["Attributes"].get("name", "")
            if event["id"] in values or any(event["id"].startswith(value) for value in values):
                continue
        else:
            return False
        if found not in values:
            return False
    return True
