"""moto is pinned: everything the engine hooks or imports from it is fingerprinted against that release."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from sam_local_cloud.moto_seam import fingerprints

ROOT = Path(__file__).resolve().parents[3]


def test_every_hooked_or_imported_moto_target_matches_the_pinned_release() -> None:
    changes = fingerprints.check()

    assert not changes, (
        f"moto {fingerprints.moto_version()} differs from the recorded one under these targets "
        "(docs/architecture.md, 'Upgrading moto'):\n" + "\n".join(str(change) for change in changes)
    )


def test_the_record_lists_exactly_what_the_engine_hooks_and_imports() -> None:
    pinned, recorded = fingerprints.recorded()
    used = fingerprints.used_by_engine()

    assert pinned == fingerprints.moto_version()
    unrecorded = sorted(set(used) - set(recorded))
    unused = sorted(set(recorded) - set(used))
    assert (unrecorded, unused) == ([], []), (
        "run `python -m sam_local_cloud.moto_seam.fingerprints --write`: "
        f"not recorded {unrecorded}, recorded but unused {unused}"
    )
    assert len(used) > 100


def test_a_changed_or_vanished_target_is_named(tmp_path: Path) -> None:
    pinned, recorded = fingerprints.recorded()
    changed_path, vanished_path = (
        next(path for path, entry in recorded.items() if entry.kind == "function"),
        "moto.stepfunctions.parser.backend.execution.Execution.no_such_method",
    )
    payload = {
        "moto": pinned,
        "targets": {
            changed_path: {**recorded[changed_path].as_json(), "source_sha256": "0" * 16},
            vanished_path: {"kind": "function", "signature": "(self)", "source_sha256": "0" * 16},
        },
    }
    record = tmp_path / "fingerprints.json"
    record.write_text(json.dumps(payload))

    changes = {change.path: change.what for change in fingerprints.check(record)}

    assert changes[changed_path] == "source changed"
    assert changes[vanished_path].startswith("gone (")
    assert "execution has no Execution.no_such_method" in changes[vanished_path]


def test_moto_is_pinned_exactly_where_it_is_installed_from() -> None:
    pinned, _ = fingerprints.recorded()
    local_cloud = ROOT / "packages" / "sam-local-cloud" / "pyproject.toml"
    dependencies = tomllib.loads(local_cloud.read_text())["project"]["dependencies"]

    assert f"moto[server]=={pinned}" in dependencies
    lock_pins = {
        match.group(1)
        for lock in ROOT.glob("requirements/*.lock")
        for match in re.finditer(r"^moto(?:\[[a-z,]+\])?==([0-9.]+)", lock.read_text(), re.MULTILINE)
    }
    assert lock_pins == {pinned}
