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
from lookcloser.agent.tool_sets import IMAGE, IMAGE_PYTHON, TOOL_SETS
from lookcloser.agent.toolkit import ToolEnv, tool_names
from lookcloser.agent.web_env import WebImageEnv, WebSearchEnv
from lookcloser.checks import check_names
from lookcloser.errors import RecipeError

# Each environment module names the environments it serves and the benchmark each plays (the synthetic tasks are
# TIR-Bench's format); listed here in the order the choices are shown.
_SERVED = {**image_env.ENVIRONMENTS, **photo_env.ENVIRONMENTS, **web_env.ENVIRONMENTS}
ENVIRONMENTS: dict[str, type[ToolEnv]] = {name: cls for name, (cls, _) in _SERVED.items()}
# What each tool set (agent.tool_sets) makes of an environment's class; a class not listed keeps its own tools.
TOOL_SET_CLASSES: dict[str, dict[type[ToolEnv], type[ToolEnv]]] = {
    IMAGE: {}, IMAGE_PYTHON: {ImageToolEnv: PythonImageToolEnv, CropToolEnv: PythonCropToolEnv}}
# The names an environment with the python tool had before tool sets composed with environments: recipes, data sets'
# `environment` columns and saved checkpoints' prompting records still name them (and new records do, so that an
# older checkout reads them).
PYTHON = "+python"
ALIASES: dict[str, tuple[str, str]] = {name + PYTHON: (name, IMAGE_PYTHON) for name, cls in ENVIRONMENTS.items()
                                       if cls in TOOL_SET_CLASSES[IMAGE_PYTHON]}
ENVIRONMENT_NAMES: tuple[str, ...] = (*ENVIRONMENTS, *ALIASES)  # every name a recipe or a record may give
# The benchmark whose tasks each environment plays. Rows of an SFT data set carry no data_source; a mixed one
# (data_builders/commands/mixed_tasks.py) gets it from here, so that the checkpoint records each benchmark's tools
# for eval.
BENCHMARK_OF_ENVIRONMENT: dict[str, str] = {
    **{name: benchmark for name, (_, benchmark) in _SERVED.items()},
    **{alias: _SERVED[name][1] for alias, (name, _) in ALIASES.items()}}
# The environments with the image tools alone: the synthetic tasks' oracle plays them (train/grpo_lib/data.py).
IMAGE_TOOL_ENVIRONMENTS = tuple(name for name, cls in ENVIRONMENTS.items() if cls in (ImageToolEnv, CropToolEnv))

__all__ = ["ALIASES", "BENCHMARK_OF_ENVIRONMENT", "ENVIRONMENTS", "ENVIRONMENT_NAMES", "IMAGE_TOOL_ENVIRONMENTS",
           "TOOL_SETS", "CropToolEnv", "ImageSeekerEnv", "ImageToolEnv", "PhotoCollectionEnv", "PhotoSearchEnv",
           "PythonImageToolEnv", "WebImageEnv", "WebSearchEnv", "check_tool_set", "env_class", "environment_class",
           "tool_schemas", "with_tool_set"]


def environment_class(name: str, tool_set: str = IMAGE) -> type[ToolEnv]:
    """The class of environment ``name`` (or an alias) with ``tool_set``'s tools: environment x tool set.

    >>> environment_class("crop", "image+python").__name__, environment_class("crop+python").__name__
    ('PythonCropToolEnv', 'PythonCropToolEnv')
    >>> environment_class("disbench", "image+python").__name__  # keeps its own tools
    'ImageSeekerEnv'
    """
    base, named_set = ALIASES.get(name, (name, IMAGE))
    cls = ENVIRONMENTS[base]
    for chosen in (named_set, tool_set):
        cls = TOOL_SET_CLASSES[chosen].get(cls, cls)
    return cls


def with_tool_set(environment: str, tool_set: str) -> str:
    """The name a prompting record gives ``environment`` with ``tool_set`` (an alias where one exists), which
    ``environment_class`` reads back.

    >>> with_tool_set("tir_bench", "image+python"), with_tool_set("disbench", "image+python")
    ('tir_bench+python', 'disbench')
    >>> with_tool_set("tir_bench+python", "image")  # "image" keeps what was asked (a checkpoint's record)
    'tir_bench+python'
    """
    if tool_set == IMAGE_PYTHON and environment + PYTHON in ALIASES:
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
    check_names(flag, [tool_set], TOOL_SETS)
    named_set = ALIASES.get(environment or "", (None, IMAGE))[1]
    if need_sandbox and IMAGE_PYTHON in (tool_set, named_set):
        from lookcloser.agent.sandbox import (
            sandbox_problem,  # here: only a run with the python tool probes it
        )

        problem = sandbox_problem()
        if problem:
            where = f"{flag}: {tool_set}" if tool_set == IMAGE_PYTHON else f"environment: {environment}"
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
