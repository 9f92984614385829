"""S3 operations moto has no code for, told apart from the plain operation it would run in their place.

An S3 operation on a bucket or an object is named by a query marker (``GET /bucket/key?annotation`` is
ListObjectAnnotations). moto's S3 tests the markers it implements one by one and runs the plain operation
for any other: ListObjectAnnotations answered the object's content with status 500, DeleteObjectAnnotation
deleted the object. An operation none of whose markers moto's S3 code names anywhere is one moto cannot
answer; the protocol guard says so (``UnsupportedOperationException``) instead. Read from moto's installed
source, so a moto that learns a marker passes its operation through unchanged.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

__all__ = ["moto_has_no_code_for"]

# Markers botocore's model puts in some URIs to name the operation for routing only (?x-id=GetObject).
_ROUTING_ONLY = frozenset({"x-id"})


@functools.cache
def _moto_s3_source() -> str:
    spec = importlib.util.find_spec("moto.s3")
    if spec is None or spec.origin is None:
        return ""
    return "\n".join(
        path.read_text(encoding="utf-8") for path in sorted(Path(spec.origin).parent.glob("*.py"))
    )


@functools.cache
def moto_has_no_code_for(markers: frozenset[str]) -> bool:
    """Whether moto's S3 names none of an operation's query markers (False for an operation without any)."""
    named = markers - _ROUTING_ONLY
    source = _moto_s3_source()
    if not named or not source:
        return False
    return not any(f'"{marker}"' in source or f"'{marker}'" in source for marker in named)
