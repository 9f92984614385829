"""Reports the runtime it runs on: the Python version and where its imports come from."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import boto3


def handler(event: Any, context: Any) -> dict[str, Any]:
    return {
        "version": list(sys.version_info[:2]),
        "executable": sys.executable,
        "boto3": boto3.__version__,
        "boto3_file": boto3.__file__,
        "has_yaml": importlib.util.find_spec("yaml") is not None,
        "has_powertools": importlib.util.find_spec("aws_lambda_powertools") is not None,
        "path": sys.path,
    }
