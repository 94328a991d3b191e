"""Recipe parsing shared by every entry script: a flat YAML file whose keys map 1:1 to fields.

``train/sft.py recipes/x.yaml --learning_rate 1e-4`` and ``train/sft.py --config recipes/x.yaml``
both work; command-line flags override the recipe. A key that no config dataclass has stops
with a message naming the recipe file and the key (TRL's own message names neither).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import yaml


class RecipeError(ValueError):
    pass


def _argv_with_config(argv: Sequence[str]) -> tuple[list[str], Path | None]:
    """Accept the recipe as a leading positional path as well as ``--config PATH``."""
    args = list(argv)
    if args and not args[0].startswith("-") and args[0].endswith((".yaml", ".yml")):
        args = ["--config", args[0], *args[1:]]
    recipe = Path(args[args.index("--config") + 1]) if "--config" in args else None
    return args, recipe


def load_recipe_mapping(path: Path, what: str = "recipe") -> dict:
    """Read a YAML recipe safely; a missing file, bad YAML or a non-mapping is a RecipeError."""
    if not path.is_file():
        raise RecipeError(f"{path}: {what} file not found")
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise RecipeError(f"{path}: not valid YAML ({err})") from err
    if not isinstance(config, dict):
        raise RecipeError(f"{path}: a {what} must be a YAML mapping of field: value")
    return config


def _check_recipe(recipe: Path, known: set[str]) -> None:
    config = load_recipe_mapping(recipe)
    unknown = sorted(key for key in config if key not in known and key != "env")
    if unknown:
        raise RecipeError(
            f"{recipe}: unknown recipe key(s) {', '.join(map(repr, unknown))}: no config field has that name "
            "(check the spelling against `--help`)"
        )


def parse_recipe(dataclass_types: Sequence[type], argv: Sequence[str] | None = None):
    """Parse a recipe plus command-line overrides into instances of ``dataclass_types``."""
    from trl import TrlParser

    args, recipe = _argv_with_config(sys.argv[1:] if argv is None else argv)
    parser = TrlParser(tuple(dataclass_types))
    if recipe is not None:
        _check_recipe(recipe, {action.dest for action in parser._actions})
    return parser.parse_args_and_config(args=args)
