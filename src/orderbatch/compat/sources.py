"""An app's files, taken out of a checkout of its repository at the commit the manifest records.

Apps from public repositories are not copied into this one: point ``--sources`` at a folder holding
clones (``DIR/owner/name``, ``DIR/name`` or ``DIR/owner+name``, a work tree or a bare repository), and each
app is exported from its commit with ``git archive``, so a newer clone still runs what was recorded.
App templates (aws-sam-cli-app-templates) are rendered with their cookiecutter defaults, as ``sam init``
renders them with ``--no-input``.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import threading
from pathlib import Path, PurePosixPath

from orderbatch.compat.manifest import CompatApp


class SourceUnavailableError(LookupError):
    """The app's repository or commit is not in the sources folder; the message says what to clone."""


def repository_dir(sources: Path, repository: str) -> Path:
    owner, _, name = repository.partition("/")
    for candidate in (sources / owner / name, sources / name, sources / f"{owner}+{name}"):
        for git_dir in (candidate / "repo", candidate):
            if (git_dir / ".git").exists() or (git_dir / "HEAD").is_file():
                return git_dir
    raise SourceUnavailableError(
        f"{repository} is not under {sources}: "
        f"git clone https://github.com/{repository} {sources / owner / name}"
    )


def export_app(app: CompatApp, sources: Path | None, local_root: Path, into: Path) -> Path:
    """Write the app's files under ``into``; returns the folder that holds its template."""
    if app.repository == "local":
        return (local_root / app.path).resolve()
    if sources is None:
        raise SourceUnavailableError(f"{app.repository}: no --sources folder given")
    git_dir = repository_dir(sources, app.repository)
    assert app.commit is not None
    export_root = PurePosixPath(app.path)
    if app.cookiecutter:
        # The cookiecutter project is the folder that holds "{{cookiecutter.project_name}}".
        parts = export_root.parts
        export_root = PurePosixPath(
            *parts[: next(i for i, part in enumerate(parts) if part.startswith("{{"))]
        )
    archive = _git(git_dir, "archive", "--format=tar", app.commit, str(export_root))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into / "export", filter="data")
    exported = into / "export" / export_root
    if not app.cookiecutter:
        return exported / PurePosixPath(app.path).relative_to(export_root)
    return _render_cookiecutter(exported, into / "rendered")


# cookiecutter changes the process's working directory while it renders: one rendering at a time.
_render_lock = threading.Lock()


def _render_cookiecutter(project: Path, output_dir: Path) -> Path:
    from cookiecutter.main import cookiecutter

    with _render_lock:
        rendered = cookiecutter(
            str(project), no_input=True, output_dir=str(output_dir), overwrite_if_exists=True
        )
    return Path(rendered).resolve()


def _git(git_dir: Path, *args: str) -> bytes:
    flag = "--git-dir" if (git_dir / "HEAD").is_file() and not (git_dir / ".git").exists() else "-C"
    result = subprocess.run(["git", flag, str(git_dir), *args], capture_output=True, check=False, cwd=git_dir)
    if result.returncode != 0:
        raise SourceUnavailableError(
            f"git {' '.join(args[:2])} in {git_dir} failed: {result.stderr.decode(errors='replace').strip()}"
        )
    return result.stdout
