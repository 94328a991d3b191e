"""The environments, one per task family, and their tool schemas.

Each class works as TRL's ``environment_factory`` as is: a constructor without required
arguments, ``reset(**example)`` receiving every data-set column of the row (returning an initial
observation string or None), and the tools as its public methods. The same classes drive
``agent.loop`` for evaluation, so what is trained is what is measured.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

from lookcloser.agent import image_env, photo_env, web_env
from lookcloser.agent.code_env import PythonCropToolEnv, PythonImageToolEnv
from lookcloser.agent.image_env import CropToolEnv, ImageToolEnv
from lookcloser.agent.photo_env import ImageSeekerEnv, PhotoCollectionEnv, PhotoSearchEnv
from lookcloser.agent.toolkit import ToolEnv, tool_names
from lookcloser.agent.web_env import WebImageEnv, WebSearchEnv

# Each environment module names the environments it serves and the benchmark each plays (the synthetic tasks are
# TIR-Bench's format); listed here in the order the choices are shown.
_SERVED = {**image_env.ENVIRONMENTS, **photo_env.ENVIRONMENTS, **web_env.ENVIRONMENTS}
# The class that adds the sandboxed python tool (agent.code_env) to a class with the image tools.
WITH_PYTHON: dict[type[ToolEnv], type[ToolEnv]] = {ImageToolEnv: PythonImageToolEnv, CropToolEnv: PythonCropToolEnv}
PYTHON = "+python"  # `<environment>+python`: the environment with the python tool, what `tool_set: image+python` picks
ENVIRONMENTS: dict[str, type[ToolEnv]] = {
    **{name: cls for name, (cls, _) in _SERVED.items()},
    **{name + PYTHON: WITH_PYTHON[cls] for name, (cls, _) in _SERVED.items() if cls in WITH_PYTHON}}
# The benchmark whose tasks each environment plays. Rows of an SFT data set carry no data_source; a mixed one
# (data_builders/commands/mixed_tasks.py) gets it from here, so that the checkpoint records each benchmark's tools
# for eval.
BENCHMARK_OF_ENVIRONMENT: dict[str, str] = {
    **{name: benchmark for name, (_, benchmark) in _SERVED.items()},
    **{name + PYTHON: benchmark for name, (cls, benchmark) in _SERVED.items() if cls in WITH_PYTHON}}
# The environments with the image tools alone: the synthetic tasks' oracle plays them (train/grpo.py).
IMAGE_TOOL_ENVIRONMENTS = tuple(name for name, (cls, _) in _SERVED.items() if cls in (ImageToolEnv, CropToolEnv))
# Tool sets (recipes' and eval's `tool_set`): "image", each environment's own tools; "image+python" adds the
# sandboxed python tool to every environment with the image tools (the others keep theirs).
TOOL_SETS = ("image", "image+python")

__all__ = ["BENCHMARK_OF_ENVIRONMENT", "ENVIRONMENTS", "IMAGE_TOOL_ENVIRONMENTS", "TOOL_SETS", "CropToolEnv", "ImageSeekerEnv", "ImageToolEnv",
           "PhotoCollectionEnv", "PhotoSearchEnv", "PythonImageToolEnv", "WebImageEnv", "WebSearchEnv",
           "check_tool_set", "env_class", "tool_schemas", "with_tool_set"]


def with_tool_set(environment: str, tool_set: str) -> str:
    """The environment that offers ``tool_set`` in place of ``environment`` (a name of ``ENVIRONMENTS``).

    >>> with_tool_set("tir_bench", "image+python"), with_tool_set("disbench", "image+python")
    ('tir_bench+python', 'disbench')
    >>> with_tool_set("tir_bench+python", "image")  # "image" keeps what was asked (a checkpoint's record)
    'tir_bench+python'
    """
    if tool_set == "image+python" and environment + PYTHON in ENVIRONMENTS:
        return environment + PYTHON
    return environment


def check_tool_set(tool_set: str, flag: str = "tool_set", need_sandbox: bool = True,
                   environment: str | None = None) -> None:
    """A ``tool_set`` value, checked when a recipe or eval command is parsed: the name, and for
    ``image+python`` that the sandbox runs on this machine (never a silent run without it; skipped with
    ``need_sandbox=False``, where no tools are offered at all; also checked for an ``environment`` named with
    ``+python`` directly). Raises
    ``RecipeError`` (one ``error:`` line).

    >>> check_tool_set("image+pyhton")
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecipeError: tool_set: unknown name 'image+pyhton'; did you mean image+python? (choose from image, image+python)
    """
    from lookcloser.checks import check_names
    from lookcloser.errors import RecipeError

    check_names(flag, [tool_set], TOOL_SETS)
    asked = "python" in tool_set or (environment or "").endswith("+python")
    if need_sandbox and asked:
        from lookcloser.agent.sandbox import sandbox_problem

        problem = sandbox_problem()
        if problem:
            where = f"{flag}: {tool_set}" if "python" in tool_set else f"environment: {environment}"
            raise RecipeError(f"{where}: {problem}")


def env_class(env_cls_or_factory: type | Callable) -> type:
    """The class behind a factory (a class, or a ``functools.partial`` of one).

    >>> env_class(functools.partial(ImageToolEnv, max_pixels=4096)).__name__
    'ImageToolEnv'
    """
    while isinstance(env_cls_or_factory, functools.partial):
        env_cls_or_factory = env_cls_or_factory.func
    if not isinstance(env_cls_or_factory, type):
        raise TypeError(f"expected an environment class or a functools.partial of one, got {env_cls_or_factory!r}")
    return env_cls_or_factory


def tool_schemas(env_cls: type | Callable) -> list[dict]:
    """JSON schemas of an environment's tools, as TRL and ``apply_chat_template(tools=...)`` build them.

    For prompts and SFT ``tools`` columns; made by transformers' ``get_json_schema`` from the
    methods' type hints and Google docstrings, in TRL's order (alphabetical). Made once per class
    and shared by every caller (each eval episode asks): read it, never change it; take
    ``copy.deepcopy`` to edit. Nothing in lookcloser, transformers' ``apply_chat_template`` or its
    response parser changes it (tests/test_agent_openai.py checks after whole episodes).

    >>> [s["function"]["name"] for s in tool_schemas(ImageToolEnv)]
    ['adjust', 'crop', 'flip', 'rotate', 'view_image', 'zoom']
    >>> tool_schemas(ImageToolEnv) is tool_schemas(functools.partial(ImageToolEnv, max_pixels=4096))
    True
    """
    return _tool_schemas(env_class(env_cls))


@functools.cache
def _tool_schemas(cls: type) -> list[dict]:
    # Once per class: parsing the hints and docstrings took ~3 ms, and a fresh copy per episode
    # (json.loads) ~0.05 ms of the eval client's CPU per item. The JSON round trip keeps the
    # schemas plain JSON values, as a copy made from JSON would be.
    from transformers.utils import get_json_schema

    return json.loads(json.dumps([get_json_schema(getattr(cls, name)) for name in tool_names(cls)]))
