"""Each definition is read with its own stack of QueryLanguage scopes.

moto keeps the stack on the Preprocessor class, so every definition being read shares it: executions
start in parallel threads (each reads its definition), and a definition whose reading failed part-way left
its scopes behind. Either way a later JSONPath definition could be read inside a JSONata scope and its
execution die with "Unsupported declaration in QueryLanguage=JSONPath block" (seen with six conformance
cases running at once on a loaded machine).
"""

from __future__ import annotations

from typing import Any


def patch() -> None:
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    original_init = Preprocessor.__init__

    def init_with_own_scopes(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self._query_language_per_scope = []

    Preprocessor.__init__ = init_with_own_scopes  # type: ignore[method-assign]
