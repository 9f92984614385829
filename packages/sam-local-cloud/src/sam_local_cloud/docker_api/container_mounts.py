"""Starts a container's entrypoint in a mount namespace of its own, holding the container's mounts.

Run by path, standard library only (the package's ``mount_namespace.py``, loaded by its path, makes the
mounts), as the process that then becomes the Runtime Interface Emulator::

    python -I -S container_mounts.py [--read-only FOLDER]... [--overlay TARGET LOWER]... -- COMMAND...

The emulator and the runtime it starts (its child) then see, as in SAM CLI's container:

- every ``--read-only`` FOLDER (a bind SAM CLI mounts ``:ro``, above all the function's code at
  /var/task) read-only: a write there fails with EROFS, as on Lambda, and the runtime cannot leave
  ``__pycache__`` behind in the code folder;
- every ``--overlay`` TARGET (``/opt``) with the folder LOWER (the image's own /opt, where SAM CLI's
  Dockerfile ADDs the function's layers) laid over what this machine has there, read-only: a layer's
  files are at /opt/..., so code that puts ``/opt`` itself on ``sys.path`` finds them.

No other process sees any of it: the namespace's mounts are private. That takes root, or unprivileged
user namespaces; ``--probe`` exits 0 when both kinds of mount work here (the caller asks once, and runs
containers without this where they do not).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:  # imported as part of sam_local_cloud
    from sam_local_cloud import mount_namespace
else:  # run by path with -I, outside the package: its mount_namespace.py, a folder up, is loaded by path
    _package_folder = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    _spec = importlib.util.spec_from_file_location(
        "mount_namespace", os.path.join(_package_folder, "mount_namespace.py")
    )
    mount_namespace = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(mount_namespace)

if TYPE_CHECKING:
    import ctypes

# Overlay's lowerdir option separates folders with ':' and options with ','.
UNMOUNTABLE_CHARACTERS = frozenset(":,\\")


def overlay(libc: ctypes.CDLL, target: str, lower: str) -> None:
    """``lower`` over ``target``'s own contents, read-only (an overlay without an upper folder)."""
    options = f"lowerdir={lower}:{target}".encode()
    mount_namespace.checked(
        libc.mount(b"overlay", os.fsencode(target), b"overlay", mount_namespace.MS_RDONLY, options),
        f"laying {lower} over {target}",
    )


def probe() -> int:
    """0 when, in a forked child, a read-only bind and an overlay both work and refuse writes."""
    with tempfile.TemporaryDirectory(prefix="sam-local-cloud-mounts-probe-") as scratch:
        lower, target = os.path.join(scratch, "lower"), os.path.join(scratch, "target")
        os.makedirs(lower)
        os.makedirs(target)
        with open(os.path.join(lower, "from-lower"), "w"):
            pass

        def write_through_both() -> None:
            libc = mount_namespace.libc()
            mount_namespace.enter_private_namespace(libc)
            overlay(libc, target, lower)
            mount_namespace.bind_read_only(libc, scratch)
            if os.path.exists(os.path.join(target, "from-lower")):
                open(os.path.join(scratch, "written"), "w").close()

        return mount_namespace.write_refused_in_child(write_through_both)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--read-only", action="append", default=[], metavar="FOLDER")
    parser.add_argument("--overlay", action="append", default=[], nargs=2, metavar=("TARGET", "LOWER"))
    parser.add_argument("--probe", action="store_true", help="exit 0 when these mounts can be made here")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.probe:
        return probe()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run")
    libc = mount_namespace.libc()
    try:
        mount_namespace.enter_private_namespace(libc)
        # Overlays first: a read-only bind inside an overlaid folder then still applies.
        for target, lower in args.overlay:
            overlay(libc, target, lower)
        for folder in args.read_only:
            mount_namespace.bind_read_only(libc, folder)
    except OSError as error:
        print(f"sam-local-cloud: cannot make the container's mounts: {error}", file=sys.stderr, flush=True)
        return 125  # what `docker run` exits with when the container cannot be set up
    os.execv(command[0], command)
    return 127  # not reached: execv replaces this process or raises


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
