"""moto's other services, its core and its server: every name the engine uses from them, imported once.

``import X as X`` marks the re-export.
"""

from __future__ import annotations

# -- Core, server and backends' reset.


# -- DynamoDB.


# -- IAM, EventBridge, S3 and the rest.
