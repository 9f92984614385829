"""One botocore session for the local cloud's own clients and for what it reads of AWS's API models.

A botocore Session parses every data file it loads (endpoints, partitions, each service's model) and
keeps the result in its loader. The local cloud asked a fresh Session whenever it read a model (the
Lambda API's runtimes, a service's error codes, a Task's operation) and built its clients on boto3's
default session: the same models were parsed and held three or four times, 25 MB of its process. Every
part of the local cloud now reads models and builds its clients here, from one session, so each file is
parsed once. What a model or a client answers is unchanged. moto's backends list their regions from
the same session (``register_hooks``), not from one of their own.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import boto3.session
import botocore.session
from botocore.model import ServiceModel

# boto3 builds clients unsafely from several threads at once, on one session.
_client_lock = threading.Lock()


@functools.cache
def sdk_session() -> botocore.session.Session:
    """The botocore session every model read and every client of the local cloud's process shares."""
    return botocore.session.get_session()


@functools.cache
def boto3_session() -> boto3.session.Session:
    """The boto3 session on ``sdk_session``."""
    return boto3.session.Session(botocore_session=sdk_session())


@functools.cache
def service_model(service_name: str) -> ServiceModel:
    """``service_name``'s API model (botocore's name: ``stepfunctions``, ``lambda``...), parsed once and
    one object for every caller, so the shapes and operations it resolves are resolved once too."""
    return sdk_session().get_service_model(service_name)


def client(service_name: str, **arguments: Any) -> Any:
    """A boto3 client on the shared session, built as ``boto3.client`` builds one."""
    with _client_lock:
        return boto3_session().client(service_name, **arguments)  # type: ignore[call-overload]


def resource(service_name: str, **arguments: Any) -> Any:
    """A boto3 resource on the shared session, built as ``boto3.resource`` builds one."""
    with _client_lock:
        return boto3_session().resource(service_name, **arguments)  # type: ignore[call-overload]


def register_hooks() -> None:
    """moto's backends read their regions from the shared session (``installers.install_shared_sdk_session``).

    moto builds a boto3 Session of its own for that, and asking it a service's regions parses the
    service's model and botocore's endpoints again: 10 MB more for the services a stack uses.
    """
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import AccountSpecificBackend

    hooks.replace(
        AccountSpecificBackend,
        "get_session",
        classmethod(lambda _cls: boto3_session()),
        concern="shared_sdk_session",
    )
