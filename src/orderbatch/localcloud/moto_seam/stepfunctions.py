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
# isort: split
from moto.core.exceptions import ServiceException as ServiceException
from moto.core.responses import ActionResult as ActionResult
from moto.stepfunctions.parser.api import ExecutionFailedEventDetails as ExecutionFailedEventDetails
from moto.stepfunctions.parser.api import StateMachineType as StateMachineType
from moto.stepfunctions.parser.asl.antlr.runtime.ASLLexer import ASLLexer as ASLLexer
from moto.stepfunctions.parser.asl.antlr.runtime.ASLParser import ASLParser as ASLParser
from moto.stepfunctions.parser.asl.component.common.catch.catch_outcome import CatchOutcome as CatchOutcome
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEventException as FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.parargs import Parargs as Parargs
from moto.stepfunctions.parser.asl.component.common.path.input_path import InputPath as InputPath
from moto.stepfunctions.parser.asl.component.common.path.items_path import ItemsPath as ItemsPath
from moto.stepfunctions.parser.asl.component.common.path.result_path import ResultPath as ResultPath
from moto.stepfunctions.parser.asl.component.common.query_language import QueryLanguage as QueryLanguage
from moto.stepfunctions.parser.asl.component.common.result_selector import ResultSelector as ResultSelector
from moto.stepfunctions.parser.asl.component.common.retry.retry_outcome import RetryOutcome as RetryOutcome
from moto.stepfunctions.parser.asl.component.state.choice.state_choice import StateChoice as StateChoice
from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState as ExecutionState
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (  # noqa: E501
    DistributedIterationComponent as DistributedIterationComponent,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.inline_iteration_component import (  # noqa: E501
    InlineIterationComponent as InlineIterationComponent,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.max_concurrency import (
    MaxConcurrencyDecl as MaxConcurrencyDecl,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer.result_writer_decl import (
    ResultWriter as ResultWriter,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map import StateMap as StateMap
from moto.stepfunctions.parser.asl.component.state.exec.state_map.tolerated_failure import (
    ToleratedFailureCountDecl as ToleratedFailureCountDecl,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.tolerated_failure import (
    ToleratedFailureCountInt as ToleratedFailureCountInt,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.tolerated_failure import (
    ToleratedFailurePercentage as ToleratedFailurePercentage,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.tolerated_failure import (
    ToleratedFailurePercentageDecl as ToleratedFailurePercentageDecl,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branches_decl import (
    BranchesDecl as BranchesDecl,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.state_parallel import (
    StateParallel as StateParallel,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
    StateTaskService as StateTaskService,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_api_gateway import (  # noqa: E501
    StateTaskServiceApiGateway as StateTaskServiceApiGateway,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task import StateTask as StateTask
from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_activitiy import (
    StateTaskActivity as StateTaskActivity,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import (
    StateTaskLambda as StateTaskLambda,
)
from moto.stepfunctions.parser.asl.component.state.fail.state_fail import StateFail as StateFail
from moto.stepfunctions.parser.asl.component.state.state_continue_with import (
    ContinueWithEnd as ContinueWithEnd,
)
from moto.stepfunctions.parser.asl.component.state.state_pass.result import Result as Result
from moto.stepfunctions.parser.asl.component.state.state_pass.state_pass import StatePass as StatePass
from moto.stepfunctions.parser.asl.component.state.state_succeed.state_succeed import (
    StateSucceed as StateSucceed,
)
from moto.stepfunctions.parser.asl.component.state.wait.state_wait import StateWait as StateWait
from moto.stepfunctions.parser.asl.component.test_state.state.test_state_state_props import (
    TestStateStateProps as TestStateStateProps,
)
from moto.stepfunctions.parser.asl.eval.environment import Environment as Environment
from moto.stepfunctions.parser.asl.eval.evaluation_details import AWSExecutionDetails as AWSExecutionDetails
from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext as EventHistoryContext
from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded as ProgramEnded
from moto.stepfunctions.parser.asl.eval.program_state import ProgramError as ProgramError
from moto.stepfunctions.parser.asl.eval.program_state import ProgramRunning as ProgramRunning
from moto.stepfunctions.parser.asl.eval.program_state import ProgramState as ProgramState
from moto.stepfunctions.parser.asl.eval.program_state import ProgramTimedOut as ProgramTimedOut
from moto.stepfunctions.parser.asl.eval.states import ContextObjectData as ContextObjectData
from moto.stepfunctions.parser.asl.eval.states import ExecutionData as ExecutionData
from moto.stepfunctions.parser.asl.eval.states import StateMachineData as StateMachineData
from moto.stepfunctions.parser.asl.eval.variable_store import VariableStore as VariableStore
from moto.stepfunctions.parser.asl.parse.asl_parser import ASLParserException as ASLParserException
from moto.stepfunctions.parser.asl.parse.asl_parser import SyntaxErrorListener as SyntaxErrorListener
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor as Preprocessor
from moto.stepfunctions.parser.asl.utils.encoding import to_json_str as to_json_str
from moto.stepfunctions.parser.mocking.mock_config import MockedResponseReturn as MockedResponseReturn
from moto.stepfunctions.parser.mocking.mock_config import MockedResponseThrow as MockedResponseThrow
from moto.stepfunctions.responses import StepFunctionResponse as StepFunctionResponse
