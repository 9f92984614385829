"""Templates and definition files read as SAM CLI reads them, with libyaml's C parser where it is built.

SAM CLI's ``yaml_parse`` (JSON first, else YAML with CloudFormation's short forms such as ``!Ref``, and
timestamps kept as text) runs PyYAML's pure-Python parser: most of a second of every local cloud's start
went to reading the template and its definition files. The loader here is the same constructors on the
C parser; the documents it builds are the same.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from functools import cache
from pathlib import Path
from typing import Any

import yaml

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _SafeLoader(_Base):
    """The C-backed safe loader, without CloudFormation's short forms (a state machine definition)."""


class _TemplateLoader(_Base):
    """What ``samcli.yamlhelper.yaml_parse`` adds to the safe loader, on the C parser."""


@cache
def _template_loader() -> type[_TemplateLoader]:
    """The loader, its constructors taken from SAM CLI on first use (not when this module is imported)."""
    from samcli.yamlhelper import TAG_STR, TIMESTAMP_TAG, _dict_constructor, intrinsics_multi_constructor

    _TemplateLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _dict_constructor)
    _TemplateLoader.add_multi_constructor("!", intrinsics_multi_constructor)
    _TemplateLoader.add_constructor(TIMESTAMP_TAG, _TemplateLoader.yaml_constructors[TAG_STR])
    return _TemplateLoader


def parse_template(text: str) -> dict[str, Any]:
    """A template's text as SAM CLI parses it: JSON if it is JSON, else YAML."""
    try:
        parsed: dict[str, Any] = json.loads(text, object_pairs_hook=OrderedDict)
        return parsed
    except ValueError:
        loaded: dict[str, Any] = yaml.load(text, Loader=_template_loader())
        return loaded


def read_template(path: Path) -> dict[str, Any]:
    """A template file, with SAM CLI's errors for one that is missing or does not parse."""
    from samcli.commands._utils.template import TemplateFailedParsingException, TemplateNotFoundException

    if not path.exists():
        raise TemplateNotFoundException(f"Template file not found at {path}")
    try:
        return parse_template(path.read_text(encoding="utf-8"))
    except (ValueError, yaml.YAMLError) as error:
        raise TemplateFailedParsingException(f"Failed to parse template: {error}") from error


def safe_load(text: str) -> object:
    """``yaml.safe_load``, on the C parser where it is built."""
    return yaml.load(text, Loader=_SafeLoader)
