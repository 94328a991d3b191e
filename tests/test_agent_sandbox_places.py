"""The python tool's sandbox run from where a user's Python lives (issue 49): a venv under /tmp (the
sandbox's own /tmp is a private tmpfs), under the home folder, under a path with spaces; and, where the
interpreter cannot be seen inside the sandbox, the start check's one line saying so.

Each venv is a real one (``python -m venv``) whose ``.pth`` file adds this checkout's site-packages (numpy,
Pillow, lookcloser), and the check runs in a real subprocess of that venv's interpreter, so the sandbox binds
that venv. Skipped only where bubblewrap is not installed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import uuid
from pathlib import Path

import numpy
import pytest

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

CHECK = ("import sys\nfrom pathlib import Path\nfrom lookcloser.agent.sandbox import run_python, sandbox_problem\n"
         "print('problem:', sandbox_problem())\n"
         "result = run_python('import sys\\nprint(6 * 7, sys.prefix)', Path(sys.argv[1]))\n"
         "print('result:', result.ok, result.error, result.text.strip())\n")


def _venv_at(folder: Path) -> Path:
    """A venv at ``folder`` that finds this checkout's packages; its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    site = next(folder.glob("lib/python*/site-packages"))
    folders = dict.fromkeys([sysconfig.get_paths()["purelib"], str(Path(numpy.__file__).parents[1])])
    (site / "this_checkout.pth").write_text("".join(f"import site; site.addsitedir({f!r})\n" for f in folders))
    return folder / "bin" / "python"


def _check(python: Path, inputs: Path) -> str:
    inputs.mkdir(exist_ok=True)
    done = subprocess.run([str(python), "-c", CHECK, str(inputs)], check=False, capture_output=True, text=True,
                          timeout=120, cwd="/", env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_venv_under_tmp_in_a_path_with_spaces_runs_the_tool(tmp_path):
    assert str(tmp_path).startswith("/tmp/")  # pytest's folder: under /tmp, which the sandbox replaces
    venv = tmp_path / "a folder with spaces" / ".venv"
    out = _check(_venv_at(venv), tmp_path / "inputs")
    assert "problem: None" in out and f"result: True None 42 {venv}" in out


def test_a_venv_under_the_home_folder_runs_the_tool(tmp_path):
    home = Path.home()
    if not home.is_dir() or not _writable(home):
        pytest.skip(f"the home folder {home} is not writable here")
    folder = home / f".lookcloser-sandbox-test-{uuid.uuid4().hex[:8]}"
    try:
        out = _check(_venv_at(folder / "venv"), tmp_path / "inputs")
        assert "problem: None" in out and f"result: True None 42 {folder / 'venv'}" in out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_an_interpreter_the_sandbox_cannot_see_is_named_in_one_line(tmp_path):
    shm = Path("/dev/shm")
    if not _writable(shm):
        pytest.skip("/dev/shm is not writable here")
    folder = shm / f"lookcloser-sandbox-test-{uuid.uuid4().hex[:8]}"  # the sandbox's /dev is its own
    try:
        out = _check(_venv_at(folder), tmp_path / "inputs")
        problem = next(line for line in out.splitlines() if line.startswith("problem:"))
        assert f"the python tool's sandbox cannot see the interpreter {folder}/bin/python" in problem
        assert "outside /proc, /dev and /sys" in problem and "result: False" in out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _writable(folder: Path) -> bool:
    probe = folder / f".lookcloser-write-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError:
        return False
    probe.rmdir()
    return True


@pytest.mark.parametrize("said", [
    # bwrap 0.8's own words where the kernel refuses an unprivileged user namespace (bubblewrap.c), and where a
    # container's seccomp profile or Ubuntu's AppArmor refuses it. Refusing one needs a kernel setting this test
    # cannot change on a shared machine, so the start check's wording is checked on bwrap's lines.
    ("bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged "
     "user namespaces. On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'."),
    "bwrap: setting up uid map: Permission denied",
    "bwrap: Creating new namespace failed: Operation not permitted",
])
def test_refused_user_namespaces_are_named_with_the_setting_to_change(said):
    from lookcloser.agent.sandbox_start import start_problem

    problem = start_problem("the sandbox did not start", said)
    assert problem.startswith("the python tool's sandbox cannot make user namespaces on this machine (bwrap: ")
    assert "\n" not in problem and ("sysctl" in problem or "seccomp" in problem) and "or run as root" in problem
