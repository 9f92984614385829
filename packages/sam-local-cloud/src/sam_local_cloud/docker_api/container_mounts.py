"""Starts a container's entrypoint in a mount namespace of its own, holding the container's mounts.

Run by path, standard library only, as the process that then becomes the Runtime Interface Emulator::

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
import ctypes
import errno
import os
import sys
import tempfile

# <linux/sched.h>, <sys/mount.h>
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_RDONLY = 1
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
# statvfs f_flag bits -> mount flags: a read-only remount in a user namespace must keep the locked ones.
_LOCKED_FLAGS = (
    (getattr(os, "ST_NOSUID", 0), 2),
    (getattr(os, "ST_NODEV", 0), 4),
    (getattr(os, "ST_NOEXEC", 0), 8),
    (getattr(os, "ST_NOATIME", 0), 1024),
    (getattr(os, "ST_NODIRATIME", 0), 2048),
    (getattr(os, "ST_RELATIME", 0), 1 << 21),
)
# Overlay's lowerdir option separates folders with ':' and options with ','.
UNMOUNTABLE_CHARACTERS = frozenset(":,\\")


class MountError(OSError):
    """A mount of the container could not be made."""


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
    return libc


def _checked(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise MountError(code, f"{what}: {os.strerror(code)}")


def enter_private_namespace(libc: ctypes.CDLL) -> None:
    """A mount namespace of this process's own, nothing in it propagating back to the host's."""
    if libc.unshare(_CLONE_NEWNS) != 0:
        uid, gid = os.getuid(), os.getgid()
        _checked(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "unshare(CLONE_NEWUSER | CLONE_NEWNS)")
        # Only the caller's own IDs, mapped to themselves: files keep their owners.
        for name, content in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as control:
                control.write(content)
    _checked(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "making / private")


def bind_read_only(libc: ctypes.CDLL, folder: str) -> None:
    path = os.fsencode(folder)
    _checked(libc.mount(path, path, None, _MS_BIND | _MS_REC, None), f"binding {folder}")
    flags = _MS_BIND | _MS_REMOUNT | _MS_RDONLY
    kept = os.statvfs(folder).f_flag
    flags |= sum(mount_flag for stat_flag, mount_flag in _LOCKED_FLAGS if kept & stat_flag)
    _checked(libc.mount(None, path, None, flags, None), f"remounting {folder} read-only")


def overlay(libc: ctypes.CDLL, target: str, lower: str) -> None:
    """``lower`` over ``target``'s own contents, read-only (an overlay without an upper folder)."""
    options = f"lowerdir={lower}:{target}".encode()
    _checked(
        libc.mount(b"overlay", os.fsencode(target), b"overlay", _MS_RDONLY, options),
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
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                libc = _libc()
                enter_private_namespace(libc)
                overlay(libc, target, lower)
                bind_read_only(libc, scratch)
                if os.path.exists(os.path.join(target, "from-lower")):
                    open(os.path.join(scratch, "written"), "w").close()
            except OSError as error:
                code = 0 if error.errno == errno.EROFS else 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
    return 0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 1


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
    libc = _libc()
    try:
        enter_private_namespace(libc)
        # Overlays first: a read-only bind inside an overlaid folder then still applies.
        for target, lower in args.overlay:
            overlay(libc, target, lower)
        for folder in args.read_only:
            bind_read_only(libc, folder)
    except OSError as error:
        print(f"sam-local-cloud: cannot make the container's mounts: {error}", file=sys.stderr, flush=True)
        return 125  # what `docker run` exits with when the container cannot be set up
    os.execv(command[0], command)
    return 127  # not reached: execv replaces this process or raises


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
