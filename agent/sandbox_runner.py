"""The program that runs model-written code inside the sandbox (``agent.sandbox`` starts it in bubblewrap).

It never runs in the trainer's or eval's process: ``agent.sandbox`` binds this file read-only into the
sandbox and starts it with the project's interpreter. Standard library, numpy and Pillow only (no
lookcloser import: the package is not in the sandbox's view; the code may ``import looktools``, whose folder
alone is bound at ``/opt/looktools`` and put on ``sys.path`` here).

Order: load the episode's images (read-only files under /inputs), set the resource limits (after the
imports, so they bound the code and not the interpreter's start), run the code with ``image_1``,
``image_2``, ... (PIL), ``images`` (the same list) and ``show`` in its namespace, then write the report:
after the printed text, a line ``<nonce> {"status": ..., "left_out": N}`` and one base64 PNG per picture.
The status (``STATUSES``) names the limit a failure hit; an exit status the code picks itself
(``os._exit(3)``) comes with no report, so the parent never reads it as a limit.

Pictures are converted here, inside the sandbox (``as_picture``: the rules ``show`` documents), and scaled
under the call's ``picture_pixels`` before they are encoded: the parent decodes PNG only, up to that size.
"""

from __future__ import annotations

import base64
import errno
import io
import json
import math
import os
import resource
import signal
import sys
import traceback

STATUSES = ("ok", "exception", "show", "memory", "processes", "file size", "CPU time", "scratch space")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")
DECODE_PIXELS = 64 * 1024 * 1024  # a picture file the code saved is decoded (here) only under this
SHAPES = "(H, W), (H, W, 1), (H, W, 3) or (H, W, 4)"


class ShowError(ValueError):
    """``show`` was given something that is not a picture: the call fails with this one line."""


def _set_limits(limits: dict) -> None:
    # soft == hard: the code cannot raise them (raising a hard limit needs CAP_SYS_RESOURCE, which it lacks).
    mib = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))  # SIGXCPU, then SIGKILL
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_mb"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_mb"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def as_picture(obj, max_pixels: int):
    """A PIL image in mode L, RGB or RGBA, scaled under ``max_pixels``, from what the code passed to ``show``.

    Arrays: (H, W) or (H, W, 1) is grey, (H, W, 3) RGB, (H, W, 4) RGBA. uint8 as it is; bool as 0/255;
    float in [0, 1] times 255; any other range (float, int16, uint16, ...) stretched from its min..max to
    0..255 (a constant one clipped to 0..255). Anything else raises ``ShowError`` naming dtype and shape.
    """
    import numpy
    from PIL import Image

    if isinstance(obj, Image.Image):
        if obj.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
            obj = numpy.asarray(obj)
        elif obj.mode not in ("L", "RGB", "RGBA"):
            alpha = "A" in obj.mode or "transparency" in obj.info
            obj = obj.convert("RGBA" if alpha else "L" if obj.mode == "1" else "RGB")
    if not isinstance(obj, Image.Image):
        obj = Image.fromarray(_as_uint8(obj, numpy))
    return _scaled_under(obj, max_pixels)


def _as_uint8(obj, numpy):
    try:
        array = numpy.asarray(obj)
    except Exception as err:  # whatever the code passed: named in one line
        raise ShowError(f"show() takes a PIL image or a numpy array, not {type(obj).__name__}") from err
    what = f"an array of dtype {array.dtype} and shape {tuple(array.shape)}"
    if array.dtype.kind not in "biuf":
        raise ShowError(f"show() cannot show {what}: the dtype must be bool, integer or float")
    if not (array.ndim == 2 or (array.ndim == 3 and array.shape[2] in (1, 3, 4))) or array.size == 0:
        raise ShowError(f"show() cannot show {what}: a picture is {SHAPES}")
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.dtype == numpy.uint8:
        return numpy.ascontiguousarray(array)
    if array.dtype.kind == "b":
        return array.astype(numpy.uint8) * 255
    if array.dtype.kind == "f" and not numpy.isfinite(array).all():
        raise ShowError(f"show() cannot show {what}: it holds NaN or infinite values")
    low, high = float(array.min()), float(array.max())
    if array.dtype.kind == "f" and low >= 0.0 and high <= 1.0:
        return numpy.round(array * 255.0).astype(numpy.uint8)
    if array.dtype.kind in "iu" and low >= 0 and high <= 255:
        return array.astype(numpy.uint8)
    if high == low:
        return numpy.clip(array, 0, 255).astype(numpy.uint8)
    return numpy.round((array.astype(numpy.float64) - low) * (255.0 / (high - low))).astype(numpy.uint8)


def _scaled_under(image, max_pixels: int):
    if image.width * image.height <= max_pixels:
        return image
    from PIL import Image

    scale = math.sqrt(max_pixels / (image.width * image.height))
    size = (max(1, int(image.width * scale)), max(1, int(image.height * scale)))
    return image.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)


def main() -> None:
    nonce, limits = sys.argv[1], json.loads(sys.argv[2])
    # `python -I` ignores PYTHONPATH: its folders (the image library's, agent.sandbox sets it) are added here.
    sys.path[:0] = [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep) if path]
    import numpy  # noqa: F401 - imported before the limits: its start-up is not the code's cost
    from PIL import Image

    names = sorted((n for n in os.listdir("/inputs") if n.startswith("image_")),
                   key=lambda n: int(n.split("_")[1].split(".")[0]))
    images = []
    for name in names:
        with Image.open(os.path.join("/inputs", name), formats=["BMP"]) as img:
            img.load()
            images.append(img.copy())
    with open("/inputs/code.py", encoding="utf-8") as file:
        code = file.read()
    question = ""
    if os.path.exists("/inputs/question.txt"):
        with open("/inputs/question.txt", encoding="utf-8") as file:
            question = file.read()
    shown: list = []
    counted = [0]

    def show(image) -> None:
        """Send a picture back to the model: a PIL image or a numpy array (see the tool's description)."""
        picture = as_picture(image, limits["picture_pixels"])
        counted[0] += 1
        if len(shown) < limits["max_images"]:
            shown.append(picture)

    namespace = {"__name__": "__main__", "images": images, "show": show, "question": question,
                 **{f"image_{i}": img for i, img in enumerate(images, start=1)}}
    result_fd = os.dup(1)  # the channel for the report, kept apart from what the code does to sys.stdout
    signal.signal(signal.SIGXCPU, lambda signum, frame: _finish(result_fd, nonce, "CPU time"))
    _set_limits(limits)
    status = "ok"
    try:
        exec(compile(code, "<code>", "exec"), namespace)  # noqa: S102 - this process is the sandbox: its job
    except SystemExit as stop:
        status = "ok" if stop.code in (None, 0) else "exception"
    except MemoryError:
        status = "memory"
    except ShowError as err:
        status = "show"
        print(f"{err} (line {_code_line(err)})")
    except BaseException as err:  # noqa: BLE001 - any failure of the code: the model reads its traceback
        status = _status_of(err)
        if status == "exception":
            _print_traceback(err)
    lines, left_out = [], 0
    if status == "ok":
        try:
            pictures, left_out = _pictures_out(shown, counted[0], limits)
            lines = [_png_line(picture) for picture in pictures]
        except MemoryError:
            status, lines = "memory", []
        except Exception as err:  # noqa: BLE001 - e.g. a shown picture the code changed after show(): said
            print(f"(the pictures could not be sent: {type(err).__name__}: {err})")
            lines = []
    _finish(result_fd, nonce, status, lines, left_out)


def _code_line(err: BaseException) -> int | str:
    tb, line = err.__traceback__, "?"
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<code>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _print_traceback(err: BaseException) -> None:
    """The traceback from the code's own frames (the runner's are left out: the model did not write them)."""
    tb = err.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    traceback.print_exception(type(err), err, tb, limit=-8)


def _status_of(err: BaseException) -> str:
    if isinstance(err, OSError) and err.errno == errno.EAGAIN and isinstance(err, BlockingIOError):
        return "processes"  # fork/spawn refused: the process limit (RLIMIT_NPROC)
    if isinstance(err, OSError) and err.errno == errno.EFBIG:
        return "file size"
    if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
        return "scratch space"
    return "exception"


def _pictures_out(shown: list, counted: int, limits: dict) -> tuple[list, int]:
    """Shown pictures first, then picture files saved in the scratch folder (oldest first), at most
    ``max_images``; and how many more there were. A saved file is decoded here, never by the parent."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = None  # the size is checked below, before decoding, and said
    saved = sorted((entry.stat().st_mtime_ns, entry.name) for entry in os.scandir(".")
                   if entry.is_file(follow_symlinks=False) and entry.name.lower().endswith(IMAGE_SUFFIXES))
    pictures, left_out = list(shown), counted - len(shown)
    for _, name in saved:
        if len(pictures) >= limits["max_images"]:
            left_out += 1
            continue
        try:
            with Image.open(name) as img:
                if img.width * img.height > DECODE_PIXELS:
                    print(f"(saved picture {name} is {img.width} x {img.height}: over the {DECODE_PIXELS} "
                          f"pixels read back, left out)")
                    continue
                img.load()
                pictures.append(as_picture(img, limits["picture_pixels"]))
        except Exception as err:  # noqa: BLE001 - a file the code wrote: said, then left out
            print(f"(could not read saved picture {name}: {type(err).__name__})")
    return pictures, left_out


def _png_line(picture) -> bytes:
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG", compress_level=1)
    return base64.b64encode(buffer.getvalue()) + b"\n"


def _finish(fd: int, nonce: str, status: str, pictures: list[bytes] = (), left_out: int = 0) -> None:
    """Write the report after the code's printed text and end the process (also from the SIGXCPU handler)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001, S110 - the code closed or replaced them: its output is its own business
        pass
    lines = [f"\n{nonce} {json.dumps({'status': status, 'left_out': left_out})}\n".encode(), *pictures]
    view = memoryview(b"".join(lines))
    while view:
        view = view[os.write(fd, view):]
    os._exit(0)


if __name__ == "__main__":
    main()
