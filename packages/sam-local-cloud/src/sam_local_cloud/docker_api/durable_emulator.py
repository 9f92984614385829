"""SAM CLI's durable execution emulator container, run as the program its image runs.

For `sam local invoke --durable-execution-name`, `sam local execution ...` and `sam local callback ...`,
SAM CLI creates a container of ``public.ecr.aws/durable-functions/aws-durable-execution-emulator`` that
runs ``dex-local-runner start-server --port 9014 --lambda-endpoint http://host.docker.internal:3001
--store-type sqlite --store-path /tmp/.durable-executions-local/durable-executions.db`` (the data folder
bound from the current directory), then calls its HTTP API on the published port: ``GET /health``,
``POST /start-durable-execution`` with the function container's address as ``LambdaEndpoint``, and the
Lambda durable execution API (get, history, stop, callbacks). The durable function's container gets
``AWS_ENDPOINT_URL_LAMBDA=http://host.docker.internal:9014``, so its checkpoints go to the emulator.

That program is the durable testing SDK's (``aws_durable_execution_sdk_python_testing.cli``), installed
beside this tool, so here the container runs it as a process (``main`` below), with the command SAM CLI
gave, translated as for any container: paths into the container's folders, the published host port, and
the container's ``ExtraHosts`` (``host.docker.internal:host-gateway``) resolved in the process as its
``/etc/hosts`` would resolve them in the container.

Chained invokes (``context.invoke``): the runner sends them to its ``--lambda-endpoint`` and resolves
target names from ``--function-configs``, which SAM CLI does not pass (aws-sam-cli #9221: every chained
invoke fails). With ``orderbatch local docker --aws-endpoint-url``, the functions' AWS calls go to the
local cloud, and so do their chained invokes, as a durable function's invokes go to its account's
functions on AWS: the endpoint is the local cloud's, and the configurations are its functions
(``ListFunctions``) when the emulator starts.
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sam_local_cloud.json_types import JsonObject

LOG = logging.getLogger(__name__)
DEFAULT_REGION = "us-east-1"

_original_getaddrinfo = socket.getaddrinfo


def resolve_extra_hosts(hosts: Mapping[str, str]) -> None:
    """Resolve ``hosts`` (name -> address) in this process, as a container's /etc/hosts entries."""
    names = dict(hosts)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, bytes):
            host = names.get(host.decode(errors="replace"), host)
        elif isinstance(host, str):
            host = names.get(host, host)
        return _original_getaddrinfo(host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo


def chained_invoke_targets(endpoint_url: str, region: str) -> dict[str, JsonObject]:
    """The functions at ``endpoint_url`` a durable function can invoke, in ``--function-configs``' shape.

    Only plain functions: the runner would run a durable target as a child execution by invoking its
    handler at the endpoint, and the local cloud answers an Invoke of a durable function by starting an
    execution of its own (docs/fidelity.md, "sam local durable executions").
    """
    # Imported here: only the emulator's process lists functions.
    import boto3

    client = boto3.client("lambda", endpoint_url=endpoint_url, region_name=region)
    targets: dict[str, JsonObject] = {}
    for page in client.get_paginator("list_functions").paginate():
        for function in page.get("Functions", []):
            if function.get("DurableConfig"):
                continue
            targets[function["FunctionName"]] = {}
            targets[function["FunctionArn"]] = {}
    return targets


def main(argv: list[str] | None = None) -> int:
    """``--extra-host NAME=ADDRESS``... ``[--chained-invoke-endpoint URL] -- <dex-local-runner args>``."""
    parser = argparse.ArgumentParser(prog="sam-local-cloud-durable-emulator")
    parser.add_argument("--extra-host", action="append", default=[], metavar="NAME=ADDRESS")
    parser.add_argument("--chained-invoke-endpoint", default="")
    parser.add_argument("--region", default=DEFAULT_REGION)
    parser.add_argument("runner_arguments", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    runner_arguments = [argument for argument in options.runner_arguments if argument != "--"]
    resolve_extra_hosts(dict(entry.split("=", 1) for entry in options.extra_host))
    if options.chained_invoke_endpoint:
        try:
            targets = chained_invoke_targets(options.chained_invoke_endpoint, options.region)
        except Exception as error:
            print(
                f"sam-local-cloud: cannot list the functions at {options.chained_invoke_endpoint} ({error}); "
                "chained invokes will fail",
                file=sys.stderr,
                flush=True,
            )
            targets = {}
        runner_arguments += ["--function-configs", json.dumps(targets)]
    from aws_durable_execution_sdk_python_testing.cli import CliApp

    return CliApp().run(runner_arguments)


if __name__ == "__main__":
    sys.exit(main())
