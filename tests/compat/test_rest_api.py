"""SAM `Api` events: Lambda proxy routes on a REST API, answered as API Gateway answers them.

Given a function behind SAM's implicit REST API (stage Prod) and behind an API with its own stage, a call
to `/execute-api/<api>/<stage>/<path>` must reach the function with the payload format 1.0 event and
return its statusCode, headers and body; a route that does not exist, and a function that answers without
a statusCode, must get API Gateway's own answers.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from sam_local_cloud import LocalCloud, LocalCloudConfig

TEMPLATE = Path(__file__).resolve().parent / "fixtures" / "rest_api" / "template.yaml"


def call(url: str, *, method: str = "GET", body: bytes | None = None) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(
        url, data=body, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read().decode()


@pytest.mark.e2e
def test_rest_api_proxy_routes_reach_their_functions_under_their_stage() -> None:
    with LocalCloud(LocalCloudConfig(template=TEMPLATE)) as cloud:
        base = f"{cloud.endpoint}/execute-api"

        status, headers, text = call(
            f"{base}/serverlessrestapi/Prod/hello/ann?lang=en", method="POST", body=b'{"n": 1}'
        )
        assert (status, headers["X-Seen"]) == (201, "yes")
        assert json.loads(text) == {
            "resource": "/hello/{name}",
            "path": "/hello/ann",
            "method": "POST",
            "pathParameters": {"name": "ann"},
            "query": {"lang": "en"},
            "stage": "Prod",
            "body": {"n": 1},
        }
        status, _, text = call(f"{base}/devapi/dev/echo")
        assert status == 201
        assert json.loads(text)["stage"] == "dev"

        assert call(f"{base}/serverlessrestapi/Prod/nowhere")[::2] == (
            403,
            '{"message": "Missing Authentication Token"}',
        )
        assert call(f"{base}/devapi/Prod/echo")[0] == 403  # the route exists on stage dev only
        assert call(f"{base}/serverlessrestapi/Prod/broken")[::2] == (
            502,
            '{"message": "Internal server error"}',
        )
