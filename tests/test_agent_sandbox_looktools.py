"""The image library in the python tool's sandbox: the code imports ``looktools`` (its folder alone, bound
read-only at /opt/looktools/looktools) under the call's limits and uses it on the episode's images; it cannot
write there, cannot see the rest of the checkout, and what it changes in the library's modules dies with the
call. Real bubblewrap, nothing mocked; skipped only where bubblewrap is not installed."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from lookcloser import looktools
from lookcloser.agent.code_env import PythonImageToolEnv
from lookcloser.agent.sandbox import SandboxLimits, sandbox_problem
from lookcloser.agent.toolkit import call_failed

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

REPO = Path(__file__).resolve().parents[1]
# The escape suite's tight limits (tests/test_agent_sandbox.py): importing the library must fit under them.
LIMITS = SandboxLimits(wall_s=5, cpu_s=1, memory_mb=512, processes=8, file_mb=8, scratch_mb=32, output_mb=2,
                       text_chars=3000, max_images=2)


def _grid_pictures() -> list[Image.Image]:
    """A 3 x 4 grid on grey, and the same with a red square in patch 7 (row 2, column 3)."""
    first = Image.new("RGB", (240, 180), (128, 128, 128))
    draw = ImageDraw.Draw(first)
    for r in (60, 120):
        draw.line([(0, r), (240, r)], fill=(0, 0, 0), width=2)
    for c in (60, 120, 180):
        draw.line([(c, 0), (c, 180)], fill=(0, 0, 0), width=2)
    second = first.copy()
    ImageDraw.Draw(second).rectangle([135, 75, 165, 105], fill=(220, 30, 30))
    return [first, second]


@pytest.fixture()
def env():
    assert sandbox_problem() is None, sandbox_problem()
    env = PythonImageToolEnv(sandbox_limits=LIMITS)
    env.reset(images=_grid_pictures())
    return env


def _text(result) -> str:
    return result if isinstance(result, str) else "\n".join(b["text"] for b in result if b["type"] == "text")


def test_the_code_imports_looktools_and_uses_it_on_the_images(env):
    code = ("from looktools import *\nimport looktools\nrows, cols = grid(image_1)\n"
            "print(rows, cols, changed(image_1, image_2, rows, cols), hue_name(image_2.getpixel((150, 90))))\n"
            "print(looktools.__file__)")
    result = env.python(code)
    assert not call_failed(result), result
    assert "3 4 [7] red" in _text(result)
    assert "/opt/looktools/looktools/__init__.py" in _text(result)


def test_help_documents_a_function_in_the_sandbox(env):
    result = env.python("from looktools import changed\nhelp(changed)")
    assert not call_failed(result), result
    assert "changed(a, b, rows" in _text(result) and "1-based numbers (row by row)" in _text(result)


def test_a_library_error_is_one_clear_line_in_the_traceback(env):
    result = env.python("import looktools\nlooktools.mask_of(image_1, 'teal')")
    assert call_failed(result) and "ValueError: unknown colour 'teal'; known: red, green" in result


def test_the_library_folder_is_read_only_and_the_host_copy_untouched(env):
    before = sorted(p.name for p in Path(looktools.__file__).parent.iterdir())
    code = ("import os\nfor path in ['/opt/looktools/looktools/evil.py', '/opt/looktools/looktools/__init__.py',\n"
            "             '/opt/looktools/evil.py', '/opt/evil.py']:\n"
            "    try:\n        open(path, 'a').write('x = 1\\n'); print('wrote', path)\n"
            "    except OSError as err:\n        print('refused', path, type(err).__name__)\n"
            "try:\n    os.remove('/opt/looktools/looktools/maze.py'); print('removed')\n"
            "except OSError as err:\n    print('refused remove', type(err).__name__)")
    text = _text(env.python(code))
    assert "wrote" not in text and "removed" not in text and text.count("refused") == 5, text
    assert sorted(p.name for p in Path(looktools.__file__).parent.iterdir()) == before
    assert "x = 1" not in Path(looktools.__file__).read_text()


def test_the_rest_of_the_checkout_is_not_in_view(env):
    paths = [REPO / "pyproject.toml", REPO / "agent" / "sandbox.py", REPO / "looktools" / "__init__.py",
             Path(looktools.__file__)]
    code = ("import os, importlib.util\n"
            f"print([os.path.exists(p) for p in {[str(p) for p in paths]!r}])\n"
            "print(sorted(os.listdir('/opt/looktools')), importlib.util.find_spec('lookcloser'))")
    text = _text(env.python(code))
    assert f"{[False] * len(paths)}" in text and "['looktools'] None" in text, text


def test_changing_the_library_in_one_call_does_not_reach_the_next(env):
    tampered = env.python("import looktools, looktools.compare\nlooktools.grid = lambda img: (9, 9)\n"
                          "looktools.compare.diff = None\nfrom looktools import grid\nprint('tampered', grid(image_1))")
    assert "tampered (9, 9)" in _text(tampered)
    result = env.python("import looktools.compare\nfrom looktools import grid\n"
                        "print(grid(image_1), looktools.compare.diff is None)")
    assert not call_failed(result) and "(3, 4) False" in _text(result)


def test_a_3x3_jigsaw_is_solved_within_the_tight_limits(env):
    """The heaviest function (every one of 9! arrangements) under 512 MiB and 1 s of CPU."""
    y, x = np.mgrid[0:270, 0:270] / 270
    waves = [np.sin(2 * np.pi * (a * x + b * y) + c) for a, b, c in ((1.3, 2.9, 0.5), (3.7, 0.8, 2.0), (2.2, 4.1, 4.0))]
    env.reset(images=[Image.fromarray(np.stack([(w + 1) * 127.5 for w in waves], axis=2).astype(np.uint8))])
    code = ("from looktools import *\ncut = pieces(image_1, 3, seam=0)\n"
            "print(best_order([cut[k] for k in (4, 0, 8, 2, 6, 1, 3, 5, 7)], 3))")
    result = env.python(code)
    assert not call_failed(result), result
    assert "[2, 6, 4, 7, 1, 8, 5, 9, 3]" in _text(result)
