"""The Lambda service's fixtures (served_lambda.py), for every test in this folder."""

from __future__ import annotations

from served_lambda import probe_function, run_log, serve_lambda

__all__ = ["probe_function", "run_log", "serve_lambda"]
