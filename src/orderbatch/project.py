"""Where the project's files are and where its local cloud listens, for commands run from anywhere."""

from __future__ import annotations

import os
from pathlib import Path

# src/orderbatch/project.py -> the checkout root (the package is installed in editable mode).
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_LOCAL_PORT = 4566
# Where `orderbatch local up` keeps the cloud's state and function logs (relative to where it runs).
DEFAULT_STATE_DIR = Path(".orderbatch") / "local"


def default_template() -> Path:
    here = Path.cwd() / "template.yaml"
    return here if here.exists() else PROJECT_ROOT / "template.yaml"


def inventory_fixture(template: Path) -> Path:
    return template.resolve().parent / "fixtures" / "inventory.json"


def local_cloud_endpoint() -> str:
    """`--endpoint` default for commands that talk to AWS: AWS_ENDPOINT_URL, else the local cloud's port."""
    return os.environ.get("AWS_ENDPOINT_URL") or f"http://127.0.0.1:{DEFAULT_LOCAL_PORT}"
