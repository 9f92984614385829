"""The app's vocabulary (order_processing.contract) says what the template and the handlers say."""

from __future__ import annotations

import importlib

from order_processing import contract
from orderbatch.lint.asl import lambda_tasks
from orderbatch.lint.template_model import read_template_file
from orderbatch.project import PROJECT_ROOT

TEMPLATE = PROJECT_ROOT / "template.yaml"


def task_functions() -> tuple[set[str], set[str]]:
    """Logical IDs the state machines' Tasks invoke: (inside a Map, per order; outside, per batch)."""
    model = read_template_file(TEMPLATE)
    per_order: set[str] = set()
    per_batch: set[str] = set()
    for machine in model.state_machines:
        for task in lambda_tasks(machine, model.functions):
            assert task.function_id is not None, f"{task.name} invokes a function the template lacks"
            (per_order if task.enclosing_maps else per_batch).add(task.function_id)
    return per_order, per_batch


def test_per_order_function_ids_are_the_ones_the_map_invokes() -> None:
    per_order, per_batch = task_functions()
    assert per_order == set(contract.PER_ORDER_FUNCTIONS)
    assert per_batch == {contract.SUMMARIZE_BATCH_FUNCTION}
    assert set(contract.BATCH_FUNCTIONS) == per_order | per_batch


def test_step_log_names_are_the_handlers_steps() -> None:
    model = read_template_file(TEMPLATE)
    for function_id, step in contract.STEP_LOG_NAMES.items():
        module_name = str(model.functions[function_id].properties["Handler"]).rsplit(".", 1)[0]
        assert step == importlib.import_module(module_name).STEP, function_id


def test_the_handlers_log_the_marker_the_audit_counts() -> None:
    from handlers import observability
    from orderbatch import audit

    assert observability.TASK_BODY_RAN == audit.BODY_RAN_MESSAGE == "task body ran"


def test_the_order_id_rule_is_shared() -> None:
    from order_processing import models
    from orderbatch import audit

    assert models.ORDER_ID_PATTERN is audit.USABLE_ORDER_ID is contract.ORDER_ID_PATTERN
    assert contract.ORDER_ID_PATTERN.fullmatch("o-1_A")
    assert not contract.ORDER_ID_PATTERN.fullmatch("o 1")
    assert not contract.ORDER_ID_PATTERN.fullmatch("x" * 65)
