"""What every environment shares: the ``@tool`` wrapper, argument checking and call counting.

A tool is a public method of an environment class, with type hints and a Google docstring, so
TRL (``environment_factory``) and transformers' ``get_json_schema`` see an ordinary typed
function. The ``@tool`` wrapper makes every call safe for a rollout: arguments are bound and
type-checked against the signature, any failure becomes a text observation starting with
``Error:`` that the model can read, and ``tool_calls`` / ``tool_errors`` are counted on the
environment. Arguments are data, checked here; the one tool that runs what the model wrote, ``python``,
runs it in ``agent.sandbox`` only.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import types
import typing
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

ERROR_PREFIX = "Error:"


class ToolError(Exception):
    """A problem with a tool call that the model should read about (bad argument, unknown id, ...)."""


def error_text(message: str) -> str:
    """The observation returned for a failed call.

    >>> error_text("box is inverted")
    'Error: box is inverted'
    """
    return f"{ERROR_PREFIX} {message}"


def call_failed(result: object) -> bool:
    """True when a tool result is an error observation: ``rewards.format_and_tools.tool_call_failed``,
    the one definition that training, eval and the rewards share.

    >>> call_failed("Error: x"), call_failed([{"type": "text", "text": "Error: y"}]), call_failed("fine")
    (True, True, False)
    """
    from lookcloser.rewards.format_and_tools import tool_call_failed

    return tool_call_failed(result)


is_error = call_failed  # the older name


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def coerce_argument(name: str, value: Any, hint: Any) -> Any:
    """Check one argument against its type hint; return it normalised or raise ToolError.

    Lenient where models commonly slip (an integral float for an int, a number for a string id,
    one string for a list of strings), strict elsewhere; NaN and infinities are refused.

    >>> coerce_argument("image_index", 2.0, int)
    2
    >>> coerce_argument("box", [0, 0.5, 1, 1], list[float])
    [0.0, 0.5, 1.0, 1.0]
    >>> coerce_argument("photo_ids", "p1", list[str])
    ['p1']
    >>> coerce_argument("factor", float("nan"), float)
    Traceback (most recent call last):
    ...
    lookcloser.agent.toolkit.ToolError: argument 'factor' must be a finite number, got nan
    """
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return coerce_argument(name, value, option)
            except ToolError as err:
                errors.append(str(err))
        raise ToolError(errors[0] if len(errors) == 1 else f"argument {name!r} has the wrong type: {value!r}")
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ToolError(f"argument {name!r} must be true or false, got {value!r}")
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ToolError(f"argument {name!r} must be an integer, got {value!r}")
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise ToolError(f"argument {name!r} must be an integer, got {value!r}")
        return int(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ToolError(f"argument {name!r} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ToolError(f"argument {name!r} must be a finite number, got {value!r}")
        return float(value)
    if hint is str:
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)  # numeric ids written without quotes
        raise ToolError(f"argument {name!r} must be a string, got {value!r}")
    if origin is list:
        (item_hint,) = typing.get_args(hint) or (Any,)
        if isinstance(value, str) and item_hint is str:
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise ToolError(f"argument {name!r} must be a list of {_type_name(item_hint)}, got {value!r}")
        return [coerce_argument(f"{name}[{i}]", item, item_hint) for i, item in enumerate(value)]
    return value


def _bind(fn: Callable, hints: dict[str, Any], args: tuple, kwargs: dict) -> inspect.BoundArguments:
    signature = inspect.signature(fn)
    try:
        bound = signature.bind(None, *args, **kwargs)  # None stands for self
    except TypeError as err:
        allowed = [p for p in signature.parameters if p != "self"]
        raise ToolError(f"{err}; the arguments of {fn.__name__} are {allowed}") from None
    for pname, value in list(bound.arguments.items()):
        if pname == "self":
            continue
        if pname in hints:
            bound.arguments[pname] = coerce_argument(pname, value, hints[pname])
    return bound


def tool(fn: Callable) -> Callable:
    """Make an environment method a safe, counted tool (keeps its name, signature and docstring).

    The wrapper counts the call on ``self.tool_calls``, returns ``"Error: ..."`` (and counts
    ``self.tool_errors``) for a ToolError or for any unexpected exception, and never raises.
    """
    hints = typing.get_type_hints(fn)
    hints.pop("return", None)

    @functools.wraps(fn)
    def wrapper(self, /, *args, **kwargs):  # positional-only: a model's "self" argument cannot collide
        self.tool_calls = getattr(self, "tool_calls", 0) + 1
        try:
            bound = _bind(fn, hints, args, kwargs)
            bound.arguments["self"] = self
            result = fn(*bound.args, **bound.kwargs)
        except ToolError as err:
            result = error_text(str(err))
        except Exception as err:  # a rollout must survive a tool bug; the model sees a short reason
            logger.warning("tool %s failed: %r", fn.__name__, err, exc_info=True)
            result = error_text(f"{fn.__name__} failed: {type(err).__name__}: {err}")
        if call_failed(result):
            self.tool_errors = getattr(self, "tool_errors", 0) + 1
        return result

    wrapper.__lookcloser_tool__ = True
    return wrapper


def tool_names(env_cls: type) -> list[str]:
    """The tool names TRL would expose for ``env_cls``: its public functions except reset/get_reward.

    >>> class Env:
    ...     def reset(self, **kw): ...
    ...     def crop(self, image_index: int): ...
    ...     def _helper(self): ...
    >>> tool_names(Env)
    ['crop']
    """
    return [
        name for name, _ in inspect.getmembers(env_cls, predicate=inspect.isfunction)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    ]


class ToolEnv:
    """Base class: call counters and a safe dispatcher for loops other than TRL's.

    Subclasses define ``reset(**example)`` and tools decorated with ``@tool``. Only the tools may
    be public methods: TRL exposes every public function of the class to the model.
    """

    tool_calls: int
    tool_errors: int

    def __init__(self) -> None:
        self._reset_counters()

    def _reset_counters(self) -> None:
        self.tool_calls = 0
        self.tool_errors = 0

    def _fail(self, message: str) -> str:
        """Count a call that never reached a tool (unknown name, unparsable call) and describe it."""
        self.tool_calls += 1
        self.tool_errors += 1
        return error_text(message)

    def _call_tool(self, name: object, arguments: object) -> list[dict] | str:
        """Run one tool call as parsed from the model; always returns an observation, never raises."""
        names = tool_names(type(self))
        if not isinstance(name, str) or name not in names:
            return self._fail(f"unknown tool {name!r}; available tools: {', '.join(names)}")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return self._fail(f"the arguments of {name} must be a JSON object, got {arguments!r}")
        if not all(isinstance(key, str) for key in arguments):
            return self._fail(f"the argument names of {name} must be strings")
        return getattr(self, name)(**arguments)


class NoToolsEnv(ToolEnv):
    """No tools: the prompt and its images only (plain answers; checkpoints trained without tools)."""

    def reset(self, **example) -> None:
        self._reset_counters()
