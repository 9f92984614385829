"""Records that its init started (in INIT_LOG), then sleeps INIT_SECONDS at import: a slow init phase."""

from __future__ import annotations

import json
import os
import time
from typing import Any

with open(os.environ["INIT_LOG"], "a") as log:
    log.write(json.dumps({"pid": os.getpid(), "started": time.time()}) + "\n")
time.sleep(float(os.environ.get("INIT_SECONDS", "0")))


def handler(event: Any, context: Any) -> dict[str, Any]:
    return {"pid": os.getpid(), "remaining_ms": context.get_remaining_time_in_millis()}
