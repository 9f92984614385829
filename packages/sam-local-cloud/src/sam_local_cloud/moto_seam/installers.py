"""Every group of hooks into moto, installed for a process in one call per group.

A process installs the groups it serves: the local cloud all of them (``install_everything``), its
DynamoDB data plane only DynamoDB's and the model registry's. Each installer registers its concerns'
hooks and installs them, once per process; calling it again does nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

# One lock for every group: ``hooks.install()`` installs whatever is registered, so one group's install
# must not run while another group is half registered.
_lock = threading.RLock()
_installed: set[str] = set()


def _once(group: str, register: Callable[[], None]) -> None:
    from sam_local_cloud.moto_seam import hooks

    with _lock:
        if group in _installed:
            return
        register()
        hooks.install()
        _installed.add(group)


def install_step_functions() -> None:
    """moto's Step Functions interpreter with every concern of ``sam_local_cloud.stepfunctions``."""
    from sam_local_cloud.stepfunctions import apply_interpreter_patches

    with _lock:
        apply_interpreter_patches()


def install_dynamodb() -> None:
    """Transactions that roll back by item instead of by whole-table copies (``dynamodb``), and a malformed
    condition or filter expression refused as DynamoDB refuses it."""

    def register() -> None:
        from sam_local_cloud import dynamodb

        install_dynamodb_expression_errors()
        dynamodb.register_hooks()

    _once("dynamodb", register)


def install_dynamodb_expression_errors() -> None:
    """DynamoDB's ValidationException for a malformed condition or filter expression, where moto raises a
    Python error (``dynamodb_expression_errors``); part of ``install_dynamodb``."""

    def register() -> None:
        from sam_local_cloud.moto_seam import dynamodb_expression_errors

        dynamodb_expression_errors.register_hooks()

    _once("dynamodb_expression_errors", register)


def install_request_caches() -> None:
    """The caches of ``dynamodb_service``: method lists of every service's responses, DynamoDB's parses.

    Whoever serves DynamoDB with ``DynamoDBApp`` installs them (the local cloud, its data plane).
    """

    def register() -> None:
        from sam_local_cloud import dynamodb_service

        dynamodb_service.register_hooks()

    _once("request_caches", register)


def install_model_registry() -> None:
    """Models no longer tracked per instance (S3's aside), DynamoDB's values compact (``moto_models``)."""

    def register() -> None:
        from sam_local_cloud import moto_models

        moto_models.register_hooks()

    _once("model_registry", register)


def install_event_targets() -> None:
    """EventBridge rules deliver to functions, state machines and topics (``event_targets``)."""

    def register() -> None:
        from sam_local_cloud import event_targets

        event_targets.register_hooks()

    _once("event_targets", register)


def install_cloudwatch() -> None:
    """PutMetricData keeps a value and its count as one point, not one point per count (``cloudwatch``)."""

    def register() -> None:
        from sam_local_cloud import cloudwatch

        cloudwatch.register_hooks()

    _once("cloudwatch", register)


def install_shared_sdk_session() -> None:
    """moto's backends list regions from the local cloud's one botocore session (``sdk_models``)."""

    def register() -> None:
        from sam_local_cloud import sdk_models

        sdk_models.register_hooks()

    _once("shared_sdk_session", register)


def install_everything() -> None:
    """Registers and installs every concern's hooks; idempotent."""
    install_step_functions()
    install_dynamodb()
    install_request_caches()
    install_model_registry()
    install_event_targets()
    install_cloudwatch()
    install_shared_sdk_session()
