"""The paths a local cloud's endpoint serves besides the AWS APIs: written once, read by its servers and
by whatever drives ``sam-local-cloud up`` from outside (re-exported by ``sam_local_cloud.cli``)."""

from __future__ import annotations

# 200 once the template is deployed, 503 while it deploys (the local cloud's and its data plane's).
HEALTH_PATH = "/_sam_local_cloud/health"
# API Gateway's execute-api host, as a path: <endpoint>/execute-api/<api id>/<stage or route>.
API_PATH_PREFIX = "/execute-api/"
