"""moto's interpreter as released is a choice for a whole process: refused once the cloud's patches are in.

The benchmark's engine probe measures the local cloud's interpreter against moto's own in a process of
its own (``LocalCloudConfig.moto_interpreter_as_released``); in a process where a cloud ran, the patches
cannot be taken back, and asking for moto as released says so instead of measuring the patched one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sam_local_cloud import LocalCloud, LocalCloudConfig

pytestmark = pytest.mark.e2e

STOCK_TRADER = Path(__file__).resolve().parents[3] / "examples" / "stock-trader" / "template.yaml"


def test_moto_as_released_is_refused_where_the_patches_are_in() -> None:
    from sam_local_cloud.stepfunctions import apply_interpreter_patches

    apply_interpreter_patches()  # as any earlier cloud of this process did
    cloud = LocalCloud(LocalCloudConfig(moto_interpreter_as_released=True))

    with pytest.raises(RuntimeError, match="already patched in this process"):
        cloud.deploy(STOCK_TRADER)
