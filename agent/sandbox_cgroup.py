"""Memory and process bounds over a whole sandbox call, and over all the calls of one process, as cgroups.

``RLIMIT_AS`` bounds each of a call's processes; a cgroup bounds what all of them hold together (their
resident memory and the tmpfs pages they write), which no rlimit can. Made where this process may make
them: cgroup v2 where its cgroup delegates ``memory`` and ``pids`` to children (``cgroup.subtree_control``),
else cgroup v1's ``memory`` and ``pids`` hierarchies (these machines: root, v1 mounted). Elsewhere (an
unprivileged user without a delegated subtree) ``cgroups_made`` is False and the per-process limits stand
alone (docs/agent.md, "Memory over a call").

Layout: one folder per process, ``lookcloser-sandboxes-<pid>``, whose limit is the total for all its calls
at once (``total_memory_bytes``), and in it one folder per call. The call's processes join it before bwrap
starts (a shell writes its own pid, then execs bwrap), so nothing of the call runs outside it.
"""

from __future__ import annotations

import atexit
import os
import shlex
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CGROUPS = Path("/sys/fs/cgroup")
TOTAL_SHARE = 4  # the calls of all ranks on a machine hold at most a quarter of its memory
_lock = threading.Lock()
_parents: dict[str, list[Path]] | None = None  # per hierarchy kind: this process's folders; {} when none


@dataclass
class CallCgroup:
    """One call's cgroup folders (one for v2; memory and pids for v1)."""

    folders: list[Path]
    memory_folder: Path
    version: int

    def wrap(self, cmd: list[str]) -> list[str]:
        """``cmd`` run by a shell that first moves itself into the call's cgroups."""
        joins = " && ".join(f"echo $$ > {shlex.quote(str(folder / 'cgroup.procs'))}" for folder in self.folders)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *cmd]

    def oom_kills(self) -> int:
        """Processes of the call the kernel killed for the cgroup's memory limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            lines = (self.memory_folder / name).read_text().splitlines()
        except OSError:
            return 0
        return next((int(line.split()[1]) for line in lines if line.startswith("oom_kill ")), 0)

    def remove(self, wait_s: float = 2.0) -> None:
        """Remove the folders once the call's last process has left them (a killed process is counted until
        it is reaped: a moment after the call returns)."""
        deadline = time.monotonic() + wait_s
        for folder in self.folders:
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY: a process still leaving
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.005)


def total_memory_bytes() -> int:
    """The bound on all concurrent calls of this process: a quarter of the machine's memory, shared by the
    ranks on it (``LOCAL_WORLD_SIZE``, set by ``accelerate launch``/torchrun)."""
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    ranks = max(1, int(os.environ.get("LOCAL_WORLD_SIZE") or 1))
    return pages // TOTAL_SHARE // ranks


def make_call_cgroup(name: str, memory_bytes: int, processes: int) -> CallCgroup | None:
    """A cgroup for one call under this process's folder, or None where none can be made."""
    parents = _process_parents()
    if not parents:
        return None
    made: list[Path] = []
    try:
        if "unified" in parents:
            folder = parents["unified"][0] / name
            folder.mkdir()
            made.append(folder)
            _write(folder, {"memory.max": memory_bytes, "pids.max": processes})
            _write(folder, {"memory.swap.max": 0}, optional=True)  # absent without swap accounting
            return CallCgroup(made, folder, 2)
        memory = parents["memory"][0] / name
        memory.mkdir()
        made.append(memory)
        _write(memory, {"memory.limit_in_bytes": memory_bytes})
        _write(memory, {"memory.memsw.limit_in_bytes": memory_bytes}, optional=True)  # swap too, where counted
        pids = parents["pids"][0] / name
        pids.mkdir()
        made.append(pids)
        _write(pids, {"pids.max": processes})
        return CallCgroup(made, memory, 1)
    except OSError:
        CallCgroup(made, made[0] if made else Path("/"), 1).remove()
        return None


def cgroups_made() -> bool:
    """Whether calls here run in cgroups."""
    return bool(_process_parents())


def _process_parents() -> dict[str, list[Path]]:
    """This process's folder in each hierarchy, made once (first call); {} where none can be made."""
    global _parents
    with _lock:
        if _parents is None:
            _parents = _make_parents(f"lookcloser-sandboxes-{os.getpid()}", total_memory_bytes())
            if _parents:
                atexit.register(CallCgroup([f for folders in _parents.values() for f in folders], Path("/"), 1).remove)
        return _parents


def _remove_stale(folder: Path) -> None:
    """Remove the folders a killed process of this project left next to ``folder`` (its pid is gone)."""
    for stale in folder.parent.glob("lookcloser-sandboxes-*"):
        pid = stale.name.rsplit("-", 1)[1]
        if stale == folder or not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        CallCgroup([*(p for p in stale.iterdir() if p.is_dir()), stale], stale, 1).remove(wait_s=0)


def _make_parents(name: str, total: int) -> dict[str, list[Path]]:
    own = _own_cgroups()
    made: list[Path] = []
    try:
        if (CGROUPS / "cgroup.controllers").exists():
            base = CGROUPS / own.get("", "/").lstrip("/")
            if not {"memory", "pids"} <= set((base / "cgroup.subtree_control").read_text().split()):
                return {}
            folder = base / name
            folder.mkdir(exist_ok=True)
            made.append(folder)
            _remove_stale(folder)
            _write(folder, {"cgroup.subtree_control": "+memory +pids", "memory.max": total})
            _write(folder, {"memory.swap.max": 0}, optional=True)
            return {"unified": [folder]}
        parents = {}
        for kind in ("memory", "pids"):
            if kind not in own or not (CGROUPS / kind).is_dir():
                return {}
            folder = CGROUPS / kind / own[kind].lstrip("/") / name
            folder.mkdir(exist_ok=True)
            made.append(folder)
            _remove_stale(folder)
            parents[kind] = [folder]
        _write(parents["memory"][0], {"memory.use_hierarchy": 1}, optional=True)
        _write(parents["memory"][0], {"memory.limit_in_bytes": total})
        return parents
    except OSError:
        for folder in reversed(made):
            try:
                folder.rmdir()
            except OSError:
                pass
        return {}


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path per v1 controller (``""``: the v2 hierarchy), from /proc/self/cgroup."""
    own = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return own
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            own[controller] = path
    return own


def _write(folder: Path, values: dict, optional: bool = False) -> None:
    for key, value in values.items():
        try:
            (folder / key).write_text(f"{value}\n")
        except OSError:
            if not optional:
                raise
