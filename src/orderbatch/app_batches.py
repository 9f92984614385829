"""What the tools need to know about this app's batches, in one place for the commands, bench and tests.

Order generation from the inventory fixture's SKUs, and the exactly-once audit wired to a stack's outputs
(local or deployed). Waiting for an execution is `orderbatch.executions.wait_for_execution`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from orderbatch.audit import AuditReport, BatchLocations, audit_batch, body_runs_from_logs
from orderbatch.project import inventory_fixture

# A SKU with less stock could run out during a generated batch and turn SUCCEEDED orders into FAILED ones.
MIN_GENERATED_SKU_STOCK = 1000


def generate_orders(count: int, skus: list[str], *, prefix: str, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` valid orders of 1 to 3 lines over ``skus``, IDs ``<prefix>-00001`` on; repeatable."""
    rng = random.Random(seed)
    orders = []
    for number in range(1, count + 1):
        lines = rng.sample(skus, k=rng.randint(1, 3))
        orders.append(
            {
                "order_id": f"{prefix}-{number:05d}",
                "customer_id": f"customer-{rng.randint(1, 50):03d}",
                "currency": "USD",
                "items": [
                    {
                        "sku": sku,
                        "quantity": rng.randint(1, 3),
                        "unit_price": f"{rng.randint(100, 5000) / 100:.2f}",
                    }
                    for sku in lines
                ],
            }
        )
    return orders


def fixture_skus(template: Path) -> list[str]:
    """The inventory fixture's SKUs with enough stock for generated batches."""
    data = json.loads(inventory_fixture(template).read_text())
    items = data.get("items", data) if isinstance(data, dict) else data
    return [item["sku"] for item in items if int(item.get("stock", 0)) >= MIN_GENERATED_SKU_STOCK]


def audit_stack_batch(
    batch_id: str,
    outputs: Mapping[str, Any],
    client: Callable[[str], Any],
    *,
    log_dir: Path | None,
) -> AuditReport:
    """The exactly-once audit of a batch of the stack with these outputs, through ``client(service)``.

    Body runs are counted from ``log_dir`` (the local cloud's function logs); None audits without them.
    """
    return audit_batch(
        batch_id,
        BatchLocations.from_outputs(outputs),
        stepfunctions=client("stepfunctions"),
        dynamodb=client("dynamodb"),
        s3=client("s3"),
        body_runs=body_runs_from_logs(log_dir) if log_dir is not None else None,
    )
