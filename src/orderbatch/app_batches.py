"""What the tools need to know about this app's batches, in one place for the commands, bench and tests.

Order generation from the inventory fixture's SKUs, a local cloud set up for the app (its inventory
seeded, fault plans keyed by order and batch), and the exactly-once audit wired to a stack's outputs
(local or deployed). Waiting for an execution is `sam_local_cloud.wait_for_execution`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orderbatch.audit import AuditReport, BatchLocations, audit_batch
from orderbatch.audit_logs import body_runs_from_logs
from orderbatch.project import inventory_fixture

if TYPE_CHECKING:
    from sam_local_cloud import LocalCloud, LocalCloudConfig
    from sam_local_cloud.faults import EventKeys
    from sam_local_cloud.json_types import JsonObject

# A SKU with less stock could run out during a generated batch and turn SUCCEEDED orders into FAILED ones.
MIN_GENERATED_SKU_STOCK = 1000


def generate_orders(count: int, skus: list[str], *, prefix: str, seed: int = 7) -> list[JsonObject]:
    """``count`` valid orders of 1 to 3 lines over ``skus``, IDs ``<prefix>-00001`` on; repeatable."""
    rng = random.Random(seed)
    orders: list[JsonObject] = []
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


def order_id_of(event: object) -> str | None:
    """The order a task function's event is about: ``{"order": {"order_id"}}`` or ``{"order_id"}``."""
    if not isinstance(event, dict):
        return None
    order = event.get("order")
    if isinstance(order, dict) and order.get("order_id") is not None:
        return str(order["order_id"])
    return str(event["order_id"]) if event.get("order_id") is not None else None


def batch_id_of(event: object) -> str | None:
    if isinstance(event, dict) and event.get("batch_id") is not None:
        return str(event["batch_id"])
    return None


def order_event_keys() -> EventKeys:
    """What this app's fault plans key on: attempts count per order, item_ids are order IDs."""
    # Imported here: the commands that never start a local cloud should not pay for loading it.
    from sam_local_cloud.faults import EventKeys

    return EventKeys(item=order_id_of, batch=batch_id_of)


def local_cloud_config(
    template: Path, *, map_max_concurrency: int | None = None, **options: Any
) -> LocalCloudConfig:
    """A local cloud for this app: its inventory seeded and fault plans keyed by order and batch.

    ``options`` are LocalCloudConfig's fields; ``map_max_concurrency`` joins its parameter overrides.
    """
    from sam_local_cloud import LocalCloudConfig

    overrides = dict(options.pop("parameter_overrides", None) or {})
    if map_max_concurrency is not None:
        overrides["MapMaxConcurrency"] = str(map_max_concurrency)
    options.setdefault("seed_files", {"InventoryTable": inventory_fixture(template)})
    return LocalCloudConfig(
        template=template, parameter_overrides=overrides, event_keys=order_event_keys(), **options
    )


def audit_local_batch(cloud: LocalCloud, batch_id: str) -> AuditReport:
    """The exactly-once audit of a batch run on ``cloud``, body runs counted from its functions' logs."""
    return audit_stack_batch(batch_id, cloud.stack.outputs, cloud.client, log_dir=cloud.log_dir)


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
        lambda_client=client("lambda"),
    )
