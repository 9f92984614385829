"""Handlers whose results and errors the Task shape tests read through Step Functions."""


class OrderRejectedError(Exception):
    pass


def succeed(event, context):
    return {"order_id": event.get("order_id"), "accepted": True}


def fail(event, context):
    raise OrderRejectedError(f"order {event.get('order_id')} rejected")
