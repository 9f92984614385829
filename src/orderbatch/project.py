"""Where the project's files are and where its local cloud listens, for commands run from anywhere."""

from __future__ import annotations

import os
from pathlib import Path

# The checkout's root when the package runs from one (an editable install): the tests find the project's
# files by it. The commands never do: they work on the template in the current directory (or the one they
# are given) and on data shipped inside the package, so an installed wheel runs from anywhere.
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_LOCAL_PORT = 4566
# Where `orderbatch local up` keeps the cloud's state and function logs (relative to where it runs).
DEFAULT_STATE_DIR = Path(".orderbatch") / "local"


def default_template() -> Path:
    """The SAM template in the current directory, as `sam build` and `sam deploy` look for it."""
    return Path.cwd() / "template.yaml"


def inventory_fixture(template: Path) -> Path:
    return template.resolve().parent / "fixtures" / "inventory.json"


def local_cloud_endpoint() -> str:
    """`--endpoint` default for commands that talk to AWS: AWS_ENDPOINT_URL, else the local cloud's port."""
    return os.environ.get("AWS_ENDPOINT_URL") or f"http://127.0.0.1:{DEFAULT_LOCAL_PORT}"
