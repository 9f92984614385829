"""DynamoDB's answer to a malformed condition or filter expression, where moto raises a Python error.

moto's condition parser looks attribute names and values up with ``dict[...]`` and reports what it cannot
read with ``ValueError``, so such a request failed inside moto (``KeyError``, ``TypeError``,
``ValueError``) and the local cloud could only answer it as a gap of its own. DynamoDB refuses each with a
``ValidationException`` naming the expression, before it reads or writes anything:

- an undefined ``:value``: "Invalid ConditionExpression: An expression attribute value used in expression
  is not defined; attribute value: :value";
- an undefined ``#name``: "Invalid ConditionExpression: An expression attribute name used in the document
  path is not defined; attribute name: #name";
- a ``NULL`` bound of ``BETWEEN``: "Invalid ConditionExpression: Incorrect operand type for operator or
  function; operator or function: BETWEEN, operand type: NULL";
- anything else the parser cannot read: "Invalid ConditionExpression: Syntax error; " and what moto's
  parser says of it (DynamoDB names the offending token and its surroundings; moto's parser does not keep
  them, so that part of the message differs).

PutItem, UpdateItem, DeleteItem and a transaction's items say ``ConditionExpression``; Query and Scan,
whose parsed expression is the ``FilterExpression``, say so (moto's own refusals there, such as a
reserved word, said ``ConditionExpression`` too).

An ``ExpressionAttributeValues`` entry the condition of a PutItem or DeleteItem does not use is refused,
as DynamoDB refuses it and moto's UpdateItem does, in moto's UpdateItem's words ("Value provided in
ExpressionAttributeValues unused in expressions: keys: {:v}"); moto checked only the names there. A
value is used where its placeholder appears in the expression's text (expressions have no string
literals, and a plain attribute name cannot hold a colon), so no second parse is needed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.comparisons import IncorrectOperandType as ParsedOperandTypeError
from moto.dynamodb.exceptions import InvalidConditionExpression, MockValidationException
from moto.dynamodb.responses import DynamoHandler, validate_attributes_used

from sam_local_cloud.moto_seam import hooks

__all__ = ["register_hooks"]

CONCERN = "dynamodb"
_VALUE_NOT_DEFINED = "An expression attribute value used in expression is not defined; attribute value: {}"
_NAME_NOT_DEFINED = (
    "An expression attribute name used in the document path is not defined; attribute name: {}"
)
_CONDITION_PREFIX = "Invalid ConditionExpression: "
_FILTER_PREFIX = "Invalid FilterExpression: "
# A value placeholder as moto's condition lexer reads one.
_VALUE_PLACEHOLDER = re.compile(r":[A-Za-z0-9_\-]+")


def register_hooks() -> None:
    @hooks.around(ConditionExpressionParser, "_lookup_expression_attribute_value", concern=CONCERN)
    def defined_value(proceed: Callable[[Any, str], Any], self: Any, name: str) -> Any:
        if name not in (self.expression_attribute_values or {}):
            raise InvalidConditionExpression(_VALUE_NOT_DEFINED.format(name))
        return proceed(self, name)

    @hooks.around(ConditionExpressionParser, "_lookup_expression_attribute_name", concern=CONCERN)
    def defined_name(proceed: Callable[[Any, str], Any], self: Any, name: str) -> Any:
        if name not in (self.expression_attribute_names or {}):
            raise InvalidConditionExpression(_NAME_NOT_DEFINED.format(name))
        return proceed(self, name)

    # Where the parser raises (``parse`` itself is the parse cache's to hook): what it cannot lex, a
    # construction it asserts against, an operand of the wrong type for its function.
    for method in ("_lex_one_node", "_assert"):
        hooks.around(ConditionExpressionParser, method, concern=CONCERN)(_unreadable_is_a_syntax_error)

    @hooks.around(ConditionExpressionParser, "_make_op_condition", concern=CONCERN)
    def operand_types_checked(proceed: Callable[..., Any], self: Any, *args: Any) -> Any:
        try:
            return proceed(self, *args)
        except ParsedOperandTypeError as error:
            raise InvalidConditionExpression(str(error)) from error

    for operation in ("query", "scan"):
        hooks.around(DynamoHandler, operation, concern=CONCERN)(_filter_expression_named)
    for operation in ("put_item", "delete_item"):
        hooks.around(DynamoHandler, operation, concern=CONCERN)(_condition_values_used)


def _unreadable_is_a_syntax_error(proceed: Callable[..., Any], self: Any, *args: Any) -> Any:
    try:
        return proceed(self, *args)
    except ValueError as error:
        raise InvalidConditionExpression(f"Syntax error; {error}") from error


def _filter_expression_named(proceed: Callable[[Any], Any], self: Any) -> Any:
    try:
        return proceed(self)
    except InvalidConditionExpression as error:
        message = str(error.message)
        if not message.startswith(_CONDITION_PREFIX):
            raise
        raise MockValidationException(_FILTER_PREFIX + message[len(_CONDITION_PREFIX) :]) from error


def _condition_values_used(proceed: Callable[[Any], Any], self: Any) -> Any:
    condition = self.body.get("ConditionExpression")
    values = self.body.get("ExpressionAttributeValues")
    # An empty or absent map, or values without a condition, are moto's to answer as they are.
    if isinstance(condition, str) and isinstance(values, dict) and values:
        used = set(_VALUE_PLACEHOLDER.findall(condition))
        # An undefined value is the parse's to refuse first, as in moto's UpdateItem.
        if used <= values.keys():
            validate_attributes_used(values, list(used), "Values")
    return proceed(self)
