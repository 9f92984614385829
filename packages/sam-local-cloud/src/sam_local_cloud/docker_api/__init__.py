"""A Docker Engine API for SAM CLI without Docker: its containers run as local Lambda execution environments.

``sam local invoke``, ``start-lambda`` and ``start-api`` talk to Docker through docker-py over
``DOCKER_HOST``. Pointed here, each Lambda "container" they create runs as the local cloud runs a
function: the Runtime Interface Emulator and the function's Python runtime, on this machine
(``execution.py``); images are the Lambda Python base images and what SAM CLI builds from them
(``images.py``). See docs/sam-local.md for the calls served and what is refused.
"""

from sam_local_cloud.docker_api.execution import ExecutionEnvironments
from sam_local_cloud.docker_api.sam_env import sam_env_vars
from sam_local_cloud.docker_api.server import Call, DockerApi, DockerApiServer

__all__ = ["Call", "DockerApi", "DockerApiServer", "ExecutionEnvironments", "sam_env_vars"]
