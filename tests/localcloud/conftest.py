"""Helpers for the local cloud tests: `local up`'s configuration as the command line builds it, and the
Lambda service served over WSGI on a free loopback port.

The Lambda service's fixtures (``serve_lambda``, ``run_log``, ``probe_function``) are the local cloud's own,
in packages/sam-local-cloud/tests/served_lambda.py (on pytest's ``pythonpath``), imported here: written once
for both folders.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pytest
from served_lambda import probe_function, run_log, serve_lambda

from orderbatch.commands.local import register
from sam_local_cloud import LocalCloudConfig

__all__ = ["probe_function", "run_log", "serve_lambda"]


@pytest.fixture
def local_up_config(
    config_a_command_builds: Callable[[Callable[[], object]], LocalCloudConfig], tmp_path: Path
) -> Callable[..., LocalCloudConfig]:
    """The configuration `orderbatch local up <flags>` builds, without starting a cloud."""
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())

    def built(*flags: str) -> LocalCloudConfig:
        args = parser.parse_args(["local", "up", "--state-dir", str(tmp_path / "state"), *flags])
        return config_a_command_builds(lambda: args.func(args))

    return built
