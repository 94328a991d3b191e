"""Where the python tool's sandbox runs from (``agent.sandbox``): the folders the interpreter needs, the
uid a root caller's call runs as, and a start failure said in words a user can act on."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import random
import sys
import tempfile
from pathlib import Path


def start_problem(error: str, text: str) -> str:
    """The start check's failure in words a user can act on.

    >>> start_problem("the sandbox did not start", "bwrap: execvp /x/bin/python: No such file or directory")[:66]
    "the python tool's sandbox cannot see the interpreter /x/bin/python"
    """
    said = text.strip()[:300]
    if "execvp" in said and "No such file" in said:
        python = said.split("execvp", 1)[1].split(":", 1)[0].strip()
        return (f"the python tool's sandbox cannot see the interpreter {python} ({said}): run lookcloser from a "
                f"Python whose folders are readable by an unprivileged user, outside /proc, /dev and /sys")
    if said.startswith("bwrap:") and any(key in said for key in ("namespace", "uid map", "Operation not permitted")):
        return f"the python tool's sandbox cannot make user namespaces on this machine ({said}): {_userns_setting()}"
    return f"the python tool's sandbox (bubblewrap) does not start on this machine: {error} {said}".strip()


def _userns_setting() -> str:
    """The kernel setting that refuses unprivileged user namespaces here, and how to allow them."""
    def value(path: str) -> str | None:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return None
    if value("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        return ("AppArmor refuses them (Ubuntu 24.04 and later): allow them with "
                "`sysctl kernel.apparmor_restrict_unprivileged_userns=0`, or give bwrap an AppArmor profile "
                "with `userns,`; or run as root")
    if value("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        return "allow them with `sysctl kernel.unprivileged_userns_clone=1` (Debian), or run as root"
    if value("/proc/sys/user/max_user_namespaces") == "0":
        return "allow them with `sysctl user.max_user_namespaces=15000`, or run as root"
    return ("the container or its seccomp profile refuses them (Docker, Kubernetes): run the container with "
            "user namespaces allowed (e.g. `--security-opt seccomp=unconfined`), or run as root")


@contextlib.contextmanager
def call_uid():
    """A uid for one call (root callers), unused for the call's lifetime: no account, no process has it,
    and no other call of any process on this machine holds it (a lock file, held until the call ends). A
    clash would let one call's cleanup (``agent.sandbox._end_leftovers``) kill another's processes."""
    folder = Path(tempfile.gettempdir()) / "lookcloser-sandbox-uids"
    folder.mkdir(mode=0o700, exist_ok=True)
    for _ in range(64):
        uid = random.randrange(10_000_000, 2_000_000_000)
        if _uid_has_account(uid) or uid_processes(uid):
            continue
        path = folder / str(uid)
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if not path.exists() or os.stat(path).st_ino != os.fstat(fd).st_ino:  # unlinked by its last holder
            os.close(fd)
            continue
        try:
            yield uid
        finally:
            path.unlink(missing_ok=True)
            os.close(fd)
        return
    raise RuntimeError("no unused uid for the sandbox after 64 draws")


def _uid_has_account(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def uid_processes(uid: int) -> list[int]:
    """Processes of ``uid`` that /proc shows now."""
    found = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and os.stat(f"/proc/{name}").st_uid == uid:
                found.append(int(name))
        except OSError:  # gone meanwhile
            continue
    return found


def uid_tasks(uid: int) -> int:
    """Threads of every process of ``uid`` now: what the kernel's ``RLIMIT_NPROC`` counts for that uid."""
    count = 0
    for pid in uid_processes(uid):
        try:
            count += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:  # gone meanwhile
            continue
    return count


def interpreter_paths() -> list[str]:
    """Folders the interpreter needs (the venv, the Python it was made from, and where numpy and Pillow
    live when a ``.pth`` file puts them elsewhere), outermost first."""
    import numpy
    import PIL

    paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, Path(os.path.realpath(sys.executable)).parents[1])}
    paths |= {os.path.realpath(Path(module.__file__).parents[1]) for module in (numpy, PIL)}
    paths.add(sys.prefix)  # the venv as its own path too: its bin/python is what runs
    kept = sorted(p for p in paths if not p.startswith("/usr/") and p != "/usr")
    return [p for p in kept if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in kept)]
