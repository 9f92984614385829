"""moto in server mode, as the local Step Functions, DynamoDB, S3, CloudWatch, SNS and Logs.

moto's Step Functions interpreter (ported from LocalStack) runs the executions. What the local cloud changes
in it, without forking it, lives beside this module, one concern each, and reaches moto only through
``moto_seam`` (each module's ``register_hooks()`` registers its listeners; nothing here assigns to moto):
``errors`` (its errors' codes), ``error_names`` (error names as AWS reads them: strings, ``States.`` ones
too), ``definition_support`` (constructs AWS accepts and moto's grammar lacks, taken out before moto parses
and kept), ``parse_trees`` (a definition's syntax tree parsed once, not per execution), ``definitions`` (the
definitions CreateStateMachine refuses), ``distributed_map`` (the Distributed Map's readers, batches,
tolerated failures, Express children and result files), ``task_clients`` (how Tasks reach services),
``map_state`` (the Map state's limits and memory), ``histories`` (what a finished execution keeps),
``history_pages`` (GetExecutionHistory's paging and order), ``executions`` (StartExecution where moto answers
unlike AWS), ``express`` (EXPRESS state machines: StartSyncExecution, their executions' limit and logs, what
the other APIs answer for them), ``jsonpath`` (paths in Jayway's dialect with AWS's result shapes),
``intrinsics`` (how ``States.*`` invocations are read and fail), ``assign_literals`` (text in ``Assign``
decoded from its JSON string), ``preprocessor_scopes`` (each definition read with its own QueryLanguage
scopes), ``lambda_tasks`` (Lambda Task results and error causes in AWS's shapes), ``service_tasks`` (service
integrations' parameters and results), ``service_errors`` (their error names, and the integration patterns not
run locally), ``api_gateway_tasks`` (``apigateway:invoke`` to the template's HTTP API), ``task_tokens``
(SendTaskFailure's cause), ``activities`` (activity Tasks and GetActivityTask), ``shared_inputs`` (the Map's
input read by every item's ItemSelector without a copy per item), ``worker_threads`` (Task states and Map
iterations on parked threads), ``redrive`` (RedriveExecution, which moto lacks) and ``mock_config`` (Step
Functions Local's MockConfigFile test cases), ``teststate`` (the TestState API), ``jsonata`` (JSONata
expressions), ``context_object`` (the context object's shapes), ``wait_state`` (Wait's limits) and
``sync_tracking`` (``.sync`` children followed as AWS's managed rule does).
"""

from __future__ import annotations

import threading
from typing import Any

from orderbatch.localcloud.moto_seam import hooks
from orderbatch.localcloud.stepfunctions import (
    activities,
    api_gateway_tasks,
    assign_literals,
    context_object,
    definition_support,
    definitions,
    distributed_map,
    error_names,
    errors,
    executions,
    express,
    histories,
    history_pages,
    intrinsics,
    jsonata,
    jsonpath,
    lambda_tasks,
    map_state,
    mock_config,
    parse_trees,
    preprocessor_scopes,
    redrive,
    service_errors,
    service_tasks,
    shared_inputs,
    sync_tracking,
    task_clients,
    task_tokens,
    teststate,
    wait_state,
    worker_threads,
)
from orderbatch.localcloud.stepfunctions.distributed_map import RESULTS_PER_FILE
from orderbatch.localcloud.stepfunctions.express import EXPRESS_MAX_DURATION_SECONDS, limit_express_duration
from orderbatch.localcloud.stepfunctions.histories import (
    DEFAULT_MAX_EVENTS_IN_MEMORY,
    HistoryStore,
    keep_histories_in,
)
from orderbatch.localcloud.stepfunctions.map_state import INLINE_MAP_CONCURRENCY_LIMIT
from orderbatch.localcloud.stepfunctions.task_clients import route_lambda_tasks_to

__all__ = [
    "DEFAULT_MAX_EVENTS_IN_MEMORY",
    "EXPRESS_MAX_DURATION_SECONDS",
    "INLINE_MAP_CONCURRENCY_LIMIT",
    "RESULTS_PER_FILE",
    "HistoryStore",
    "apply_interpreter_patches",
    "create_moto_app",
    "keep_histories_in",
    "limit_express_duration",
    "route_lambda_tasks_to",
]

_patch_lock = threading.Lock()
_patched = False


def create_moto_app() -> Any:
    """The WSGI application moto's own server runs (`moto_server`), with state machine execution on."""
    from orderbatch.localcloud.moto_seam.stepfunctions import (
        DomainDispatcherApplication,
        create_backend_app,
        default_user_config,
    )

    default_user_config["stepfunctions"] = {"execute_state_machine": True}
    apply_interpreter_patches()
    return DomainDispatcherApplication(create_backend_app)


def apply_interpreter_patches() -> None:
    """Registers every concern's hooks into moto's Step Functions and installs them, once per process."""
    global _patched
    with _patch_lock:
        if _patched:
            return
        for concern in _CONCERN_MODULES:
            concern.register_hooks()
        hooks.install()
        _patched = True


# The order of their listeners on a shared target is what each declares (hooks.order), not this list's.
_CONCERN_MODULES: tuple[Any, ...] = (
    errors,
    error_names,
    definition_support,
    parse_trees,
    definitions,
    task_clients,
    map_state,
    distributed_map,
    histories,
    history_pages,
    executions,
    lambda_tasks,
    jsonata,
    redrive,
    express,
    mock_config,
    teststate,
    context_object,
    wait_state,
    service_tasks,
    jsonpath,
    intrinsics,
    assign_literals,
    preprocessor_scopes,
    service_errors,
    api_gateway_tasks,
    task_tokens,
    activities,
    sync_tracking,
    shared_inputs,
    worker_threads,
)
