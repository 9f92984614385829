"""Reads a SAM template into the resources the local cloud creates: ``load_stack(path)`` -> ``LocalStack``.

``template`` translates the template (SAM CLI's plugins and intrinsic resolver, with our symbol table of
local physical names and ARNs; parameters and conditions); ``resources`` turns each resolved resource
into the stack, by type, with ``functions`` (functions and layers), ``state_machines``, ``apis`` (HTTP and
REST API routes) and ``messaging`` (queues, buses, rules, subscriptions); ``model`` holds the specs.
"""

from sam_local_cloud.stack.model import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_REGION,
    DEFAULT_STACK_NAME,
    EventRuleSpec,
    HttpRoute,
    LocalStack,
    QueueSpec,
    StateMachineSpec,
    SubscriptionSpec,
    TableSpec,
    TemplateError,
)
from sam_local_cloud.stack.nested import stack_return_values
from sam_local_cloud.stack.state_machines import (
    LOCAL_ROLE_ARN,
    definition_refusal,
    local_role_arn,
    logging_configuration,
    substitute_definition,
)
from sam_local_cloud.stack.template import apply_conditions, load_stack, physical_ids

__all__ = [
    "DEFAULT_ACCOUNT_ID",
    "DEFAULT_REGION",
    "DEFAULT_STACK_NAME",
    "LOCAL_ROLE_ARN",
    "EventRuleSpec",
    "HttpRoute",
    "LocalStack",
    "QueueSpec",
    "StateMachineSpec",
    "SubscriptionSpec",
    "TableSpec",
    "TemplateError",
    "apply_conditions",
    "definition_refusal",
    "load_stack",
    "local_role_arn",
    "logging_configuration",
    "physical_ids",
    "stack_return_values",
    "substitute_definition",
]
