"""`orderbatch seed`: put fixtures/inventory.json into a deployed stack's inventory table."""

from __future__ import annotations

import argparse
import json
from decimal import Decimal
from pathlib import Path

import boto3

from orderbatch.project import default_template, inventory_fixture


def register(subparsers: argparse._SubParsersAction) -> None:
    seed = subparsers.add_parser(
        "seed", help="seed a deployed stack's inventory table from fixtures/inventory.json"
    )
    seed.add_argument("--stack", required=True, help="the stack name given to sam deploy")
    seed.add_argument(
        "--file", type=Path, default=None, help="items to put (default fixtures/inventory.json)"
    )
    seed.add_argument("--region", default=None)
    seed.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    session = boto3.Session(region_name=args.region)
    stack = session.client("cloudformation").describe_stacks(StackName=args.stack)["Stacks"][0]
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}
    path = args.file or inventory_fixture(default_template())
    items = json.loads(path.read_text(), parse_float=Decimal)
    table = session.resource("dynamodb").Table(outputs["InventoryTableName"])
    with table.batch_writer() as writer:
        for item in items:
            writer.put_item(Item=item)
    print(f"put {len(items)} items from {path} into {table.name}")
    return 0
