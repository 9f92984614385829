"""Engine throughput: Lambda Tasks per second of the local cloud against moto's interpreter alone.

Both runs use the same trivial template (``engine_app/``) on the same local Lambda service; "moto alone"
skips the local cloud's interpreter patches (moto builds a new boto3 client for every Task). The patches
are process-global, so each measurement runs in its own Python process. A third measurement runs the
app's own template and handlers (``--app-orders``):

    python -m orderbatch.bench.engine --interpreter patched --items 1000
    python -m orderbatch.bench.engine --app-orders 250
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from order_processing.contract import MAX_INLINE_ORDERS
from sam_local_cloud import ExecutionStillRunningError, wait_for_execution

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions.client import SFNClient

ENGINE_APP = Path(__file__).resolve().parent / "engine_app"
ENGINE_TEMPLATE = ENGINE_APP / "template.yaml"
INTERPRETERS = ("patched", "moto")
WARMUP_ITEMS = 20
# Each of the app's orders is four Lambda tasks.
APP_TASKS_PER_ORDER = 4
_POLL_SECONDS = 1.0


def measure(interpreter: str, items: int, max_concurrency: int, timeout_seconds: float) -> dict[str, object]:
    """Run in a fresh process only: the interpreter choice cannot be undone once moto is patched."""
    from sam_local_cloud import LocalCloud, LocalCloudConfig

    if interpreter not in INTERPRETERS:
        raise ValueError(f"interpreter must be one of {INTERPRETERS}")
    config = LocalCloudConfig(
        template=ENGINE_TEMPLATE,
        account_concurrency=max_concurrency,
        parameter_overrides={"MapMaxConcurrency": str(max_concurrency)},
        moto_interpreter_as_released=interpreter == "moto",
    )
    with LocalCloud(config) as cloud:
        if interpreter == "moto":
            # moto's own Tasks call its server at MOTO_PORT; the cloud sets nothing in the environment, and
            # this process is the probe's alone.
            os.environ["MOTO_PORT"] = str(cloud.port)
        sfn = cloud.client("stepfunctions")
        machine = cloud.stack.outputs["EngineProbeStateMachineArn"]
        # The first execution starts the execution environments; only the second is timed.
        _run(sfn, machine, "warm-up", _items(min(items, WARMUP_ITEMS)), timeout_seconds)
        seconds = _run(sfn, machine, "measured", _items(items), timeout_seconds)
        assert cloud.lambda_service is not None
        stats = cloud.lambda_service.stats(include_timeseries=False)["functions"]["TrivialFunction"]
    return {
        "interpreter": interpreter,
        "items": items,
        "max_concurrency": max_concurrency,
        "seconds": round(seconds, 2),
        "tasks_per_second": round(items / seconds, 1),
        "throttles": stats["throttles_total"],
    }


def measure_app_handlers(orders: int, quota: int, timeout_seconds: float) -> dict[str, object]:
    """Lambda tasks per second of the app's own state machine and handlers, no added work, warm.

    An inline batch with MapMaxConcurrency = the quota: every order runs validate, reserve, charge and
    confirm (DynamoDB writes, Powertools idempotency), so this is the local cloud's speed on real code.
    """
    from orderbatch.app_batches import fixture_skus, generate_orders, local_cloud_config
    from orderbatch.project import default_template
    from sam_local_cloud import LocalCloud

    template = default_template()
    config = local_cloud_config(template, account_concurrency=quota, map_max_concurrency=quota)
    skus = fixture_skus(template)
    with LocalCloud(config) as cloud:
        assert cloud.lambda_service is not None
        sfn = cloud.client("stepfunctions")
        machine = cloud.stack.outputs["OrderBatchStateMachineArn"]

        def invocations() -> tuple[int, int]:
            functions = cloud.lambda_service.stats(include_timeseries=False)["functions"].values()  # type: ignore[union-attr]
            return sum(f["invocations"] for f in functions), sum(f["throttles_total"] for f in functions)

        warm_up = {"batch_id": "engine-warm-up", "orders": generate_orders(quota, skus, prefix="warm")}
        _run(sfn, machine, "engine-warm-up", warm_up, timeout_seconds)
        before, throttles_before = invocations()
        batch = {"batch_id": "engine-app", "orders": generate_orders(orders, skus, prefix="engine-app")}
        seconds = _run(sfn, machine, "engine-app", batch, timeout_seconds)
        after, throttles_after = invocations()
    tasks = after - before
    return {
        "orders": orders,
        "quota": quota,
        "tasks": tasks,
        "seconds": round(seconds, 2),
        "tasks_per_second": round(tasks / seconds, 1),
        "throttles": throttles_after - throttles_before,
    }


def _run(sfn: SFNClient, machine: str, name: str, document: object, timeout_seconds: float) -> float:
    arn = sfn.start_execution(stateMachineArn=machine, name=name, input=json.dumps(document))["executionArn"]
    try:
        # The time measured is the execution's own start and stop dates; polling only notices the end.
        # Each DescribeExecution carries the whole input, parsed in this process beside the engine it
        # measures, so it is kept rare.
        status = wait_for_execution(sfn, arn, timeout=timeout_seconds, poll_seconds=_POLL_SECONDS)
    except ExecutionStillRunningError as still_running:
        sfn.stop_execution(executionArn=arn)
        raise TimeoutError(
            f"engine probe {name} still running after {timeout_seconds:.0f} s"
        ) from still_running
    execution = sfn.describe_execution(executionArn=arn)
    if status != "SUCCEEDED":
        raise RuntimeError(f"engine probe {name} ended {status}")
    return float((execution["stopDate"] - execution["startDate"]).total_seconds())


def _items(count: int) -> dict[str, list[dict[str, int]]]:
    return {"items": [{"n": i} for i in range(count)]}


def _in_subprocess(arguments: list[str], timeout_seconds: float) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-m", "orderbatch.bench.engine", *arguments, "--timeout", str(timeout_seconds)],
        capture_output=True,
        text=True,
        timeout=timeout_seconds + 60,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"engine probe {arguments} failed: {completed.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def compare_engines(items: int, max_concurrency: int = 10, timeout_seconds: float = 600.0) -> dict[str, Any]:
    """Both measurements, each in its own subprocess, one after the other."""
    results = {
        interpreter: _in_subprocess(
            ["--interpreter", interpreter, "--items", str(items), "--max-concurrency", str(max_concurrency)],
            timeout_seconds,
        )
        for interpreter in INTERPRETERS
    }
    app_orders = min(MAX_INLINE_ORDERS, max(1, items // APP_TASKS_PER_ORDER))
    app = _in_subprocess(
        ["--app-orders", str(app_orders), "--max-concurrency", str(max_concurrency)], timeout_seconds
    )
    moto_rate = results["moto"]["tasks_per_second"]
    return {
        "what": (
            f"Lambda Tasks per second, trivial handler, inline Map MaxConcurrency {max_concurrency}, "
            f"{items} items, after a {WARMUP_ITEMS}-item warm-up; 'moto' is the same definition on the same "
            "Lambda service with moto's unpatched interpreter (a new boto3 client per Task)"
        ),
        "local_cloud": results["patched"],
        "moto_alone": results["moto"],
        "ratio": round(results["patched"]["tasks_per_second"] / moto_rate, 2) if moto_rate else None,
        "app_handlers": {
            **app,
            "what": f"the app's template and handlers, an inline batch of {app_orders} orders "
            f"(4 tasks each), MapMaxConcurrency = quota = {max_concurrency}, no added work, warm",
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one engine throughput measurement (JSON on stdout)")
    parser.add_argument("--interpreter", choices=INTERPRETERS, default="patched")
    parser.add_argument("--app-orders", type=int, default=0, help="measure the app's handlers instead")
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--max-concurrency", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    if args.app_orders:
        result = measure_app_handlers(args.app_orders, args.max_concurrency, args.timeout)
    else:
        result = measure(args.interpreter, args.items, args.max_concurrency, args.timeout)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
