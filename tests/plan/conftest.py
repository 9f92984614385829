"""The app's template, read once for the planner's tests."""

from __future__ import annotations

import pytest
from plan_helpers import APP_TEMPLATE

from orderbatch.lint.template_model import TemplateModel, read_template_file


@pytest.fixture(scope="session")
def app_model() -> TemplateModel:
    return read_template_file(APP_TEMPLATE)
