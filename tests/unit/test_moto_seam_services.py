"""The hooks of DynamoDB, the request caches, the model registry and rule targets go through the seam.

Each group's installer registers its concern's hooks and installs them once; moto's own code is kept as
each target's original; and no module outside the seam imports moto.
"""

from __future__ import annotations

import ast
from pathlib import Path

from sam_local_cloud.moto_seam import hooks, installers, services

REPOSITORY = Path(__file__).resolve().parents[2]


def _install_service_groups() -> None:
    installers.install_dynamodb()
    installers.install_request_caches()
    installers.install_model_registry()
    installers.install_event_targets()


def test_each_service_concern_hooks_its_targets_once_and_keeps_motos_originals() -> None:
    # Given the service groups installed, twice over (as the local cloud and its data plane may)
    _install_service_groups()
    wrapped = (
        services.DynamoDBBackend.__dict__["transact_write_items"],
        services.Rule.__dict__["send_to_targets"],
        services.BaseModel.__dict__["__new__"],
    )
    _install_service_groups()

    # Then each target has one listener of its concern, installed, with moto's own code recorded
    by_path = {target.path: target for target in hooks.targets()}
    expected = {
        "moto.dynamodb.models.DynamoDBBackend.transact_write_items": ["dynamodb"],
        "moto.dynamodb.models.copy": ["dynamodb"],
        "moto.core.utils.method_names_from_class": ["dynamodb"],
        "moto.core.responses.method_names_from_class": ["dynamodb"],
        "moto.dynamodb.parsing.expressions.UpdateExpressionParser.make": ["dynamodb"],
        "moto.dynamodb.comparisons.ConditionExpressionParser._lex_condition_expression": ["dynamodb"],
        "moto.core.common_models.BaseModel.__new__": ["model_registry"],
        "moto.dynamodb.models.dynamo_type.Item.__init__": ["model_registry"],
        "moto.dynamodb.models.dynamo_type.DynamoType": ["model_registry"],
        "moto.events.models.Rule.send_to_targets": ["event_targets"],
    }
    assert {path: by_path[path].concerns for path in expected} == expected
    assert all(by_path[path].installed and by_path[path].original is not None for path in expected)
    # moto's BaseModel.__new__ is a static method; the hooked one still is, and was not wrapped again
    assert isinstance(services.BaseModel.__dict__["__new__"], staticmethod)
    assert (
        services.DynamoDBBackend.__dict__["transact_write_items"],
        services.Rule.__dict__["send_to_targets"],
        services.BaseModel.__dict__["__new__"],
    ) == wrapped
    # The slotted DynamoType stands in every moto module that imported moto's
    assert services.dynamodb_models.DynamoType is services.dynamo_type.DynamoType
    assert not hasattr(services.dynamo_type.DynamoType({"S": "x"}), "__dict__")


def _imported_modules(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def _imports_moto(path: Path) -> list[int]:
    """The lines of ``path`` that import moto, at module level or inside a function."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
        if any(module.split(".")[0] == "moto" for module in _imported_modules(node))
    ]


def test_nothing_outside_the_seam_imports_moto() -> None:
    seam = "packages/sam-local-cloud/src/sam_local_cloud/moto_seam/"
    offenders = []
    for root in ("src", "tests", "functions", "packages"):
        for path in sorted((REPOSITORY / root).rglob("*.py")):
            relative = path.relative_to(REPOSITORY).as_posix()
            if relative.startswith(seam):
                continue
            offenders += [f"{relative}:{line}" for line in _imports_moto(path)]

    assert offenders == [], "import moto only through sam_local_cloud.moto_seam"
