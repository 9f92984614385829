"""moto's other services, its core and its server: every name the engine uses from them, imported once.

``import X as X`` marks the re-export. A function that a hook replaces (``method_names_from_class``) is
reached through its module (``core_utils.method_names_from_class``): a name imported here would be
moto's own, captured before the hook was installed.
"""

from __future__ import annotations

# -- Core, server and backends' reset.
import moto.core.responses as core_responses
import moto.core.utils as core_utils

# -- DynamoDB.
import moto.dynamodb.models as dynamodb_models
import moto.dynamodb.models.dynamo_type as dynamo_type
import moto.dynamodb.parsing.validators as update_validators
from moto import mock_aws as mock_aws
from moto import settings as settings
from moto.cloudwatch.models import CloudWatchBackend as CloudWatchBackend
from moto.core.base_backend import AccountSpecificBackend as AccountSpecificBackend
from moto.core.common_models import BaseModel as BaseModel
from moto.core.config import default_user_config as default_user_config
from moto.core.exceptions import JsonRESTError as JsonRESTError
from moto.core.model_instances import model_data as model_data
from moto.core.parse import PROTOCOL_PARSERS as PROTOCOL_PARSERS
from moto.core.request import EnvironHeaders as EnvironHeaders
from moto.core.request import Request as Request
from moto.core.responses import BaseResponse as BaseResponse
from moto.core.routing import get_service_router as get_service_router
from moto.core.serialize import AttributePicker as AttributePicker
from moto.core.utils import MISSING as MISSING
from moto.core.utils import camelcase_to_underscores as camelcase_to_underscores
from moto.core.utils import get_service_model as get_service_model
from moto.dynamodb.comparisons import ConditionExpressionParser as ConditionExpressionParser
from moto.dynamodb.models import DynamoDBBackend as DynamoDBBackend
from moto.dynamodb.models.dynamo_type import Item as Item
from moto.dynamodb.models.table import Table as Table
from moto.dynamodb.parsing.ast_nodes import Node as UpdateNode  # type: ignore[attr-defined]
from moto.dynamodb.parsing.expressions import (  # type: ignore[attr-defined]
    UpdateExpressionParser as UpdateExpressionParser,
)
from moto.dynamodb.responses import DynamoHandler as DynamoHandler

# -- IAM, EventBridge, S3 and the rest.
from moto.events.models import EventPattern as EventPattern
from moto.events.models import EventTemplateParser as EventTemplateParser
from moto.events.models import Rule as Rule
from moto.iam.access_control import IAMPolicy as IAMPolicy
from moto.iam.access_control import PermissionResult as PermissionResult
from moto.iam.aws_managed_policies import aws_managed_policies_data as aws_managed_policies_data
from moto.iam.models import mark_account_as_visited as mark_account_as_visited
from moto.moto_api import recorder as recorder
from moto.moto_api._internal import mock_random as mock_random
from moto.moto_api._internal.models import moto_api_backend as moto_api_backend
from moto.moto_server.werkzeug_app import DomainDispatcherApplication as DomainDispatcherApplication
from moto.moto_server.werkzeug_app import MotoRequestHandler as MotoRequestHandler
from moto.moto_server.werkzeug_app import create_backend_app as create_backend_app
from moto.utilities.utils import get_partition as get_partition

__all__ = [
    "MISSING",
    "PROTOCOL_PARSERS",
    "AttributePicker",
    "BaseModel",
    "BaseResponse",
    "CloudWatchBackend",
    "ConditionExpressionParser",
    "DomainDispatcherApplication",
    "DynamoDBBackend",
    "DynamoHandler",
    "EnvironHeaders",
    "EventPattern",
    "EventTemplateParser",
    "IAMPolicy",
    "Item",
    "JsonRESTError",
    "MotoRequestHandler",
    "PermissionResult",
    "Request",
    "Rule",
    "Table",
    "UpdateExpressionParser",
    "UpdateNode",
    "aws_managed_policies_data",
    "camelcase_to_underscores",
    "core_responses",
    "core_utils",
    "create_backend_app",
    "default_user_config",
    "dynamo_type",
    "dynamodb_models",
    "get_partition",
    "get_service_model",
    "get_service_router",
    "mark_account_as_visited",
    "mock_aws",
    "mock_random",
    "model_data",
    "moto_api_backend",
    "recorder",
    "settings",
    "update_validators",
]
