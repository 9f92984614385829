"""moto's per-account state: what a cloud clears, keeps and puts back of its own account, leaving other
clouds' accounts alone."""

from __future__ import annotations

import copy
import threading
import types
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from moto.core.base_backend import BackendDict, backend_lock
from moto.s3.models import s3_backends


def forget_account(account_id: str) -> None:
    """Drop every service's state in ``account_id``, as moto's reset does for all accounts at once (S3's
    reset also closes its objects' files and frees its bucket names, which are global)."""
    with backend_lock:
        for service_backends in list(BackendDict._instances):  # type: ignore[misc]
            account_backends = service_backends.get(account_id)
            if account_backends is not None:
                account_backends.reset()
                del service_backends[account_id]


@dataclass
class AccountSnapshot:
    """Deep copies of every service's state in one account, as it was when taken."""

    account_id: str
    services: dict[Any, Any] = field(default_factory=dict)  # BackendDict -> its AccountSpecificBackend
    # The locks, conditions and events inside the copies: found once, as the copies never change.
    synchronisers: list[Any] = field(default_factory=list)


def snapshot_account(account_id: str) -> AccountSnapshot:
    with backend_lock:
        services = {
            service_backends: _copied(service_backends[account_id])
            for service_backends in BackendDict._instances  # type: ignore[misc]
            if account_id in service_backends
        }
    return AccountSnapshot(account_id, services, list(_synchronisers(services)))


def restore_account(snapshot: AccountSnapshot) -> None:
    """The account as the snapshot has it: what was made since is gone, what was changed is as it was. The
    snapshot stays as it is, to be restored again."""
    account_id = snapshot.account_id
    with backend_lock:
        forget_account(account_id)
        fresh = {id(found): _fresh(found) for found in snapshot.synchronisers}
        for service_backends, saved in snapshot.services.items():
            # A memo of its own for each copy: deepcopy keeps its working objects in the one it is given.
            service_backends[account_id] = copy.deepcopy(saved, dict(fresh))
            if service_backends not in BackendDict._instances:  # type: ignore[misc]
                BackendDict._instances.append(service_backends)  # type: ignore[misc]
        if account_id in s3_backends:
            for partition, backend in s3_backends[account_id].items():
                for name in backend.buckets:
                    s3_backends.bucket_accounts[name] = (partition, account_id)


# What no deep copy can copy (moto's SQS queue waits on a Condition): each copy gets a fresh one instead.
_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))
_SYNCHRONISERS = (*_LOCK_TYPES, threading.Condition, threading.Event, threading.Semaphore)
# Not state: a deep copy keeps these as they are, and the walk does not go into them.
_ATOMIC = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, str, bytes)


def _copied(root: Any) -> Any:
    return copy.deepcopy(root, {id(found): _fresh(found) for found in _synchronisers(root)})


def _fresh(synchroniser: Any) -> Any:
    if isinstance(synchroniser, _LOCK_TYPES):
        return type(synchroniser)()
    if isinstance(synchroniser, threading.Event):
        fresh = threading.Event()
        if synchroniser.is_set():
            fresh.set()
        return fresh
    if isinstance(synchroniser, threading.Semaphore):
        return type(synchroniser)(synchroniser._value)
    return threading.Condition()


def _synchronisers(root: Any) -> Iterator[Any]:
    """The locks, conditions, events and semaphores reachable from ``root`` as a deep copy reaches."""
    seen: set[int] = set()
    pending = [root]
    while pending:
        item = pending.pop()
        if id(item) in seen or isinstance(item, _ATOMIC) or item is None:
            continue
        seen.add(id(item))
        if isinstance(item, _SYNCHRONISERS):
            yield item
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset | deque):
            pending.extend(item)
        elif isinstance(item, types.MethodType):
            pending.append(item.__self__)  # a deep copy copies a bound method's object
        if hasattr(item, "__dict__") and not isinstance(item, _SYNCHRONISERS):
            pending.extend(vars(item).values())
        for slot in getattr(type(item), "__slots__", ()):
            if isinstance(slot, str) and hasattr(item, slot):
                pending.append(getattr(item, slot))
