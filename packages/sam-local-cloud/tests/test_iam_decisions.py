"""A role's answer for one access is worked out once, and stays the answer moto's matching gives."""

from __future__ import annotations

from typing import Any

from sam_local_cloud.iam import Access, Role
from sam_local_cloud.iam import policies as policies_module
from sam_local_cloud.iam.policies import RolePolicies

TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/Orders"


def _role() -> Role:
    document: dict[str, Any] = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["dynamodb:PutItem", "dynamodb:GetItem"], "Resource": TABLE},
            {"Effect": "Deny", "Action": "dynamodb:GetItem", "Resource": TABLE},
        ],
    }
    return Role("Fn", "fn-role", "arn:aws:iam::123456789012:role/fn-role", (document,))


def test_each_access_is_decided_once_with_moto_s_answer() -> None:
    policies = RolePolicies(_role())
    worked_out: list[Access] = []
    decide_afresh = policies._decide

    def counting(access: Access) -> bool | None:
        worked_out.append(access)
        return decide_afresh(access)

    policies._decide = counting  # type: ignore[method-assign]
    put, get, scan = (Access(f"dynamodb:{action}", TABLE) for action in ("PutItem", "GetItem", "Scan"))

    answers = [policies.decide(access) for access in (put, get, scan, put, get, scan)]

    assert answers == [True, False, None, True, False, None]  # allowed, denied explicitly, not allowed
    assert worked_out == [put, get, scan]


def test_the_remembered_answers_are_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(policies_module, "_DECISIONS_PER_ROLE", 3)
    policies = RolePolicies(_role())

    for number in range(10):
        assert policies.decide(Access("s3:GetObject", f"arn:aws:s3:::bucket/key-{number}")) is None

    assert len(policies._decisions) <= 3
