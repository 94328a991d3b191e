"""The program that runs model-written code inside the sandbox (``agent.sandbox`` starts it in bubblewrap).

It never runs in the trainer's or eval's process: ``agent.sandbox`` binds this file read-only into the
sandbox and starts it with the project's interpreter. Standard library, numpy and Pillow only (no
lookcloser import: the package is not in the sandbox's view).

Order: load the episode's images (read-only files under /inputs), set the resource limits (after the
imports, so they bound the code and not the interpreter's start), run the code with ``image_1``,
``image_2``, ... (PIL), ``images`` (the same list) and ``show`` in its namespace, then send back the
pictures it showed or saved. The exit status tells the parent which limit a failure hit (``EXIT_*``).
"""

from __future__ import annotations

import base64
import errno
import io
import json
import os
import resource
import signal
import sys
import traceback

EXIT_OK, EXIT_CODE_ERROR, EXIT_MEMORY, EXIT_PROCESSES, EXIT_FILE_SIZE, EXIT_CPU, EXIT_SCRATCH = 0, 1, 3, 4, 5, 6, 7
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")


def _set_limits(limits: dict) -> None:
    # soft == hard: the code cannot raise them (raising a hard limit needs CAP_SYS_RESOURCE, which it lacks).
    mib = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))  # SIGXCPU, then SIGKILL
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_mb"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_mb"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _on_cpu_limit(signum, frame):
    os._exit(EXIT_CPU)


def main() -> None:
    nonce, limits = sys.argv[1], json.loads(sys.argv[2])
    import numpy  # imported before the limits: its start-up is not the code's cost
    from PIL import Image

    names = sorted((n for n in os.listdir("/inputs") if n.startswith("image_")),
                   key=lambda n: int(n.split("_")[1].split(".")[0]))
    images = []
    for name in names:
        with Image.open(os.path.join("/inputs", name)) as img:
            img.load()
            images.append(img.copy())
    with open("/inputs/code.py", encoding="utf-8") as file:
        code = file.read()
    shown: list = []

    def show(image) -> None:
        """Send a picture back to the model (a PIL image or a numpy array)."""
        shown.append(image if isinstance(image, Image.Image) else Image.fromarray(numpy.asarray(image)))

    namespace = {"__name__": "__main__", "images": images, "show": show,
                 **{f"image_{i}": img for i, img in enumerate(images, start=1)}}
    result_fd = os.dup(1)  # the channel for the pictures, kept apart from what the code does to sys.stdout
    signal.signal(signal.SIGXCPU, _on_cpu_limit)
    _set_limits(limits)
    status = EXIT_OK
    try:
        exec(compile(code, "<code>", "exec"), namespace)  # noqa: S102 - this process is the sandbox: its job
    except SystemExit as stop:
        status = EXIT_OK if stop.code in (None, 0) else EXIT_CODE_ERROR
    except MemoryError:
        status = EXIT_MEMORY
    except BaseException as err:  # noqa: BLE001 - any failure of the code: the model reads its traceback
        status = _status_of(err)
        if status == EXIT_CODE_ERROR:
            _print_traceback(err)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001, S110 - the code closed or replaced them: its output is its own business
        pass
    if status == EXIT_OK:
        _send_images(result_fd, nonce, shown, limits["max_images"])
    os._exit(status)


def _print_traceback(err: BaseException) -> None:
    """The traceback from the code's own frames (the runner's are left out: the model did not write them)."""
    tb = err.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    traceback.print_exception(type(err), err, tb, limit=-8)


def _status_of(err: BaseException) -> int:
    if isinstance(err, OSError) and err.errno == errno.EAGAIN and isinstance(err, BlockingIOError):
        return EXIT_PROCESSES  # fork/spawn refused: the process limit (RLIMIT_NPROC)
    if isinstance(err, OSError) and err.errno == errno.EFBIG:
        return EXIT_FILE_SIZE
    if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
        return EXIT_SCRATCH
    return EXIT_CODE_ERROR


def _send_images(fd: int, nonce: str, shown: list, max_images: int) -> None:
    """After the marker line: one line per picture, base64 PNG (shown ones first, then files saved in
    the scratch folder, oldest first); one picture past the cap tells the parent that some were left out."""
    saved = []
    for entry in os.scandir("."):
        if entry.is_file() and entry.name.lower().endswith(IMAGE_SUFFIXES):
            saved.append((entry.stat().st_mtime_ns, entry.name))
    pictures = list(shown)
    for _, name in sorted(saved):
        if len(pictures) > max_images:
            break
        try:
            from PIL import Image

            with Image.open(name) as img:
                img.load()
                pictures.append(img.copy())
        except Exception as err:  # noqa: BLE001 - a file the code wrote: said, then left out
            print(f"(could not read saved picture {name}: {type(err).__name__})", flush=True)
    lines = [b"\n" + nonce.encode() + b"\n"]
    for picture in pictures[: max_images + 1]:
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG", compress_level=1)
        lines.append(base64.b64encode(buffer.getvalue()) + b"\n")
    view = memoryview(b"".join(lines))
    while view:
        view = view[os.write(fd, view):]


if __name__ == "__main__":
    main()
