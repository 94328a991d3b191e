"""Run model-written Python in an isolated sandbox: bubblewrap namespaces plus resource limits.

Each call is a fresh process tree in its own namespaces (``bwrap``, the well-kept sandbox of Flatpak):
- network: its own network namespace with only a loopback interface and no route out;
- files: a view of the interpreter (read-only), the call's inputs at ``/inputs`` (read-only) and a private
  size-capped ``/scratch`` (the working folder) and ``/tmp``, both thrown away with the call; no ``/etc``,
  no home, no project files;
- processes: its own PID namespace (nothing outside is visible or signalable); everything in it dies with
  the call;
- identity: a non-root user with no capabilities (``no_new_privs``) that cannot make user namespaces (in
  one it could mount a tmpfs that nothing bounds). Run as root (these machines, CI), bwrap sets up the
  namespaces, ``setpriv`` drops to a random unused uid, so that the kernel enforces ``RLIMIT_NPROC`` (it
  never does for root) and counts only this call's processes, and a second, unprivileged bwrap adds the
  user namespace that ``--disable-userns`` needs (and a PID namespace of the code's own); run as another
  user, one bwrap does it all;
- limits (``SandboxLimits``): wall time (the parent kills the tree), CPU time, address space, processes,
  file size, scratch space (tmpfs size), bytes read back, pictures returned;
- environment: cleared; a few fixed variables only (no API keys, no proxy settings).

``agent.sandbox_runner`` is the program run inside; its exit status says which limit stopped the code.
Nothing here evaluates model output in this process.
"""

from __future__ import annotations

import base64
import functools
import io
import os
import random
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

RUNNER = Path(__file__).with_name("sandbox_runner.py")
INSTALL_HINT = "apt-get install -y bubblewrap"
# Exit statuses of sandbox_runner.py, and the limit each one names.
RUNNER_LIMITS = {3: "memory", 4: "processes", 5: "file size", 6: "CPU time", 7: "scratch space"}
_MAX_PICTURE_PIXELS = 64 * 1024 * 1024  # a returned picture is decoded only under this (then the env's budget)
# Sandboxes running at once in this process; more calls wait for a slot, and their wall time starts when they
# get one. 64 eval episodes calling at once on 2 cores would otherwise share the CPU 64 ways and time out together.
PARALLEL = 2 * len(os.sched_getaffinity(0))
_slots = threading.BoundedSemaphore(PARALLEL)


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run on this machine (no bubblewrap, no namespaces): never run the code without it."""


@dataclass(frozen=True)
class SandboxLimits:
    """What one call may use. Exceeding any stops the call and names the limit in its result."""

    wall_s: float = 10.0
    cpu_s: int = 5
    memory_mb: int = 1024  # address space (RLIMIT_AS) of each process
    processes: int = 8  # processes of the call alive at once, the first included (RLIMIT_NPROC)
    file_mb: int = 32  # largest file the code may write (RLIMIT_FSIZE)
    scratch_mb: int = 64  # size of /scratch and of /tmp (tmpfs)
    output_mb: int = 8  # bytes read back (printed text and pictures); past it the call is killed
    text_chars: int = 4000  # printed text returned to the model; the rest is cut, and the result says so
    max_images: int = 4  # pictures returned per call

    def __post_init__(self) -> None:
        for name in ("wall_s", "cpu_s", "memory_mb", "processes", "file_mb", "scratch_mb", "output_mb",
                     "text_chars", "max_images"):
            if not getattr(self, name) > 0:
                raise ValueError(f"sandbox limit {name} must be > 0, got {getattr(self, name)!r}")

    def describe(self, limit: str) -> str:
        """The limit named as a result states it.

        >>> SandboxLimits().describe("wall time")
        'wall time (10 s)'
        """
        values = {"wall time": f"{self.wall_s:g} s", "CPU time": f"{self.cpu_s} s", "memory": f"{self.memory_mb} MiB",
                  "processes": f"{self.processes} processes", "file size": f"{self.file_mb} MiB per file",
                  "scratch space": f"{self.scratch_mb} MiB", "output": f"{self.output_mb} MiB"}
        return f"{limit} ({values[limit]})" if limit in values else limit


@dataclass
class SandboxResult:
    """What came back from one call. ``limit`` names the limit that stopped it; ``error`` says why the
    code failed otherwise (an exception: the traceback is in ``text``; a crash)."""

    text: str = ""
    images: list[Image.Image] = field(default_factory=list)
    images_left_out: int = 0
    limit: str | None = None
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.limit is None and self.error is None


@functools.cache
def sandbox_problem() -> str | None:
    """Why the sandbox cannot run here (None: it can). Checked once per process with a real call, so that a
    recipe or eval command asking for the tool fails when it is parsed, never at the first rollout."""
    if shutil.which("bwrap") is None:
        return f"the python tool needs bubblewrap (bwrap), which is not installed; install it with: {INSTALL_HINT}"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "the python tool run as root needs setpriv (util-linux) to drop to an unprivileged user"
    with tempfile.TemporaryDirectory(prefix="lookcloser-sandbox-check-") as folder:
        result = run_python("print(6 * 7)", Path(folder), SandboxLimits(wall_s=30))
    if not result.ok or result.text.strip() != "42":
        return (f"the python tool's sandbox (bubblewrap) does not start on this machine: "
                f"{result.error or result.limit or ''} {result.text.strip()[:300]}".strip())
    return None


def require_sandbox() -> None:
    """Raise ``SandboxUnavailable`` unless the sandbox runs here."""
    problem = sandbox_problem()
    if problem:
        raise SandboxUnavailable(problem)


def write_inputs(folder: Path, images: list[Image.Image], start: int = 0) -> None:
    """Write pictures as ``image_{start + 1}.bmp``, ... (read-only files the sandbox binds at /inputs)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    for number, image in enumerate(images, start=start + 1):
        path = folder / f"image_{number}.bmp"
        image.save(path, format="BMP")  # lossless and ~40x faster to write than PNG (6 ms for 1024x1024)
        path.chmod(0o444)


def run_python(code: str, inputs: Path, limits: SandboxLimits | None = None) -> SandboxResult:
    """Run ``code`` in a fresh sandbox with the ``image_*.bmp`` files of ``inputs``; never raises for
    anything the code does. At most ``PARALLEL`` calls run at once; ``seconds`` includes the wait."""
    limits = limits or SandboxLimits()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lookcloser-call-") as call:
        call_dir = Path(call)
        call_dir.chmod(0o755)
        for path in sorted(inputs.glob("image_*.bmp")):
            _link_or_copy(path, call_dir / path.name)
        (call_dir / "code.py").write_text(code, encoding="utf-8")
        (call_dir / "code.py").chmod(0o444)
        nonce = f"--lookcloser-pictures-{random.getrandbits(64):016x}--"
        with _slots:
            result = _run(_command(call_dir, nonce, limits), nonce, limits)
    result.seconds = time.monotonic() - started
    return result


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)  # same inode, read-only file and mount: the code cannot change the original
    except OSError:
        shutil.copyfile(source, target)
        target.chmod(0o444)


def _interpreter_paths() -> list[str]:
    """Folders the interpreter needs (the venv and the Python it was made from), outermost first."""
    paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, Path(os.path.realpath(sys.executable)).parents[1])}
    paths.add(sys.prefix)  # the venv as its own path too: its bin/python is what runs
    kept = sorted(p for p in paths if not p.startswith("/usr/") and p != "/usr")
    return [p for p in kept if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in kept)]


def _command(call_dir: Path, nonce: str, limits: SandboxLimits) -> list[str]:
    import json

    root = os.geteuid() == 0
    cmd = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
    if not root:
        cmd.insert(1, "--unshare-user")
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    made = set()
    for path in _interpreter_paths():
        parents = [str(p) for p in reversed(Path(path).parents) if str(p) != "/"]
        for parent in parents:  # readable mount points for a non-root user (a home folder is often 0700)
            if parent not in made:
                cmd += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        cmd += ["--ro-bind", path, path]
    scratch = str(limits.scratch_mb * 1024 * 1024)
    cmd += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev", "--ro-bind", str(call_dir), "/inputs",
            "--ro-bind", str(RUNNER), "/sandbox_runner.py",
            "--perms", "1777", "--size", scratch, "--tmpfs", "/scratch",
            "--perms", "1777", "--size", scratch, "--tmpfs", "/tmp", "--chdir", "/scratch", "--clearenv"]
    for name, value in (("PATH", "/usr/bin:/bin"), ("HOME", "/scratch"), ("LANG", "C.UTF-8"),
                        ("OMP_NUM_THREADS", "1"), ("OPENBLAS_NUM_THREADS", "1"), ("MPLCONFIGDIR", "/scratch")):
        cmd += ["--setenv", name, value]
    cmd += ["--cap-drop", "ALL"]
    if root:  # setpriv needs these to drop to the unprivileged uid; it drops them all (and the bounding set)
        uid = str(random.randrange(10_000_000, 2_000_000_000))  # unused: RLIMIT_NPROC counts this call only
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP", "--",
                "setpriv", "--reuid", uid, "--regid", uid, "--clear-groups", "--no-new-privs",
                "--inh-caps=-all", "--bounding-set=-all",
                # A second, unprivileged bwrap over the same view, to forbid new user namespaces: in one, the
                # code could mount a tmpfs that no limit here bounds (--disable-userns needs a user namespace,
                # which a root caller's bwrap does not make). Its PID namespace keeps its own monitor process
                # out of the code's sight; /dev is read-only (an unprivileged bwrap's /dev is the user's).
                "bwrap", "--unshare-user", "--disable-userns", "--unshare-pid", "--bind", "/", "/", "--dev", "/dev",
                "--remount-ro", "/dev", "--chdir", "/scratch", "--die-with-parent", "--"]
    else:
        cmd += ["--disable-userns", "--"]
    runner_limits = {"cpu_s": limits.cpu_s, "memory_mb": limits.memory_mb, "file_mb": limits.file_mb,
                     "processes": limits.processes + 1, "max_images": limits.max_images}  # + bwrap's init, same uid
    return cmd + [os.path.join(sys.prefix, "bin", "python"), "-I", "-B", "/sandbox_runner.py", nonce,
                  json.dumps(runner_limits)]


def _run(cmd: list[str], nonce: str, limits: SandboxLimits) -> SandboxResult:
    started = time.monotonic()
    info_read, info_write = os.pipe()  # bwrap writes {"child-pid": N} there: the PID namespace's init
    try:
        proc = subprocess.Popen([cmd[0], "--info-fd", str(info_write), *cmd[1:]], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                env={"PATH": "/usr/bin:/bin"}, close_fds=True, pass_fds=(info_write,))
    finally:
        os.close(info_write)
    try:
        return _watch(proc, nonce, limits, started, info_read)
    finally:
        os.close(info_read)
        if "--reuid" in cmd:
            _end_leftovers(int(cmd[cmd.index("--reuid") + 1]))


def _end_leftovers(uid: int) -> None:
    """Return only once no process of the call is left. bwrap is reaped as soon as its own child is gone,
    but the nested namespace's teardown can still be under way then (seen under load: the inner init and the
    code's processes alive a moment later). A root caller's call runs as its own unused uid, so what /proc
    still shows under that uid is this call's: kill it and wait, at most a few seconds (zombies go as their
    parents do)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        left = []
        for name in os.listdir("/proc"):
            try:
                if name.isdigit() and os.stat(f"/proc/{name}").st_uid == uid:
                    left.append(int(name))
            except OSError:  # gone meanwhile
                continue
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def _watch(proc: subprocess.Popen, nonce: str, limits: SandboxLimits, started: float, info_fd: int) -> SandboxResult:
    deadline = time.monotonic() + limits.wall_s
    cap = limits.output_mb * 1024 * 1024
    chunks, size, stopped = [], 0, None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                stopped = "wall time"
                break
            if not selector.select(left):
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > cap:
                stopped = "output"
                break
    if stopped:
        _kill(proc, info_fd)
    status = _reap(proc, deadline)
    if status is None:  # the tree outlived its output: past the wall time
        stopped = stopped or "wall time"
        _kill(proc, info_fd)
        status = _reap(proc, None)
    proc.stdout.close()
    out = b"".join(chunks)[:cap]
    result = SandboxResult(seconds=time.monotonic() - started)
    marker = b"\n" + nonce.encode() + b"\n"
    text, _, pictures = out.rpartition(marker) if status == 0 and not stopped and marker in out else (out, b"", b"")
    result.text = text.decode("utf-8", errors="replace")
    if stopped:
        result.limit = stopped
    elif status in RUNNER_LIMITS:
        result.limit = RUNNER_LIMITS[status]
    elif status == 128 + signal.SIGXCPU or (status == 128 + signal.SIGKILL and result.seconds >= limits.cpu_s):
        result.limit = "CPU time"  # SIGKILL: the hard stop one second after the soft limit's SIGXCPU
    elif status == 1 and result.text.startswith("bwrap:"):
        result.error = f"the sandbox did not start: {result.text.strip()[:300]}"
    elif status == 1:
        result.error = "the code raised an exception"
    elif status > 128:
        result.error = f"the code's process was killed by signal {signal.Signals(status - 128).name}" \
            if status - 128 in signal.Signals._value2member_map_ else f"the code's process ended with status {status}"
    elif status != 0:
        result.error = f"the code exited with status {status}"
    if result.ok:
        result.images, result.images_left_out = _pictures(pictures, limits.max_images)
    return result


def _kill(proc: subprocess.Popen, info_fd: int) -> None:
    """End the call's every process before returning. SIGKILL goes to the PID namespace's init: the kernel
    then kills every process of the namespace and lets the init exit only once they are all gone, so bwrap
    (which waits for it) is reaped after the teardown. Killing bwrap first would return while
    --die-with-parent's teardown is still under way (a later look could see the call's processes)."""
    init = _namespace_init(info_fd)
    if init is not None:
        try:
            os.kill(init, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if _reap(proc, time.monotonic() + 5) is not None:
            return
    try:  # no init known (bwrap did not start it), or bwrap still runs: end bwrap's session
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _namespace_init(info_fd: int) -> int | None:
    """The ``child-pid`` bwrap wrote to its --info-fd (written as it starts the namespace), or None."""
    import json

    os.set_blocking(info_fd, False)
    try:
        data = os.read(info_fd, 1 << 12)
    except (BlockingIOError, OSError):
        return None
    try:
        pid = json.loads(data.decode()).get("child-pid")
    except (ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) and pid > 1 else None


def _reap(proc: subprocess.Popen, deadline: float | None) -> int | None:
    """bwrap's exit status (128 + N: killed by signal N), waiting until ``deadline``; None if it still runs."""
    try:
        code = proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return None
    return 128 - code if code < 0 else code


def _pictures(data: bytes, max_images: int) -> tuple[list[Image.Image], int]:
    pictures = []
    lines = [line for line in data.split(b"\n") if line.strip()]
    for line in lines[:max_images]:
        try:
            with Image.open(io.BytesIO(base64.b64decode(line, validate=True))) as img:
                if img.width * img.height > _MAX_PICTURE_PIXELS:
                    continue
                img.load()
                pictures.append(img.copy())
        except Exception:  # noqa: BLE001, S112 - written by the code's own process: a broken picture is left out
            continue
    return pictures, max(0, len(lines) - max_images)
