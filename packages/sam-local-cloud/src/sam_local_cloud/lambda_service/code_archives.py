"""A function's code given as a .zip (``CodeUri: app.zip``), laid out as Lambda lays it out: extracted
into a folder that becomes the task root (/var/task), so the handler ``module.function`` is found at the
zip's root as on AWS.

Each distinct archive is extracted once, keyed by its content's hash, into the build cache:

    <cache>/code/<sha256 prefix>/task/   the archive's files

never beside the archive in the user's tree. SAM CLI does the same for ``sam local invoke`` (it unzips a
zip CodeUri into a temporary folder it mounts as /var/task).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path

from sam_local_cloud.lambda_service.build_cache import cache_root, locked

_TASK_FOLDER = "task"
_HASH_CHUNK_BYTES = 1 << 20


class CodeArchiveError(ValueError):
    """The archive is not a zip Lambda could unzip; the message is Lambda's."""


def default_code_cache_dir() -> Path:
    return cache_root() / "code"


def unzip_as_lambda(archive: Path, destination: Path) -> None:
    """Unzip as Lambda does: paths kept (``zipfile`` refuses ones escaping the folder), modes kept."""
    with zipfile.ZipFile(archive) as opened:
        for member in opened.infolist():
            target = Path(opened.extract(member, destination))
            mode = member.external_attr >> 16
            if mode and not member.is_dir() and stat.S_ISREG(mode):
                target.chmod(stat.S_IMODE(mode))


def extracted_code(archive: Path, cache_dir: Path | None = None) -> Path:
    """The folder holding ``archive``'s files (extracted first if this content was never seen)."""
    root = cache_dir or default_code_cache_dir()
    key = _content_hash(archive)
    task = root / key / _TASK_FOLDER
    if task.is_dir():
        return task
    root.mkdir(parents=True, exist_ok=True)
    with locked(root / f"{key}.lock"):
        if not task.is_dir():  # another process may have extracted it meanwhile
            _extract(archive, root, key)
    return task


def _content_hash(archive: Path) -> str:
    digest = hashlib.sha256()
    with archive.open("rb") as content:
        while chunk := content.read(_HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()[:32]


def _extract(archive: Path, root: Path, key: str) -> None:
    staging = Path(tempfile.mkdtemp(prefix=f".extract-{key}-", dir=root))
    try:
        unzip_as_lambda(archive, staging / _TASK_FOLDER)
        os.rename(staging, root / key)
    except zipfile.BadZipFile as error:
        shutil.rmtree(staging, ignore_errors=True)
        # CreateFunction's InvalidParameterValueException for an archive it cannot open.
        raise CodeArchiveError(
            f"Could not unzip uploaded file. Please check your file, then try to upload again. "
            f"({archive}: {error})"
        ) from error
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def inline_code_root(source: str, runtime: str, cache_dir: Path | None = None) -> Path:
    """The task root of a function whose code is written in the template (SAM's ``InlineCode``,
    CloudFormation's ``Code.ZipFile``): CloudFormation writes it to ``index.py`` for Python and
    ``index.js`` for Node.js (a CommonJS module), so the handler is ``index.<function>``."""
    file_name = "index.js" if runtime.startswith("nodejs") else "index.py"
    root = cache_dir or default_code_cache_dir()
    digest = hashlib.sha256(f"{file_name}\0{source}".encode())
    key = "inline-" + digest.hexdigest()[:32]
    task = root / key / _TASK_FOLDER
    if task.is_dir():
        return task
    root.mkdir(parents=True, exist_ok=True)
    with locked(root / f"{key}.lock"):
        if not task.is_dir():
            staging = Path(tempfile.mkdtemp(prefix=f".inline-{key}-", dir=root))
            try:
                (staging / _TASK_FOLDER).mkdir()
                (staging / _TASK_FOLDER / file_name).write_text(source, encoding="utf-8")
                os.rename(staging, root / key)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
    return task
