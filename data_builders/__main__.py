"""Entry point: ``python -m data_builders {mir,imagenet-think,synthetic,difficulty} ... --out DIR``."""

import sys

from lookcloser.data_builders.cli import main

sys.exit(main())
