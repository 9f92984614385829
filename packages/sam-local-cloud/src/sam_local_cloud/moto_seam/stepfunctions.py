"""moto's Step Functions (its backend, its responses and the ASL interpreter ported from LocalStack).

Every name the engine uses from moto's Step Functions, imported once here (``import X as X`` marks the
re-export); ``fingerprints`` records each of them against the pinned moto.
"""

from __future__ import annotations

from antlr4 import RuleContext as RuleContext
from moto.core.config import default_user_config as default_user_config
from moto.core.exceptions import AWSError as AWSError
from moto.core.exceptions import ServiceException as ServiceException
from moto.core.responses import ActionResult as ActionResult
from moto.core.responses import EmptyResult as EmptyResult
from moto.logs.exceptions import ResourceAlreadyExistsException as ResourceAlreadyExistsException
from moto.logs.exceptions import ResourceNotFoundException as ResourceNotFoundException
from moto.moto_server.werkzeug_app import DomainDispatcherApplication as DomainDispatcherApplication
from moto.moto_server.werkzeug_app import create_backend_app as create_backend_app
from moto.stepfunctions.exceptions import InvalidName as InvalidName
from moto.stepfunctions.parser import api as api
from moto.stepfunctions.parser import utils as utils
from moto.stepfunctions.parser.api import ActivityDoesNotExist as ActivityDoesNotExist
from moto.stepfunctions.parser.api import DescribeExecutionOutput as DescribeExecutionOutput
from moto.stepfunctions.parser.api import EvaluationFailedEventDetails as EvaluationFailedEventDetails
from moto.stepfunctions.parser.api import ExecutionFailedEventDetails as ExecutionFailedEventDetails
from moto.stepfunctions.parser.api import ExecutionStatus as ExecutionStatus
from moto.stepfunctions.parser.api import HistoryEventType as HistoryEventType
from moto.stepfunctions.parser.api import InvalidDefinition as InvalidDefinition
from moto.stepfunctions.parser.api import LambdaFunctionFailedEventDetails as LambdaFunctionFailedEventDetails
from moto.stepfunctions.parser.api import MapRunFailedEventDetails as MapRunFailedEventDetails
from moto.stepfunctions.parser.api import MapRunStatus as MapRunStatus
from moto.stepfunctions.parser.api import StateMachineType as StateMachineType
from moto.stepfunctions.parser.api import TaskFailedEventDetails as TaskFailedEventDetails
from moto.stepfunctions.parser.asl.antlr.runtime.ASLLexer import ASLLexer as ASLLexer
from moto.stepfunctions.parser.asl.antlr.runtime.ASLParser import ASLParser as ASLParser
from moto.stepfunctions.parser.asl.component.common.assign import assign_decl as assign_decl
from moto.stepfunctions.parser.asl.component.common.assign.assign_decl import AssignDecl as AssignDecl
from moto.stepfunctions.parser.asl.component.common.assign.assign_template_binding import (
    AssignTemplateBinding as AssignTemplateBinding,
)
from moto.stepfunctions.parser.asl.component.common.assign.assign_template_value_terminal import (
    AssignTemplateValueTerminalLit as AssignTemplateValueTerminalLit,
)
from moto.stepfunctions.parser.asl.component.common.catch.catch_outcome import CatchOutcome as CatchOutcome
from moto.stepfunctions.parser.asl.component.common.error_name import custom_error_name as custom_error_name
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
from moto.stepfunctions.parser.asl.component.common.jsonata.jsonata_template_binding import (
    JSONataTemplateBinding as JSONataTemplateBinding,
)
from moto.stepfunctions.parser.asl.component.common.outputdecl import Output as Output
from moto.stepfunctions.parser.asl.component.common.parargs import Arguments as Arguments
from moto.stepfunctions.parser.asl.component.common.parargs import Parargs as Parargs
from moto.stepfunctions.parser.asl.component.common.path import result_path as result_path
from moto.stepfunctions.parser.asl.component.common.path.input_path import InputPath as InputPath
from moto.stepfunctions.parser.asl.component.common.path.items_path import ItemsPath as ItemsPath
from moto.stepfunctions.parser.asl.component.common.path.output_path import OutputPath as OutputPath
from moto.stepfunctions.parser.asl.component.common.path.result_path import ResultPath as ResultPath
from moto.stepfunctions.parser.asl.component.common.query_language import QueryLanguage as QueryLanguage
from moto.stepfunctions.parser.asl.component.common.result_selector import ResultSelector as ResultSelector
from moto.stepfunctions.parser.asl.component.common.retry.retry_outcome import RetryOutcome as RetryOutcome
from moto.stepfunctions.parser.asl.component.common.string import string_expression as string_expression
from moto.stepfunctions.parser.asl.component.common.string.string_expression import (
    StringIntrinsicFunction as StringIntrinsicFunction,
)
from moto.stepfunctions.parser.asl.component.common.string.string_expression import (
    StringJSONata as StringJSONata,
)
from moto.stepfunctions.parser.asl.component.common.timeouts.heartbeat import (
    HeartbeatSecondsJSONata as HeartbeatSecondsJSONata,
)
from moto.stepfunctions.parser.asl.component.common.timeouts.heartbeat import (
    HeartbeatSecondsPath as HeartbeatSecondsPath,
)
from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import (
    TimeoutSeconds as TimeoutSeconds,
)
from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import (
    TimeoutSecondsJSONata as TimeoutSecondsJSONata,
)
from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import (
    TimeoutSecondsPath as TimeoutSecondsPath,
)
from moto.stepfunctions.parser.asl.component.component import Component as Component
from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent as EvalComponent
from moto.stepfunctions.parser.asl.component.intrinsic.argument import argument as argument
from moto.stepfunctions.parser.asl.component.intrinsic.argument.argument import (
    ArgumentContextPath as ArgumentContextPath,
)
from moto.stepfunctions.parser.asl.component.intrinsic.argument.argument import (
    ArgumentFunction as ArgumentFunction,
)
from moto.stepfunctions.parser.asl.component.intrinsic.argument.argument import (
    ArgumentJsonPath as ArgumentJsonPath,
)
from moto.stepfunctions.parser.asl.component.intrinsic.argument.argument import ArgumentList as ArgumentList
from moto.stepfunctions.parser.asl.component.intrinsic.argument.argument import (
    ArgumentLiteral as ArgumentLiteral,
)
from moto.stepfunctions.parser.asl.component.intrinsic.function.statesfunction.array.array_contains import (
    ArrayContains as ArrayContains,
)
from moto.stepfunctions.parser.asl.component.intrinsic.function.statesfunction.array.array_unique import (
    ArrayUnique as ArrayUnique,
)
from moto.stepfunctions.parser.asl.component.intrinsic.function.statesfunction.factory import (
    StatesFunctionFactory as StatesFunctionFactory,
)
from moto.stepfunctions.parser.asl.component.intrinsic.function.statesfunction.generic.string_format import (
    StringFormat as StringFormat,
)
from moto.stepfunctions.parser.asl.component.intrinsic.functionname.state_function_name_types import (
    StatesFunctionNameType as StatesFunctionNameType,
)
from moto.stepfunctions.parser.asl.component.intrinsic.functionname.states_function_name import (
    StatesFunctionName as StatesFunctionName,
)
from moto.stepfunctions.parser.asl.component.program import program as program
from moto.stepfunctions.parser.asl.component.program.program import Program as Program
from moto.stepfunctions.parser.asl.component.state import state as state
from moto.stepfunctions.parser.asl.component.state.choice.comparison.comparison import (
    ConditionStringJSONata as ConditionStringJSONata,
)
from moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations import (
    boolean_equals as boolean_equals,
)
from moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations import (
    numeric as numeric,
)
from moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations import (
    string_operators as string_operators,
)
from moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations import (
    timestamp_operators as timestamp_operators,
)
from moto.stepfunctions.parser.asl.component.state.choice.state_choice import StateChoice as StateChoice
from moto.stepfunctions.parser.asl.component.state.exec import execute_state as execute_state
from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState as ExecutionState
from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval import (
    resource_eval_s3 as item_reader_resource_eval_s3,  # noqa: F401 - two modules of one name
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.item_reader_decl import (
    ItemReader as ItemReader,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_selector import (
    ItemSelector as ItemSelector,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.items.items import Items as Items
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
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (  # noqa: E501
    DistributedIterationComponent as DistributedIterationComponent,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.inline_iteration_component import (  # noqa: E501
    InlineIterationComponent as InlineIterationComponent,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor import (
    distributed_item_processor_worker as distributed_item_processor_worker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor import (
    map_run_record as map_run_record,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.distributed_item_processor_worker import (  # noqa: E501
    DistributedItemProcessorWorker as DistributedItemProcessorWorker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.inline_item_processor_worker import (  # noqa: E501
    InlineItemProcessorWorker as InlineItemProcessorWorker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iteration_worker import (
    IterationWorker as IterationWorker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iterator import (
    distributed_iterator_worker as distributed_iterator_worker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iterator.distributed_iterator_worker import (  # noqa: E501
    DistributedIteratorWorker as DistributedIteratorWorker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.max_concurrency import (
    DEFAULT_MAX_CONCURRENCY_VALUE as DEFAULT_MAX_CONCURRENCY_VALUE,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.max_concurrency import (
    MaxConcurrencyDecl as MaxConcurrencyDecl,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.max_concurrency import (
    MaxConcurrencyJSONata as MaxConcurrencyJSONata,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer.resource_eval import (
    resource_eval_s3 as _result_writer_resource_eval_s3,
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
    ToleratedFailureCountStringJSONata as ToleratedFailureCountStringJSONata,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.tolerated_failure import (
    ToleratedFailurePercentage as ToleratedFailurePercentage,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.tolerated_failure import (
    ToleratedFailurePercentageDecl as ToleratedFailurePercentageDecl,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.tolerated_failure import (
    ToleratedFailurePercentageStringJSONata as ToleratedFailurePercentageStringJSONata,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branch_worker as branch_worker
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branches_decl import (
    BranchesDecl as BranchesDecl,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.state_parallel import (
    StateParallel as StateParallel,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task import (
    lambda_eval_utils as lambda_eval_utils,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task import mock_eval_utils as mock_eval_utils
from moto.stepfunctions.parser.asl.component.state.exec.state_task.credentials import (
    StateCredentials as StateCredentials,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service as state_task_service,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_api_gateway as state_task_service_api_gateway,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_aws_sdk as state_task_service_aws_sdk,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_batch as state_task_service_batch,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_callback as state_task_service_callback,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_dynamodb as state_task_service_dynamodb,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_ecs as state_task_service_ecs,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_events as state_task_service_events,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_glue as state_task_service_glue,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_sfn as state_task_service_sfn,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_sns as state_task_service_sns,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_sqs as state_task_service_sqs,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_unsupported as state_task_service_unsupported,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
    StateTaskService as StateTaskService,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_api_gateway import (  # noqa: E501
    StateTaskServiceApiGateway as StateTaskServiceApiGateway,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_aws_sdk import (
    StateTaskServiceAwsSdk as StateTaskServiceAwsSdk,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (  # noqa: E501
    StateTaskServiceCallback as StateTaskServiceCallback,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb import (  # noqa: E501
    StateTaskServiceDynamoDB as StateTaskServiceDynamoDB,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_ecs import (
    StateTaskServiceEcs as StateTaskServiceEcs,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_events import (
    StateTaskServiceEvents as StateTaskServiceEvents,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_glue import (
    StateTaskServiceGlue as StateTaskServiceGlue,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_lambda import (
    StateTaskServiceLambda as StateTaskServiceLambda,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
    StateTaskServiceSfn as StateTaskServiceSfn,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sns import (
    StateTaskServiceSns as StateTaskServiceSns,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sqs import (
    StateTaskServiceSqs as StateTaskServiceSqs,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task import StateTask as StateTask
from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_activitiy import (
    StateTaskActivity as StateTaskActivity,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import (
    StateTaskLambda as StateTaskLambda,
)
from moto.stepfunctions.parser.asl.component.state.fail.cause_decl import Cause as Cause
from moto.stepfunctions.parser.asl.component.state.fail.error_decl import Error as Error
from moto.stepfunctions.parser.asl.component.state.fail.state_fail import StateFail as StateFail
from moto.stepfunctions.parser.asl.component.state.state import CommonStateField as CommonStateField
from moto.stepfunctions.parser.asl.component.state.state_continue_with import (
    ContinueWithEnd as ContinueWithEnd,
)
from moto.stepfunctions.parser.asl.component.state.state_pass.result import Result as Result
from moto.stepfunctions.parser.asl.component.state.state_pass.state_pass import StatePass as StatePass
from moto.stepfunctions.parser.asl.component.state.state_succeed.state_succeed import (
    StateSucceed as StateSucceed,
)
from moto.stepfunctions.parser.asl.component.state.wait.state_wait import StateWait as StateWait
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.seconds import (
    SecondsJSONata as SecondsJSONata,
)
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import Timestamp as Timestamp
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import (
    WaitFunction as WaitFunction,
)
from moto.stepfunctions.parser.asl.component.test_state.program import (
    test_state_program as test_state_program,
)
from moto.stepfunctions.parser.asl.component.test_state.state.test_state_state_props import (
    TestStateStateProps as TestStateStateProps,
)
from moto.stepfunctions.parser.asl.eval import states as states
from moto.stepfunctions.parser.asl.eval import variable_store as variable_store
from moto.stepfunctions.parser.asl.eval.callback.callback import (
    ActivityCallbackEndpoint as ActivityCallbackEndpoint,
)
from moto.stepfunctions.parser.asl.eval.callback.callback import (
    ActivityTaskStartEndpoint as ActivityTaskStartEndpoint,
)
from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackEndpoint as CallbackEndpoint
from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackPoolManager as CallbackPoolManager
from moto.stepfunctions.parser.asl.eval.environment import Environment as Environment
from moto.stepfunctions.parser.asl.eval.evaluation_details import AWSExecutionDetails as AWSExecutionDetails
from moto.stepfunctions.parser.asl.eval.evaluation_details import EvaluationDetails as EvaluationDetails
from moto.stepfunctions.parser.asl.eval.event import event_manager as event_manager
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails as EventDetails
from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext as EventHistoryContext
from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager as EventManager
from moto.stepfunctions.parser.asl.eval.event.logging import (
    CloudWatchLoggingConfiguration as CloudWatchLoggingConfiguration,
)
from moto.stepfunctions.parser.asl.eval.event.logging import (
    CloudWatchLoggingSession as CloudWatchLoggingSession,
)
from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded as ProgramEnded
from moto.stepfunctions.parser.asl.eval.program_state import ProgramError as ProgramError
from moto.stepfunctions.parser.asl.eval.program_state import ProgramRunning as ProgramRunning
from moto.stepfunctions.parser.asl.eval.program_state import ProgramState as ProgramState
from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped as ProgramStopped
from moto.stepfunctions.parser.asl.eval.program_state import ProgramTimedOut as ProgramTimedOut
from moto.stepfunctions.parser.asl.eval.states import ContextObjectData as ContextObjectData
from moto.stepfunctions.parser.asl.eval.states import ExecutionData as ExecutionData
from moto.stepfunctions.parser.asl.eval.states import ItemData as ItemData
from moto.stepfunctions.parser.asl.eval.states import MapData as MapData
from moto.stepfunctions.parser.asl.eval.states import StateMachineData as StateMachineData
from moto.stepfunctions.parser.asl.eval.variable_store import NoSuchVariable as NoSuchVariable
from moto.stepfunctions.parser.asl.eval.variable_store import VariableStore as VariableStore
from moto.stepfunctions.parser.asl.jsonata import jsonata as jsonata
from moto.stepfunctions.parser.asl.jsonata.jsonata import JSONataException as JSONataException
from moto.stepfunctions.parser.asl.parse import preprocessor as preprocessor
from moto.stepfunctions.parser.asl.parse.asl_parser import (
    AmazonStateLanguageParser as AmazonStateLanguageParser,
)
from moto.stepfunctions.parser.asl.parse.asl_parser import ASLParserException as ASLParserException
from moto.stepfunctions.parser.asl.parse.asl_parser import SyntaxErrorListener as SyntaxErrorListener
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor as Preprocessor
from moto.stepfunctions.parser.asl.utils import boto_client as boto_client
from moto.stepfunctions.parser.asl.utils import json_path as json_path
from moto.stepfunctions.parser.asl.utils.boto_client import boto_client_for as boto_client_for
from moto.stepfunctions.parser.asl.utils.encoding import to_json_str as to_json_str
from moto.stepfunctions.parser.asl.utils.json_path import NoSuchJsonPathError as NoSuchJsonPathError
from moto.stepfunctions.parser.asl.utils.json_path import extract_json as extract_json
from moto.stepfunctions.parser.backend import activity as activity
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
from moto.utilities.collections import select_from_typed_dict as select_from_typed_dict

# Two of moto's modules are named resource_eval_s3 (ItemReader's and ResultWriter's): this one under a name
# of its own, bound here so that it is one of the seam's names.
result_writer_resource_eval_s3 = _result_writer_resource_eval_s3
