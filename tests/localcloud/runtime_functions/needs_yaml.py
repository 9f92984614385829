"""Imports PyYAML, which the tools' environment has and this folder's requirements.txt does not list."""

from __future__ import annotations

from typing import Any

import yaml


def handler(event: Any, context: Any) -> str:
    return yaml.safe_dump(event)
