"""A mount namespace of a process's own, and folders bound read-only in it: what a container's mounts
(``docker_api/container_mounts.py``) and a Lambda runtime's read-only task root (``runtime_forkserver.py``)
are both made of.

Standard library only and Python 3.9 or later: those two scripts run by path (the fork server on a
function's own interpreter), outside this package, and load this file by its path. The mounts take root,
or unprivileged user namespaces (a user namespace mapping only the caller's own IDs); each script has a
probe that the local cloud runs once (``probe_succeeds``) before relying on them.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ctypes
    from collections.abc import Callable, Sequence

# <linux/sched.h> and <sys/mount.h>
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
# statvfs's f_flag bits -> the mount flags a read-only remount must keep (a user namespace may not
# drop them: EPERM). Linux names; elsewhere there are no mount namespaces anyway.
_KEPT_MOUNT_FLAGS = (
    (getattr(os, "ST_NOSUID", 0), 2),  # MS_NOSUID
    (getattr(os, "ST_NODEV", 0), 4),  # MS_NODEV
    (getattr(os, "ST_NOEXEC", 0), 8),  # MS_NOEXEC
    (getattr(os, "ST_NOATIME", 0), 1024),  # MS_NOATIME
    (getattr(os, "ST_NODIRATIME", 0), 2048),  # MS_NODIRATIME
    (getattr(os, "ST_RELATIME", 0), 1 << 21),  # MS_RELATIME
)
PROBE_TIMEOUT_SECONDS = 30


class MountError(OSError):
    """A mount (or the namespace to hold it) could not be made."""


def libc() -> ctypes.CDLL:
    """The C library, with ``mount``'s argument types declared. ctypes is imported only here, when needed."""
    import ctypes

    library = ctypes.CDLL(None, use_errno=True)
    library.mount.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_void_p,
    ]
    return library


def checked(result: int, what: str) -> None:
    """Raise ``MountError`` with the C library's errno when ``result`` (of ``what``) is not 0."""
    if result != 0:
        import ctypes

        code = ctypes.get_errno()
        raise MountError(code, f"{what}: {os.strerror(code)}")


def enter_private_namespace(library: ctypes.CDLL) -> None:
    """A mount namespace of this process's own (as root directly, else inside a user namespace), with
    nothing in it propagating back to the host's. Call it in a single-threaded process."""
    if library.unshare(CLONE_NEWNS) != 0:
        uid, gid = os.getuid(), os.getgid()
        checked(library.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare(CLONE_NEWUSER | CLONE_NEWNS)")
        # The same IDs inside as outside: files keep their owners and the process its user.
        for name, content in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as control:
                control.write(content)
    # Private first, or the mounts made next would propagate to the host's namespace.
    checked(library.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "making / private")


def bind_read_only(library: ctypes.CDLL, folder: str) -> None:
    """``folder`` bound read-only onto itself: a write under it fails with EROFS."""
    path = os.fsencode(folder)
    checked(library.mount(path, path, None, MS_BIND | MS_REC, None), f"binding {folder}")
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY
    kept = os.statvfs(folder).f_flag
    flags |= sum(mount_flag for stat_flag, mount_flag in _KEPT_MOUNT_FLAGS if kept & stat_flag)
    checked(library.mount(None, path, None, flags, None), f"remounting {folder} read-only")


def write_refused_in_child(attempt: Callable[[], None]) -> int:
    """Exit status 0 when ``attempt``, run in a forked child (where it may make mounts), fails with
    EROFS; 1 when it fails otherwise or does not fail."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            attempt()
        except OSError as error:
            code = 0 if error.errno == errno.EROFS else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return 0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 1


def probe_succeeds(command: Sequence[str]) -> bool:
    """Whether a script's probe ``command`` (run on the local cloud's side) exits 0: False when it
    fails, cannot start or takes longer than ``PROBE_TIMEOUT_SECONDS``."""
    import subprocess

    try:
        probe = subprocess.run(command, capture_output=True, timeout=PROBE_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0
