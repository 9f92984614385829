"""API Gateway mapping templates (the VTL subset of sam_local_cloud.vtl), rendered without a cloud."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sam_local_cloud import vtl


def render(template: str, body: str = "{}", **variables: Any) -> str:
    values = {"input": vtl.InputVariable(body=body), "util": vtl.UtilVariable(), "context": {}, **variables}
    return vtl.render(template, values)


def test_the_step_functions_request_template_public_apps_write() -> None:
    body = json.dumps({"order": {"id": "o-1", "items": [1, 2]}, "note": 'say "hi"'})
    rendered = render(
        '{"input": "$util.escapeJavaScript($input.json(\'$\'))", "stateMachineArn": "arn:sm"}', body
    )
    request = json.loads(rendered)
    assert request["stateMachineArn"] == "arn:sm"
    assert json.loads(request["input"]) == json.loads(body)


def test_escape_javascript_escapes_single_quotes_as_api_gateway_does() -> None:
    assert render("$util.escapeJavaScript($input.json('$.name'))", '{"name": "O\'Brien"}') == (
        '\\"O\\\'Brien\\"'
    )


def test_input_path_gives_values_and_json_gives_json_text() -> None:
    body = '{"a": {"b": [10, 20]}, "s": "text"}'
    assert render("$input.path('$.a.b[1]')", body) == "20"
    assert render("$input.json('$.a')", body) == '{"b":[10,20]}'
    assert render("$input.path('$.s')", body) == "text"
    # A map is written as Java writes it, which is not JSON.
    assert render("$input.path('$.a')", body) == "{b=[10, 20]}"


def test_the_step_functions_response_template_parses_the_output() -> None:
    answer = json.dumps({"status": "SUCCEEDED", "output": json.dumps({"total": 3})})
    template = "#set($answer = $input.path('$'))$util.parseJson($answer.output).total:$answer.status"
    assert render(template, answer) == "3:SUCCEEDED"


def test_if_elseif_else_and_comparisons() -> None:
    template = "#if($x > 2)big#elseif($x == 2)two#else small#end"
    assert render(template, x=3) == "big"
    assert render(template, x=2) == "two"
    assert render(template, x=1) == " small"
    assert render("#if($missing)yes#{else}no#end") == "no"
    assert render("#if(!$missing && $x != 1)ok#end", x=2) == "ok"


def test_foreach_with_has_next_writes_a_json_list() -> None:
    template = "[#foreach($item in $input.path('$.items'))\"$item.id\"#if($foreach.hasNext),#end#end]"
    assert json.loads(render(template, '{"items": [{"id": "a"}, {"id": "b"}, {"id": "c"}]}')) == [
        "a",
        "b",
        "c",
    ]


def test_a_reference_without_a_value_is_written_as_it_stands_unless_quiet() -> None:
    assert render("[$nothing.here][$!nothing]") == "[$nothing.here][]"


def test_context_and_comments() -> None:
    assert render("## a comment line\n$context.requestId", context={"requestId": "r-1"}) == "r-1"


def test_an_unclosed_if_is_refused() -> None:
    with pytest.raises(vtl.TemplateSyntaxError):
        render("#if($x)never closed")


def test_sams_unescaped_template_keeps_a_quote_valid_json() -> None:
    template = "$util.escapeJavaScript($input.json('$')).replaceAll(\"\\\\'\",\"'\")"
    rendered = render(template, '{"name": "O\'Neil"}')
    assert json.loads(f'"{rendered}"') == '{"name":"O\'Neil"}'
