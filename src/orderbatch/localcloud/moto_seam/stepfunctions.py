"""moto's Step Functions (its backend, its responses and the ASL interpreter ported from LocalStack).

Every name the engine uses from moto's Step Functions, imported once here (``import X as X`` marks the
re-export). Grouped by the concerns that use them; a name used by several groups is imported once, in
the first group that needs it.
"""

from __future__ import annotations

# -- Executions, their lifecycle and their histories (redrive, histories, executions, express,
#    mock_config, context_object, sync_tracking, task_tokens).
from moto.core.exceptions import AWSError as AWSError
from moto.core.exceptions import ServiceException as ServiceException
from moto.core.responses import ActionResult as ActionResult
from moto.core.responses import EmptyResult as EmptyResult
from moto.logs.exceptions import ResourceAlreadyExistsException as ResourceAlreadyExistsException
from moto.logs.exceptions import ResourceNotFoundException as ResourceNotFoundException
from moto.stepfunctions.exceptions import InvalidName as InvalidName
from moto.stepfunctions.parser import utils as utils
from moto.stepfunctions.parser.api import ExecutionStatus as ExecutionStatus
from moto.stepfunctions.parser.api import HistoryEventType as HistoryEventType
from moto.stepfunctions.parser.api import MapRunStatus as MapRunStatus
from moto.stepfunctions.parser.api import TaskFailedEventDetails as TaskFailedEventDetails
from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
    CustomErrorName as CustomErrorName,
)
from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import (
    ErrorEqualsDecl as ErrorEqualsDecl,
)
from moto.stepfunctions.parser.asl.component.common.error_name.error_name import ErrorName as ErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEvent as FailureEvent,
)
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEventException as FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
    StatesErrorName as StatesErrorName,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
    StatesErrorNameType as StatesErrorNameType,
)
from moto.stepfunctions.parser.asl.component.common.flow.start_at import StartAt as StartAt
from moto.stepfunctions.parser.asl.component.program import program as program
from moto.stepfunctions.parser.asl.component.program.program import Program as Program
from moto.stepfunctions.parser.asl.component.state import state as state
from moto.stepfunctions.parser.asl.component.state.exec import execute_state as execute_state
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import (
    distributed_iteration_component as distributed_iteration_component,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import (
    inline_iteration_component as inline_iteration_component,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import (
    iteration_worker as iteration_worker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import job as job
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor import (
    distributed_item_processor_worker as distributed_item_processor_worker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor import (
    map_run_record as map_run_record,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iterator import (
    distributed_iterator_worker as distributed_iterator_worker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branch_worker as branch_worker
from moto.stepfunctions.parser.asl.component.state.exec.state_task import mock_eval_utils as mock_eval_utils
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_callback as state_task_service_callback,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
    StateTaskServiceSfn as StateTaskServiceSfn,
)
from moto.stepfunctions.parser.asl.component.state.state import CommonStateField as CommonStateField
from moto.stepfunctions.parser.asl.component.state.state_continue_with import (
    ContinueWithEnd as ContinueWithEnd,
)
from moto.stepfunctions.parser.asl.component.test_state.program import (
    test_state_program as test_state_program,
)
from moto.stepfunctions.parser.asl.eval.environment import Environment as Environment
from moto.stepfunctions.parser.asl.eval.evaluation_details import EvaluationDetails as EvaluationDetails
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails as EventDetails
from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager as EventManager
from moto.stepfunctions.parser.asl.eval.event.logging import (
    CloudWatchLoggingConfiguration as CloudWatchLoggingConfiguration,
)
from moto.stepfunctions.parser.asl.eval.event.logging import (
    CloudWatchLoggingSession as CloudWatchLoggingSession,
)
from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded as ProgramEnded
from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped as ProgramStopped
from moto.stepfunctions.parser.asl.eval.program_state import ProgramTimedOut as ProgramTimedOut
from moto.stepfunctions.parser.backend import execution as execution
from moto.stepfunctions.parser.backend import execution_worker as execution_worker
from moto.stepfunctions.parser.backend.execution import (
    BaseExecutionWorkerCommunication as BaseExecutionWorkerCommunication,
)
from moto.stepfunctions.parser.backend.execution import Execution as Execution
from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker as ExecutionWorker
from moto.stepfunctions.parser.mocking.mock_config import MockedResponseReturn as MockedResponseReturn
from moto.stepfunctions.parser.mocking.mock_config import MockedResponseThrow as MockedResponseThrow
from moto.stepfunctions.parser.models import StepFunctionsParserBackend as StepFunctionsParserBackend
from moto.stepfunctions.parser.models import stepfunctions_parser_backends as stepfunctions_parser_backends
from moto.stepfunctions.responses import StepFunctionResponse as StepFunctionResponse


# -- Definitions and their languages (jsonpath, jsonata, intrinsics, definition_support, definitions,
#    assign_literals, preprocessor_scopes, errors, wait_state).


# -- Tasks and the Map state (service_errors, service_tasks, api_gateway_tasks, lambda_tasks,
#    task_clients, map_state, distributed_map, shared_inputs, worker_threads, the server app).


# -- TestState (test_state).
