"""moto's Batch package loads on first use, not when the Step Functions parser imports one of its enums."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import sam_local_cloud.moto_seam.stepfunctions
from sam_local_cloud.moto_seam.stepfunctions import create_backend_app
after_parser = "moto.ec2" in sys.modules
from moto.backends import get_backend
backend = get_backend("batch")["123456789012"]["us-east-1"]
print(json.dumps({"ec2_after_parser": after_parser, "backend": type(backend).__name__,
                  "ec2_after_use": "moto.ec2" in sys.modules}))
"""


def test_the_parser_does_not_load_ec2_and_batch_still_loads_when_asked() -> None:
    finished = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)

    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout.strip().splitlines()[-1]) == {
        "ec2_after_parser": False,
        "backend": "BatchBackend",
        "ec2_after_use": True,
    }
