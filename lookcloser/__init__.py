"""lookcloser: train vision-language models to think with images.

The checkout keeps one folder per layer (``rewards/``, ``data_builders/``, ``agent/``, ``train/``,
``eval/``); installed, they live under this one namespace (``lookcloser.rewards`` ...), so that
lookcloser never shadows, or is shadowed by, a generic ``train`` or ``eval`` package. The mapping
is ``[tool.setuptools.package-dir]`` in pyproject.toml; docs/architecture.md draws the layers.
"""

__version__ = "0.1.0"
