"""Every group of hooks into moto, installed for a process in one call."""

from __future__ import annotations


def install_everything() -> None:
    """Registers and installs every concern's hooks; idempotent."""
    from orderbatch.localcloud.stepfunctions import apply_interpreter_patches

    apply_interpreter_patches()
