"""`orderbatch reconcile` and `orderbatch redrive`: finish a batch whose execution ended unsuccessfully.

Both go through the app's HTTP API (local or deployed), so they run with the API function's role and
its checks: reconcile refuses a running batch and waits out the tasks a stopped one may still run;
redrive refuses a batch that reconcile already finished.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from orderbatch.commands.batches import _add_target_arguments, _client
from sam_local_cloud.executions import FINISHED_STATUSES

ACTIONS = ("completed", "compensated", "already_final", "held_elsewhere")
# Orders whose line the text report prints: the ones reconcile changed or could not touch.
REPORTED_ACTIONS = {"COMPLETED", "COMPENSATED", "HELD_ELSEWHERE"}


def register(subparsers: argparse._SubParsersAction) -> None:
    reconcile = subparsers.add_parser(
        "reconcile",
        help="finish every order a stopped, failed or timed-out batch left half-done (confirm or compensate)",
    )
    reconcile.add_argument("batch_id")
    reconcile.add_argument(
        "--settle-timeout",
        type=float,
        default=900.0,
        help="seconds to wait, at most, for tasks the stopped execution started to end (default 900)",
    )
    _add_target_arguments(reconcile)
    reconcile.set_defaults(func=run_reconcile)

    redrive = subparsers.add_parser(
        "redrive", help="redrive a stopped, failed or timed-out batch: rerun only what did not succeed"
    )
    redrive.add_argument("batch_id")
    redrive.add_argument("--wait", action="store_true", help="wait until the redriven batch finishes")
    redrive.add_argument("--timeout", type=float, default=900.0, help="seconds to wait with --wait")
    _add_target_arguments(redrive)
    redrive.set_defaults(func=run_redrive)


def _refusal(status: int, body: Mapping[str, object]) -> str:
    return f"HTTP {status}: {body.get('message') or json.dumps(body)}"


def run_reconcile(args: argparse.Namespace) -> int:
    client = _client(args)
    merged: dict[str, Any] | None = None
    start_index = 0
    settle_deadline = time.monotonic() + args.settle_timeout
    while True:
        response = client.request(
            "POST", f"/batches/{args.batch_id}/reconcile", json.dumps({"start_index": start_index}).encode()
        )
        wait = response.body.get("retry_after_seconds")
        if response.status == HTTPStatus.CONFLICT and isinstance(wait, int):
            if time.monotonic() + wait > settle_deadline:
                print(f"orderbatch: {_refusal(response.status, response.body)}", file=sys.stderr)
                return 1
            if not args.json:
                print(f"waiting {wait} s: {response.body.get('message')}")
            time.sleep(wait)
            continue
        if response.status >= 400:
            print(f"orderbatch: {_refusal(response.status, response.body)}", file=sys.stderr)
            return 1
        merged = _merge(merged, response.body)
        if response.body.get("next_index") is None:
            break
        start_index = int(response.body["next_index"])
    _print_report(args, merged)
    return 0


def _merge(merged: dict[str, Any] | None, page: dict[str, Any]) -> dict[str, Any]:
    """One report of the pages a reconcile cut by the API's time limit answered."""
    if merged is None:
        return {**page, "next_index": None}
    merged["orders"].extend(page["orders"])
    merged["counts"] = {action: merged["counts"][action] + page["counts"][action] for action in ACTIONS}
    return merged


def _print_report(args: argparse.Namespace, report: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(report, indent=2))
        return
    counts = report["counts"]
    print(
        f"batch {report['batch_id']} ({report['execution_status']}): {report['items_in_batch']} orders: "
        + ", ".join(f"{counts[action]} {action.replace('_', ' ')}" for action in ACTIONS)
    )
    for order in report["orders"]:
        if order["action"] not in REPORTED_ACTIONS:
            continue
        subject = f"order {order['order_id']}" if order["order_id"] else "no order ID"
        line = f"  item {order['item_index']} {subject}: {order['action'].lower()}, now {order['status']}"
        print(line + (f" ({order['reason']})" if order.get("reason") else ""))
    if not counts["completed"] and not counts["compensated"]:
        print("nothing to do: every order of the batch is final")


def run_redrive(args: argparse.Namespace) -> int:
    client = _client(args)
    response = client.request("POST", f"/batches/{args.batch_id}/redrive", b"{}")
    if response.status >= 400:
        print(f"orderbatch: {_refusal(response.status, response.body)}", file=sys.stderr)
        return 1
    if not args.wait:
        _print_redrive(args, response.body)
        return 0
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        current = client.status(args.batch_id)
        if current.status >= 400 or current.body.get("status") in FINISHED_STATUSES:
            _print_redrive(args, response.body, current.body)
            return 0 if current.body.get("status") == "SUCCEEDED" else 1
        time.sleep(2.0)
    print(
        f"orderbatch: batch {args.batch_id} still running {args.timeout:.0f} s after its redrive",
        file=sys.stderr,
    )
    return 2


def _print_redrive(
    args: argparse.Namespace, redriven: dict[str, Any], status: dict[str, Any] | None = None
) -> None:
    if args.json:
        print(json.dumps({"redrive": redriven, "status": status}, indent=2))
        return
    print(f"batch {redriven['batch_id']} redriven at {redriven['redrive_date']}")
    if status is not None:
        summary = status.get("summary") or {}
        counts = ", ".join(
            f"{key} {summary[key]}"
            for key in ("total", "succeeded", "failed", "rejected", "duplicate")
            if key in summary
        )
        standing = f"  now {status.get('status')} (redrive count {status.get('redrive_count')})"
        print(standing + (f": {counts}" if counts else ""))
