"""The seam to moto: one wrapper per target, listeners in the stated order, records beside moto's objects."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from sam_local_cloud.moto_seam import hooks
from sam_local_cloud.moto_seam.records import EngineRecords


def _owner() -> type[Any]:
    class Backend:
        def start_execution(self, name: str) -> list[str]:
            return [f"moto:{name}"]

        @staticmethod
        def validate(definition: str) -> str:
            return definition.upper()

    return Backend


def test_listeners_chain_in_the_stated_order_not_the_registration_order() -> None:
    owner = _owner()
    registry = hooks.HookRegistry()
    original = owner.start_execution

    # "express" is registered first but "mock_config" is declared outside it, so it is the outer one.
    registry.order("mock_config", outside=("express",))

    @registry.around(owner, "start_execution", concern="express")
    def express(proceed: Any, self: Any, name: str) -> list[str]:
        return ["express", *proceed(self, name)]

    @registry.around(owner, "start_execution", concern="mock_config")
    def mock_config(proceed: Any, self: Any, name: str) -> list[str]:
        return ["mock_config", *proceed(self, name.removesuffix("#case"))]

    installed = registry.install()

    assert [target.path.rsplit(".", 1)[-1] for target in installed] == ["start_execution"]
    assert installed[0].original is original
    assert owner().start_execution("run#case") == ["mock_config", "express", "moto:run"]


def test_an_order_follows_from_declarations_through_other_concerns() -> None:
    owner = _owner()
    registry = hooks.HookRegistry()
    # Declared by three different concerns; "context_object" and "redrive" are ordered only through
    # "mock_config".
    registry.order("mock_config", inside=("context_object",))
    registry.order("redrive", inside=("mock_config",))
    for concern in ("redrive", "context_object", "mock_config"):
        registry.around(owner, "start_execution", concern=concern)(
            lambda proceed, self, name, concern=concern: [concern, *proceed(self, name)]
        )
    registry.install()

    assert owner().start_execution("run") == ["context_object", "mock_config", "redrive", "moto:run"]


def test_two_concerns_on_one_target_without_a_declared_order_are_refused_at_install() -> None:
    owner = _owner()
    registry = hooks.HookRegistry()
    registry.around(owner, "start_execution", concern="express")(lambda proceed, *args: proceed(*args))
    registry.around(owner, "start_execution", concern="redrive")(lambda proceed, *args: proceed(*args))

    with pytest.raises(hooks.HookError, match=r"express and redrive both listen around it and no order"):
        registry.install()


def test_an_order_that_contradicts_a_declared_one_is_refused() -> None:
    registry = hooks.HookRegistry()
    registry.order("express", outside=("redrive",))
    registry.order("redrive", outside=("executions",))

    with pytest.raises(hooks.HookError, match=r"executions cannot run outside express"):
        registry.order("executions", outside=("express",))


def test_a_target_is_wrapped_once_and_later_registrations_are_refused() -> None:
    owner = _owner()
    registry = hooks.HookRegistry()
    registry.around(owner, "start_execution", concern="redrive")(
        lambda proceed, self, name: proceed(self, name)
    )
    registry.install()
    wrapped = owner.start_execution

    assert registry.install() == []
    assert owner.start_execution is wrapped
    with pytest.raises(
        hooks.HookError, match=r"start_execution is already installed; histories registered too late"
    ):
        registry.around(owner, "start_execution", concern="histories")(lambda proceed, *args: None)


def test_replacing_a_class_attribute_puts_the_value_in_place() -> None:
    owner = _owner()
    owner.LIMIT = 40
    registry = hooks.HookRegistry()
    registry.replace(owner, "LIMIT", 500, concern="map_state")
    (target,) = registry.install()

    assert owner.LIMIT == 500
    assert target.original == 40


def test_static_methods_stay_static_and_replacements_have_one_owner() -> None:
    owner = _owner()
    registry = hooks.HookRegistry()
    registry.around(owner, "validate", concern="definitions")(lambda proceed, text: proceed(text) + "!")
    registry.add(owner, "redrive_execution", lambda self: "ok", concern="redrive")
    with pytest.raises(hooks.HookError, match="only one concern may replace or add it"):
        registry.replace(owner, "redrive_execution", lambda self: "no", concern="express")
    registry.install()

    assert owner.validate("x") == "X!"
    assert owner().validate("y") == "Y!"
    assert owner().redrive_execution() == "ok"


def test_an_addition_moto_already_has_is_refused_at_install() -> None:
    owner = _owner()
    registry = hooks.HookRegistry()
    registry.add(owner, "start_execution", lambda self, name: [], concern="redrive")

    with pytest.raises(hooks.HookError, match=r"start_execution: moto has it now; redrive adds it"):
        registry.install()


def test_a_hook_on_a_missing_target_names_it_and_its_concerns() -> None:
    owner = _owner()
    registry = hooks.HookRegistry()
    registry.around(owner, "describe_execution", concern="executions")(lambda proceed, self: proceed(self))

    with pytest.raises(
        hooks.HookError, match=r"Backend.describe_execution: moto has no such attribute \(executions"
    ):
        registry.install()


def test_a_concern_is_named_by_an_identifier() -> None:
    for name in ("audit trail", "Audit"):
        with pytest.raises(hooks.HookError, match=f"'{name}' is not a concern's name"):
            hooks.HookRegistry().around(_owner(), "start_execution", concern=name)


def test_records_live_beside_the_object_and_go_with_it() -> None:
    class Execution:
        pass

    records: EngineRecords[list[str]] = EngineRecords(list)
    execution = Execution()
    records.of(execution).append("redriven")

    assert records.get(execution) == ["redriven"]
    assert records.get(Execution()) is None
    assert not hasattr(execution, "orderbatch_redrive")
    del execution
    gc.collect()
    assert len(records) == 0


def test_a_hook_on_an_inherited_method_wraps_the_base_as_hooked_and_keeps_motos_original() -> None:
    base = _owner()

    class LambdaBackend(base):  # type: ignore[misc,valid-type]
        pass

    original = base.__dict__["start_execution"]
    registry = hooks.HookRegistry()
    # The subclass's hook registers first; the base's is installed first all the same.
    registry.around(LambdaBackend, "start_execution", concern="lambda_tasks")(
        lambda proceed, self, name: ["lambda_tasks", *proceed(self, name)]
    )
    registry.around(base, "start_execution", concern="service_tasks")(
        lambda proceed, self, name: ["service_tasks", *proceed(self, name)]
    )
    installed = {target.owner: target for target in registry.install()}

    assert LambdaBackend().start_execution("run") == ["lambda_tasks", "service_tasks", "moto:run"]
    assert base().start_execution("run") == ["service_tasks", "moto:run"]
    assert installed[LambdaBackend].original is original
    assert installed[base].original is original
