"""Which local cloud owns which account ID, so that several clouds can live in one process.

moto keeps every service's state in process-wide backends keyed by account ID and region, and the hooks
the local cloud installs into moto's interpreter are process-wide too. So each cloud owns an account ID
of its own: its requests reach moto under that account (``x-moto-account-id``), every ARN it makes
carries it, and a hook finds the cloud's parts (its Lambda service, history store, mock configuration,
...) by the account of the ARN it handles. This table is the one process-wide thing the clouds share, as
they share moto's backends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol


class HistoryKeeper(Protocol):
    """Where finished executions' histories go (stepfunctions.histories.HistoryStore)."""

    def keep(self, execution_arn: str, events: list[Any]) -> None: ...
    def events(self, execution_arn: str) -> list[Any] | None: ...
    def take(self, execution_arn: str) -> list[Any] | None: ...


class MockConfigReader(Protocol):
    """The cloud's MockConfigFile, if any (stepfunctions.mock_config.MockConfigSource)."""

    def current(self) -> Any: ...


# moto's default account, and so the one every example and ARN in AWS's docs uses: the first cloud's.
FIRST_ACCOUNT_ID = "123456789012"
# The request header moto takes the account from before the access key (``x-moto-account-id``), as a WSGI
# environ key: set on every request a cloud hands to moto.
MOTO_ACCOUNT_ENVIRON_KEY = "HTTP_X_MOTO_ACCOUNT_ID"


@dataclass
class CloudParts:
    """What a cloud lends the interpreter's hooks for the executions, rules and Tasks of its account."""

    account_id: str
    port: int | None = None
    # Lambda Tasks invoke the cloud's Lambda service in-process through this client.
    lambda_client: Any | None = None
    # Role ARN -> the keys its Tasks sign with (None: moto's own keys).
    role_credentials: Callable[[str], tuple[str, str] | None] | None = None
    # Role ARN -> whether a .sync Task of it may track its child as the managed EventBridge rule does.
    tracked_by_events: Callable[[str], bool] | None = None
    history_store: HistoryKeeper | None = None
    express_max_duration_seconds: float | None = None
    # (state machine name, the child's input) -> None to run a Distributed Map child once, else whether
    # its two runs overlap.
    duplicate_decider: Callable[[str, Callable[[], Any]], bool | None] | None = None
    # Service name -> the client EventBridge's rules deliver to targets with.
    event_target_clients: Callable[[str], Any] | None = None
    mock_config: MockConfigReader | None = None
    # The clients its Tasks call other services with, by (region, service, the keys they sign with): made
    # on first use, and gone with the cloud.
    task_clients: dict[tuple[str, str, tuple[str, str] | None], Any] = field(default_factory=dict)


class _AccountTable:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claimed: set[str] = set()
        self._parts: dict[str, CloudParts] = {}

    def free(self) -> str:
        with self._lock:
            return self._first_free()

    def claim(self, account_id: str | None, preferred: str | None) -> str:
        if account_id is not None and not (len(account_id) == 12 and account_id.isdigit()):
            raise ValueError(f"account_id {account_id!r}: an AWS account ID is 12 digits")
        with self._lock:
            if account_id is None:
                account_id = preferred if preferred and preferred not in self._claimed else self._first_free()
            elif account_id in self._claimed:
                raise ValueError(
                    f"account {account_id} belongs to another local cloud in this process: each cloud needs "
                    "an account of its own (leave account_id unset to be given a free one)"
                )
            self._claimed.add(account_id)
            return account_id

    def _first_free(self) -> str:
        return next(candidate for candidate in _candidates() if candidate not in self._claimed)

    def release(self, account_id: str) -> None:
        with self._lock:
            self._claimed.discard(account_id)
            self._parts.pop(account_id, None)

    def bind(self, parts: CloudParts) -> None:
        with self._lock:
            self._parts[parts.account_id] = parts

    def unbind(self, account_id: str) -> None:
        with self._lock:
            self._parts.pop(account_id, None)

    def parts_for(self, account_id: str | None) -> CloudParts | None:
        parts = self._parts.get(account_id) if account_id else None
        if parts is None and len(self._parts) == 1:
            # A call with no account of ours in it (a Task's cross-account role, moto's own helpers)
            # belongs to the one cloud there is, as it did before clouds had accounts.
            return next(iter(self._parts.values()))
        return parts


def _candidates() -> Iterator[str]:
    first = int(FIRST_ACCOUNT_ID)
    return (f"{first + offset:012d}" for offset in range(10**6))


_table = _AccountTable()


def free_account() -> str:
    """The account a cloud started now would get: the first free one from 123456789012 on."""
    return _table.free()


def claim_account(account_id: str | None = None, *, preferred: str | None = None) -> str:
    """Take an account ID for a starting cloud: the one asked for (ValueError if another cloud has it),
    else ``preferred`` if free, else the first free one from 123456789012 on."""
    return _table.claim(account_id, preferred)


def release_account(account_id: str) -> None:
    _table.release(account_id)


def bind_cloud(parts: CloudParts) -> None:
    """From now on, the hooks find ``parts`` for everything of ``parts.account_id``."""
    _table.bind(parts)


def unbind_cloud(account_id: str) -> None:
    _table.unbind(account_id)


def account_of(arn: str | None) -> str | None:
    """The account field of an ARN (``arn:aws:<service>:<region>:<account>:...``), if it has one."""
    if not arn:
        return None
    fields = arn.split(":", 5)
    return fields[4] if len(fields) > 4 and fields[4] else None


def parts_for_account(account_id: str | None) -> CloudParts | None:
    return _table.parts_for(account_id)


def parts_for_arn(arn: str | None) -> CloudParts | None:
    """The parts of the cloud whose account the ARN is in (None: no cloud there)."""
    return _table.parts_for(account_of(arn))
