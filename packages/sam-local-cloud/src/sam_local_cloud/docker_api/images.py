"""Images: the AWS Lambda Python base images, present without a download, and the images SAM CLI builds.

Nothing is pulled. A Lambda Python base image (``public.ecr.aws/lambda/python:3.12``, ``-x86_64``,
SAM CLI's emulation images ``public.ecr.aws/sam/emulation-python3.12`` and, on Docker Hub,
``amazon/aws-sam-cli-emulation-image-python3.12`` ...) stands for "the function runs on the local python3.12",
which is what a container from it runs as (``execution.py``). SAM CLI builds its invoke image FROM one,
with the Runtime Interface Emulator and any local layers ADDed; that build is carried out on files: the
Dockerfile's ADDs and the file operations of its RUNs (``mv``, ``cp``, ``rm``, ``mkdir``, ``chmod``) on a
folder that stands for the image's own files (its "rootfs": ``/var/rapid``, ``/opt``).

Anything else has no local equivalent and is refused with a Docker-style error naming why: images of
other runtimes, arbitrary images (PackageType Image functions), other architectures than this machine's.
"""

from __future__ import annotations

import hashlib
import platform
import re
import shlex
import shutil
import stat
import tarfile
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TypedDict

from sam_local_cloud.docker_api.errors import ApiError, bad_request, conflict, not_found
from sam_local_cloud.json_types import JsonObject

LAMBDA_RUNTIME_LABEL = "org.sam-local-cloud.lambda-runtime"
ONLY_PYTHON = "the local execution environments run Python Lambda runtimes only, each on the Python it names"
IMAGE_FUNCTIONS_REFUSED = (
    "PackageType Image functions cannot run here: a container runs as a local Python Lambda execution "
    "environment, so only the AWS Lambda Python base images (public.ecr.aws/lambda/python:3.X) exist; "
    "nothing is downloaded from a registry"
)
# Docker Hub names may carry the registry (docker.io/amazon/...), as Docker's own normalised names do.
_DOCKER_HUB = r"(?:(?:docker\.io|index\.docker\.io|registry-1\.docker\.io)/)?"
_LAMBDA_BASE = re.compile(
    rf"^(?:public\.ecr\.aws/lambda/|{_DOCKER_HUB}amazon/aws-lambda-)(?P<family>[a-z]+)$"
)
# SAM CLI's emulation images (`sam local --invoke-image`): ECR Public since SAM CLI 1.22, Docker Hub before.
_SAM_EMULATION = re.compile(
    rf"^(?:public\.ecr\.aws/sam/emulation-|{_DOCKER_HUB}amazon/aws-sam-cli-emulation-image-)"
    r"(?P<runtime>[a-z.]+\d[\w.]*)$"
)
# python:3.12, 3.12-x86_64, 3.12.2025.01.15.10 (dated releases); SAM CLI's "-rapid-" tags are its own builds.
_PYTHON_TAG = re.compile(r"^(?P<version>3\.\d+)(?:\.[\d.]+)?(?:-(?P<architecture>x86_64|arm64))?$")
# Emulation images are tagged latest or with the SAM CLI version they came with (1.33.0), each also per
# architecture since SAM CLI 1.33 (latest-x86_64, 1.33.0-arm64).
_EMULATION_TAG = re.compile(
    r"^(?:(?:latest|\d+(?:\.\d+)*)(?:-(?P<architecture>x86_64|arm64))?|(?P<bare>x86_64|arm64))$"
)
_SAM_BUILT_PREFIX = "samcli/lambda-"
# SAM CLI's durable execution emulator (`sam local invoke --durable-execution-name`, `sam local execution`,
# `sam local callback`): its image runs the durable testing SDK's dex-local-runner, which is installed here.
DURABLE_EMULATOR_REPOSITORY = "public.ecr.aws/durable-functions/aws-durable-execution-emulator"
DURABLE_EMULATOR_RUNTIME = "aws-durable-execution-emulator"
# What the Lambda Python base images set (docker inspect public.ecr.aws/lambda/python:3.12).
_BASE_ENVIRONMENT = (
    "LANG=en_US.UTF-8",
    "TZ=:/etc/localtime",
    "PATH=/var/lang/bin:/usr/local/bin:/usr/bin/:/bin:/opt/bin",
    "LD_LIBRARY_PATH=/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib",
    "LAMBDA_TASK_ROOT=/var/task",
    "LAMBDA_RUNTIME_DIR=/var/runtime",
)
_SUPPORTED_INSTRUCTIONS = ("FROM", "ADD", "COPY", "RUN")
# (type, action, actor ID, attributes) of an event for GET /events.
Publish = Callable[[str, str, str, dict[str, str]], None]


def split_reference(reference: str) -> tuple[str, str]:
    """``repo[:tag][@digest]`` -> (repo, tag); the tag defaults to ``latest`` as Docker's does."""
    name = reference.split("@", 1)[0]
    repository, separator, tag = name.rpartition(":")
    if not separator or "/" in tag:
        return name, "latest"
    return repository, tag


def normalise(reference: str) -> str:
    repository, tag = split_reference(reference)
    return f"{repository}:{tag}"


def host_architecture() -> str:
    """Docker's name for this machine's architecture (amd64, arm64)."""
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def lambda_base_runtime(reference: str) -> str | None:
    """The Python runtime a Lambda base image reference stands for; None when it is no Lambda base image.

    Raises an ApiError for a Lambda base image of another runtime, or of another architecture.
    """
    repository, tag = split_reference(reference)
    runtime: str | None = None
    tag_match: re.Match[str] | None = None
    if match := _LAMBDA_BASE.match(repository):
        if match["family"] != "python":
            raise not_found(f"No such image: {reference} ({ONLY_PYTHON})")
        tag_match = _PYTHON_TAG.match(tag)
        if tag_match is None:
            return None
        runtime = f"python{tag_match['version']}"
    elif (match := _SAM_EMULATION.match(repository)) and (tag_match := _EMULATION_TAG.match(tag)):
        if not match["runtime"].startswith("python3."):
            raise not_found(f"No such image: {reference} ({ONLY_PYTHON})")
        runtime = match["runtime"]
    if runtime is None or tag_match is None:
        return None
    named = tag_match.groupdict().get("architecture") or tag_match.groupdict().get("bare")
    architecture = {"arm64": "arm64", "x86_64": "amd64"}.get(named or "")
    if architecture is not None and architecture != host_architecture():
        raise not_found(
            f"No such image: {reference} (runtimes run natively here, on {host_architecture()}; "
            "set Architectures to this machine's)"
        )
    return runtime


def is_durable_emulator_image(reference: str) -> bool:
    """SAM CLI's durable execution emulator image, any tag (``latest``, a release, or pinned by
    DURABLE_EXECUTIONS_EMULATOR_IMAGE_TAG): it stands for the dex-local-runner installed here."""
    return split_reference(reference)[0] == DURABLE_EMULATOR_REPOSITORY


def _is_present_without_download(reference: str) -> bool:
    return is_durable_emulator_image(reference) or lambda_base_runtime(reference) is not None


def _timestamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class ImageConfig(TypedDict, total=False):
    """An image's ``Config``, as Docker's image inspect answers it."""

    Env: list[str]
    Entrypoint: list[str] | None
    Cmd: list[str] | None
    WorkingDir: str
    Labels: dict[str, str]
    ExposedPorts: dict[str, JsonObject]


@dataclass
class Image:
    id: str
    tags: list[str]
    runtime: str
    config: ImageConfig
    created: str = field(default_factory=_timestamp)
    repo_digests: list[str] = field(default_factory=list)
    # The image's own files (what its Dockerfile ADDed), or None for a base image: it has none.
    rootfs: Path | None = None
    parent_id: str = ""

    @property
    def short_id(self) -> str:
        return self.id.removeprefix("sha256:")[:12]

    def inspect(self) -> dict[str, object]:
        return {
            "Id": self.id,
            "RepoTags": list(self.tags),
            "RepoDigests": list(self.repo_digests),
            "Parent": self.parent_id,
            "Created": self.created,
            "Config": self.config,
            "Architecture": host_architecture(),
            "Os": "linux",
            "Size": 0,
            "RootFS": {"Type": "layers", "Layers": []},
        }

    def summary(self) -> JsonObject:
        return {
            "Id": self.id,
            "ParentId": self.parent_id,
            "RepoTags": list(self.tags),
            "RepoDigests": list(self.repo_digests),
            "Created": int(datetime.fromisoformat(self.created.replace("Z", "+00:00")).timestamp()),
            "Size": 0,
            "SharedSize": -1,
            "Labels": dict(self.config.get("Labels") or {}),
            "Containers": -1,
        }


class ImageStore:
    """The images this Docker API knows, by ID and by tag."""

    def __init__(self, root: Path, publish: Publish = lambda kind, action, actor, attributes: None) -> None:
        self.root = root
        self.publish = publish
        self._images: dict[str, Image] = {}
        self._tags: dict[str, str] = {}
        self._lock = threading.RLock()

    # -- lookups ------------------------------------------------------------------------------------

    def get(self, reference: str) -> Image:
        """The image a tag or (short) ID names; a Lambda Python base image is always there."""
        with self._lock:
            image = self._find(reference)
            if image is not None:
                return image
            if is_durable_emulator_image(reference):
                return self._add_base(normalise(reference), DURABLE_EMULATOR_RUNTIME)
            runtime = lambda_base_runtime(reference)
            if runtime is None:
                raise not_found(f"No such image: {reference}")
            return self._add_base(normalise(reference), runtime)

    def _find(self, reference: str) -> Image | None:
        image_id = self._tags.get(normalise(reference))
        if image_id is not None:
            return self._images[image_id]
        wanted = reference.removeprefix("sha256:")
        if re.fullmatch(r"[0-9a-f]{6,64}", wanted):
            matches = [image for image in self._images.values() if image.id[7:].startswith(wanted)]
            if len(matches) == 1:
                return matches[0]
        return None

    def _add_base(self, tag: str, runtime: str) -> Image:
        repository, _ = split_reference(tag)
        image = Image(
            id=_digest(f"sam-local-cloud lambda base {tag}"),
            tags=[tag],
            runtime=runtime,
            config=_emulator_config() if runtime == DURABLE_EMULATOR_RUNTIME else _base_config(runtime),
            # The same digest as the registry data answers, so SAM CLI sees its base image as current.
            repo_digests=[f"{repository}@{self.registry_digest(tag)}"],
        )
        self._images[image.id] = image
        self._tags[tag] = image.id
        return image

    @staticmethod
    def registry_digest(reference: str) -> str:
        return _digest(f"sam-local-cloud registry {normalise(reference)}")

    def distribution(self, reference: str) -> JsonObject:
        """``GET /distribution/{name}/json``: what the registry would say, for the images present here."""
        if not _is_present_without_download(reference):
            raise ApiError(
                404, f"manifest unknown: {reference} is not in any registry reachable here (no downloads)"
            )
        return {
            "Descriptor": {
                "mediaType": "application/vnd.oci.image.index.v1+json",
                "digest": self.registry_digest(reference),
                "size": 0,
            },
            "Platforms": [{"architecture": host_architecture(), "os": "linux"}],
        }

    def summaries(self, filters: dict[str, list[str]]) -> list[JsonObject]:
        unknown = set(filters) - {"reference", "dangling", "label"}
        if unknown:
            raise bad_request(f"invalid filter '{sorted(unknown)[0]}'")
        with self._lock:
            images = list(self._images.values())
        return [image.summary() for image in images if _matches(image, filters)]

    # -- pull, tag, remove --------------------------------------------------------------------------

    def pull(self, repository: str, tag: str) -> list[JsonObject]:
        """The progress lines of ``POST /images/create``; a Lambda Python base image is already here."""
        reference = f"{repository}:{tag or 'latest'}"
        if not _is_present_without_download(reference):
            raise not_found(
                f"pull access denied for {repository}: nothing is downloaded here. {IMAGE_FUNCTIONS_REFUSED}"
            )
        image = self.get(reference)
        self.publish("image", "pull", reference, {"name": reference})
        return [
            {"status": f"Pulling from {repository}", "id": tag},
            {"status": f"Digest: {image.repo_digests[0].split('@')[1]}"},
            {"status": f"Status: Image is up to date for {reference}"},
        ]

    def tag(self, image: Image, reference: str) -> None:
        tag = normalise(reference)
        with self._lock:
            previous = self._tags.get(tag)
            if previous is not None and previous != image.id:
                self._images[previous].tags.remove(tag)
            self._tags[tag] = image.id
            if tag not in image.tags:
                image.tags.append(tag)
        self.publish("image", "tag", image.id, {"name": tag})

    def remove(self, reference: str, *, force: bool, in_use: Callable[[Image], bool]) -> list[dict[str, str]]:
        with self._lock:
            image = self._find(reference)
            if image is None:
                raise not_found(f"No such image: {reference}")
            tag = normalise(reference)
            if tag in image.tags and len(image.tags) > 1 and not force:
                image.tags.remove(tag)
                del self._tags[tag]
                self.publish("image", "untag", image.id, {"name": tag})
                return [{"Untagged": tag}]
            if in_use(image) and not force:
                raise conflict(
                    f'conflict: unable to remove repository reference "{reference}" (must force) - '
                    f"container is using its referenced image {image.short_id}"
                )
            del self._images[image.id]
            for old_tag in image.tags:
                self._tags.pop(old_tag, None)
        if image.rootfs is not None:
            shutil.rmtree(image.rootfs, ignore_errors=True)
        self.publish("image", "delete", image.id, {"name": image.id})
        return [{"Untagged": old_tag} for old_tag in image.tags] + [{"Deleted": image.id}]

    # -- build --------------------------------------------------------------------------------------

    def build(
        self, context: IO[bytes], *, tags: Iterable[str], dockerfile: str, target_platform: str
    ) -> list[JsonObject]:
        """``POST /build``: the progress lines, ending in an ``error`` line when the build is refused."""
        lines: list[JsonObject] = []
        try:
            _check_platform(target_platform)
            image = self._build(context, dockerfile, lines)
        except (ApiError, BuildRefusedError) as error:
            message = error.message if isinstance(error, ApiError) else str(error)
            lines.append({"errorDetail": {"message": message}, "error": message})
            return lines
        for tag in tags:
            self.tag(image, tag)
        lines.append({"aux": {"ID": image.id}})
        lines.append({"stream": f"Successfully built {image.short_id}\n"})
        lines += [{"stream": f"Successfully tagged {normalise(tag)}\n"} for tag in tags]
        return lines

    def _build(self, context: IO[bytes], dockerfile: str, lines: list[JsonObject]) -> Image:
        self.root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="context-", dir=self.root) as context_folder:
            context_dir = Path(context_folder)
            with tarfile.open(fileobj=context, mode="r:*") as archive:
                archive.extractall(context_dir, filter="data")
            dockerfile_path = context_dir / dockerfile
            if not dockerfile_path.is_file():
                raise BuildRefusedError(f"Cannot locate specified Dockerfile: {dockerfile}")
            instructions = parse_dockerfile(dockerfile_path.read_text())
            if not instructions or instructions[0][0] != "FROM":
                raise BuildRefusedError("the Dockerfile must start with FROM")
            parent = self._from(instructions[0][1])
            image_id = _digest(f"sam-local-cloud build {uuid.uuid4()}")
            rootfs = self.root / "images" / image_id[7:19]
            if parent.rootfs is not None:
                shutil.copytree(parent.rootfs, rootfs, symlinks=True)
            rootfs.mkdir(parents=True, exist_ok=True)
            try:
                for number, (instruction, arguments) in enumerate(instructions, start=1):
                    step = f"Step {number}/{len(instructions)} : {instruction} {arguments}\n"
                    lines.append({"stream": step})
                    if instruction != "FROM":
                        _run_instruction(instruction, arguments, context_dir, rootfs)
                    lines.append({"stream": f" ---> {hashlib.sha256(arguments.encode()).hexdigest()[:12]}\n"})
            except BaseException:
                shutil.rmtree(rootfs, ignore_errors=True)
                raise
        image = Image(
            id=image_id,
            tags=[],
            runtime=parent.runtime,
            config=parent.config.copy(),
            rootfs=rootfs,
            parent_id=parent.id,
        )
        with self._lock:
            self._images[image.id] = image
        return image

    def _from(self, arguments: str) -> Image:
        reference = arguments.split()[0]
        try:
            return self.get(reference)
        except ApiError as error:
            repository, _ = split_reference(reference)
            if _LAMBDA_BASE.match(repository) or _SAM_EMULATION.match(repository):
                raise BuildRefusedError(f"FROM {reference}: {error.message}") from None
            raise BuildRefusedError(f"FROM {reference}: {IMAGE_FUNCTIONS_REFUSED}") from None


class BuildRefusedError(Exception):
    """A Dockerfile this builder cannot carry out; reported in the build's progress stream."""


def _check_platform(target_platform: str) -> None:
    if not target_platform:
        return
    architecture = target_platform.split("/")[1] if "/" in target_platform else target_platform
    if architecture != host_architecture():
        raise BuildRefusedError(
            f"platform {target_platform}: runtimes run natively here, on linux/{host_architecture()}; "
            "set the function's Architectures to this machine's"
        )


def _base_config(runtime: str) -> ImageConfig:
    return {
        "Env": [*_BASE_ENVIRONMENT, f"AWS_EXECUTION_ENV=AWS_Lambda_{runtime}"],
        "Entrypoint": ["/lambda-entrypoint.sh"],
        "Cmd": None,
        "WorkingDir": "/var/task",
        "Labels": {LAMBDA_RUNTIME_LABEL: runtime},
    }


def _emulator_config() -> ImageConfig:
    return {
        "Env": ["PATH=/usr/local/bin:/usr/bin:/bin"],
        "Entrypoint": None,
        "Cmd": ["dex-local-runner", "start-server"],
        "WorkingDir": "/",
        "Labels": {},
        "ExposedPorts": {"9014/tcp": {}},
    }


def _matches(image: Image, filters: dict[str, list[str]]) -> bool:
    for wanted in filters.get("reference", []):
        repository, tag = split_reference(wanted)
        explicit_tag = ":" in wanted.rsplit("/", 1)[-1]
        if not any(
            split_reference(existing)[0] == repository and (not explicit_tag or existing.endswith(f":{tag}"))
            for existing in image.tags
        ):
            return False
    if "dangling" in filters and (filters["dangling"] == ["true"]) != (not image.tags):
        return False
    labels = image.config.get("Labels") or {}
    for wanted in filters.get("label", []):
        key, separator, value = wanted.partition("=")
        if key not in labels or (separator and labels[key] != value):
            return False
    return True


# -- Dockerfiles --------------------------------------------------------------------------------------


def parse_dockerfile(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction, continuation lines joined, comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        instruction, _, arguments = line.partition(" ")
        instructions.append((instruction.upper(), arguments.strip()))
    return instructions


def _run_instruction(instruction: str, arguments: str, context_dir: Path, rootfs: Path) -> None:
    if instruction in {"ADD", "COPY"}:
        words = [word for word in shlex.split(arguments) if not word.startswith("--")]
        if len(words) < 2:
            raise BuildRefusedError(f"{instruction} needs a source and a destination: {arguments}")
        *sources, destination = words
        for source in sources:
            _copy_into(_inside(context_dir, source), _inside(rootfs, destination), destination.endswith("/"))
        return
    if instruction == "RUN":
        for command in _commands(arguments):
            _file_operation(command, rootfs)
        return
    raise BuildRefusedError(
        f"Dockerfile instruction {instruction} is not supported here (SAM CLI's images use "
        f"{', '.join(_SUPPORTED_INSTRUCTIONS)})"
    )


def _commands(shell_line: str) -> list[list[str]]:
    commands: list[list[str]] = [[]]
    for word in shlex.split(shell_line):
        if word == "&&":
            commands.append([])
        else:
            commands[-1].append(word)
    return [command for command in commands if command]


def _file_operation(command: list[str], rootfs: Path) -> None:
    """The file operations SAM CLI's Dockerfiles RUN, on the image's files."""
    program, arguments = command[0], command[1:]
    flags = "".join(word.lstrip("-") for word in arguments if word.startswith("-"))
    paths = [word for word in arguments if not word.startswith("-")]
    if program == "mv" and len(paths) == 2:
        source, destination = _inside(rootfs, paths[0]), _inside(rootfs, paths[1])
        destination.parent.mkdir(parents=True, exist_ok=True)
        source.rename(destination / source.name if destination.is_dir() else destination)
    elif program == "cp" and len(paths) == 2:
        _copy_into(_inside(rootfs, paths[0]), _inside(rootfs, paths[1]), paths[1].endswith("/"))
    elif program == "rm" and paths:
        for path in paths:
            _remove(_inside(rootfs, path), recursive="r" in flags.lower(), forced="f" in flags)
    elif program == "mkdir" and paths:
        for path in paths:
            _inside(rootfs, path).mkdir(parents="p" in flags, exist_ok="p" in flags)
    elif program == "chmod" and len(paths) >= 2 and paths[0] in {"+x", "a+x", "755", "0755", "555"}:
        for path in paths[1:]:
            target = _inside(rootfs, path)
            target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    else:
        raise BuildRefusedError(
            f"RUN {shlex.join(command)}: only the file operations SAM CLI's images use run here "
            "(mv, cp, rm, mkdir, chmod +x)"
        )


def _remove(target: Path, *, recursive: bool, forced: bool) -> None:
    if target.is_dir() and recursive:
        shutil.rmtree(target)
    elif target.is_dir():
        raise BuildRefusedError(f"rm: cannot remove {target.name}: Is a directory")
    elif target.exists() or target.is_symlink():
        target.unlink()
    elif not forced:
        raise BuildRefusedError(f"rm: cannot remove {target.name}: No such file or directory")


def _inside(root: Path, path: str) -> Path:
    """``path`` (absolute inside the image, or relative to the build context) under ``root``."""
    relative = path.strip("/")
    if relative.endswith("/.") or relative == ".":
        relative = relative[:-1].rstrip("/")
    target = (root / relative).resolve() if relative else root.resolve()
    if target != root.resolve() and root.resolve() not in target.parents:
        raise BuildRefusedError(f"{path} is outside the image")
    return target


def _copy_into(source: Path, destination: Path, into_folder: bool) -> None:
    """Docker's ADD/COPY and ``cp -r``: a folder's contents merge into the destination folder."""
    if not source.exists():
        raise BuildRefusedError(f"{source.name}: no such file or directory")
    if source.is_dir():
        shutil.copytree(source, destination, symlinks=True, dirs_exist_ok=True)
        return
    if into_folder or destination.is_dir():
        destination.mkdir(parents=True, exist_ok=True)
        destination = destination / source.name
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, destination)
