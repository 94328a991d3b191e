"""The data stages of the curricula, each a module with the stage-script interface (``parse_args`` of a
flat YAML recipe plus flags, ``main``), so that a curriculum runs it as ``script: data_builders/commands/<name>.py``,
and a command of ``python -m data_builders`` (``tool-tasks``, ``search-tasks``, ``mixed-tasks``,
``imagenet-think-data``; ``data_builders.cli.COMMANDS``).

They sit above every layer, like ``data_builders/cli.py``: the oracle trajectories they write run the agent's
tools (``agent.oracle``), and nothing imports them but that command table (tests/test_import_graph.py).
"""
