"""A layer's module under python/, importable as on AWS (from /opt/python)."""

GREETING = "hello from the folder layer"


def fail() -> None:
    raise RuntimeError("failed inside a layer")
