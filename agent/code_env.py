"""``PythonImageToolEnv``: the image tools plus ``python``, model-written code run in ``agent.sandbox``.

The same class serves GRPO (TRL's ``environment_factory``), eval with a local checkpoint and eval against
an OpenAI-compatible endpoint (``agent.loop``). The code sees the episode's images as ``image_1``,
``image_2``, ... (``image_{i+1}`` is the image at ``image_index`` i: the inputs, then every image a tool
returned, in the order the model saw them; each at its coordinate size) and as read-only files
``/inputs/image_1.bmp``, ...; numpy, Pillow and the image library ``looktools`` import. What it prints
comes back as text, and pictures it passes to ``show(...)`` or saves in its working folder come back as
images the other tools can use.

State lives for one call: every call is a fresh sandboxed process with the images loaded again. Variables
do not carry over (the model prints what it needs and writes the next call whole), but nothing can leak
from one call or episode to another, a limit kills a whole call and never a session, and no worker has to
be kept alive, sandboxed and cleaned up between the turns of thousands of rollouts.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path

from lookcloser.agent import images as ops
from lookcloser.agent.episode import question_text
from lookcloser.agent.image_env import CropToolEnv, ImageToolEnv
from lookcloser.agent.sandbox import SandboxLimits, require_sandbox, run_python, write_inputs, write_question
from lookcloser.agent.toolkit import ToolError, error_text, tool

MAX_CODE_CHARS = 20_000


def printed_text(text: str) -> str:
    """The text block of a call that ran: what it printed (oracle trajectories and drills spell it so too).

    >>> printed_text("3, 7\\n"), printed_text("")
    ('Output:\\n3, 7\\n', 'The code ran and printed nothing.')
    """
    return f"Output:\n{text}" if text.strip() else "The code ran and printed nothing."


class PythonTool:
    """The ``python`` tool over an image environment's episode images: mixed into ``PythonImageToolEnv`` (every
    image tool) and ``PythonCropToolEnv`` (crop only), each of which calls ``_start_python`` in ``__init__``."""

    def _start_python(self, sandbox_limits: SandboxLimits | dict | None) -> None:
        require_sandbox()
        limits = sandbox_limits or SandboxLimits()
        self._limits = limits if isinstance(limits, SandboxLimits) else SandboxLimits(**limits)
        self._inputs: Path | None = None
        self._written = 0
        self._cleanup: weakref.finalize | None = None
        self._question = ""

    def reset(self, **example) -> str | None:
        self._drop_inputs()
        self._question = question_text(example)
        return super().reset(**example)

    def _drop_inputs(self) -> None:
        if self._cleanup is not None:
            self._cleanup()  # removes the last episode's image files
        self._inputs, self._written, self._cleanup = None, 0, None

    def _input_folder(self) -> Path:
        """The episode's images as files, each written once (the sandbox binds them read-only)."""
        if self._inputs is None:
            self._inputs = Path(tempfile.mkdtemp(prefix="lookcloser-episode-"))
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._inputs, True)
            write_question(self._inputs, self._question)
        if self._written < len(self._images):
            write_inputs(self._inputs, [ops.full_pixels(img) for img in self._images[self._written:]],
                         start=self._written)
            self._written = len(self._images)
        return self._inputs

    @tool
    def python(self, code: str) -> list[dict] | str:
        """Run Python code on the images (numpy and PIL available). image_1, image_2, ... are the images as PIL
        images (image_1 is image_index 0); `question` is the question's text. print() results; show(img) returns
        a picture. Limits: 10 s, 1 GB; no network; nothing is kept between calls. `from looktools import *`
        gives: diff, changed, grid, stated_grid, tilt, nearest, options, letter, pieces, best_order, binarise, pitch,
        shrink, find, bfs, mask_of, components, share, hue_name, equalise (help(name) documents each).

        Args:
            code: A complete Python program.
        """
        if not code.strip():
            raise ToolError("code is empty")
        if len(code) > MAX_CODE_CHARS:
            raise ToolError(f"code has {len(code)} characters; the limit is {MAX_CODE_CHARS}")
        result = run_python(code, self._input_folder(), self._limits)
        text = _capped(result.text, self._limits.text_chars)
        if result.limit:
            return error_text(f"the code was stopped at its {self._limits.describe(result.limit)} limit. "
                              f"Output before it:\n{text}" if text.strip() else
                              f"the code was stopped at its {self._limits.describe(result.limit)} limit.")
        if result.error:
            return error_text(f"{result.error}:\n{text}" if text.strip() else result.error)
        blocks = [{"type": "text", "text": printed_text(text)}]
        for picture in result.images:
            blocks += self._add(ops.make_root(picture, self._max_pixels), "picture from the code")
        if result.images_left_out:
            blocks.append({"type": "text", "text": f"{result.images_left_out} more picture(s) left out: at most "
                                                   f"{self._limits.max_images} per call."})
        if result.images_refused:
            blocks.append({"type": "text", "text": f"{result.images_refused} picture(s) refused: not a PNG of at "
                                                   f"most {self._limits.picture_pixels} pixels from show()."})
        return blocks


class PythonImageToolEnv(PythonTool, ImageToolEnv):
    """The image tools and ``python`` (TIR-Bench's ``tool_set: image+python``).

    Args:
        sandbox_limits: ``agent.sandbox.SandboxLimits`` of every call (or a mapping of its fields).
        Others: as ``ImageToolEnv`` (``max_pixels`` is also the budget of every picture the code returns).

    Raises ``SandboxUnavailable`` when made on a machine where the sandbox does not run: the code is never
    run without it.
    """

    def __init__(self, max_pixels: int = 1024 * 1024, min_side: int = 32, max_zoom: float = 8.0,
                 describe: bool = True, sandbox_limits: SandboxLimits | dict | None = None) -> None:
        ImageToolEnv.__init__(self, max_pixels=max_pixels, min_side=min_side, max_zoom=max_zoom, describe=describe)
        self._start_python(sandbox_limits)


class PythonCropToolEnv(PythonTool, CropToolEnv):
    """``crop`` and ``python`` (the crop environment's ``tool_set: image+python``): the code curriculum's
    environment (recipes/code_curriculum.yaml), whose tool prompt is ~4x shorter than with every image tool.
    Args and errors as ``PythonImageToolEnv``'s."""

    def __init__(self, max_pixels: int = 1024 * 1024, min_side: int = 32, max_zoom: float = 8.0,
                 describe: bool = True, sandbox_limits: SandboxLimits | dict | None = None) -> None:
        CropToolEnv.__init__(self, max_pixels=max_pixels, min_side=min_side, max_zoom=max_zoom, describe=describe)
        self._start_python(sandbox_limits)


def _capped(text: str, limit: int) -> str:
    """Printed text cut to ``limit`` characters, saying so.

    >>> _capped("abcdef", 4)
    'abcd\\n[output cut: 6 characters printed, 4 shown (the limit)]'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[output cut: {len(text)} characters printed, {limit} shown (the limit)]"
