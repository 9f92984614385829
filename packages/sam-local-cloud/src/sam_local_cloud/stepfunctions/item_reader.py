"""The Distributed Map's ItemReader as AWS documents it: what an S3 object or listing yields as items.

JSON, JSONL, CSV (header row or given headers, five delimiters), an S3 inventory MANIFEST and an S3 listing
(``s3:listObjectsV2``, every page), each limited by ``MaxItems(Path)``. An unreadable source raises
``ItemReaderFailedError``, which ``distributed_map`` turns into ``States.ItemReaderFailed``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sam_local_cloud.json_types import JsonObject, JsonValue
from sam_local_cloud.stepfunctions.definition_support import CSV_DELIMITERS, ReaderConfig

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client


class ItemReaderFailedError(Exception):
    """Why items could not be read; becomes ``States.ItemReaderFailed``."""


def read_items(
    s3: S3Client,
    api_action: str,
    parameters: dict[str, Any],  # the state's evaluated Parameters: S3's request, as boto3 takes it
    config: ReaderConfig,
    max_items: int | None,
) -> list[JsonValue]:
    """The items an ItemReader yields, at most ``max_items``."""
    try:
        if api_action.lower() == "listobjectsv2":
            return list(_limited(_listed_objects(s3, parameters), max_items))
        body = s3.get_object(**parameters)["Body"].read()
    except ItemReaderFailedError:
        raise
    except Exception as error:  # an S3 error names the object; AWS reports it as the reader's failure
        raise ItemReaderFailedError(str(error)) from error
    return list(_limited(_parsed_items(s3, body, config, parameters), max_items))


def _limited(items: Iterator[JsonValue], max_items: int | None) -> Iterator[JsonValue]:
    for count, item in enumerate(items):
        if max_items is not None and count >= max_items:
            return
        yield item


def _listed_objects(s3: S3Client, parameters: dict[str, Any]) -> Iterator[JsonObject]:
    """``s3:listObjectsV2``'s objects, every page, in the shape AWS gives each item."""
    request = dict(parameters)
    while True:
        page = s3.list_objects_v2(**request)
        for entry in page.get("Contents", []):
            yield {
                "Etag": entry["ETag"],
                "Key": entry["Key"],
                "LastModified": int(entry["LastModified"].timestamp()),
                "Size": entry["Size"],
                "StorageClass": entry.get("StorageClass", "STANDARD"),
            }
        if not page.get("IsTruncated"):
            return
        request["ContinuationToken"] = page["NextContinuationToken"]


def _parsed_items(
    s3: S3Client, body: bytes, config: ReaderConfig, parameters: dict[str, Any]
) -> Iterator[JsonValue]:
    text = _text_of(body)
    if config.input_type == "JSON":
        document = _json_document(text)
        if not isinstance(document, list):
            raise ItemReaderFailedError("Attempting to map over non-iterable node.")
        yield from document
    elif config.input_type == "JSONL":
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                yield _json_document(line, f"line {number}")
    elif config.input_type == "CSV":
        yield from _csv_items(text, config.csv_header_location, config.csv_headers, config.csv_delimiter)
    elif config.input_type == "MANIFEST":
        yield from _inventory_items(s3, text, parameters)
    else:
        # PARQUET is valid on AWS; reading it would need a Parquet library the local cloud does not ship.
        raise ItemReaderFailedError(f"The local cloud cannot read InputType {config.input_type}")


def _text_of(body: bytes) -> str:
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ItemReaderFailedError(f"The object is not UTF-8 text: {error}") from error


def _json_document(text: str, where: str = "the object") -> JsonValue:
    try:
        document: JsonValue = json.loads(text)
    except ValueError as error:
        raise ItemReaderFailedError(f"Invalid JSON in {where}: {error}") from error
    return document


def _csv_items(text: str, location: str, given: tuple[str, ...], delimiter: str) -> Iterator[JsonObject]:
    rows = csv.reader(io.StringIO(text), delimiter=CSV_DELIMITERS[delimiter])
    headers = list(given) if location == "GIVEN" else next(rows, [])
    if len(set(headers)) < len(headers):
        raise ItemReaderFailedError("CSV headers cannot contain duplicates.")
    for row in rows:
        if not row:
            continue
        # AWS drops the fields of a row past its headers and leaves missing ones empty.
        yield {header: row[index] if index < len(row) else "" for index, header in enumerate(headers)}


def _inventory_items(s3: S3Client, manifest_text: str, parameters: dict[str, Any]) -> Iterator[JsonObject]:
    """The objects an S3 Inventory lists: its manifest.json names CSV files (gzip) without a header row,
    whose columns its ``fileSchema`` names."""
    manifest = _json_document(manifest_text, "the manifest")
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(manifest, dict) or not isinstance(files, list):
        raise ItemReaderFailedError("The manifest has no 'files' list.")
    if manifest.get("fileFormat", "CSV") != "CSV":
        raise ItemReaderFailedError(f"Inventory file format {manifest.get('fileFormat')} is not supported.")
    schema = [name.strip() for name in str(manifest.get("fileSchema", "")).split(",") if name.strip()]
    if not schema:
        raise ItemReaderFailedError("The manifest has no 'fileSchema'.")
    bucket = str(manifest.get("destinationBucket") or parameters["Bucket"]).removeprefix("arn:aws:s3:::")
    for listed in files:
        key = listed.get("key") if isinstance(listed, dict) else None
        try:
            if not isinstance(key, str):
                raise KeyError("key")
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except Exception as error:
            raise ItemReaderFailedError(f"Inventory file {key}: {error}") from error
        yield from _csv_items(_text_of(body), "GIVEN", tuple(schema), "COMMA")


# --- Children: batches, outcomes, tolerance, Express's time limit --------------------------------------
