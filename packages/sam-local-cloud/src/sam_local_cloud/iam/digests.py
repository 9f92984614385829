"""Identifiers derived from a text (access keys, role IDs, session names): stable across runs."""

from __future__ import annotations

from sam_local_cloud.stack.return_values import unique_id as digest

__all__ = ["digest"]
