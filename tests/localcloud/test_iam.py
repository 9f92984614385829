"""IAM in the local cloud: roles built from the template's policies, checked on every call they sign.

The app's own template must run its whole flow with IAM on; a copy missing one permission must fail with
exactly the AccessDeniedException AWS gives. A small template (the local cloud's own tests',
packages/sam-local-cloud/tests/iam_fixture/) covers a function with no policy, one that may only read, and
a state machine whose role may not invoke its function.
Every cloud here runs alone (moto's state is per process), so each test starts its own.
"""

from __future__ import annotations

import gc
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from samcli.yamlhelper import yaml_dump, yaml_parse

from orderbatch.api_client import BatchesApiClient
from orderbatch.app_batches import audit_local_batch, fixture_skus, generate_orders
from orderbatch.audit import BatchLocations
from orderbatch.project import PROJECT_ROOT, default_template, inventory_fixture
from sam_local_cloud import DUMMY_CREDENTIALS, LocalCloud, LocalCloudConfig, wait_for_execution
from sam_local_cloud.iam import (
    Access,
    IamEnforcer,
    Role,
    StackRoles,
    build_roles,
    requested_access,
    roles_document,
    roles_from_document,
)
from sam_local_cloud.stack import load_stack

TEMPLATE = PROJECT_ROOT / "template.yaml"
# The probe template is the local cloud's own (its IAM resolution tests use it too).
PROBE_TEMPLATE = PROJECT_ROOT / "packages" / "sam-local-cloud" / "tests" / "iam_fixture" / "template.yaml"
ACCOUNT = "123456789012"
REGION = "us-east-1"
TABLE_ARN = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/orderbatch-{{}}"


def not_authorized(role: str, session: str, action: str, resource: str) -> str:
    return (
        f"User: arn:aws:sts::{ACCOUNT}:assumed-role/orderbatch-{role}/{session} "
        f"is not authorized to perform: {action} on resource: {resource} "
        f"because no identity-based policy allows the {action} action"
    )


def aws_message(message: str) -> str:
    """The message as AWS words it: without the local IAM's explanation, which follows it."""
    said, explained, explanation = message.partition(" (local IAM: ")
    assert explained, message
    assert explanation.endswith(")"), message
    return said


def started(template: Path, **options: Any) -> LocalCloud:
    return LocalCloud(LocalCloudConfig(template=template, **options)).start()


@pytest.fixture
def enforcer() -> IamEnforcer:
    stack = load_stack(TEMPLATE)
    return IamEnforcer(build_roles(stack), region=stack.region, account_id=stack.account_id)


# ---------------------------------------------------------------------------------------------- roles


def test_the_app_roles_are_its_policy_templates_expanded_as_sam_expands_them(enforcer: IamEnforcer) -> None:
    reserve = enforcer.identity(
        enforcer.function_environment("ReserveInventoryFunction")["AWS_ACCESS_KEY_ID"]
    )
    assert reserve is not None
    assert reserve.arn == (
        f"arn:aws:sts::{ACCOUNT}:assumed-role/orderbatch-ReserveInventoryFunctionRole/ReserveInventoryFunction"
    )
    # DynamoDB authorises a transaction item by item: PutItem, UpdateItem, ConditionCheckItem on each table.
    for table in ("InventoryTable", "ReservationsTable", "IdempotencyTable"):
        for action in ("PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem", "GetItem", "Query"):
            assert (
                enforcer.first_denied(reserve, [Access(f"dynamodb:{action}", TABLE_ARN.format(table))])
                is None
            )
    for table in ("PaymentsTable", "OrdersTable"):
        denial = enforcer.first_denied(reserve, [Access("dynamodb:PutItem", TABLE_ARN.format(table))])
        assert denial is not None
    # DynamoDBCrudPolicy grants neither table-level administration nor streams.
    assert enforcer.first_denied(
        reserve, [Access("dynamodb:DeleteTable", TABLE_ARN.format("InventoryTable"))]
    )
    # The managed AWSLambdaBasicExecutionRole SAM attaches: logs anywhere.
    assert (
        enforcer.first_denied(reserve, [Access("logs:PutLogEvents", "arn:aws:logs:x:y:log-group:g")]) is None
    )


def test_the_state_machine_role_may_invoke_its_task_functions_and_nothing_else(enforcer: IamEnforcer) -> None:
    role_arn = enforcer.state_machine_role_arn("orderbatch-order-batch")
    assert role_arn == f"arn:aws:iam::{ACCOUNT}:role/orderbatch-OrderBatchStateMachineRole"
    credentials = enforcer.task_credentials(role_arn)
    assert credentials is not None
    machine = enforcer.identity(credentials[0])
    assert machine is not None
    function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{{}}"
    for task in ("ValidateOrder", "ReserveInventory", "ChargePayment", "ConfirmOrder", "CancelOrder"):
        invoke = Access("lambda:InvokeFunction", function_arn.format(f"{task}Function"))
        assert enforcer.first_denied(machine, [invoke]) is None
    api = Access("lambda:InvokeFunction", function_arn.format("BatchesApiFunction"))
    assert enforcer.first_denied(machine, [api]) is not None
    bucket_object = "arn:aws:s3:::orderbatch-batchbucket/results/manifest.json"
    assert enforcer.first_denied(machine, [Access("s3:PutObject", bucket_object)]) is None
    assert enforcer.first_denied(machine, [Access("s3:DeleteObject", bucket_object)]) is not None


def test_the_durable_workflow_may_invoke_the_per_order_functions_and_checkpoint_and_nothing_else(
    enforcer: IamEnforcer,
) -> None:
    credentials = enforcer.function_environment("DurableOrderBatchFunction")
    durable = enforcer.identity(credentials["AWS_ACCESS_KEY_ID"])
    assert durable is not None
    function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{{}}"
    for task in ("ValidateOrder", "ReserveInventory", "ChargePayment", "ConfirmOrder", "CancelOrder"):
        invoke = Access("lambda:InvokeFunction", function_arn.format(f"{task}Function"))
        assert enforcer.first_denied(durable, [invoke]) is None, task
    for other in ("SummarizeBatchFunction", "BatchesApiFunction"):
        invoke = Access("lambda:InvokeFunction", function_arn.format(other))
        assert enforcer.first_denied(durable, [invoke]) is not None, other
    # SAM's AWSLambdaBasicDurableExecutionRolePolicy: the checkpoint API, on any function.
    own = function_arn.format("DurableOrderBatchFunction") + ":live/durable-execution/b-1/run"
    for action in ("lambda:CheckpointDurableExecution", "lambda:GetDurableExecutionState"):
        assert enforcer.first_denied(durable, [Access(action, own)]) is None, action
    # The effects stay with the task functions.
    assert enforcer.first_denied(durable, [Access("dynamodb:PutItem", TABLE_ARN.format("OrdersTable"))])


def test_a_transaction_needs_each_item_action_on_each_table_and_the_first_missing_is_named(
    enforcer: IamEnforcer,
) -> None:
    body = json.dumps(
        {
            "TransactItems": [
                {"Put": {"TableName": "orderbatch-ReservationsTable", "Item": {}}},
                {"Update": {"TableName": "orderbatch-InventoryTable", "Key": {}}},
                {"ConditionCheck": {"TableName": "orderbatch-PaymentsTable", "Key": {}}},
            ]
        }
    ).encode()
    environ: dict[str, Any] = {
        "wsgi.input": io.BytesIO(body),
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_X_AMZ_TARGET": "DynamoDB_20120810.TransactWriteItems",
    }
    accesses = requested_access("dynamodb", environ, REGION, ACCOUNT)
    assert accesses == [
        Access("dynamodb:PutItem", TABLE_ARN.format("ReservationsTable")),
        Access("dynamodb:UpdateItem", TABLE_ARN.format("InventoryTable")),
        Access("dynamodb:ConditionCheckItem", TABLE_ARN.format("PaymentsTable")),
    ]
    assert environ["wsgi.input"].read() == body  # put back for the service
    reserve = enforcer.identity(
        enforcer.function_environment("ReserveInventoryFunction")["AWS_ACCESS_KEY_ID"]
    )
    assert reserve is not None
    denial = enforcer.first_denied(reserve, accesses)
    assert denial is not None
    assert denial.access == accesses[2]


def json_request(target: str, body: dict[str, Any]) -> dict[str, Any]:
    raw = json.dumps(body).encode()
    return {"wsgi.input": io.BytesIO(raw), "CONTENT_LENGTH": str(len(raw)), "HTTP_X_AMZ_TARGET": target}


def query_request(body: str) -> dict[str, Any]:
    return {"wsgi.input": io.BytesIO(body.encode()), "CONTENT_LENGTH": str(len(body))}


def rest_request(method: str, path: str, query: str = "") -> dict[str, Any]:
    return {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "wsgi.input": io.BytesIO(b""),
        "CONTENT_LENGTH": "0",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "4566",
        "wsgi.url_scheme": "http",
        "HTTP_HOST": "localhost:4566",
    }


QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders"
BUS = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{{}}"
FUNCTION = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{{}}"
MACHINE = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:batch"


@pytest.mark.parametrize(
    ("service", "environ", "expected"),
    [
        # SQS: the queue URL (any host) to the queue ARN; batches authorised as the single action.
        (
            "sqs",
            json_request("AmazonSQS.SendMessage", {"QueueUrl": "http://localhost:4566/123456789012/orders"}),
            [Access("sqs:SendMessage", QUEUE)],
        ),
        (
            "sqs",
            query_request(
                f"Action=SendMessageBatch&QueueUrl=https%3A%2F%2Fsqs.{REGION}.amazonaws.com%2F{ACCOUNT}%2Forders"
            ),
            [Access("sqs:SendMessage", QUEUE)],
        ),
        (
            "sqs",
            json_request("AmazonSQS.GetQueueUrl", {"QueueName": "orders"}),
            [Access("sqs:GetQueueUrl", QUEUE)],
        ),
        ("sqs", json_request("AmazonSQS.ListQueues", {}), [Access("sqs:ListQueues", "*")]),
        # SNS: the topic; a subscription's topic; a phone number as itself.
        (
            "sns",
            query_request(f"Action=PublishBatch&TopicArn=arn%3Aaws%3Asns%3A{REGION}%3A{ACCOUNT}%3Anotices"),
            [Access("sns:Publish", f"arn:aws:sns:{REGION}:{ACCOUNT}:notices")],
        ),
        (
            "sns",
            query_request(
                f"Action=Unsubscribe&SubscriptionArn=arn%3Aaws%3Asns%3A{REGION}%3A{ACCOUNT}%3Anotices%3Ab1"
            ),
            [Access("sns:Unsubscribe", f"arn:aws:sns:{REGION}:{ACCOUNT}:notices")],
        ),
        (
            "sns",
            query_request("Action=Publish&PhoneNumber=%2B15550100"),
            [Access("sns:Publish", "+15550100")],
        ),
        # EventBridge: each entry on its bus (name, ARN, or the default bus); rules under their bus.
        (
            "events",
            json_request(
                "AWSEvents.PutEvents",
                {"Entries": [{"EventBusName": "orders"}, {"EventBusName": BUS.format("audit")}, {}]},
            ),
            [
                Access("events:PutEvents", BUS.format("orders")),
                Access("events:PutEvents", BUS.format("audit")),
                Access("events:PutEvents", BUS.format("default")),
            ],
        ),
        (
            "events",
            json_request("AWSEvents.PutRule", {"Name": "nightly", "EventBusName": "orders"}),
            [Access("events:PutRule", f"arn:aws:events:{REGION}:{ACCOUNT}:rule/orders/nightly")],
        ),
        (
            "events",
            json_request("AWSEvents.PutTargets", {"Rule": "nightly"}),
            [Access("events:PutTargets", f"arn:aws:events:{REGION}:{ACCOUNT}:rule/nightly")],
        ),
        # DynamoDB: a table named by ARN, an index of a Scan; a stream by its ARN.
        (
            "dynamodb",
            json_request(
                "DynamoDB_20120810.Scan", {"TableName": TABLE_ARN.format("Orders"), "IndexName": "ByStatus"}
            ),
            [Access("dynamodb:Scan", TABLE_ARN.format("Orders") + "/index/ByStatus")],
        ),
        (
            "dynamodb",
            json_request(
                "DynamoDB_20120810.DescribeStream", {"StreamArn": TABLE_ARN.format("Orders") + "/stream/1"}
            ),
            [Access("dynamodb:DescribeStream", TABLE_ARN.format("Orders") + "/stream/1")],
        ),
        # Step Functions: the machine, the execution, an activity created by name.
        (
            "states",
            json_request("AWSStepFunctions.StartExecution", {"stateMachineArn": MACHINE}),
            [Access("states:StartExecution", MACHINE)],
        ),
        (
            "states",
            json_request(
                "AWSStepFunctions.DescribeExecution",
                {"executionArn": MACHINE.replace("stateMachine", "execution") + ":e1"},
            ),
            [Access("states:DescribeExecution", MACHINE.replace("stateMachine", "execution") + ":e1")],
        ),
        (
            "states",
            json_request("AWSStepFunctions.CreateActivity", {"name": "approve"}),
            [Access("states:CreateActivity", f"arn:aws:states:{REGION}:{ACCOUNT}:activity:approve")],
        ),
        # Lambda: every name form, with the qualifier in the name or the query.
        (
            "lambda",
            rest_request("POST", "/2015-03-31/functions/echo/invocations", "Qualifier=live"),
            [Access("lambda:InvokeFunction", FUNCTION.format("echo") + ":live")],
        ),
        (
            "lambda",
            rest_request("GET", f"/2015-03-31/functions/{ACCOUNT}%3Afunction%3Aecho%3A7"),
            [Access("lambda:GetFunction", FUNCTION.format("echo") + ":7")],
        ),
        ("lambda", rest_request("GET", "/2015-03-31/functions/"), [Access("lambda:ListFunctions", "*")]),
        # S3: ListObjects on the bucket, GetObject on the object.
        (
            "s3",
            rest_request("GET", "/archive", "list-type=2"),
            [Access("s3:ListBucket", "arn:aws:s3:::archive")],
        ),
        (
            "s3",
            rest_request("GET", "/archive/notes/a.json"),
            [Access("s3:GetObject", "arn:aws:s3:::archive/notes/a.json")],
        ),
    ],
)
def test_each_request_is_matched_to_the_resource_aws_evaluates(
    service: str, environ: dict[str, Any], expected: list[Access]
) -> None:
    assert requested_access(service, environ, REGION, ACCOUNT) == expected


def test_a_task_token_answer_is_authorised_on_the_state_machine_or_activity_the_token_came_from() -> None:
    machine = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:checkout"
    owners = {"token-of-checkout": machine}

    def owner(account: str, region: str, token: str) -> str | None:
        return owners.get(token) if (account, region) == (ACCOUNT, REGION) else None

    def answer(token: str, resolver: Any = owner) -> list[Access]:
        request = json_request("AWSStepFunctions.SendTaskSuccess", {"taskToken": token, "output": "{}"})
        return requested_access("states", request, REGION, ACCOUNT, resolver)

    role = Role(
        "WorkerRole",
        "orderbatch-WorkerRole",
        f"arn:aws:iam::{ACCOUNT}:role/orderbatch-WorkerRole",
        ({"Statement": [{"Effect": "Allow", "Action": "states:SendTaskSuccess", "Resource": machine}]},),
    )
    enforcer = IamEnforcer(StackRoles(functions={"worker": role}), region=REGION, account_id=ACCOUNT)
    identity = enforcer.identity(enforcer.function_environment("worker")["AWS_ACCESS_KEY_ID"])
    assert identity is not None

    assert answer("token-of-checkout") == [Access("states:SendTaskSuccess", machine)]
    assert enforcer.first_denied(identity, answer("token-of-checkout")) is None
    # No execution waits on the token: the call answers TaskDoesNotExist, not a false AccessDenied.
    assert answer("stale") == [Access("states:SendTaskSuccess", "*", resource_known=False)]
    assert enforcer.first_denied(identity, answer("stale")) is None
    owners["token-of-checkout"] = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:refunds"
    assert enforcer.first_denied(identity, answer("token-of-checkout")) is not None


def test_a_request_whose_resource_is_not_known_locally_is_allowed_where_the_role_allows_its_action() -> None:
    key = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{{}}"
    statements = [
        {
            "Effect": "Allow",
            "Action": ["kms:Decrypt", "kms:Encrypt", "xray:GetSamplingRules"],
            "Resource": key.format("k1"),
        },
        {"Effect": "Deny", "Action": "kms:Decrypt", "Resource": key.format("k2")},
        {"Effect": "Deny", "Action": "kms:Encrypt", "Resource": "*"},
    ]
    role = Role(
        "CryptoRole",
        "orderbatch-CryptoRole",
        f"arn:aws:iam::{ACCOUNT}:role/orderbatch-CryptoRole",
        ({"Statement": statements},),
    )
    enforcer = IamEnforcer(StackRoles(functions={"crypto": role}), region=REGION, account_id=ACCOUNT)
    identity = enforcer.identity(enforcer.function_environment("crypto")["AWS_ACCESS_KEY_ID"])
    assert identity is not None

    decrypt = requested_access(
        "kms", json_request("TrentService.Decrypt", {"CiphertextBlob": "eA=="}), REGION, ACCOUNT
    )
    encrypt = requested_access("kms", json_request("TrentService.Encrypt", {"KeyId": "k1"}), REGION, ACCOUNT)
    sign = requested_access("kms", json_request("TrentService.Sign", {"KeyId": "k1"}), REGION, ACCOUNT)
    # A REST service without a resource table here, its operation found by moto's router.
    sampling = requested_access("xray", rest_request("POST", "/GetSamplingRules"), REGION, ACCOUNT)

    assert decrypt == [Access("kms:Decrypt", "*", resource_known=False)]
    assert sampling == [Access("xray:GetSamplingRules", "*", resource_known=False)]
    # Allowed on some key, and a Deny on another key may not be this one: no false denial.
    assert enforcer.first_denied(identity, decrypt) is None
    assert enforcer.first_denied(identity, sampling) is None
    # A Deny on every resource still wins, and an action allowed nowhere is still denied.
    encrypt_denial = enforcer.first_denied(identity, encrypt)
    assert encrypt_denial is not None
    assert encrypt_denial.explicit
    sign_denial = enforcer.first_denied(identity, sign)
    assert sign_denial is not None
    assert not sign_denial.explicit


def test_roles_of_the_template_its_policies_and_managed_policy_names_are_read_and_the_rest_reported() -> None:
    template = PROBE_TEMPLATE.with_name("roles_template.yaml")
    stack = load_stack(template)
    roles = build_roles(stack)
    enforcer = IamEnforcer(roles, region=REGION, account_id=ACCOUNT)
    table = TABLE_ARN.format("ProbeTable")

    def decision(function: str, action: str) -> str:
        identity = enforcer.identity(enforcer.function_environment(function)["AWS_ACCESS_KEY_ID"])
        assert identity is not None
        denial = enforcer.first_denied(identity, [Access(action, table)])
        return "allowed" if denial is None else "explicit deny" if denial.explicit else "implicit deny"

    # AmazonDynamoDBReadOnlyAccess, named without its ARN, is read from the AWS managed policies.
    assert [decision("NamedPolicyFunction", f"dynamodb:{a}") for a in ("GetItem", "PutItem")] == [
        "allowed",
        "implicit deny",
    ]
    # Role: !GetAtt MyRole.Arn with the template's ManagedPolicy and Policy; Deny wins over dynamodb:*.
    assert [
        decision("TemplateRoleFunction", f"dynamodb:{a}") for a in ("PutItem", "GetItem", "DeleteItem")
    ] == [
        "allowed",
        "allowed",
        "explicit deny",
    ]
    assert roles.functions["TemplateRoleFunction"].name == "orderbatch-MyRole"
    assert enforcer.function_environment("OutsideRoleFunction") == {}
    assert roles.notes == [
        "NamedPolicyFunctionRole: managed policy arn:aws:iam::123456789012:policy/elsewhere "
        "is unknown locally; it grants nothing",
        "OutsideRoleFunction: role arn:aws:iam::123456789012:role/outside is not defined in the template; "
        "its calls are not checked",
    ]


def test_the_roles_handed_to_the_data_plane_are_the_roles_built_from_the_template() -> None:
    for stack in (
        load_stack(PROBE_TEMPLATE.with_name("roles_template.yaml")),
        load_stack(default_template()),
    ):
        roles = build_roles(stack)
        handed = roles_from_document(json.loads(json.dumps(roles_document(roles))))
        assert handed == roles
        assert handed.functions  # the comparison compared something


# ---------------------------------------------------------------------------------------------- the app


def test_the_app_template_runs_inline_and_s3_batches_with_iam_enforced(tmp_path: Path) -> None:
    cloud = started(TEMPLATE, seed_files={"InventoryTable": inventory_fixture(TEMPLATE)})
    try:
        assert not [line for line in cloud.stack.not_honoured if "IAM" in line or "role" in line]
        locations = BatchLocations.from_outputs(cloud.stack.outputs)
        session = boto3.Session(**DUMMY_CREDENTIALS, region_name=REGION)
        api = BatchesApiClient(cloud.api_url, session=session)
        skus = fixture_skus(TEMPLATE)
        inline = generate_orders(4, skus, prefix="iam-inline")
        from_s3 = generate_orders(4, skus, prefix="iam-s3")
        bucket = cloud.stack.outputs["BatchBucketName"]
        cloud.client("s3").put_object(Bucket=bucket, Key="incoming/iam-s3.json", Body=json.dumps(from_s3))

        # Through the HTTP API: the API function starts and describes executions as its own role.
        assert api.submit({"batch_id": "iam-inline", "orders": inline}).status == 202
        source = {"bucket": bucket, "key": "incoming/iam-s3.json"}
        assert api.submit({"batch_id": "iam-s3", "source": source}).status == 202
        for batch_id in ("iam-inline", "iam-s3"):
            wait_for_execution(cloud.client("stepfunctions"), locations.execution_arn(batch_id), timeout=240)
            status = api.status(batch_id)
            assert status.status == 200, status.body
            assert status.body["status"] == "SUCCEEDED", status.body
            assert status.body["summary"]["succeeded"] == 4, status.body
            report = audit_local_batch(cloud, batch_id)
            assert report.violations == []
            assert report.lost == []
    finally:
        cloud.stop()


def test_a_charge_function_without_the_payments_table_is_denied_exactly_that_write(tmp_path: Path) -> None:
    template = yaml_parse(TEMPLATE.read_text())
    charge = template["Resources"]["ChargePaymentFunction"]["Properties"]
    charge["Policies"] = [
        policy for policy in charge["Policies"] if "PaymentsTable" not in json.dumps(policy)
    ]
    copy = tmp_path / "template.yaml"
    copy.write_text(yaml_dump(template))
    for name in ("functions", "statemachine", "fixtures", "samconfig.toml"):
        (tmp_path / name).symlink_to(PROJECT_ROOT / name)

    cloud = started(copy, seed_files={"InventoryTable": inventory_fixture(TEMPLATE)})
    try:
        sfn = cloud.client("stepfunctions")
        orders = generate_orders(1, fixture_skus(TEMPLATE), prefix="iam-denied")
        arn = sfn.start_execution(
            stateMachineArn=cloud.stack.state_machine().arn,
            name="iam-denied",
            input=json.dumps({"batch_id": "iam-denied", "orders": orders}),
        )["executionArn"]
        assert wait_for_execution(sfn, arn, timeout=240) == "SUCCEEDED"
        summary = json.loads(sfn.describe_execution(executionArn=arn)["output"])
        events = sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    finally:
        cloud.stop()

    assert summary["failed"] == 1
    causes = [
        json.loads(event["taskFailedEventDetails"]["cause"])
        for event in events
        if event["type"] == "TaskFailed" and event["taskFailedEventDetails"]["error"] == "ClientError"
    ]
    # The charge is a transaction with the order's ConditionCheck; IAM judges each action's own permission.
    expected = (
        "An error occurred (AccessDeniedException) when calling the TransactWriteItems operation: "
        + not_authorized(
            "ChargePaymentFunctionRole",
            "ChargePaymentFunction",
            "dynamodb:PutItem",
            TABLE_ARN.format("PaymentsTable"),
        )
    )
    # The first attempt and the three States.TaskFailed retries, each denied the same write.
    assert [aws_message(cause["errorMessage"]) for cause in causes] == [expected] * 4


# ---------------------------------------------------------------------------------------------- probes


@pytest.fixture
def probe_cloud(request: pytest.FixtureRequest) -> Iterator[LocalCloud]:
    mode = request.param if isinstance(request.param, str) else None
    cloud = started(PROBE_TEMPLATE, enforce_iam=request.param is not False, iam_mode=mode)
    try:
        yield cloud
    finally:
        cloud.stop()


def probe(cloud: LocalCloud, function: str) -> dict[str, Any]:
    response = cloud.client("lambda").invoke(FunctionName=function, Payload=b"{}")
    assert "FunctionError" not in response
    outcome: dict[str, Any] = json.loads(response["Payload"].read())
    for answer in outcome.values():
        if answer.get("message"):
            answer["message"] = aws_message(answer["message"])
    return outcome


def run_invoker(cloud: LocalCloud) -> dict[str, Any]:
    sfn = cloud.client("stepfunctions")
    arn = sfn.start_execution(stateMachineArn=cloud.stack.state_machine().arn)["executionArn"]
    wait_for_execution(sfn, arn, timeout=60, poll_seconds=0.2)
    description: dict[str, Any] = sfn.describe_execution(executionArn=arn)
    return description


@pytest.mark.parametrize("probe_cloud", [True], indirect=True)
def test_calls_a_role_does_not_allow_are_denied_in_each_service_own_shape(probe_cloud: LocalCloud) -> None:
    table_arn = TABLE_ARN.format("ProbeTable")
    bucket_arn = "arn:aws:s3:::orderbatch-probebucket"

    def denied(
        role: str, function: str, action: str, resource: str, code: str, status: int
    ) -> dict[str, Any]:
        return {"code": code, "status": status, "message": not_authorized(role, function, action, resource)}

    role = "UnprivilegedFunctionRole"
    assert probe(probe_cloud, "UnprivilegedFunction") == {
        "dynamodb:GetItem": denied(
            role, "UnprivilegedFunction", "dynamodb:GetItem", table_arn, "AccessDeniedException", 400
        ),
        "dynamodb:PutItem": denied(
            role, "UnprivilegedFunction", "dynamodb:PutItem", table_arn, "AccessDeniedException", 400
        ),
        "s3:ListBucket": denied(
            role, "UnprivilegedFunction", "s3:ListBucket", f'"{bucket_arn}"', "AccessDenied", 403
        ),
        "s3:PutObject": denied(
            role, "UnprivilegedFunction", "s3:PutObject", f'"{bucket_arn}/probe.txt"', "AccessDenied", 403
        ),
    }
    reader = probe(probe_cloud, "ReaderFunction")
    assert reader["dynamodb:GetItem"] == {"code": None}
    assert reader["s3:ListBucket"] == {"code": None}
    assert reader["dynamodb:PutItem"]["code"] == "AccessDeniedException"
    assert reader["s3:PutObject"]["code"] == "AccessDenied"

    # The operator's credentials are an administrator's.
    probe_cloud.client("dynamodb").put_item(TableName="orderbatch-ProbeTable", Item={"id": {"S": "op"}})
    probe_cloud.client("s3").put_object(Bucket="orderbatch-probebucket", Key="op.txt", Body=b"x")
    assert probe_cloud.client("s3").list_objects_v2(Bucket="orderbatch-probebucket")["KeyCount"] == 1


@pytest.mark.parametrize("probe_cloud", [True], indirect=True)
def test_a_lambda_task_its_role_may_not_invoke_fails_as_step_functions_reports_it(
    probe_cloud: LocalCloud,
) -> None:
    execution = run_invoker(probe_cloud)

    assert execution["status"] == "FAILED"
    assert execution["error"] == "Lambda.AWSLambdaException"
    role_arn = probe_cloud.client("stepfunctions").describe_state_machine(
        stateMachineArn=probe_cloud.stack.state_machine().arn
    )["roleArn"]
    assert role_arn == f"arn:aws:iam::{ACCOUNT}:role/orderbatch-InvokerStateMachineRole"
    explained_message, _, details = execution["cause"].partition(") (Service: ")
    message = aws_message(explained_message + ")")
    session = message.split("/")[2].split(" ")[0]
    assert session.isalpha()
    assert len(session) == 32
    function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:UnprivilegedFunction"
    assert message == not_authorized(
        "InvokerStateMachineRole", session, "lambda:InvokeFunction", function_arn
    )
    assert details.startswith("AWSLambda; Status Code: 403; Error Code: AccessDeniedException; Request ID: ")
    assert details.endswith("; Proxy: null)")
    assert probe_cloud.lambda_service is not None
    assert (
        probe_cloud.lambda_service.stats(include_timeseries=False)["functions"]["UnprivilegedFunction"][
            "invocations"
        ]
        == 0
    )


@pytest.mark.parametrize("probe_cloud", [False], indirect=True)
def test_without_iam_every_call_goes_through(probe_cloud: LocalCloud) -> None:
    assert any("IAM" in line for line in probe_cloud.stack.not_honoured)
    assert all(outcome == {"code": None} for outcome in probe(probe_cloud, "UnprivilegedFunction").values())
    assert run_invoker(probe_cloud)["status"] == "SUCCEEDED"


@pytest.mark.parametrize("probe_cloud", ["report"], indirect=True)
def test_in_report_mode_calls_go_through_and_each_would_be_denial_is_listed(probe_cloud: LocalCloud) -> None:
    assert all(outcome == {"code": None} for outcome in probe(probe_cloud, "UnprivilegedFunction").values())
    assert run_invoker(probe_cloud)["status"] == "SUCCEEDED"

    assert probe_cloud.iam is not None
    denials = probe_cloud.iam.would_be_denials()
    # DynamoDB's come from the data plane's process, the rest from the endpoint and the Lambda Task, whose
    # invocation, allowed, makes the function's four calls again.
    probe_calls = [
        ("dynamodb:GetItem", TABLE_ARN.format("ProbeTable")),
        ("dynamodb:PutItem", TABLE_ARN.format("ProbeTable")),
        ("s3:ListBucket", "arn:aws:s3:::orderbatch-probebucket"),
        ("s3:PutObject", "arn:aws:s3:::orderbatch-probebucket/probe.txt"),
    ]
    invoke = ("lambda:InvokeFunction", f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:UnprivilegedFunction")
    assert [(denial["action"], denial["resource"]) for denial in denials] == [
        *probe_calls,
        invoke,
        *probe_calls,
    ]
    principal = (
        f"arn:aws:sts::{ACCOUNT}:assumed-role/orderbatch-UnprivilegedFunctionRole/UnprivilegedFunction"
    )
    assert denials[0]["principal"] == principal
    assert denials[0]["why"] == (
        "role orderbatch-UnprivilegedFunctionRole evaluated: AWSLambdaBasicExecutionRole statement 1 "
        "(Allow): action not matched (the statement's Action logs:CreateLogGroup, logs:CreateLogStream, "
        "logs:PutLogEvents)"
    )
    invoked = denials[len(probe_calls)]
    assert (
        "InvokerStateMachineRolePolicy0 statement 1 (Allow): resource not matched (the request is on "
        in (invoked["why"])
    )


def test_local_up_enforces_iam_unless_told_no_iam(local_up_config: Callable[..., LocalCloudConfig]) -> None:
    flag_sets = (["--no-iam"], [], ["--iam-mode", "report"], ["--iam-mode", "off"])
    configs = [local_up_config(*flags) for flags in flag_sets]

    assert [config.iam_mode for config in configs] == ["off", None, "report", "off"]
    assert [config.enforce_iam for config in configs] == [False, True, True, True]


def test_building_roles_leaves_no_warning_of_sams_unpublished_metrics(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stack = load_stack(default_template())
    with caplog.at_level("WARNING"):
        # SAM keeps the last translation's metrics in a singleton, which its plugins (load_stack runs
        # them) add to; the next translation lets them go.
        build_roles(stack)
        load_stack(default_template())
        build_roles(stack)
        gc.collect()

    assert not [record for record in caplog.records if "unpublished metrics" in record.getMessage()]
