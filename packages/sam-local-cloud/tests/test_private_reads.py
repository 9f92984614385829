"""No code outside ``sam_local_cloud/moto_seam/`` reads a private attribute of moto's objects.

moto's private names are whatever moto's own source defines with one leading underscore (a method, a class,
an attribute it assigns), found by reading the installed moto with ``ast``. A read ``x._name`` of one of them
outside the seam fails, unless a class or the top level of that same module defines ``_name`` itself (our
own attribute that happens to share moto's name). ``super()._name`` never counts as our own: a subclass
reaches moto's private base methods through the seam's hooks of our own names. The seam reads moto's
internals for the rest of the engine and states in ``Protocol``s what it hands on.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import sam_local_cloud

REPOSITORY = Path(__file__).resolve().parents[3]
LOCAL_CLOUD_DIR = Path(sam_local_cloud.__file__).resolve().parent
SEAM_DIR = LOCAL_CLOUD_DIR / "moto_seam"
# The app's packages, found by path: this package's tests never import the app.
APP_DIRS = (
    REPOSITORY / "src" / "orderbatch",
    REPOSITORY / "functions" / "order_processing",
    REPOSITORY / "functions" / "handlers",
)

# The standard library's underscore names that moto happens to define too; reading them is not reading moto.
STANDARD_LIBRARY_NAMES = frozenset(
    {
        "_exit",  # os._exit: a forked child leaves without running the parent's atexit handlers
        "_replace",  # namedtuple's copy with fields changed
        "_asdict",  # namedtuple's fields as a dict
        "_fields",  # namedtuple's field names
        "_SubParsersAction",  # argparse's type of add_subparsers()
        "_actions",  # argparse's parser's arguments
    }
)


# Another library's private name that moto happens to define too, in the one module that reads it.
OTHER_LIBRARIES_NAMES = {
    # the durable execution SDK's Executor keeps its execution store as ``_store``; the subclass lists it
    "durable_executor.py": {"_store"},
}


@dataclass(frozen=True)
class PrivateRead:
    path: str
    line: int
    name: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: .{self.name}"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def defined_names(tree: ast.AST, *, attributes_of: str | None = None) -> set[str]:
    """The private names a module defines: functions, classes, class and module variables, and the
    attributes it assigns (of ``attributes_of`` only, when given: ``self._x = ...``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if attributes_of is None or (isinstance(node.value, ast.Name) and node.value.id == attributes_of):
                names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return {name for name in names if _is_private(name)}


@functools.cache
def motos_private_names() -> frozenset[str]:
    spec = importlib.util.find_spec("moto")  # where moto is installed, without importing it
    assert spec is not None
    assert spec.submodule_search_locations
    names: set[str] = set()
    for location in spec.submodule_search_locations:
        for path in Path(location).rglob("*.py"):
            source = path.read_text(encoding="utf-8")
            if "_" in source:
                names |= defined_names(ast.parse(source, filename=str(path)))
    return frozenset(names - STANDARD_LIBRARY_NAMES)


def private_reads(source: str, path: str, motos_names: Iterable[str]) -> Iterator[PrivateRead]:
    """Each use in ``source`` (a read, or an assignment to another object's attribute) of a name of
    ``motos_names`` that the module does not define itself."""
    tree = ast.parse(source, filename=path)
    own = defined_names(tree, attributes_of="self") | OTHER_LIBRARIES_NAMES.get(Path(path).name, set())
    motos = set(motos_names)
    for node in ast.walk(tree):
        name = _attribute_named(node)
        if name is None or name not in motos:
            continue
        through_super = (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "super"
        )
        if through_super or name not in own:
            yield PrivateRead(path, node.lineno, name)


def _attribute_named(node: ast.AST) -> str | None:
    """The attribute ``x.name`` names, or ``getattr(x, "name")`` (``setattr``, ``hasattr``) spells out."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"getattr", "setattr", "hasattr", "delattr"}
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return None


def checked_modules() -> list[Path]:
    """Every module of the local cloud outside the seam, and of the app where this checkout has it."""
    modules = [path for path in LOCAL_CLOUD_DIR.rglob("*.py") if not path.is_relative_to(SEAM_DIR)]
    for app_dir in APP_DIRS:
        modules.extend(app_dir.rglob("*.py"))
    return sorted(modules)


def test_no_module_outside_the_seam_reads_a_private_attribute_of_motos() -> None:
    motos = motos_private_names()
    reads = [
        read
        for path in checked_modules()
        for read in private_reads(path.read_text(encoding="utf-8"), str(path.relative_to(REPOSITORY)), motos)
    ]
    assert not reads, (
        "moto's private attributes read outside moto_seam/ (read them through the seam):\n"
        + "\n".join(map(str, reads))
    )


def test_the_app_is_checked_where_this_checkout_has_it() -> None:
    if not APP_DIRS[0].is_dir():
        pytest.skip("the package alone: no app beside it to check")
    assert any(path.is_relative_to(APP_DIRS[0]) for path in checked_modules())


def test_motos_private_names_are_found_in_its_source() -> None:
    assert {"_get_param", "_env", "_job_pool", "_states_data"} <= motos_private_names()
    assert not STANDARD_LIBRARY_NAMES & motos_private_names()


PLANTED = """
class RedrivableWorker(IterationWorker):
    def __init__(self):
        self._mine = 1

    def _eval_job(self, env, job):  # an override: a name this module defines
        self._mine += 1
        super()._eval_job(env, job)  # moto's own, through super(): a read of moto's
        return self._job_pool.next_job()  # moto's attribute, defined nowhere here


def states_of(env, worker):
    worker._map_run_record = None  # an assignment to moto's attribute of another object
    return env.states._states_data, os._exit, getattr(worker, "_job_pool", None)
"""


def test_the_check_flags_reads_of_motos_private_names() -> None:
    motos = {
        "_eval_job",
        "_job_pool",
        "_states_data",
        "_mine",
        "_exit",
        "_map_run_record",
    } - STANDARD_LIBRARY_NAMES

    reads = sorted(private_reads(PLANTED, "planted.py", motos), key=lambda read: (read.line, read.name))

    assert [(read.line, read.name) for read in reads] == [
        (8, "_eval_job"),
        (9, "_job_pool"),
        (13, "_map_run_record"),
        (14, "_job_pool"),
        (14, "_states_data"),
    ]
