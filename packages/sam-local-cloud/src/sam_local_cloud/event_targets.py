"""EventBridge rules deliver to Lambda functions, state machines and SNS topics, as they do on AWS.

moto's rules deliver to SQS queues, log groups and other buses only, so a rule that starts a state machine
or invokes a function matched its events and dropped them. Here the local cloud delivers those targets
itself, after the target's input is shaped as EventBridge shapes it (``Input``, ``InputPath`` or
``InputTransformer``): a function is invoked asynchronously (``InvocationType`` Event), a state machine gets
a new execution with the event as its input, a topic a message. Deliveries leave the PutEvents call at once,
as EventBridge's are asynchronous. The target's ``RoleArn`` is not evaluated (docs/iam.md).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sam_local_cloud.accounts import parts_for_account

if TYPE_CHECKING:
    from sam_local_cloud.moto_seam.services import Rule

_LOGGER = logging.getLogger(__name__)
DELIVERED_HERE = ("lambda", "states", "sns")


def register_hooks() -> None:
    """Rules hand Lambda, Step Functions and SNS targets to ``_deliver`` (install_event_targets)."""
    from sam_local_cloud.moto_seam import hooks
    from sam_local_cloud.moto_seam.services import Rule

    @hooks.around(Rule, "send_to_targets", concern="event_targets")
    def send_to_targets(
        proceed: Callable[[Rule, Any, bool], None],
        self: Rule,
        original_event: Any,  # moto's EventMessageType, which only the seam may import
        transform_input: bool = True,
    ) -> None:
        ours = [target for target in self.targets if _service(target) in DELIVERED_HERE]
        if not ours:
            proceed(self, original_event, transform_input)
            return
        theirs = [target for target in self.targets if target not in ours]
        # moto's own delivery sees only the targets it knows; the rule's list is whole again after it.
        self.targets = theirs
        try:
            proceed(self, original_event, transform_input)
        finally:
            self.targets = theirs + ours
        # Service name -> a client of the rule's cloud that may call it whatever the IAM roles say.
        parts = parts_for_account(self.account_id)
        clients = parts.event_target_clients if parts is not None else None
        if clients is None or not self.event_pattern.matches_event(original_event):
            return
        for target in ours:
            payload = target_input(target, original_event)
            threading.Thread(
                target=_deliver, args=(clients, target, payload), name="event-target", daemon=True
            ).start()


def _service(target: dict[str, Any]) -> str:
    parts = str(target.get("Arn", "")).split(":")
    return parts[2] if len(parts) > 2 else ""


def target_input(target: dict[str, Any], event: Any) -> str:
    """The text EventBridge sends a target: ``Input`` as given, the part of the event ``InputPath`` names,
    the ``InputTransformer``'s template filled in, or else the whole event."""
    if "Input" in target:
        return str(target["Input"])
    if "InputPath" in target:
        return json.dumps(_at_path(event, str(target["InputPath"])))
    transformer = target.get("InputTransformer")
    if transformer:
        from sam_local_cloud.moto_seam.services import EventTemplateParser

        shaped = EventTemplateParser.parse(
            input_template=transformer.get("InputTemplate"),
            input_paths_map=transformer.get("InputPathsMap", {}),
            event=event,
        )
        return shaped if isinstance(shaped, str) else json.dumps(shaped)
    return json.dumps(event)


def _at_path(event: Mapping[str, object], path: str) -> object:
    node: object = event
    for key in [part for part in path.removeprefix("$").split(".") if part]:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _deliver(clients: Callable[[str], Any], target: dict[str, Any], payload: str) -> None:
    arn = str(target["Arn"])
    service = _service(target)
    try:
        if service == "lambda":
            clients("lambda").invoke(FunctionName=arn, InvocationType="Event", Payload=payload.encode())
        elif service == "states":
            clients("stepfunctions").start_execution(stateMachineArn=arn, input=payload)
        elif service == "sns":
            clients("sns").publish(TopicArn=arn, Message=payload)
    except Exception:  # EventBridge retries and then drops; here the failure is logged, never raised
        _LOGGER.exception("EventBridge target %s was not delivered", arn)
