"""Lambda layers, laid out as Lambda lays them out: every layer of a function merged into one /opt.

Lambda extracts a function's layers into /opt in the order the function lists them, a later layer's
file replacing an earlier one's at the same path. For Python it puts ``/opt/python/lib/pythonX.Y/
site-packages`` and ``/opt/python`` on ``sys.path`` right after /var/task, before the runtime's own
packages: a module at the root of a layer's zip lands in /opt itself and is not importable, as on AWS.

Locally a function's /opt is a folder of its own, built once per set of layer contents and cached:

    <cache>/<key>/opt/   the layers' contents merged, in the function's order

The key hashes each layer's ARN and its content's fingerprint (every file's path, size and modification
time), so editing a layer's folder gives a new /opt at the next start. A layer's content is a folder (SAM's
``ContentUri``, a ``sam build`` output) or a zip (``ContentUri``/``Content`` naming a local .zip).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sam_local_cloud.lambda_service.build_cache import cache_root, locked
from sam_local_cloud.lambda_service.code_archives import unzip_as_lambda

OPT_ON_AWS = "/opt"
# The most layers a function may have (Lambda quotas).
MAX_LAYERS_PER_FUNCTION = 5
_VIEW_FOLDER = "opt"


class LayerError(ValueError):
    """A layer's content cannot be laid out: missing, or not a folder or a zip."""


@dataclass(frozen=True)
class LayerSpec:
    """One layer version: its ARN (what a function's ``Layers`` names) and where its content is."""

    name: str
    arn: str
    content: Path


def default_layer_cache_dir() -> Path:
    return cache_root() / "layers"


def python_layer_dirs(opt_dir: Path, runtime: str) -> list[Path]:
    """Where a Python runtime imports layers from, in ``sys.path`` order: ``/opt/python/lib/<runtime>/
    site-packages`` (``runtime`` as the function names it, ``python3.12``), then ``/opt/python``."""
    return [opt_dir / "python" / "lib" / runtime / "site-packages", opt_dir / "python"]


class LayerCache:
    """Merged /opt folders under one root, one per distinct list of layer contents."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or default_layer_cache_dir()

    def opt_view(self, layers: Sequence[LayerSpec]) -> Path | None:
        """The /opt of a function with these layers (built first if need be); None without layers."""
        if not layers:
            return None
        key = self.key(layers)
        view = self.root / key / _VIEW_FOLDER
        if view.is_dir():
            return view
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.root / f"{key}.lock"):
            if not view.is_dir():  # another process may have built it meanwhile
                self._build(self.root / key, layers)
        return view

    def key(self, layers: Sequence[LayerSpec]) -> str:
        identity = json.dumps([[layer.arn, str(layer.content), _fingerprint(layer)] for layer in layers])
        return hashlib.sha256(identity.encode()).hexdigest()[:16]

    def _build(self, destination: Path, layers: Sequence[LayerSpec]) -> None:
        staging = Path(tempfile.mkdtemp(prefix=f".build-{destination.name}-", dir=self.root))
        try:
            view = staging / _VIEW_FOLDER
            view.mkdir()
            for layer in layers:  # in the function's order: a later layer's file wins
                if layer.content.is_dir():
                    shutil.copytree(layer.content, view, symlinks=True, dirs_exist_ok=True)
                else:
                    _extract(layer, view)
            os.rename(staging, destination)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def _fingerprint(layer: LayerSpec) -> list[list[object]]:
    content = layer.content
    if content.is_dir():
        return [[str(path.relative_to(content)), *_size_and_time(path)] for path in _files(content)]
    if content.is_file():
        return [[content.name, *_size_and_time(content)]]
    raise LayerError(f"layer {layer.name}: its content {content} does not exist")


def _size_and_time(path: Path) -> list[object]:
    status = path.lstat()
    return [status.st_size, status.st_mtime_ns]


def _files(folder: Path) -> Iterator[Path]:
    for directory, subdirectories, names in os.walk(folder):
        subdirectories.sort()
        for name in sorted(names):
            yield Path(directory) / name


def _extract(layer: LayerSpec, view: Path) -> None:
    try:
        unzip_as_lambda(layer.content, view)
    except zipfile.BadZipFile as error:
        raise LayerError(
            f"layer {layer.name}: {layer.content} is neither a folder nor a zip ({error})"
        ) from error
