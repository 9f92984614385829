"""The fork server's preloaded objects stay shared with the runtimes forked from it: on CPython 3.12 and
3.13 it makes them immortal, so a runtime reading them writes none of their reference counts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sam_local_cloud import runtime_forkserver
from sam_local_cloud.lambda_service.runtimes import find_interpreter

# Run by a 3.12 interpreter, as the fork server is (by path, isolated): preload some of the standard
# library, freeze, optionally immortalize, then fork a child that reads every preloaded module's globals,
# as a handler's import reads the modules it uses, and report the child's growth in private dirty pages.
CHILD_READS_SHARED_OBJECTS = r"""
import gc, importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("runtime_forkserver", sys.argv[1])
server = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = server
spec.loader.exec_module(server)
for name in ("email.message", "http.client", "urllib.request", "decimal", "xml.dom.minidom", "logging"):
    __import__(name)
gc.collect()
tracked = len(gc.get_objects())
marked = server.immortalize_shared_objects() if sys.argv[2] == "immortal" else 0
gc.freeze()

def private_dirty_kib():
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith("Private_Dirty:"):
            return int(line.split()[1])

reader, writer = os.pipe()
pid = os.fork()
if pid == 0:
    before = private_dirty_kib()
    held = [list(vars(module).items()) for module in list(sys.modules.values())]
    grown_kib = private_dirty_kib() - before
    report = {"grown_kib": grown_kib, "module_refcount": sys.getrefcount(sys.modules["json"])}
    os.write(writer, json.dumps(report).encode())
    os._exit(0)
os.close(writer)
os.waitpid(pid, 0)
report = json.loads(os.read(reader, 65536))
report["marked"] = marked
report["tracked"] = tracked
print(json.dumps(report))
"""


def child_report(interpreter: str, mode: str) -> dict[str, int]:
    completed = subprocess.run(
        [interpreter, "-I", "-c", CHILD_READS_SHARED_OBJECTS, runtime_forkserver.__file__, mode],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(completed.stdout)


def test_a_runtime_reading_the_preloaded_modules_copies_few_of_their_pages() -> None:
    interpreter = find_interpreter("3.12")
    if interpreter is None:
        pytest.skip("needs a Python 3.12 interpreter, the runtime of the project's functions")
    plain = child_report(interpreter.executable, "plain")
    immortal = child_report(interpreter.executable, "immortal")

    # Every object the collector tracks, and the untracked ones they hold.
    assert immortal["marked"] > immortal["tracked"]
    assert immortal["module_refcount"] == 0xFFFFFFFF
    assert plain["module_refcount"] < 1_000
    # The child's own lists are new pages either way; the shared objects' pages are copied only when plain.
    assert plain["grown_kib"] > 1_000
    assert immortal["grown_kib"] < plain["grown_kib"] / 2


@pytest.mark.skipif(runtime_forkserver.immortal_objects_supported(), reason="needs a Python without PEP 683")
def test_without_pep_683_nothing_is_marked() -> None:
    counted = sys.getrefcount(json)
    assert runtime_forkserver.immortalize_shared_objects() == 0
    assert sys.getrefcount(json) == counted


@pytest.mark.parametrize("size", range(16, 513, 16))
def test_each_filler_takes_one_whole_block_of_its_size_class(size: int) -> None:
    fillers = runtime_forkserver._new_objects_of_size(size, 3)

    assert len({id(filler) for filler in fillers}) == 3  # new objects, never shared singletons
    assert all(sys.getsizeof(filler) == size for filler in fillers)


def test_filling_the_free_blocks_leaves_few_for_a_runtime_to_land_in() -> None:
    if not runtime_forkserver.small_object_free_blocks():
        pytest.skip("this interpreter does not report its small-object pools")
    # Free blocks scattered over the heap, as imports leave them.
    scattered = [(index, str(index)) for index in range(20_000)]
    del scattered[::3]
    runtime_forkserver.small_object_free_blocks()
    before = sum(runtime_forkserver.small_object_free_blocks().values())

    fillers = runtime_forkserver.fill_free_small_object_blocks()

    runtime_forkserver.small_object_free_blocks()
    after = sum(runtime_forkserver.small_object_free_blocks().values())
    assert len(fillers) >= before * 0.9
    assert after < before / 2


# After the server shares the SDK data, a runtime's new boto3 Session (a handler's ``boto3.resource``)
# finds its service and resource models parsed already.
BOTO3_SESSION_FINDS_SHARED_DATA = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("runtime_forkserver", sys.argv[1])
server = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = server
spec.loader.exec_module(server)
import boto3.session, botocore.session
shared = server._share_sdk_data(("dynamodb",))
loader = boto3.session.Session(region_name="us-east-1")._session.get_component("data_loader")
print(json.dumps({"shared": shared, "cached": sorted({str(key[1:3]) for key in loader._cache})}))
"""


def test_a_new_boto3_session_in_a_runtime_finds_the_resource_model_parsed() -> None:
    completed = subprocess.run(
        [sys.executable, "-I", "-c", BOTO3_SESSION_FINDS_SHARED_DATA, runtime_forkserver.__file__],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(completed.stdout)

    assert report["shared"] is True
    assert "('dynamodb', 'resources-1')" in report["cached"]
    assert "('dynamodb', 'service-2')" in report["cached"]
