"""Echoes its event with what it sees of its environment: the variables SAM CLI set, /var/task files."""

import json
import os
import time


def handler(event, context):
    print(f"{os.environ['GREETING']} from {context.function_name}")
    with open(os.environ["CONFIG_PATH"]) as config:
        settings = json.load(config)
    return {
        "event": event,
        "settings": settings,
        "function_name": os.environ["AWS_LAMBDA_FUNCTION_NAME"],
        "memory_mb": context.memory_limit_in_mb,
        "sam_local": os.environ.get("AWS_SAM_LOCAL"),
    }


def slow(event, context):
    print("sleeping past the timeout")
    time.sleep(3)
    return {"finished": True}
