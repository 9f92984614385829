"""What the tests reach in moto, handed on from the seam: tests import moto only from here.

The names the engine uses too come from ``services`` and ``stepfunctions``; the few only tests look at
(S3's keys, the interpreter's ``states`` module whose copies a test counts) are imported here.
"""

from __future__ import annotations

from moto.s3.models import FakeKey as FakeKey
from moto.stepfunctions.parser.asl.eval import states as interpreter_states

from sam_local_cloud.moto_seam.services import (
    DomainDispatcherApplication as DomainDispatcherApplication,
)
from sam_local_cloud.moto_seam.services import DynamoDBBackend as DynamoDBBackend
from sam_local_cloud.moto_seam.services import Item as Item
from sam_local_cloud.moto_seam.services import UpdateExpressionParser as UpdateExpressionParser
from sam_local_cloud.moto_seam.services import core_utils as core_utils
from sam_local_cloud.moto_seam.services import create_backend_app as create_backend_app
from sam_local_cloud.moto_seam.services import default_user_config as default_user_config
from sam_local_cloud.moto_seam.services import dynamo_type as dynamo_type
from sam_local_cloud.moto_seam.services import dynamodb_models as dynamodb_models
from sam_local_cloud.moto_seam.services import mock_aws as mock_aws
from sam_local_cloud.moto_seam.services import moto_api_backend as moto_api_backend

__all__ = [
    "DomainDispatcherApplication",
    "DynamoDBBackend",
    "FakeKey",
    "Item",
    "UpdateExpressionParser",
    "core_utils",
    "create_backend_app",
    "default_user_config",
    "dynamo_type",
    "dynamodb_models",
    "interpreter_states",
    "mock_aws",
    "moto_api_backend",
]
