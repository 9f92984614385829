"""The ``sam local --env-vars`` file that points a template's functions at the local cloud's resources.

SAM CLI gives a function only the variables its template declares, and resolves a ``!Ref`` to a table
or a state machine to no real name. The local cloud deploys the same template under physical names
(``orderbatch-OrdersTable``, state machine ARNs); this file gives each function those values, keyed by
function name as ``--env-vars`` accepts it. (``AWS_ENDPOINT_URL`` is no declared variable: the Docker
API's ``--aws-endpoint-url`` sets it.)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sam_local_cloud.stack import load_stack


def sam_env_vars(template: Path, parameter_overrides: Mapping[str, str] | None = None) -> dict[str, Any]:
    stack = load_stack(template, parameter_overrides=parameter_overrides or {})
    return {function.name: dict(function.environment) for function in stack.functions}
