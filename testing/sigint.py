"""Children that take Ctrl-C whoever started the test runner.

A test runner started as a background job of a non-interactive shell (``cmd &`` in a CI script) ignores
SIGINT, and a child inherits an ignored signal (a handler, by contrast, is reset to the default across
exec), so Python in the child never installs its KeyboardInterrupt handler and a test's SIGINT is lost.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def children_take_sigint() -> Iterator[None]:
    """SIGINT handled (not ignored) in this process while children start inside the block."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
