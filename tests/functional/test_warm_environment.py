"""A warm execution environment: the tenth order costs its requests what the first did.

Each Powertools persistence layer registers a User-Agent hook on its DynamoDB client when it is built.
Built per invocation around the environment's one client, the hooks piled up: every request of a warm
environment ran one more of them per earlier invocation, so an environment that had served 4,000 orders
spent four times the CPU per invocation of a fresh one.
"""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.shared import user_agent
from task_events import an_order, map_item, run_order


def test_a_warm_environment_adds_no_hooks_to_its_client(
    task_env: Any, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    registered: list[str] = []
    register = user_agent.register_feature_to_client

    def counting_register(client: Any, feature: str) -> None:
        registered.append(feature)
        register(client=client, feature=feature)

    monkeypatch.setattr(user_agent, "register_feature_to_client", counting_register)
    per_order: list[int] = []
    for number in range(1, 11):
        before = len(registered)
        order = an_order(f"o-warm-{number}", ("SKU-001", 1, "9.99"))
        assert run_order(map_item(order, item_index=number), lambda_context)["outcome"] == "SUCCEEDED"
        per_order.append(len(registered) - before)
    # The first order builds each step's layer once (four steps, one key each); later orders reuse them.
    assert per_order == [4] + [0] * 9
    assert registered == ["idempotency"] * 4
