"""``DependsOn`` read as CloudFormation reads it before creating anything: every name must be a resource
of the template, and no resource may wait, through them, on itself.

CloudFormation's answers: "Template format error: Unresolved resource dependencies [X] in the Resources
block of the template" and "Circular dependency between resources: [A, B]". A SAM template may name a
resource SAM's transform generates (``MyFunctionRole``, ``ServerlessRestApi``, ``MyApiProdStage``): such a
name starts with a serverless resource's logical ID or with ``Serverless``, and is accepted here.
"""

from __future__ import annotations

from collections.abc import Mapping

from sam_local_cloud.stack.model import TemplateError

SERVERLESS_PREFIX = "AWS::Serverless::"


def depends_on(resource: object) -> list[str]:
    names = resource.get("DependsOn") if isinstance(resource, Mapping) else None
    if isinstance(names, str):
        return [names]
    return [str(name) for name in names] if isinstance(names, list) else []


def check_dependencies(resources: Mapping[str, object]) -> None:
    serverless = [
        logical_id
        for logical_id, resource in resources.items()
        if isinstance(resource, Mapping) and str(resource.get("Type", "")).startswith(SERVERLESS_PREFIX)
    ]

    def generated(name: str) -> bool:
        return name.startswith("Serverless") or any(name.startswith(prefix) for prefix in serverless)

    unresolved = sorted(
        {
            name
            for resource in resources.values()
            for name in depends_on(resource)
            if name not in resources and not generated(name)
        }
    )
    if unresolved:
        raise TemplateError(
            f"Template format error: Unresolved resource dependencies [{', '.join(unresolved)}] in the "
            "Resources block of the template"
        )
    cycle = _cycle({logical_id: depends_on(resource) for logical_id, resource in resources.items()})
    if cycle:
        raise TemplateError(f"Circular dependency between resources: [{', '.join(cycle)}]")


def _cycle(edges: Mapping[str, list[str]]) -> list[str]:
    """The resources of one dependency cycle, sorted; empty when there is none."""
    done: set[str] = set()
    for start in edges:
        trail: list[str] = []
        on_trail: set[str] = set()
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, index = stack.pop()
            if index == 0:
                if node in done:
                    continue
                if node in on_trail:
                    return sorted(trail[trail.index(node) :])
                trail.append(node)
                on_trail.add(node)
            targets = [target for target in edges.get(node, []) if target in edges]
            if index < len(targets):
                stack.append((node, index + 1))
                stack.append((targets[index], 0))
            else:
                trail.pop()
                on_trail.discard(node)
                done.add(node)
    return []
