"""Run model-written Python in an isolated sandbox: bubblewrap namespaces plus resource limits.

Each call is a fresh process tree in its own namespaces (``bwrap``, the well-kept sandbox of Flatpak):
- network: its own network namespace with only a loopback interface and no route out;
- files: a view of the interpreter (read-only), the call's inputs at ``/inputs`` (read-only), the image
  library ``looktools`` (its folder alone, read-only, at ``/opt/looktools/looktools``, on ``PYTHONPATH``) and
  a private size-capped ``/scratch`` (the working folder) and ``/tmp``, both thrown away with the call; no
  ``/etc``, no home, no other project files;
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

``agent.sandbox_runner`` is the program run inside; its report after the printed text says which limit
stopped the code (an exit status the code picks itself is never read as a limit). What crosses back is text
and PNG pictures the runner made, each at most ``picture_pixels``: the parent decodes PNG only, and checks
the size before decoding (``_pictures``). Nothing here evaluates model output in this process.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import random
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from lookcloser import looktools
from lookcloser.agent.sandbox_cgroup import CallCgroup, make_call_cgroup
from lookcloser.agent.sandbox_start import (
    call_uid,
    interpreter_paths,
    start_problem,
    uid_processes,
    uid_tasks,
)

RUNNER = Path(__file__).with_name("sandbox_runner.py")
# The image library's folder (lookcloser.looktools: it imports nothing of lookcloser), bound alone at
# LOOKTOOLS_PATH/looktools so that `import looktools` works and no other project file is in view.
LOOKTOOLS = Path(looktools.__file__).parent
LOOKTOOLS_PATH = "/opt/looktools"
INSTALL_HINT = "apt-get install -y bubblewrap"
# Statuses of sandbox_runner.py's report that name a limit.
RUNNER_LIMITS = ("memory", "processes", "file size", "CPU time", "scratch space")
PICTURE_MODES = ("L", "RGB", "RGBA")  # what the runner writes; any other PNG did not come from it
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
    call_memory_mb: int = 2048  # the whole call's processes and tmpfs together (its cgroup, where one is made)
    processes: int = 8  # processes of the call alive at once, the first included (RLIMIT_NPROC)
    file_mb: int = 32  # largest file the code may write (RLIMIT_FSIZE)
    scratch_mb: int = 64  # size of /scratch and of /tmp (tmpfs)
    output_mb: int = 8  # bytes read back (printed text and pictures); past it the call is killed
    text_chars: int = 4000  # printed text returned to the model; the rest is cut, and the result says so
    max_images: int = 4  # pictures returned per call
    # Pixels of a returned picture: larger ones are scaled under it inside the sandbox, before anything
    # reaches the parent (4 times the model's default view of 1024 x 1024: crops of it keep detail, and
    # four of them are 48 MiB of RGB on the host, never 4 x 64 megapixels).
    picture_pixels: int = 2048 * 2048

    def __post_init__(self) -> None:
        for name in ("wall_s", "cpu_s", "memory_mb", "call_memory_mb", "processes", "file_mb", "scratch_mb",
                     "output_mb", "text_chars", "max_images", "picture_pixels"):
            if not getattr(self, name) > 0:
                raise ValueError(f"sandbox limit {name} must be > 0, got {getattr(self, name)!r}")

    def describe(self, limit: str) -> str:
        """The limit named as a result states it.

        >>> SandboxLimits().describe("wall time")
        'wall time (10 s)'
        """
        values = {"wall time": f"{self.wall_s:g} s", "CPU time": f"{self.cpu_s} s", "memory": f"{self.memory_mb} MiB",
                  "call memory": f"{self.call_memory_mb} MiB over the whole call",
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
    images_refused: int = 0  # picture lines that were not the runner's PNG within the size: never decoded
    limit: str | None = None
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.limit is None and self.error is None


_sandbox_works = False


def sandbox_problem() -> str | None:
    """Why the sandbox cannot run here (None: it can). Checked with a real call, so that a recipe or eval
    command asking for the tool fails when it is parsed, never at the first rollout. A success holds for the
    process's life; a failure is checked again next time (bubblewrap installed meanwhile, a setting changed)."""
    global _sandbox_works
    if _sandbox_works:
        return None
    if shutil.which("bwrap") is None:
        return f"the python tool needs bubblewrap (bwrap), which is not installed; install it with: {INSTALL_HINT}"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "the python tool run as root needs setpriv (util-linux) to drop to an unprivileged user"
    with tempfile.TemporaryDirectory(prefix="lookcloser-sandbox-check-") as folder:
        result = run_python("print(6 * 7)", Path(folder), SandboxLimits(wall_s=30))
    if result.ok and result.text.strip() == "42":
        _sandbox_works = True
        return None
    return start_problem(result.error or result.limit or "", result.text)


def require_sandbox() -> None:
    """Raise ``SandboxUnavailable`` unless the sandbox runs here."""
    problem = sandbox_problem()
    if problem:
        raise SandboxUnavailable(problem)


# The episode's question as the code's ``question`` (the runner reads it when the episode wrote one).
QUESTION_FILE = "question.txt"


def write_question(folder: Path, question: str) -> None:
    """Write the episode's question text (a read-only file the sandbox binds at /inputs)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / QUESTION_FILE
    path.write_text(question, encoding="utf-8")
    path.chmod(0o444)


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
        for path in [*sorted(inputs.glob("image_*.bmp")), inputs / QUESTION_FILE]:
            _copy_regular(path, call_dir / path.name)
        (call_dir / "code.py").write_text(code, encoding="utf-8")
        (call_dir / "code.py").chmod(0o444)
        nonce = f"--lookcloser-report-{random.getrandbits(64):016x}--"
        with _slots, (call_uid() if os.geteuid() == 0 else contextlib.nullcontext()) as uid:
            cgroup = make_call_cgroup(call_dir.name, limits.call_memory_mb * 1024 * 1024, limits.processes + 8)
            try:
                result = _run(_command(call_dir, nonce, limits, uid), nonce, limits, uid, cgroup)
            finally:
                if cgroup is not None:
                    cgroup.remove()
    result.seconds = time.monotonic() - started
    return result


def _copy_regular(source: Path, target: Path) -> None:
    """Copy an input as a new regular file, never through a symlink (a link to a host file is left out)."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:  # a symlink (ELOOP) or gone
        return
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            sent = 0
            while sent < info.st_size:
                step = os.sendfile(out, fd, sent, info.st_size - sent)
                if step == 0:
                    break
                sent += step
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _command(call_dir: Path, nonce: str, limits: SandboxLimits, uid: int | None) -> list[str]:
    root = uid is not None
    cmd = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
    if not root:
        cmd.insert(1, "--unshare-user")
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    scratch = str(limits.scratch_mb * 1024 * 1024)
    # The private /tmp first, the interpreter's folders after: a venv under /tmp is bound onto the tmpfs
    # instead of hidden by it.
    cmd += ["--perms", "1777", "--size", scratch, "--tmpfs", "/scratch",
            "--perms", "1777", "--size", scratch, "--tmpfs", "/tmp"]
    made = {"/tmp", "/scratch"}
    for path in interpreter_paths():
        parents = [str(p) for p in reversed(Path(path).parents) if str(p) != "/"]
        for parent in parents:  # readable mount points for a non-root user (a home folder is often 0700)
            if parent not in made:
                cmd += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        cmd += ["--ro-bind", path, path]
    for parent in (*[str(p) for p in reversed(Path(LOOKTOOLS_PATH).parents) if str(p) != "/"], LOOKTOOLS_PATH):
        if parent not in made:  # readable by the code's unprivileged user (bwrap makes them 0700 otherwise)
            cmd += ["--perms", "0755", "--dir", parent]
            made.add(parent)
    cmd += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev", "--ro-bind", str(call_dir), "/inputs",
            "--ro-bind", str(RUNNER), "/sandbox_runner.py", "--ro-bind", str(LOOKTOOLS), f"{LOOKTOOLS_PATH}/looktools",
            # The new root is a tmpfs no limit bounds: read-only once its mount points are made (an
            # unprivileged caller's code owns it and could otherwise fill it).
            "--remount-ro", "/", "--chdir", "/scratch", "--clearenv"]
    for name, value in (("PATH", "/usr/bin:/bin"), ("HOME", "/scratch"), ("LANG", "C.UTF-8"),
                        ("OMP_NUM_THREADS", "1"), ("OPENBLAS_NUM_THREADS", "1"), ("MPLCONFIGDIR", "/scratch"),
                        ("PYTHONPATH", LOOKTOOLS_PATH)):
        cmd += ["--setenv", name, value]
    cmd += ["--cap-drop", "ALL"]
    processes = limits.processes + 1  # + bwrap's init, same uid
    if root:  # setpriv needs these to drop to the unprivileged uid; it drops them all (and the bounding set)
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP", "--",
                "setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups", "--no-new-privs",
                "--inh-caps=-all", "--bounding-set=-all",
                # A second, unprivileged bwrap over the same view, to forbid new user namespaces: in one, the
                # code could mount a tmpfs that no limit here bounds (--disable-userns needs a user namespace,
                # which a root caller's bwrap does not make). Its PID namespace keeps its own monitor process
                # out of the code's sight; /dev is read-only (an unprivileged bwrap's /dev is the user's).
                "bwrap", "--unshare-user", "--disable-userns", "--unshare-pid", "--bind", "/", "/", "--dev", "/dev",
                "--remount-ro", "/dev", "--chdir", "/scratch", "--die-with-parent", "--"]
    else:
        # The kernel counts RLIMIT_NPROC over every thread of the caller's uid (a user namespace does not
        # change that): the user's threads now are added, so the code still gets its own share.
        processes += uid_tasks(os.getuid()) + 2
        cmd += ["--disable-userns", "--"]
    runner_limits = {"cpu_s": limits.cpu_s, "memory_mb": limits.memory_mb, "file_mb": limits.file_mb,
                     "processes": processes, "max_images": limits.max_images,
                     "picture_pixels": limits.picture_pixels}
    return cmd + [os.path.join(sys.prefix, "bin", "python"), "-I", "-B", "/sandbox_runner.py", nonce,
                  json.dumps(runner_limits)]


def _run(cmd: list[str], nonce: str, limits: SandboxLimits, uid: int | None,
         cgroup: CallCgroup | None) -> SandboxResult:
    started = time.monotonic()
    info_read, info_write = os.pipe()  # bwrap writes {"child-pid": N} there: the PID namespace's init
    cmd = [cmd[0], "--info-fd", str(info_write), *cmd[1:]]
    try:
        proc = subprocess.Popen(cgroup.wrap(cmd) if cgroup else cmd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                env={"PATH": "/usr/bin:/bin"}, close_fds=True, pass_fds=(info_write,))
    finally:
        os.close(info_write)
    try:
        result = _watch(proc, nonce, limits, started, info_read)
    finally:
        os.close(info_read)
        if uid is not None:
            _end_leftovers(uid)
    if cgroup is not None and cgroup.oom_kills() and result.limit is None:
        # the kernel's count: a process of the call was killed for the call's (or all calls') memory
        result.limit, result.error, result.images = "call memory", None, []
    return result


def _end_leftovers(uid: int) -> None:
    """Return only once no process of the call is left. bwrap is reaped as soon as its own child is gone,
    but the nested namespace's teardown can still be under way then (seen under load: the inner init and the
    code's processes alive a moment later). A root caller's call runs as its own unused uid, so what /proc
    still shows under that uid is this call's: kill it and wait, at most a few seconds (zombies go as their
    parents do)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        left = uid_processes(uid)
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
    marker = b"\n" + nonce.encode() + b" "
    report, pictures = None, b""
    if marker in out and not stopped:
        text, _, rest = out.rpartition(marker)
        head, _, pictures = rest.partition(b"\n")
        report = _read_report(head)
    else:
        text = out
    result.text = text.decode("utf-8", errors="replace")
    _set_outcome(result, stopped, status, report, limits)
    if result.ok and report is not None:
        result.images, result.images_refused = _pictures(pictures, limits)
        result.images_left_out = report["left_out"]
    return result


def _read_report(head: bytes) -> dict:
    """The runner's report line; anything else (the code wrote it) is reported as unreadable."""
    try:
        report = json.loads(head.decode())
        if report["status"] in ("ok", "exception", "show", *RUNNER_LIMITS) and isinstance(report["left_out"], int):
            return {"status": report["status"], "left_out": max(0, report["left_out"])}
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        pass
    return {"status": "unreadable", "left_out": 0}


def _set_outcome(result: SandboxResult, stopped: str | None, status: int, report: dict | None,
                 limits: SandboxLimits) -> None:
    """``limit`` or ``error`` from what stopped the call: a limit the parent saw, the runner's report, or
    (no report: the code ended its own process) the exit status, which never names a limit."""
    if stopped:
        result.limit = stopped
    elif report is not None:
        kind = report["status"]
        if kind in RUNNER_LIMITS:
            result.limit = kind
        elif kind == "exception":
            result.error = "the code raised an exception"
        elif kind == "show":  # the runner's last printed line names what show() was given
            before, _, line = result.text.rstrip("\n").rpartition("\n")
            result.error, result.text = line, before + "\n" if before else ""
        elif kind == "unreadable":
            result.error = "the sandbox's report was unreadable"
    elif status == 128 + signal.SIGXCPU or (status == 128 + signal.SIGKILL and result.seconds >= limits.cpu_s):
        result.limit = "CPU time"  # SIGKILL: the hard stop one second after the soft limit's SIGXCPU
    elif status == 1 and result.text.startswith("bwrap:"):
        result.error = f"the sandbox did not start: {result.text.strip()[:300]}"
    elif status > 128:
        result.error = f"the code's process was killed by signal {signal.Signals(status - 128).name}" \
            if status - 128 in signal.Signals._value2member_map_ else f"the code's process ended with status {status}"
    elif status != 0:
        result.error = f"the code exited with status {status}"


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


def _pictures(data: bytes, limits: SandboxLimits) -> tuple[list[Image.Image], int]:
    """Decode the report's picture lines: PNG only, in a mode the runner writes, at most ``picture_pixels``
    (checked on the header, before any pixel is decoded), at most ``max_images``. Anything else did not
    come from the runner (the code wrote it into the channel): counted as refused, never decoded."""
    pictures, refused = [], 0
    for line in [line for line in data.split(b"\n") if line.strip()]:
        if len(pictures) >= limits.max_images:
            refused += 1
            continue
        try:
            with Image.open(io.BytesIO(base64.b64decode(line, validate=True)), formats=["PNG"]) as img:
                if img.mode not in PICTURE_MODES or img.width * img.height > limits.picture_pixels:
                    refused += 1
                    continue
                img.load()
                pictures.append(img)
        except Exception:  # noqa: BLE001 - bytes the code's process may have written: a bad one is refused
            refused += 1
    return pictures, refused
