"""The one error path of every command.

A user's mistake (any ``lookcloser.errors.UserError``: a recipe, flag, record or model path) is
one ``error:`` line and exit status 2, never a traceback. Ctrl-C is one ``interrupted:`` line
saying what was kept and the command that resumes, exit status 130 (128 + SIGINT, what a shell
reports for a process Ctrl-C stopped); the layer that was working removes what it left
half-made first, and says what it kept by raising ``Interrupted``.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn

from lookcloser.errors import UserError

USER_ERROR_STATUS = 2
INTERRUPTED_STATUS = 130


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, after the interrupted step removed what it half-made.

    ``kept``: what is on disk and whole (e.g. "checkpoint-4 in outputs/sft"); ``resume_flags``:
    what to add to the same command to continue from it (e.g. ``--resume_from_checkpoint ...``).
    """

    def __init__(self, kept: str, resume_flags: Sequence[str] = ()):
        super().__init__(kept)
        self.kept, self.resume_flags = kept, list(resume_flags)


def _interrupt_behind(err: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt that ``err`` was raised while handling, if any (its ``__context__`` chain)."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, KeyboardInterrupt):
            return err
        seen.add(id(err))
        err = err.__context__ or err.__cause__
    return None


@contextlib.contextmanager
def interrupt_stays_an_interrupt() -> Iterator[None]:
    """An error raised while a library handled Ctrl-C's KeyboardInterrupt leaves the block as that
    interrupt, so the ``except KeyboardInterrupt`` around it removes what was half-made and says what
    was kept. Why: ``multiprocess`` (which ``datasets`` imports) wraps an import in a bare ``except:``
    that imports a module that is not installed, so a Ctrl-C landing there surfaces as
    ``ModuleNotFoundError: No module named 'version'`` (seen in CI)."""
    try:
        yield
    except Exception as err:
        interrupt = _interrupt_behind(err)
        if interrupt is None:
            raise
        raise interrupt from None


def command_line(prog: str | None = None, argv: Sequence[str] | None = None) -> str:
    """The command as the user typed it (to print it back): ``prog`` (default ``python SCRIPT``) and
    the arguments, shell-quoted.

    >>> command_line("python -m eval", ["--model", "out dir"])
    "python -m eval --model 'out dir'"
    """
    if prog is None:
        script = sys.argv[0] if sys.argv and sys.argv[0] else "script.py"
        launcher = "accelerate launch" if "ACCELERATE_MIXED_PRECISION" in os.environ else "python"
        prog = f"{launcher} {shlex.quote(script)}"
    return " ".join([prog, *map(shlex.quote, sys.argv[1:] if argv is None else argv)])


def _first_rank() -> bool:
    return os.environ.get("LOCAL_RANK", "0") == "0" and os.environ.get("RANK", "0") == "0"


def report_error(message: object) -> int:
    """Print one ``error:`` line (first rank only) and return the exit status 2.

    Under ``accelerate launch`` the launcher, not this process, sets the shell's status, and no child
    can change how it ends (accelerate 1.15, ``commands/launch.py``: one process raises
    ``CalledProcessError`` on any non-zero status, or exits 1 with ``-q``; several go through
    torchrun, which raises ``ChildFailedError``). So the docs run one process as ``python
    train/...`` and several with ``accelerate launch -q``; ending the launcher ourselves (what this
    did before) made the shell print ``Killed`` and status 137.
    """
    line = "error: " + " ".join(str(message).split())
    several = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if not _first_rank():
        if several:
            time.sleep(10)  # stay quiet: the rank that exits first is the one the launcher reports
        return USER_ERROR_STATUS
    if several:
        time.sleep(1.5)  # the other ranks reach the same mistake: let their start-up lines come first
    print(line, file=sys.stderr, flush=True)
    return USER_ERROR_STATUS


def report_interrupt(err: KeyboardInterrupt, prog: str | None = None, argv: Sequence[str] | None = None) -> int:
    """Print one ``interrupted:`` line (what was kept; the command that resumes) and return 130."""
    flags = err.resume_flags if isinstance(err, Interrupted) else []
    argv = list(sys.argv[1:] if argv is None else argv)
    if flags:  # the same flag given before: the resume value replaces it
        argv = [a for i, a in enumerate(argv) if not (a == flags[0] or a.startswith(flags[0] + "=")
                                                      or (i and argv[i - 1] == flags[0]))]
    tqdm = sys.modules.get("tqdm")
    for bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", ())):
        bar.close()  # a progress bar left open would print itself after our line when the process exits
    if _first_rank():  # a bare KeyboardInterrupt: no step said what it kept (a step that writes says it)
        said = f"interrupted: {err.kept}; to resume:" if isinstance(err, Interrupted) else "interrupted; to run it again:"
        print(f"{said} {command_line(prog, [*argv, *flags])}", file=sys.stderr, flush=True)
    return INTERRUPTED_STATUS


def fail(message: object) -> NoReturn:
    """``report_error`` and exit."""
    sys.exit(report_error(message))


def run(main: Callable, parse_args: Callable[[], Sequence] = tuple, prog: str | None = None,
        argv: Sequence[str] | None = None) -> int:
    """``main(*parse_args())``, and the exit status: 0; 2 after one ``error:`` line for a user's
    mistake; 130 after one ``interrupted:`` line for Ctrl-C. ``prog``/``argv``: the command as
    typed, for the resume hint (default: ``python`` and ``sys.argv``)."""
    try:
        with interrupt_stays_an_interrupt():
            main(*parse_args())
    except UserError as err:
        return report_error(err)
    except KeyboardInterrupt as err:
        return report_interrupt(err, prog, argv)
    return 0
