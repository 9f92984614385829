"""Starts function runtimes for one runtime environment: forked from a warm Python, or spawned afresh.

Every execution environment runs its own Python runtime, and each one importing boto3 and Powertools
costs about 50 MB and most of a second of CPU. This server runs on the environment's own interpreter,
imports those once (``--preload``, whatever of them the environment has) and forks each runtime from
itself, so runtimes share its pages (``gc.freeze`` keeps the collector from writing them, immortal
objects keep reference counts from writing them, on CPython 3.12 and 3.13). With
``--spawn`` it imports nothing and each runtime is a fresh ``exec`` of the interpreter, as slow as on AWS.

A runtime is ``runtime_shim.py`` (``--shim``) with the function's handler. Two requests make one:

``prepare`` (from the local Lambda service, at a cold start): start a runtime with the function's
    environment whose output goes to the environment's log. It runs the init phase (imports the handler's
    module) on its own clock and writes ``ready`` on the request's connection, then waits to be adopted.
    Closing that connection before then stops it; if it exits first, the connection gets ``exit:N``.
``run`` (from ``runtime_stub.py``, which the Runtime Interface Emulator starts as the function's runtime):
    hand the stub's environment, directory and standard streams to the prepared runtime named by its
    token, or, when there is none (its init failed or took too long, or the emulator is restarting a
    runtime that crashed), start a runtime that inits inside the invocation, as AWS retries an init.

The stub and its runtime live and die together, as one runtime process would: when the emulator kills
the stub (a timeout, a reset, the environment reaped), the server kills the runtime; when the runtime
exits, the server sends the stub ``exit:N`` and the stub exits with it. Runtimes die with the server.

Every runtime sees its task root as Lambda's /var/task is, read-only: the folders named in the
environment's ``SAM_LOCAL_CLOUD_READ_ONLY_PATHS`` (taken out of the function's environment) are bound
read-only onto themselves in a mount namespace of the runtime's own, before its init; a write there
fails with EROFS, while /tmp and everything else stays as it was. That takes root, or unprivileged user
namespaces (a user namespace mapping only the caller's own IDs); where neither is allowed the folders
stay writable (``--probe-read-only`` tells). Compiled bytecode goes under ``--pycache-prefix``, never
into ``__pycache__`` beside the function's code.

Run by path and standard library only, so nothing of the local cloud's own code is imported into the
runtimes: the read-only mounts are made by the package's ``mount_namespace.py``, also standard library
only, loaded by its path (it is not in ``sys.modules``). The socket is bound only once the preloaded
modules are imported: its appearance means ready.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import importlib.util
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import sys
import sysconfig
import tempfile
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:  # imported as part of sam_local_cloud
    from sam_local_cloud import mount_namespace
else:  # run by path with -I, outside the package: its mount_namespace.py, beside this one, is loaded by path
    _spec = importlib.util.spec_from_file_location(
        "mount_namespace", os.path.join(os.path.dirname(os.path.abspath(__file__)), "mount_namespace.py")
    )
    mount_namespace = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(mount_namespace)

# Length-prefixed JSON request; file descriptors ride along as SCM_RIGHTS.
HEADER = struct.Struct("!I")
MAX_FDS = 3
EXIT_PREFIX = b"exit:"
PREPARE = "prepare"
RUN = "run"
PREPARED_FLAG = "--prepared"  # runtime_shim.PREPARED_FLAG; the shim is not importable from here
_PR_SET_PDEATHSIG = 1
_PARENT_CHECK_SECONDS = 1.0
# The folders a runtime must see read-only (os.pathsep-separated); for this server, not the function.
READ_ONLY_VARIABLE = "SAM_LOCAL_CLOUD_READ_ONLY_PATHS"
PRIVATE_VARIABLES = (READ_ONLY_VARIABLE,)


def split_private(environment: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(the function's own environment, the folders it must see read-only)."""
    own = {key: value for key, value in environment.items() if key not in PRIVATE_VARIABLES}
    folders = [entry for entry in environment.get(READ_ONLY_VARIABLE, "").split(os.pathsep) if entry]
    return own, folders


def isolate_read_only(folders: list[str]) -> None:
    """Bind ``folders`` read-only onto themselves, seen by this process (and its children) only.

    Call it in a single-threaded process (a freshly forked runtime). Raises ``mount_namespace.MountError``.
    """
    libc = mount_namespace.libc()
    mount_namespace.enter_private_namespace(libc)
    for folder in folders:
        if os.path.isdir(folder):
            mount_namespace.bind_read_only(libc, folder)


def probe_read_only() -> int:
    """Exit status 0 when a write under a read-only folder fails with EROFS in a forked child."""
    with tempfile.TemporaryDirectory(prefix="sam-local-cloud-ro-probe-") as folder:

        def write_under_read_only() -> None:
            isolate_read_only([folder])
            open(os.path.join(folder, "written"), "w").close()

        return mount_namespace.write_refused_in_child(write_under_read_only)


def _preload(modules: list[str]) -> list[str]:
    loaded = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # a module this environment does not have is simply not shared
            continue
        loaded.append(name)
    return loaded


# The SDK data most functions' clients load: shared by every forked runtime instead of parsed by each.
SHARED_SDK_SERVICES = ("dynamodb", "s3", "sqs", "sns", "stepfunctions", "lambda", "events", "sts")


def _share_sdk_data(services: tuple[str, ...] = SHARED_SDK_SERVICES) -> bool:
    """Let every botocore Loader of a runtime read the JSON this server already parsed.

    botocore parses its data files (endpoints, partitions, each service's model and endpoint rules) once
    per Session: a runtime whose code and Powertools each make a client parsed them twice, about 11 MB
    each time for DynamoDB. Loaders with the same search paths here share one cache (botocore already
    shares it between the clients of one Session, so the data is treated as read-only), filled before
    the fork, so runtimes use these pages instead of parsing their own. What a client returns is
    unchanged; only its construction is cheaper. Returns False when botocore is not preloaded.
    """
    loaders = sys.modules.get("botocore.loaders")
    session_module = sys.modules.get("botocore.session")
    if loaders is None or session_module is None:
        return False
    caches: dict[tuple[str, ...], dict[Any, Any]] = {}
    original_init = loaders.Loader.__init__

    def init_with_shared_cache(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self._cache = caches.setdefault(tuple(self.search_paths), {})

    loaders.Loader.__init__ = init_with_shared_cache
    session = session_module.get_session()
    for service in services:
        try:
            session.create_client(
                service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
            )
        except Exception:  # a service this botocore does not know is simply not shared
            continue
    _share_boto3_data(services)
    return True


def _share_boto3_data(services: tuple[str, ...]) -> None:
    """The same for boto3's sessions, whose loaders also search boto3's own data (its resource models):
    another cache, filled here by a client and, where boto3 has one, a resource of each service."""
    boto3_session_module = sys.modules.get("boto3.session")
    if boto3_session_module is None:
        return
    session = boto3_session_module.Session(
        region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with_resources = set(session.get_available_resources())
    for service in services:
        try:
            session.client(service)
            if service in with_resources:
                session.resource(service)
        except Exception:  # a service this boto3 does not know is simply not shared
            continue


# PEP 683: CPython 3.12 and 3.13 (64-bit, with the GIL) never write the reference count of an object
# whose count's low 32 bits read as a negative int32, and never free it. 0xFFFFFFFF is the count those
# versions give their own immortal objects (None, small ints, interned strings).
_IMMORTAL_REFCOUNT = 0xFFFFFFFF
_IMMORTAL_BIT = 0x80000000


def immortal_objects_supported() -> bool:
    """Whether this interpreter keeps objects immortal the way ``immortalize_shared_objects`` marks them."""
    return (
        sys.implementation.name == "cpython"
        and sys.version_info[:2] in {(3, 12), (3, 13)}
        and struct.calcsize("P") == 8
        and not sysconfig.get_config_var("Py_GIL_DISABLED")
    )


def immortalize_shared_objects() -> int:
    """Make every object reachable from the collector's objects immortal; returns how many were marked.

    A forked runtime shares the server's pages until it writes one, and reading an object writes its
    reference count: a runtime that imports its handler and makes its clients touches thousands of the
    preloaded modules' objects, and every page it touches becomes a private copy (about 6 MiB per
    runtime of the project's functions, of 17). Immortal objects' counts are never written, so those pages
    stay shared. This is the pre-fork use PEP 683 was written for; the objects live as long as the
    server anyway. Call it before ``gc.freeze`` (the collector lists no frozen object); on interpreters
    without PEP 683's scheme it marks nothing.
    """
    if not immortal_objects_supported():
        return 0
    import ctypes

    refcount_at = ctypes.c_ssize_t.from_address
    marked = 0
    # Everything tracked, and what is reachable from it (strings, numbers, bytes the collector does not
    # track), from the modules down.
    pending = [sys.modules, *gc.get_objects()]
    while pending:
        fresh = []
        for obj in pending:
            refcount = refcount_at(id(obj))
            if refcount.value & _IMMORTAL_BIT:
                continue
            refcount.value = _IMMORTAL_REFCOUNT
            fresh.append(obj)
        marked += len(fresh)
        pending = gc.get_referents(*fresh)
    return marked


def small_object_free_blocks() -> dict[int, int]:
    """Free blocks in the partly used pools of CPython's small-object allocator: size class -> count.

    Read from ``sys._debugmallocstats`` (CPython only, written to the C stderr); empty when unavailable.
    """
    debug_stats = getattr(sys, "_debugmallocstats", None)
    if debug_stats is None:
        return {}
    with tempfile.TemporaryFile() as captured:
        saved = os.dup(2)
        try:
            os.dup2(captured.fileno(), 2)
            debug_stats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        text = captured.read().decode("ascii", "replace")
    free: dict[int, int] = {}
    for line in text.splitlines():
        # "class   size   num pools   blocks in use  avail blocks"
        fields = line.split()
        if len(fields) == 5 and all(field.isdigit() for field in fields):
            free[int(fields[1])] = int(fields[4])
    return free


def fill_free_small_object_blocks() -> list[object]:
    """New objects, one in (nearly) every free block of the small-object pools: keep them while forking.

    A forked runtime's first small objects would otherwise go into those blocks, scattered over pages it
    shares with the server, and each such page becomes a private copy for one object. Filled, they cost
    the server a few hundred KB once, and runtimes allocate in pages of their own (1.4 MB less of its
    own for a runtime of the project's functions).
    """
    # Reading the statistics frees the small strings it parsed after counting: read twice, so the second
    # count includes what the first reading freed (the second's own strings reuse those same blocks).
    small_object_free_blocks()
    free = small_object_free_blocks()
    return [filler for size, count in free.items() for filler in _new_objects_of_size(size, count)]


def _new_objects_of_size(size: int, count: int) -> list[object]:
    """``count`` new objects that each take one ``size``-byte block; none where nothing here fits."""
    if size == sys.getsizeof(object()):
        return [object() for _ in range(count)]
    two_digit_int = 1 << 30
    if size == sys.getsizeof(two_digit_int):
        return [two_digit_int + index for index in range(count)]
    length = size - sys.getsizeof(b"")
    if length >= 2:  # shorter bytes objects are shared singletons, never allocated
        return [bytes(length) for _ in range(count)]
    return []


def _die_with_parent() -> None:
    """Linux: the kernel kills this child when the server dies (kept across exec), so no runtime outlives
    the local cloud."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _receive_request(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _address = socket.recv_fds(connection, 65536, MAX_FDS)
    while len(data) < HEADER.size:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("the client closed before sending its request")
        data += chunk
    (length,) = HEADER.unpack_from(data)
    body = bytearray(data[HEADER.size :])
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("the client closed in the middle of its request")
        body += chunk
    return json.loads(bytes(body)), list(fds)


def peer_closed(connection: socket.socket) -> bool:
    """Whether the other end hung up (the callers, the Lambda service and the Docker API's clients, never
    write after their request)."""
    try:
        return connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@dataclass
class Runtime:
    pid: int
    token: str | None = None
    # The prepare request's connection until the runtime is adopted, then the stub's.
    prepare_connection: socket.socket | None = None
    stub_connection: socket.socket | None = None
    channel: socket.socket | None = None


@dataclass(frozen=True)
class RuntimeStart:
    """What a runtime is forked with."""

    request: dict[str, Any]  # the prepare or run request: the function's environment ("env") and "cwd"
    streams: list[int]  # its standard input, output and error
    arguments: list[str]  # the shim's
    keep: list[socket.socket]  # the sockets it inherits
    close: list[socket.socket]  # the server's sockets it must not hold, besides those the server tracks


class ForkServer:
    def __init__(
        self, socket_path: str, shim: str, *, spawn: bool, pycache_prefix: str | None = None
    ) -> None:
        self.shim = shim
        self.spawn = spawn
        self.pycache_prefix = pycache_prefix
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Bound under another name and renamed once listening: a client that sees the path can connect.
        self.listener.bind(socket_path + ".binding")
        self.listener.listen(128)
        os.rename(socket_path + ".binding", socket_path)
        self.selector = selectors.DefaultSelector()
        self.runtimes: dict[int, Runtime] = {}
        self.prepared: dict[str, Runtime] = {}
        self.owner: dict[socket.socket, Runtime] = {}
        self.base_path = list(sys.path)  # run with -I: without this script's own folder
        wakeup_reader, self.wakeup_writer = socket.socketpair()
        wakeup_reader.setblocking(False)
        self.wakeup_writer.setblocking(False)
        self.wakeup_reader = wakeup_reader
        signal.set_wakeup_fd(self.wakeup_writer.fileno())
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup byte is what matters
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(wakeup_reader, selectors.EVENT_READ, "signal")

    def serve_forever(self) -> None:
        local_cloud = os.getppid()
        while True:
            # A local cloud that died without stopping this server (killed, crashed) takes it along too.
            if os.getppid() != local_cloud:
                os._exit(0)
            for key, _events in self.selector.select(timeout=_PARENT_CHECK_SECONDS):
                if key.data == "accept":
                    self._accept()
                elif key.data == "signal":
                    with contextlib.suppress(BlockingIOError):
                        while self.wakeup_reader.recv(4096):
                            pass
                    self._reap()
                else:
                    self._client_closed(key.fileobj)  # type: ignore[arg-type]

    def _accept(self) -> None:
        connection, _ = self.listener.accept()
        try:
            request, fds = _receive_request(connection)
        except (OSError, ValueError):
            connection.close()
            return
        try:
            if request.get("op") == PREPARE:
                self._prepare(connection, request, fds)
            else:
                self._run(connection, request, fds)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    # -- requests -----------------------------------------------------------------------------------

    def _prepare(self, connection: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        """A runtime that inits now, with its output in the environment's log (the one fd sent)."""
        channel, child_channel = socket.socketpair()
        arguments = [PREPARED_FLAG, str(child_channel.fileno()), str(connection.fileno()), request["handler"]]
        streams = [os.open(os.devnull, os.O_RDONLY), fds[0], fds[0]]
        start = RuntimeStart(request, streams, arguments, keep=[child_channel, connection], close=[channel])
        pid = self._start(start)
        os.close(streams[0])
        child_channel.close()
        runtime = Runtime(pid, token=request["token"], prepare_connection=connection, channel=channel)
        self._track(runtime, connection)
        self.prepared[request["token"]] = runtime

    def _run(self, connection: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        """The stub's runtime: the prepared one its token names if it is still wanted, else a new one."""
        runtime = self._adoptable(request.get("token"))
        if runtime is not None and runtime.channel is not None:
            environment, _ = split_private(request["env"])  # its folders were made read-only at prepare
            adoption = json.dumps({"env": environment, "cwd": request["cwd"]}).encode()
            try:
                socket.send_fds(runtime.channel, [adoption], fds[:MAX_FDS])
            except OSError:
                self._kill(runtime)  # it died meanwhile; its reap answers the stub
            runtime.channel.close()
            runtime.channel = None
        else:
            start = RuntimeStart(request, fds[:MAX_FDS], [request["argv"][-1]], keep=[], close=[connection])
            pid = self._start(start)
            runtime = self.runtimes[pid] = Runtime(pid)
        runtime.stub_connection = connection
        self._track(runtime, connection)

    def _adoptable(self, token: str | None) -> Runtime | None:
        """The prepared runtime of ``token``, unless the local Lambda service has given up on it."""
        runtime = self.prepared.pop(token or "", None)
        if runtime is None or runtime.prepare_connection is None:
            return runtime
        prepare_connection = runtime.prepare_connection
        if peer_closed(prepare_connection):
            self._kill(runtime)  # given up on (init failed or too slow): its reap tells nobody
            return None
        self._untrack(prepare_connection)
        runtime.prepare_connection = None
        return runtime

    # -- processes ----------------------------------------------------------------------------------

    def _start(self, start: RuntimeStart) -> int:
        """Fork a runtime (``_become_runtime`` in the child); its pid."""
        pid = os.fork()
        if pid == 0:
            self._become_runtime(start)
        return pid

    def _become_runtime(self, start: RuntimeStart) -> None:
        """In the forked child: the function's streams, environment and directory, then the shim."""
        exit_code = 1
        try:
            _die_with_parent()
            self._close_in_child(start.keep, start.close)
            for number, fd in enumerate(start.streams):
                os.dup2(fd, number)
            environment, read_only = split_private(start.request["env"])
            if read_only:
                try:
                    isolate_read_only(read_only)
                except OSError as error:  # the host said at start-up whether this works here
                    note = f"sam-local-cloud: the task root stays writable: {error}"
                    print(note, file=sys.stderr, flush=True)
            os.chdir(start.request["cwd"])
            for kept in start.keep:
                os.set_inheritable(kept.fileno(), True)
            argv = [self.shim, *start.arguments]
            if self.spawn:
                options = ["-X", f"pycache_prefix={self.pycache_prefix}"] if self.pycache_prefix else []
                os.execve(sys.executable, [sys.executable, *options, *argv], environment)
            if self.pycache_prefix:
                sys.pycache_prefix = self.pycache_prefix
            os.environ.clear()
            os.environ.update(environment)
            # What a fresh interpreter started in this directory with this PYTHONPATH would search.
            python_path = [entry for entry in environment.get("PYTHONPATH", "").split(os.pathsep) if entry]
            sys.path[:] = list(dict.fromkeys([*python_path, *self.base_path]))
            importlib.invalidate_caches()
            sys.argv = argv
            runpy.run_path(self.shim, run_name="__main__")
            exit_code = 0
        except SystemExit as stop:
            exit_code = stop.code if isinstance(stop.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(exit_code)

    def _close_in_child(self, keep: list[socket.socket], close: list[socket.socket]) -> None:
        signal.set_wakeup_fd(-1)
        for signal_number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(signal_number, signal.SIG_DFL)
        self.selector.close()
        kept = {id(resource) for resource in keep}
        resources = [self.listener, self.wakeup_reader, self.wakeup_writer, *self.owner, *close]
        resources += [runtime.channel for runtime in self.runtimes.values() if runtime.channel is not None]
        for resource in resources:
            if id(resource) not in kept:
                resource.close()

    def _kill(self, runtime: Runtime) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(runtime.pid, signal.SIGKILL)

    # -- connections --------------------------------------------------------------------------------

    def _track(self, runtime: Runtime, connection: socket.socket) -> None:
        self.runtimes[runtime.pid] = runtime
        self.owner[connection] = runtime
        self.selector.register(connection, selectors.EVENT_READ, "client")

    def _untrack(self, connection: socket.socket) -> None:
        self.owner.pop(connection, None)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(connection)
        connection.close()

    def _client_closed(self, connection: socket.socket) -> None:
        """Clients send nothing after their request: readable means gone, so their runtime goes too."""
        runtime = self.owner.get(connection)
        self._untrack(connection)
        if runtime is None:
            return
        if connection is runtime.prepare_connection:
            runtime.prepare_connection = None
            if runtime.token is not None:
                self.prepared.pop(runtime.token, None)
        elif connection is runtime.stub_connection:
            runtime.stub_connection = None
        self._kill(runtime)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            runtime = self.runtimes.pop(pid, None)
            if runtime is None:
                continue
            if runtime.token is not None and self.prepared.get(runtime.token) is runtime:
                del self.prepared[runtime.token]
            code = os.waitstatus_to_exitcode(status)
            answer = EXIT_PREFIX + str(code if code >= 0 else 128 - code).encode()
            for connection in (runtime.prepare_connection, runtime.stub_connection):
                if connection is not None:
                    with contextlib.suppress(OSError):
                        connection.sendall(answer)
                    self._untrack(connection)
            if runtime.channel is not None:
                runtime.channel.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--socket")
    parser.add_argument("--shim", help="runtime_shim.py, run by every runtime")
    parser.add_argument("--preload", default="", help="comma-separated modules to import once")
    parser.add_argument("--path", action="append", default=[], help="folders to import from, first")
    parser.add_argument("--spawn", action="store_true", help="exec each runtime afresh instead of forking")
    parser.add_argument("--pycache-prefix", help="where runtimes write compiled bytecode")
    parser.add_argument(
        "--probe-read-only", action="store_true", help="exit 0 if runtimes can get a read-only task root"
    )
    args = parser.parse_args()
    if args.probe_read_only:
        sys.exit(probe_read_only())
    sys.path[0:0] = args.path
    pool_fillers: list[object] = []
    if not args.spawn:
        _preload([name for name in args.preload.split(",") if name])
        _share_sdk_data()
        gc.collect()
        immortalize_shared_objects()
        gc.freeze()
        pool_fillers = fill_free_small_object_blocks()
    if not args.socket or not args.shim:
        parser.error("--socket and --shim are required")
    # The socket appears only now, when everything is imported: the local cloud waits for it.
    ForkServer(args.socket, args.shim, spawn=args.spawn, pycache_prefix=args.pycache_prefix).serve_forever()
    pool_fillers.clear()  # held until here: runtimes are forked while the server serves


if __name__ == "__main__":
    main()
