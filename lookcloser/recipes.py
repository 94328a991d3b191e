"""Recipe parsing shared by every entry script: a flat YAML file whose keys map 1:1 to fields.

``train/sft.py recipes/x.yaml --learning_rate 1e-4`` and ``train/sft.py --config recipes/x.yaml``
both work; command-line flags override the recipe. Every mistake is a ``RecipeError`` (one line):
a recipe key or flag no config dataclass has names the closest valid one, flags are never
abbreviated (``--learning_rat`` is not ``--learning_rate``), and a bad value names its flag.
``--help`` is short (the recipe form and our own arguments); ``--help-all`` lists every field.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import inspect
import re
import sys
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path

import yaml

# Modules whose dataclass fields are "ours" (listed first and in full by the short --help).
OWN_MODULES = ("lookcloser.", "__main__")
# TRL/transformers fields a recipe sets most often: listed by the short --help after ours.
COMMON_FIELDS = ("model_name_or_path", "output_dir", "learning_rate", "num_train_epochs", "max_steps",
                 "per_device_train_batch_size", "gradient_accumulation_steps", "save_steps", "report_to",
                 "resume_from_checkpoint", "use_peft", "merge_adapter", "seed")


class RecipeError(ValueError):
    pass


def closest(name: str, choices: Sequence[str]) -> str | None:
    """The valid name nearest a misspelt one.

    >>> closest("--learnin_rate", ["--learning_rate", "--output_dir"])
    '--learning_rate'
    >>> closest("--zzz", ["--learning_rate"]) is None
    True
    """
    match = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return match[0] if match else None


def _did_you_mean(name: str, choices: Sequence[str]) -> str:
    near = closest(name, choices)
    return f"; did you mean {near}?" if near else ""


def _argv_with_config(argv: Sequence[str]) -> tuple[list[str], Path | None]:
    """Accept the recipe as a leading positional path as well as ``--config PATH``."""
    args = list(argv)
    if args and not args[0].startswith("-") and args[0].endswith((".yaml", ".yml")):
        args = ["--config", args[0], *args[1:]]
    if "--config" in args and args.index("--config") + 1 >= len(args):
        raise RecipeError("--config needs a recipe file path")
    recipe = Path(args[args.index("--config") + 1]) if "--config" in args else None
    return args, recipe


def load_recipe_mapping(path: Path, what: str = "recipe") -> dict:
    """Read a YAML recipe safely; a missing file, bad YAML or a non-mapping is a RecipeError."""
    if not path.is_file():
        raise RecipeError(f"{path}: {what} file not found")
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise RecipeError(f"{path}: not valid YAML ({' '.join(str(err).split())})") from err
    if not isinstance(config, dict):
        raise RecipeError(f"{path}: a {what} must be a YAML mapping of field: value")
    return config


def _check_recipe(recipe: Path, known: set[str]) -> None:
    config = load_recipe_mapping(recipe)
    unknown = sorted(key for key in config if key not in known and key != "env")
    if unknown:
        hint = _did_you_mean(unknown[0], sorted(known))
        raise RecipeError(
            f"{recipe}: unknown recipe key(s) {', '.join(map(repr, unknown))}: no config field has that name{hint} "
            "(check the spelling against `--help`)"
        )


def own_fields(dataclass_types: Sequence[type]) -> list[dataclasses.Field]:
    """Fields declared in our own code (not inherited from TRL/transformers), in declaration order."""
    fields = []
    for cls in dataclass_types:
        ours = {name for klass in cls.__mro__ if klass.__module__.startswith(OWN_MODULES)
                for name in inspect.get_annotations(klass)}
        fields += [f for f in dataclasses.fields(cls) if f.name in ours]
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
    total = sum(len(dataclasses.fields(cls)) for cls in dataclass_types)
    others = ", ".join(cls.__name__ for cls in dataclass_types)
    lines += ["", (f"Every field of {others} ({total - len(ours) - len(common)} more) is also a flag and a recipe "
                   "key; `--help-all` lists them all.")]
    return "\n".join(line for i, line in enumerate(lines) if line or (i and lines[i - 1])) + "\n"


def _underscored(arg: str, flags: set[str]) -> str:
    """A dashed alias as the flag it stands for; anything else unchanged.

    >>> _underscored("--on-error=skip", {"--on_error"}), _underscored("--on-eror", {"--on_error"})
    ('--on_error=skip', '--on-eror')
    """
    name, sep, value = arg.partition("=")
    spelled = "--" + name[2:].replace("-", "_")
    return spelled + sep + value if name.startswith("--") and spelled in flags else arg


class FlagParser(argparse.ArgumentParser):
    """``argparse`` for our small CLIs, spelled like TRL's: flags with underscores (``--on_error``; the
    dashed ``--on-error`` still works, a hidden alias, so nothing typed before breaks), no abbreviated
    flags, and each mistake one ``RecipeError`` line naming the closest valid flag (a subcommand's
    flags included). Its subparsers are FlagParsers too (argparse's default)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        flags = set(self._all_flags())  # the subcommands' too: translated here, whatever argparse does next
        return super().parse_known_args([_underscored(a, flags) for a in args], namespace)

    def _all_flags(self) -> list[str]:
        flags = list(self._option_string_actions)
        for action in self._actions:  # a subparsers action's choices are its subcommands' parsers
            choices = action.choices if isinstance(action.choices, dict) else {}
            flags += [o for sub in choices.values() if isinstance(sub, argparse.ArgumentParser)
                      for o in sub._option_string_actions]
        return flags

    def error(self, message):
        unknown = re.search(r"unrecognized arguments: (\S+)", message)
        if unknown and unknown.group(1).startswith("-"):
            name = unknown.group(1).split("=")[0]
            message = f"unknown flag {name}{_did_you_mean(name, self._all_flags())}"
        raise RecipeError(message)


def _parser_class():
    from trl import TrlParser

    class RecipeParser(TrlParser):
        """TrlParser without abbreviations, whose errors are one-line ``RecipeError``s (no usage dump)."""

        def __init__(self, dataclass_types, **kwargs):
            super().__init__(dataclass_types, allow_abbrev=False, **kwargs)

        def error(self, message):
            raise RecipeError(message)

    return RecipeParser


# transformers keeps these deprecated names only as fallbacks used when the new name is unset, so a
# recipe's `activation_checkpointing: false` would silently win over `--gradient_checkpointing true`.
DEPRECATED_FLAGS = {"--gradient_checkpointing": "--activation_checkpointing",
                    "--gradient_checkpointing_kwargs": "--activation_checkpointing_kwargs"}


def _current_flag_name(arg: str) -> str:
    """A deprecated alias on the command line means its current field, so it overrides the recipe.

    >>> _current_flag_name("--gradient_checkpointing=true")
    '--activation_checkpointing=true'
    >>> _current_flag_name("--learning_rate")
    '--learning_rate'
    """
    name, sep, value = arg.partition("=")
    return DEPRECATED_FLAGS.get(name, name) + sep + value


def given_fields(argv: Sequence[str]) -> set[str]:
    """The fields a command line sets: its recipe file's keys and its flags (deprecated names as their
    current field). Eval uses it so that only settings nobody gave come from a checkpoint's record."""
    args, recipe = _argv_with_config(argv)
    flags = {_current_flag_name(a)[2:].split("=")[0].replace("-", "_") for a in args if a.startswith("--")}
    return flags | (set(load_recipe_mapping(recipe)) if recipe is not None else set())


_last_recipe: list[Path] = []  # the recipe file of the latest parse_recipe call (W&B logs its text)


def last_recipe() -> Path | None:
    return _last_recipe[-1] if _last_recipe else None


def parse_recipe(dataclass_types: Sequence[type], argv: Sequence[str] | None = None, prog: str | None = None,
                 description: str = ""):
    """Parse a recipe plus command-line overrides into instances of ``dataclass_types``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = prog or (Path(sys.argv[0]).as_posix() if sys.argv and sys.argv[0].endswith(".py") else "script.py")
    if "-h" in argv or "--help" in argv:
        print(short_help(prog, dataclass_types, description), end="")
        raise SystemExit(0)
    if "--help-all" in argv:
        argv = ["--help"]
    args, recipe = _argv_with_config(argv)
    args = [_current_flag_name(a) for a in args]
    parser = _parser_class()(tuple(dataclass_types), prog=prog)
    if recipe is not None:
        _check_recipe(recipe, {action.dest for action in parser._actions})
    _last_recipe[:] = [recipe] if recipe is not None else []
    given = given_fields(argv)
    try:
        with warnings.catch_warnings():
            if not given & {"gradient_checkpointing", "gradient_checkpointing_kwargs"}:
                # TRL's own default sets the deprecated name; a recipe that never used it gets no warning.
                warnings.filterwarnings("ignore", message="`gradient_checkpointing", category=FutureWarning)
            *parsed, remaining = parser.parse_args_and_config(args=args, return_remaining_strings=True)
    except RecipeError:
        raise
    except ValueError as err:  # a dataclass's own check of a value (TrainingArguments.__post_init__ and kin)
        raise RecipeError(f"invalid settings: {' '.join(str(err).split())}") from err
    if remaining:
        flags = [o for action in parser._actions for o in action.option_strings]
        name = remaining[0].split("=")[0]
        if not name.startswith("-"):
            raise RecipeError(f"unexpected argument {name!r}: pass the recipe first, then --FIELD VALUE pairs")
        raise RecipeError(f"unknown flag {name}{_did_you_mean(name, flags)} (`--help` lists our flags)")
    return tuple(parsed)
