"""Each definition is read with its own stack of QueryLanguage scopes.

moto keeps the stack on the Preprocessor class, so every definition being read shares it: executions
start in parallel threads (each reads its definition), and a definition whose reading failed part-way left
its scopes behind. Either way a later JSONPath definition could be read inside a JSONata scope and its
execution die with "Unsupported declaration in QueryLanguage=JSONPath block" (seen with six conformance
cases running at once on a loaded machine).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sam_local_cloud.moto_seam import hooks


def register_hooks() -> None:
    from sam_local_cloud.moto_seam.stepfunctions import Preprocessor

    @hooks.around(Preprocessor, "__init__", concern="preprocessor_scopes")
    def init_with_own_scopes(proceed: Callable[..., None], self: Any, *args: Any, **kwargs: Any) -> None:
        proceed(self, *args, **kwargs)
        self._query_language_per_scope = []
