"""The python tool's sandbox under attack: each case checks that the code stayed contained (on the host,
not only in what it printed) and that the tool result says clearly what happened.

Real bubblewrap, real processes, a real TCP listener on the parent's loopback; nothing mocked. Short limits
keep the suite at a few seconds. Skipped only where bubblewrap is not installed (``.ci/run`` installs it);
where it is installed but the sandbox does not start, the tests fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest
from PIL import Image

from lookcloser.agent.code_env import PythonImageToolEnv
from lookcloser.agent.sandbox import SandboxLimits, run_python, sandbox_problem, write_inputs
from lookcloser.agent.sandbox_cgroup import cgroups_made
from lookcloser.agent.toolkit import call_failed

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

LIMITS = SandboxLimits(wall_s=3, cpu_s=1, memory_mb=512, processes=8, file_mb=8, scratch_mb=32, output_mb=2,
                       text_chars=2000, max_images=2)


def _pictures() -> list[Image.Image]:
    first = Image.new("RGB", (64, 48), (200, 30, 30))
    second = Image.new("RGB", (32, 32), (10, 20, 250))
    second.putpixel((5, 7), (0, 255, 0))
    return [first, second]


@pytest.fixture()
def env():
    assert sandbox_problem() is None, sandbox_problem()
    env = PythonImageToolEnv(sandbox_limits=LIMITS)
    env.reset(images=_pictures())
    return env


def _text(result) -> str:
    return result if isinstance(result, str) else "\n".join(b["text"] for b in result if b["type"] == "text")


def _processes_with(marker: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


def _sandbox_uid_processes() -> list[int]:
    """Processes running as one of the sandbox's random uids (root callers: 10**7 and up)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            uid = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
        except (OSError, IndexError):
            continue
        if uid >= 10_000_000:
            found.append(pid)
    return found


def test_images_in_printed_text_and_pictures_out(env):
    code = ("import numpy as np\nprint(image_1.size, image_2.getpixel((5, 7)), len(images))\n"
            "show(np.zeros((40, 30, 3), dtype=np.uint8))\nimage_2.save('copy.png')")
    result = env.python(code)
    assert not call_failed(result)
    assert "(64, 48) (0, 255, 0) 2" in _text(result)
    pictures = [b["image"] for b in result if b["type"] == "image"]
    assert [p.size for p in pictures] == [(30, 40), (32, 32)]
    assert env.crop(3, [0, 0, 1, 1])[0]["image"].size == (32, 32)  # the code's pictures are tool images
    again = env.python("print(image_4.getpixel((5, 7)))")  # and the next call's image_4
    assert "(0, 255, 0)" in _text(again)


def test_reading_etc_passwd_fails(env):
    result = env.python("print(open('/etc/passwd').read())")
    assert call_failed(result) and "FileNotFoundError" in result and "root:x:0" not in result


def test_home_and_host_files_are_not_visible(env, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the-host-secret")
    home = Path.home()
    code = (f"import json, os\nprint('HOME', json.dumps(os.listdir({str(home)!r}) if os.path.isdir({str(home)!r}) else []))\n"
            f"print(open({str(secret)!r}).read())")
    result = env.python(code)
    assert call_failed(result) and "FileNotFoundError" in result and "the-host-secret" not in result
    line = next(line for line in result.splitlines() if line.startswith("HOME "))
    visible = set(json.loads(line[5:]))
    python_home = {Path(p).relative_to(home).parts[0] for p in (sys.prefix, sys.base_prefix, os.path.realpath(sys.executable))
                   if Path(p).is_relative_to(home)}
    assert visible <= python_home  # at most the folder the interpreter itself lives in


def test_api_keys_in_the_parent_environment_do_not_reach_the_code(env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-parent-key-123")
    result = env.python("import os\nprint(sorted(os.environ.items()))")
    assert not call_failed(result)
    assert "sk-fake-parent-key-123" not in _text(result) and "OPENAI_API_KEY" not in _text(result)
    assert "('HOME', '/scratch')" in _text(result)


def test_writing_outside_scratch_fails_and_reaches_nothing_on_the_host(env, tmp_path):
    target = tmp_path / "escaped.txt"
    code = ("import os\nfor path in ['/usr/escaped', '/inputs/escaped', '/escaped', " + repr(str(target)) + "]:\n"
            "    try:\n        open(path, 'w').write('x'); print('wrote', path)\n"
            "    except OSError as err:\n        print('refused', path, type(err).__name__)\n"
            "open('/scratch/ok.txt', 'w').write('fine'); print('scratch ok')")
    text = _text(env.python(code))
    assert "wrote /usr" not in text and "wrote /inputs" not in text and "wrote /escaped" not in text
    assert text.count("refused") >= 3 and "scratch ok" in text
    assert not target.exists() and not Path("/escaped").exists()


def test_no_network_loopback_listener_in_the_parent_is_unreachable(env):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted = []
    listener.settimeout(3)
    thread = threading.Thread(target=lambda: accepted.append(_accept(listener)), daemon=True)
    thread.start()
    code = (f"import socket\ns = socket.socket()\ns.settimeout(2)\ntry:\n    s.connect(('127.0.0.1', {port}))\n"
            "    print('connected')\nexcept OSError as err:\n    print('no connection:', type(err).__name__)\n"
            "print('interfaces', [l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:]])\n"
            "print('routes', open('/proc/net/route').read().splitlines()[1:])")
    text = _text(env.python(code))
    thread.join(5)
    listener.close()
    assert "no connection: ConnectionRefusedError" in text and "connected\n" not in text
    assert "interfaces ['lo']" in text and "routes []" in text
    assert accepted == [None]  # the parent's listener saw no connection


def _accept(listener: socket.socket):
    try:
        conn, _ = listener.accept()
        conn.close()
        return "connected"
    except OSError:
        return None


def test_fork_bomb_hits_the_process_limit_and_leaves_nothing(env):
    result = env.python("import os\nwhile True:\n    os.fork()")
    # The first refused fork ends the call; on a loaded machine the wall time may come first.
    assert call_failed(result) and ("processes (8 processes)" in result or "wall time (3 s)" in result), result
    assert _sandbox_uid_processes() == []  # the whole tree is gone when the call returns


def test_infinite_loop_is_stopped(env):
    start = time.monotonic()
    result = env.python("while True:\n    pass")
    assert call_failed(result) and ("CPU time (1 s)" in result or "wall time (3 s)" in result)
    assert time.monotonic() - start < LIMITS.wall_s + 2


def test_ten_gigabytes_hit_the_memory_limit(env):
    result = env.python("import numpy as np\na = np.ones(10 * 1024**3, dtype=np.uint8)\nprint(a.sum())")
    assert call_failed(result) and "memory (512 MiB)" in result


def test_a_100k_by_100k_image_hits_the_memory_limit(env):
    result = env.python("from PIL import Image\nImage.new('RGB', (100_000, 100_000))\nprint('made')")
    assert call_failed(result) and "memory (512 MiB)" in result and "made" not in result


def test_a_gigabyte_of_output_is_cut_at_the_output_limit(env):
    start = time.monotonic()
    result = env.python("import sys\nfor _ in range(16384):\n    sys.stdout.write('x' * 65536)")
    assert call_failed(result) and "output (2 MiB)" in result
    assert "[output cut:" in result and len(result) < 3000  # the model reads at most the text cap
    assert time.monotonic() - start < LIMITS.wall_s


def test_long_printed_text_is_capped_and_says_so(env):
    text = _text(env.python("print('y' * 10_000)"))
    assert "[output cut: 10001 characters printed, 2000 shown (the limit)]" in text


def test_sleeping_past_the_wall_time_is_stopped(env):
    start = time.monotonic()
    result = env.python("import time\ntime.sleep(60)")
    assert call_failed(result) and "wall time (3 s)" in result
    assert time.monotonic() - start < LIMITS.wall_s + 2


def test_a_child_that_outlives_the_call_is_killed_and_never_speaks_later(env):
    marker = "late-child-marker-7731"
    code = ("import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', "
            f"'import time; time.sleep(1.5); print(\"{marker}\", flush=True)'])\nprint('parent done')")
    first = env.python(code)
    assert not call_failed(first) and "parent done" in _text(first)
    assert _processes_with(marker) == []  # killed with the call's PID namespace
    time.sleep(1.6)
    second = env.python("import time\ntime.sleep(0.2)\nprint('second call')")
    assert marker not in _text(second) and "second call" in _text(second)


def test_signalling_the_parent_and_everything_fails(env):
    host_pid = os.getpid()
    code = ("import os, signal\nfor pid in [os.getppid(), 1, -1, " + str(host_pid) + "]:\n"
            "    try:\n        os.kill(pid, signal.SIGKILL); print('sent', pid)\n"
            "    except OSError as err:\n        print('refused', pid, type(err).__name__)\nprint('survived')")
    text = _text(env.python(code))
    # The code's parent is the sandbox's own init (pid 1 of its PID namespace), which ignores signals from
    # inside; nothing outside the namespace, the host's processes included, is visible.
    assert f"refused {host_pid} ProcessLookupError" in text and "refused -1 ProcessLookupError" in text
    assert "survived" in text
    os.kill(host_pid, 0)  # the test process is alive
    assert "still here" in _text(env.python("print('still here')"))


def test_kill_all_from_a_shell_kills_only_the_sandbox(env):
    result = env.python("import subprocess\nsubprocess.run(['sh', '-c', 'kill -9 -1'])\nprint('after kill')")
    assert not call_failed(result) or "SIGKILL" in result
    assert subprocess.run(["true"], check=False).returncode == 0  # the host goes on


def test_no_new_user_namespace_and_no_unbounded_filesystem(env):
    # In a user namespace of its own the code could mount a tmpfs that no limit bounds; /dev (a tmpfs) is
    # read-only for the same reason. /scratch and /tmp are the only writable places, both size-capped.
    code = ("import os, subprocess\n"
            "print(subprocess.run(['unshare', '-Urm', 'sh', '-c', 'mount -t tmpfs none /scratch && echo MOUNTED'],"
            " capture_output=True, text=True))\n"
            "for path in ['/dev/shm/x', '/dev/x']:\n    try:\n        open(path, 'w').write('x'); print('wrote', path)\n"
            "    except OSError as err:\n        print('refused', path, type(err).__name__)\n"
            "for n in range(16):  # 4 MiB files, under the file-size limit, until /tmp is full\n"
            "    open(f'/tmp/fill{n}', 'wb').write(b'x' * 4 * 1024 * 1024)\n")
    result = env.python(code)
    assert call_failed(result) and "scratch space (32 MiB)" in result
    assert "stdout=''" in result and "unshare failed" in result and "wrote" not in result  # never MOUNTED
    assert result.count("refused /dev") == 2


def test_syntax_error_is_a_failed_call_with_the_line(env):
    result = env.python("print('a'\nx = 1")
    assert call_failed(result) and "SyntaxError" in result and "sandbox_runner" not in result


def test_missing_module_is_a_failed_call(env):
    result = env.python("import torchvision_that_is_not_here")
    assert call_failed(result) and "ModuleNotFoundError" in result and "torchvision_that_is_not_here" in result


def test_files_larger_than_the_file_limit_fail(env):
    result = env.python("open('big.bin', 'wb').write(b'x' * (20 * 1024 * 1024))")
    assert call_failed(result) and "file size (8 MiB per file)" in result


def test_tampering_with_input_images_leaves_the_originals(env, tmp_path):
    write_inputs(tmp_path, _pictures())
    before = hashlib.sha256((tmp_path / "image_1.bmp").read_bytes()).hexdigest()
    code = ("import os\nimage_1.paste((0, 0, 0), (0, 0, 64, 48))\n"
            "for attempt in (lambda: image_1.save('/inputs/image_1.bmp'), lambda: os.remove('/inputs/image_1.bmp'),\n"
            "                lambda: os.chmod('/inputs/image_1.bmp', 0o666)):\n"
            "    try:\n        attempt(); print('changed')\n    except OSError as err:\n        print('refused', type(err).__name__)")
    result = run_python(code, tmp_path, LIMITS)
    assert result.ok and "changed" not in result.text and result.text.count("refused") == 3
    assert hashlib.sha256((tmp_path / "image_1.bmp").read_bytes()).hexdigest() == before
    env.python(code)
    assert "(200, 30, 30)" in _text(env.python("print(image_1.getpixel((0, 0)))"))  # the next call sees the original


def test_state_is_per_call_and_episodes_share_nothing(env):
    env.python("secret = 41\nopen('/scratch/note.txt', 'w').write('from the first call')")
    result = env.python("import os\nprint('secret' in globals(), os.listdir('/scratch'))")
    assert "False []" in _text(result)
    folder = env._inputs
    env.reset(images=[Image.new("RGB", (8, 8))])
    assert not folder.exists()  # the last episode's image files are gone
    assert "(8, 8) 1" in _text(env.python("print(image_1.size, len(images))"))


# What crosses back: pictures (issue 49). BIG: room for the code to make large pictures within the limits.
BIG = SandboxLimits(wall_s=15, cpu_s=8, memory_mb=1024, processes=8, file_mb=8, scratch_mb=32, output_mb=8,
                    text_chars=2000, max_images=4)
FORGE = ("import sys, os, io, base64, json\nfrom PIL import Image\n"
         "def forge(*pictures):  # the runner's report written by the code itself, pictures of its choosing\n"
         "    head = ('\\n' + sys.argv[1] + ' ' + json.dumps({'status': 'ok', 'left_out': 0}) + '\\n').encode()\n"
         "    os.write(1, head + b''.join(base64.b64encode(p) + b'\\n' for p in pictures))\n"
         "    os._exit(0)\n")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _png_header_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims width x height grey pixels, with one small IDAT of zeros (a bomb: decoding
    it would take width * height bytes)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = zlib.compress(b"\0" * (width + 1) * 64, 9)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", rows) + chunk(b"IEND", b""))


def test_every_array_kind_is_shown_the_documented_way(env):
    def grey(code):
        result = env.python("import numpy as np\n" + code)
        assert not call_failed(result), result
        return [b["image"].convert("L") for b in result if b["type"] == "image"]

    first, other = grey("show(np.linspace(0, 1, 4096, dtype='float32').reshape(64, 64))  # [0, 1]: x 255\n"
                        "show(np.array([[-2.0, 0.0, 6.0]]))  # another float range: stretched")
    assert first.size == (64, 64) and first.getpixel((0, 0)) == 0 and first.getpixel((63, 63)) == 255
    assert [other.getpixel((x, 0)) for x in range(3)] == [0, 64, 255]
    wide, flags = grey("show(np.array([[0, 1000, 65535]], dtype=np.uint16))\nshow(np.array([[True, False]]))")
    assert [wide.getpixel((x, 0)) for x in range(3)] == [0, 4, 255] and [flags.getpixel((x, 0)) for x in (0, 1)] == [255, 0]
    one, rgba = grey("show(np.full((4, 4, 1), 7, np.int16))\nshow(np.full((4, 4, 4), 0.5))")
    assert one.getpixel((0, 0)) == 7 and rgba.size == (4, 4)
    assert _sandbox_uid_processes() == []


def test_an_array_that_is_no_picture_is_one_error_line(env):
    for code, said in (("import numpy as np\nshow(np.zeros((3, 64, 64)))", "dtype float64 and shape (3, 64, 64)"),
                       ("import numpy as np\nx = 1\nshow(np.full((4, 4), np.nan))", "NaN or infinite values (line 3)"),
                       ("show({'a': 1})", "dtype object and shape ()"),
                       ("import numpy as np\nshow(np.zeros((0, 5), np.uint8))", "dtype uint8 and shape (0, 5)")):
        result = env.python(code)
        assert call_failed(result) and result.startswith("Error: show() cannot show an array of ") and said in result
        assert len(result.strip().splitlines()) == 1 and "sandbox_runner" not in result and "Traceback" not in result
    assert _sandbox_uid_processes() == []


def test_non_png_bytes_in_the_picture_channel_are_refused_undecoded(env):
    code = FORGE + ("b = io.BytesIO(); Image.new('RGB', (8, 8)).save(b, 'BMP')\n"
                    "t = io.BytesIO(); Image.new('RGB', (8, 8)).save(t, 'TIFF')\n"
                    "p = io.BytesIO(); Image.new('P', (8, 8)).save(p, 'PNG')  # a PNG, but not a mode the runner writes\n"
                    "forge(b.getvalue(), t.getvalue(), b'\\x89PNG garbage', p.getvalue())")
    result = env.python(code)
    assert not call_failed(result) and [b for b in result if b["type"] == "image"] == []
    assert "4 picture(s) refused: not a PNG of at most 4194304 pixels from show()." in _text(result)
    assert "still here" in _text(env.python("print('still here')")) and _sandbox_uid_processes() == []


def test_a_forged_png_bomb_in_the_channel_is_refused_before_decoding(env):
    before = _peak_rss_mb()
    bomb = _png_header_claiming(60_000, 60_000)  # 3.6 GB of pixels if decoded
    code = FORGE + f"forge({bomb!r})"
    result = env.python(code)
    assert not call_failed(result) and "1 picture(s) refused" in _text(result)
    assert [b for b in result if b["type"] == "image"] == []
    assert _peak_rss_mb() - before < 200  # the parent never decoded it
    assert _sandbox_uid_processes() == []


def test_a_decompression_bomb_saved_by_the_code_is_left_out_in_the_sandbox(env):
    bomb = _png_header_claiming(20_000, 20_000)  # 400 MB of grey pixels from a file of a few kB
    result = env.python(f"open('bomb.png', 'wb').write({bomb!r})\nprint('saved')")
    text = _text(result)
    assert not call_failed(result) and "saved" in text
    assert "(saved picture bomb.png is 20000 x 20000: over the 67108864 pixels read back, left out)" in text
    assert [b for b in result if b["type"] == "image"] == [] and _sandbox_uid_processes() == []


def test_four_8000_by_8000_pictures_come_back_capped(tmp_path):
    env = PythonImageToolEnv(sandbox_limits=BIG)
    env.reset(images=_pictures())
    before = _peak_rss_mb()
    code = ("from PIL import Image\nfor n in range(4):\n"
            "    show(Image.new('RGB', (8000, 8000), (60 * n, 0, 0)))\nprint('four shown')")
    result = env.python(code)
    assert not call_failed(result) and "four shown" in _text(result), result
    assert "span 2048x2048 px, shown at 1024x1024" in _text(result)
    assert [b["image"].size for b in result if b["type"] == "image"] == [(1024, 1024)] * 4
    assert _peak_rss_mb() - before < 400  # never 4 x 192 MB of full-size copies in the parent
    after = env.python("print([im.size for im in images[2:]])")  # later calls see the capped size
    assert "[(2048, 2048), (2048, 2048), (2048, 2048), (2048, 2048)]" in _text(after)
    on_disk = sum(path.stat().st_size for path in env._inputs.iterdir())
    assert on_disk < 4 * 2048 * 2048 * 3 + 2 * 64 * 48 * 3 + 4096  # host disk: the capped copies only
    assert _sandbox_uid_processes() == []


def test_an_exit_status_the_code_picks_is_never_a_limit(env):
    for status in (3, 4, 5, 6, 7):
        result = env.python(f"import os\nprint('before', flush=True)\nos._exit({status})")
        assert result.startswith(f"Error: the code exited with status {status}") and "limit" not in result
        assert "before" in result
    assert _sandbox_uid_processes() == []


def test_a_symlinked_input_is_never_followed(env, tmp_path):
    secret = tmp_path / "host-secret.bmp"
    Image.new("RGB", (5, 5), (1, 2, 3)).save(secret)
    (env._input_folder() / "image_3.bmp").symlink_to(secret)  # a link among the episode's input files
    result = env.python("import os\nprint(sorted(os.listdir('/inputs')), len(images))")
    assert "Output:\n['code.py', 'image_1.bmp', 'image_2.bmp', 'question.txt'] 2" in _text(result)
    question = env._input_folder() / "question.txt"  # the question's text file, swapped for a link
    question.unlink()
    question.symlink_to(secret)
    result = env.python("import os\nprint(sorted(os.listdir('/inputs')), repr(question))")
    assert "Output:\n['code.py', 'image_1.bmp', 'image_2.bmp'] ''" in _text(result)
    assert secret.read_bytes()[:2] == b"BM" and _sandbox_uid_processes() == []


@pytest.mark.skipif(os.geteuid() != 0, reason="a root caller's path: run unprivileged, the call keeps the caller's uid")
def test_a_uid_in_use_is_never_drawn(env, monkeypatch):
    from lookcloser.agent import sandbox_start

    taken, free = 1_234_567_891, 1_234_567_893
    holder = subprocess.Popen(["setpriv", "--reuid", str(taken), "--regid", str(taken), "--clear-groups", "sleep", "30"])
    try:
        time.sleep(0.2)
        draws = iter([taken, free])
        monkeypatch.setattr(sandbox_start.random, "randrange", lambda *_: next(draws))  # the draw, made known
        result = env.python("import os\nprint('uid', os.getuid())")
        assert f"Output:\nuid {free}" in _text(result)
        assert holder.poll() is None  # the other uid's process lived through the call's cleanup
    finally:
        holder.kill()
        holder.wait()


def test_a_failed_start_check_is_run_again(monkeypatch, tmp_path):
    from lookcloser.agent import sandbox

    monkeypatch.setattr(sandbox, "_sandbox_works", False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    assert "bubblewrap (bwrap), which is not installed" in sandbox_problem()
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    assert sandbox_problem() is None and sandbox._sandbox_works  # checked again, and now it runs
    env = PythonImageToolEnv(sandbox_limits=LIMITS)  # the check an environment makes as it is built
    env.reset(images=_pictures())
    assert "Output:\nran" in _text(env.python("print('ran')")) and _sandbox_uid_processes() == []


HOG = ("import subprocess, sys\nhog = 'a = bytearray({mb} * 1024 * 1024); a[::4096] = b\"x\" * (len(a) // 4096); "
       "import time; time.sleep(2)'\nprocs = [subprocess.Popen([sys.executable, '-c', hog]) for _ in range({n})]\n"
       "print('exits', [p.wait() for p in procs])")


@pytest.mark.skipif(not cgroups_made(), reason="no cgroup can be made here (an unprivileged user without a "
                                                "delegated cgroup v2 subtree): the per-process limits stand alone")
def test_memory_is_bounded_over_the_whole_call_not_per_process(tmp_path):
    # Four processes of 300 MB each, every one under its 512 MiB address-space limit: 1.2 GB together.
    limits = SandboxLimits(wall_s=20, cpu_s=8, memory_mb=512, call_memory_mb=600, processes=8)
    env = PythonImageToolEnv(sandbox_limits=limits)
    env.reset(images=_pictures())
    result = env.python(HOG.format(mb=300, n=4))
    assert result.startswith("Error: the code was stopped at its call memory (600 MiB over the whole call) limit")
    roomy = env.python(HOG.format(mb=100, n=4))  # 400 MB together: under the bound, untouched
    assert not call_failed(roomy) and "exits [0, 0, 0, 0]" in _text(roomy)
    assert _sandbox_uid_processes() == []


@pytest.mark.slow  # about 10 s: a fresh interpreter whose calls share a small total
@pytest.mark.skipif(not cgroups_made(), reason="no cgroup can be made here")
def test_concurrent_calls_of_one_process_share_one_memory_total(tmp_path):
    # The total is a quarter of the machine's memory; TOTAL_SHARE set so that it is ~700 MB for this process.
    script = ("import os, sys, threading\nfrom pathlib import Path\nfrom lookcloser.agent import sandbox_cgroup\n"
              "sandbox_cgroup.TOTAL_SHARE = os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') // (700 << 20)\n"
              "from lookcloser.agent.sandbox import SandboxLimits, run_python\n"
              "limits = SandboxLimits(wall_s=30, cpu_s=10, memory_mb=1024, call_memory_mb=1024)\n"
              f"code = {HOG.format(mb=300, n=1)!r}\nresults = [None] * 3\n"
              "def call(i):\n    results[i] = run_python(code, Path(sys.argv[1]), limits)\n"
              "threads = [threading.Thread(target=call, args=(i,)) for i in range(3)]\n"
              "[t.start() for t in threads]\n[t.join() for t in threads]\n"
              "print(sorted(str(r.limit) for r in results), sandbox_cgroup.total_memory_bytes() >> 20)")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=False, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    limits_seen, total_mb = done.stdout.rsplit("]", 1)[0] + "]", int(done.stdout.rsplit("]", 1)[1])
    assert 650 <= total_mb <= 750 and "'call memory'" in limits_seen  # 3 x 300 MB at once pass the total
    assert limits_seen.count("'None'") >= 1  # the others ran
