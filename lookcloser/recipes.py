"""Parsing for every command, on TRL's parser (transformers' ``HfArgumentParser`` underneath).

Recipe commands (``train/sft.py``, ``train/grpo.py``, ``data_builders/commands/tool_tasks.py``, ``python -m eval``)
use ``parse_recipe``: ``train/sft.py recipes/x.yaml --learning_rate 1e-4`` and ``train/sft.py
--config recipes/x.yaml`` both work; a recipe is a flat YAML file whose keys map 1:1 to fields,
read once, and flags override it. Flag commands (``python -m data_builders CMD``,
``train/curriculum.py``, ``python -m eval prepare``) use ``parse_flags``: one dataclass, whose
``POSITIONAL`` fields may also be given without their flag.

Both parse with transformers' parser: underscore flags with their dashed aliases, ``--no_X`` for
a true-by-default switch, lists as several values, no abbreviated flags (``--learning_rat`` is
not ``--learning_rate``). Every mistake is one ``RecipeError`` line: an unknown key or flag names
the closest valid one, a key a config has ``REMOVED`` says what replaced it, a bad value names its flag,
and the configs' own checks
(``lookcloser.checks``) refuse a bad value before any work starts. ``--help`` is short (the
recipe form and our own arguments); ``--help-all`` lists every field.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import re
import sys
import textwrap
import typing
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from lookcloser.checks import did_you_mean
from lookcloser.errors import RecipeError, UserError

__all__ = ["CommandLine", "Recipe", "RecipeError", "RecipeRecord", "given_fields", "load_recipe_mapping",
           "parse_flags", "parse_recipe"]

# Modules whose dataclass fields are "ours" (listed first and in full by the short --help).
OWN_MODULES = ("lookcloser.", "__main__")
# TRL/transformers fields a recipe sets most often: listed by the short --help after ours.
COMMON_FIELDS = ("model_name_or_path", "output_dir", "learning_rate", "num_train_epochs", "max_steps",
                 "per_device_train_batch_size", "gradient_accumulation_steps", "save_steps", "report_to",
                 "resume_from_checkpoint", "use_peft", "merge_adapter", "seed")
# transformers keeps these deprecated names only as fallbacks used when the new name is unset, so a
# recipe's `activation_checkpointing: false` would silently win over `--gradient_checkpointing true`.
DEPRECATED_FLAGS = {"--gradient_checkpointing": "--activation_checkpointing",
                    "--gradient_checkpointing_kwargs": "--activation_checkpointing_kwargs"}
# argparse (Python < 3.13) takes "-2" and "-0.5" for values but "-1e-3" for a flag, so `--learning_rate
# -1e-3` lost its value; only that form is attached to its flag (a list flag keeps its other values).
_NEGATIVE_EXPONENT_NUMBER = re.compile(r"-(\d+\.?\d*|\.\d+)e[-+]?\d+", re.IGNORECASE)


@dataclass(frozen=True)
class Recipe:
    """A recipe read once: where it came from (for messages), its text (W&B logs it), its values."""

    path: Path
    text: str
    values: dict

    @classmethod
    def read(cls, path: str | Path, what: str = "recipe") -> Recipe:
        """Read a YAML recipe safely; a missing file, bad YAML or a non-mapping is a RecipeError."""
        path = Path(path)
        if not path.is_file():
            raise RecipeError(f"{path}: {what} file not found")
        text = path.read_text(encoding="utf-8")
        try:
            values = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise RecipeError(f"{path}: not valid YAML ({' '.join(str(err).split())})") from err
        if not isinstance(values, dict):
            raise RecipeError(f"{path}: a {what} must be a YAML mapping of field: value")
        return cls(path, text, values)

    @classmethod
    def of(cls, values: dict, label: str) -> Recipe:
        """A recipe made in code (a curriculum stage's), named ``label`` in messages."""
        return cls(Path(label), yaml.safe_dump(values, sort_keys=False), dict(values))


def load_recipe_mapping(path: str | Path, what: str = "recipe") -> dict:
    return Recipe.read(path, what).values


def _current_flag_name(arg: str) -> str:
    """A deprecated alias on the command line means its current field, so it overrides the recipe.

    >>> _current_flag_name("--gradient_checkpointing=true")
    '--activation_checkpointing=true'
    >>> _current_flag_name("--learning_rate")
    '--learning_rate'
    """
    name, sep, value = arg.partition("=")
    return DEPRECATED_FLAGS.get(name, name) + sep + value


@dataclass(frozen=True)
class CommandLine:
    """What a recipe command was given: the recipe (read once, or None) and the flags besides it."""

    recipe: Recipe | None
    flags: tuple[str, ...]

    @classmethod
    def read(cls, argv: Sequence[str]) -> CommandLine:
        """The recipe is a leading ``*.yaml`` path or ``--config PATH``.

        >>> CommandLine.read(["--lr", "1"]).flags
        ('--lr', '1')
        """
        args = list(argv)
        if args and not args[0].startswith("-") and args[0].endswith((".yaml", ".yml")):
            args = ["--config", *args]
        if "--config" not in args:
            return cls(None, tuple(args))
        at = args.index("--config")
        if at + 1 >= len(args):
            raise RecipeError("--config needs a recipe file path")
        return cls(Recipe.read(args[at + 1]), tuple(args[:at] + args[at + 2:]))

    @property
    def given_fields(self) -> set[str]:
        """The fields this command line sets: its recipe's keys and its flags (deprecated names as
        their current field). Eval uses it so that only settings nobody gave come from a checkpoint."""
        flags = {_current_flag_name(a)[2:].split("=")[0].replace("-", "_") for a in self.flags if a.startswith("--")}
        return flags | (set(self.recipe.values) if self.recipe else set())


def given_fields(argv: Sequence[str]) -> set[str]:
    return CommandLine.read(argv).given_fields


@dataclass
class RecipeRecord:
    """Set by ``parse_recipe`` on a config that has it (never a flag or a recipe key): the recipe
    this run was parsed from, and its text as read (what W&B logs)."""

    recipe_file: str | None = field(default=None, init=False, repr=False)
    recipe_text: str | None = field(default=None, init=False, repr=False)


def own_fields(dataclass_types: Sequence[type]) -> list[dataclasses.Field]:
    """Fields declared in our own code (not inherited from TRL/transformers), in declaration order."""
    fields = []
    for cls in dataclass_types:
        ours = {name for klass in cls.__mro__ if klass.__module__.startswith(OWN_MODULES)
                for name in inspect.get_annotations(klass)}
        fields += [f for f in dataclasses.fields(cls) if f.name in ours and f.init]
    return fields


def short_help(prog: str, dataclass_types: Sequence[type], description: str = "") -> str:
    """The recipe form, then our own arguments with their help, then how to see the rest."""
    lines = [f"usage: {prog} RECIPE.yaml [--FIELD VALUE ...]",
             f"       accelerate launch {prog} RECIPE.yaml [--FIELD VALUE ...]" if prog.endswith(".py") else "",
             "", description.strip(), "",
             "A recipe is a flat YAML file of FIELD: VALUE (see recipes/); flags override it.", "",
             "our arguments:"]
    ours = own_fields(dataclass_types)
    names = {f.name for f in ours}
    common = [f for cls in dataclass_types for f in dataclasses.fields(cls)
              if f.name in COMMON_FIELDS and f.name not in names]
    for title, group in (("", ours), ("often set (TRL/transformers):", common)):
        if title and group:
            lines += ["", title]
        for f in group:
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            lines.append(f"  --{f.name} (default: {default!r})")
            if f.metadata.get("help") and group is ours:
                lines += textwrap.wrap(" ".join(str(f.metadata["help"]).split()), width=100,
                                       initial_indent="      ", subsequent_indent="      ")
    total = sum(len([f for f in dataclasses.fields(cls) if f.init]) for cls in dataclass_types)
    others = ", ".join(cls.__name__ for cls in dataclass_types)
    lines += ["", (f"Every field of {others} ({total - len(ours) - len(common)} more) is also a flag and a recipe "
                   "key; `--help-all` lists them all.")]
    return "\n".join(line for i, line in enumerate(lines) if line or (i and lines[i - 1])) + "\n"


def _negative_values_attached(args: Sequence[str]) -> list[str]:
    """``--flag -1e-3`` as ``--flag=-1e-3``, so that argparse takes the number as the flag's value.

    >>> _negative_values_attached(["--learning_rate", "-1e-3", "--reward_weights", "-0.5", "1"])
    ['--learning_rate=-1e-3', '--reward_weights', '-0.5', '1']
    """
    out: list[str] = []
    for arg in args:
        if out and _NEGATIVE_EXPONENT_NUMBER.fullmatch(arg) and out[-1].startswith("--") and "=" not in out[-1]:
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def _removed_key(names: Sequence[str], dataclass_types: Sequence[type]) -> str | None:
    """The message of the first of ``names`` (recipe keys or flags) that a config lists in its ``REMOVED``
    (``{key: what to use instead}``): a key that once existed gets that, not a spelling hint.

    >>> class Old:
    ...     REMOVED = {"old_steps": "use the stage `new` instead"}
    >>> _removed_key(["--lr", "--old-steps=3"], [Old])
    'old_steps: removed; use the stage `new` instead'
    """
    removed = {k: v for dtype in dataclass_types for k, v in getattr(dtype, "REMOVED", {}).items()}
    for name in names:
        key = name.lstrip("-").split("=")[0].replace("-", "_")
        if key in removed:
            return f"{key}: removed; {removed[key]}"
    return None


def _parser_class():
    from trl import TrlParser

    class RecipeParser(TrlParser):
        """TrlParser without abbreviations, whose errors are one-line ``RecipeError``s (no usage dump);
        a dataclass's ``POSITIONAL`` fields also take their value without the flag."""

        def __init__(self, dataclass_types, **kwargs):
            super().__init__(dataclass_types, allow_abbrev=False, **kwargs)
            for dtype in self.dataclass_types:
                hints = typing.get_type_hints(dtype)
                for name in getattr(dtype, "POSITIONAL", ()):
                    many = typing.get_origin(hints[name]) is list
                    # SUPPRESS: absent, the flag's value (or default) stands; no `type`, which argparse
                    # would apply to the SUPPRESS marker itself (the field's __post_init__ converts).
                    self.add_argument(name, nargs="*" if many else "?", default=argparse.SUPPRESS,
                                      metavar=name.upper(), help=f"or --{name}")

        def error(self, message):
            raise RecipeError(message)

        def parse(self, args: Sequence[str]) -> tuple:
            args = _negative_values_attached([_current_flag_name(a) for a in args])
            try:
                *parsed, remaining = self.parse_args_into_dataclasses(args=args, return_remaining_strings=True,
                                                                      look_for_args_file=False)
            except UserError:
                raise
            except ValueError as err:  # a dataclass's own check (TrainingArguments.__post_init__ and kin)
                raise RecipeError(f"invalid settings: {' '.join(str(err).split())}") from err
            if remaining:
                removed = _removed_key([a for a in remaining if a.startswith("--")], self.dataclass_types)
                if removed:
                    raise RecipeError(removed)
                name = remaining[0].split("=")[0]
                if not name.startswith("-"):
                    raise RecipeError(f"unexpected argument {name!r}")
                hint = did_you_mean(name, [o for action in self._actions for o in action.option_strings])
                raise RecipeError(f"unknown flag {name}{hint or ' (`--help` lists the flags)'}")
            return tuple(parsed)

    return RecipeParser


def _default_prog() -> str:
    return Path(sys.argv[0]).as_posix() if sys.argv and sys.argv[0].endswith(".py") else "script.py"


def parse_recipe(dataclass_types: Sequence[type], argv: Sequence[str] | CommandLine | None = None,
                 prog: str | None = None, description: str = "") -> tuple:
    """Parse a recipe plus command-line overrides into instances of ``dataclass_types``."""
    prog = prog or _default_prog()
    if isinstance(argv, CommandLine):
        line = argv
    else:
        argv = list(sys.argv[1:] if argv is None else argv)
        if "-h" in argv or "--help" in argv:
            print(short_help(prog, dataclass_types, description), end="")
            raise SystemExit(0)
        line = CommandLine.read(["--help"] if "--help-all" in argv else argv)
    parser = _parser_class()(tuple(dataclass_types), prog=prog)
    if line.recipe is not None:
        values = dict(line.recipe.values)
        env = values.pop("env", None) or {}
        if not isinstance(env, dict):
            raise RecipeError(f"{line.recipe.path}: `env` must be a mapping of NAME: value")
        os.environ.update({str(k): str(v) for k, v in env.items()})  # the recipe's `env`, as TrlParser sets it
        unknown = parser.set_defaults_with_config(**values)[::2]  # ["--key", "value", ...]: the keys
        if unknown:
            keys = [u[2:] for u in unknown]
            removed = _removed_key(keys, dataclass_types)
            if removed:
                raise RecipeError(f"{line.recipe.path}: {removed}")
            known = sorted({a.dest for a in parser._actions})
            raise RecipeError(
                f"{line.recipe.path}: unknown recipe key(s) {', '.join(map(repr, keys))}: no config field has that "
                f"name{did_you_mean(keys[0], known)} (check the spelling against `--help`)")
    with warnings.catch_warnings():
        if not line.given_fields & {"gradient_checkpointing", "gradient_checkpointing_kwargs"}:
            # TRL's own default sets the deprecated name; a recipe that never used it gets no warning.
            warnings.filterwarnings("ignore", message="`gradient_checkpointing", category=FutureWarning)
        parsed = parser.parse(line.flags)
    for config in parsed:
        if isinstance(config, RecipeRecord) and line.recipe is not None:
            config.recipe_file, config.recipe_text = str(line.recipe.path), line.recipe.text
    return parsed


def parse_flags(dataclass_type: type, argv: Sequence[str] | None = None, prog: str | None = None,
                description: str = ""):
    """Parse a flag command's arguments into one ``dataclass_type`` (its checks run as it is made)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser_class()((dataclass_type,), prog=prog or _default_prog(), description=description)
    (parsed,) = parser.parse(argv)
    return parsed
