"""moto's Step Functions (its backend, its responses and the ASL interpreter ported from LocalStack).

Every name the engine uses from moto's Step Functions, imported once here (``import X as X`` marks the
re-export). Grouped by the concerns that use them; a name used by several groups is imported once, in
the first group that needs it.
"""

from __future__ import annotations

# -- Executions, their lifecycle and their histories (redrive, histories, executions, express,
#    mock_config, context_object, sync_tracking, task_tokens).
# -- Definitions and their languages (jsonpath, jsonata, intrinsics, definition_support, definitions,
#    assign_literals, preprocessor_scopes, errors, wait_state).
# -- Tasks and the Map state (service_errors, service_tasks, api_gateway_tasks, lambda_tasks,
#    task_clients, map_state, distributed_map, shared_inputs, worker_threads, the server app).
# -- TestState (test_state).
# -- Outside the engine (conformance/runner.py checks a definition as CreateStateMachine would).
from moto.stepfunctions.parser.models import StepFunctionsParserBackend as StepFunctionsParserBackend
