"""Image tools: every tool with good and bad calls, through ImageToolEnv as a rollout calls them."""

from __future__ import annotations

import base64
import functools
import math

import numpy as np
import pytest
from PIL import Image

from lookcloser.agent.environments import (
    ENVIRONMENTS,
    ImageSeekerEnv,
    ImageToolEnv,
    PhotoCollectionEnv,
    WebImageEnv,
    tool_schemas,
)
from lookcloser.agent.toolkit import is_error


def gradient(width: int, height: int) -> Image.Image:
    """Pixel (x, y) has red = x % 256 and green = y % 256: crops can be checked by value."""
    xs, ys = np.meshgrid(np.arange(width), np.arange(height))
    return Image.fromarray(np.stack([xs % 256, ys % 256, np.full_like(xs, 77)], -1).astype(np.uint8))


@pytest.fixture
def env() -> ImageToolEnv:
    env = ImageToolEnv(max_pixels=200_000)
    obs = env.reset(images=[gradient(800, 600), Image.new("L", (40, 30), 128)], question="?")
    assert obs == "\nImage sizes: image 0 is 800x600 px, image 1 is 40x30 px."
    return env


def image_of(result) -> Image.Image:
    assert isinstance(result, list) and result[0]["type"] == "image", result
    return result[0]["image"]


def text_of(result) -> str:
    return result if isinstance(result, str) else next(b["text"] for b in result if b["type"] == "text")


def test_crop_pixels_and_normalized(env):
    crop = image_of(env.crop(image_index=0, box=[100, 50, 300, 250]))
    assert crop.size == (200, 200)
    assert crop.getpixel((0, 0))[:2] == (100, 50)  # cut from the original at full resolution
    half = env.crop(image_index=0, box=[0.5, 0.5, 1, 1])
    assert image_of(half).size == (400, 300)
    assert "Image 3: crop of image 0" in text_of(half) and "400x300 px" in text_of(half)
    assert (env.tool_calls, env.tool_errors) == (2, 0)


def test_crop_of_a_crop_comes_from_the_original(env):
    env.crop(image_index=0, box=[200, 100, 600, 500])  # image 2, 400x400
    inner = image_of(env.crop(image_index=2, box=[10, 20, 110, 120]))
    assert inner.size == (100, 100)
    assert inner.getpixel((0, 0))[:2] == (210, 120)


def test_small_box_grows_to_the_patch_and_big_crop_fits_the_budget(env):
    tiny = image_of(env.crop(image_index=0, box=[400, 300, 405, 302]))
    assert tiny.size == (32, 32)
    corner = image_of(env.crop(image_index=0, box=[0, 0, 3, 3]))  # grown inside the image
    assert corner.size == (32, 32) and corner.getpixel((0, 0))[:2] == (0, 0)
    whole = env.crop(image_index=0, box=[0, 0, 800, 600])
    assert image_of(whole).width * image_of(whole).height <= 200_000
    assert "shown at" in text_of(whole) and "800x600 px" in text_of(whole)


def test_zoom_rotate_flip_adjust_view(env):
    zoomed = image_of(env.zoom(image_index=0, box=[0, 0, 100, 50], factor=3))
    assert zoomed.size == (300, 150)
    rotated = image_of(env.rotate(image_index=0, angle=90))
    assert rotated.width * rotated.height <= 200_000 and abs(rotated.width / rotated.height - 0.75) < 0.01
    assert env._images[-1].size == (600, 800)  # its coordinates: the rotated original, full resolution
    assert env.rotate(image_index=1, angle=-15) and env.tool_errors == 0
    flipped = image_of(env.flip(image_index=1, direction="Horizontal"))
    assert flipped.size == (40, 30)
    small = gradient(64, 8)
    env.reset(images=[small])
    mirrored = image_of(env.flip(image_index=0, direction="horizontal"))
    assert mirrored.getpixel((0, 0))[0] == 63
    brighter = image_of(env.adjust(image_index=0, brightness=2.0))
    assert np.asarray(brighter).mean() > np.asarray(small).mean()
    assert image_of(env.view_image(image_index=0)).size == (64, 8)
    assert env.tool_errors == 0 and env.tool_calls == 3


def test_rotated_image_can_be_cropped_by_its_own_coordinates():
    env = ImageToolEnv()
    env.reset(images=[gradient(200, 100)])
    env.rotate(image_index=0, angle=90)  # image 1 is 100x200
    crop = image_of(env.crop(image_index=1, box=[0, 0, 50, 50]))
    assert crop.size == (50, 50)
    assert crop.getpixel((0, 0))[0] == 199  # the top-left of a counter-clockwise turn is the old top-right


@pytest.mark.parametrize("call, message", [
    (lambda e: e.crop(image_index=0, box=[300, 50, 100, 250]), "inverted"),
    (lambda e: e.crop(image_index=0, box=[-5, 0, 100, 100]), "negative"),
    (lambda e: e.crop(image_index=0, box=[0, 0, 900, 100]), "outside the image"),
    (lambda e: e.crop(image_index=0, box=[0, 0, float("nan"), 100]), "finite"),
    (lambda e: e.crop(image_index=0, box=[0, 0, 10]), "4 numbers"),
    (lambda e: e.crop(image_index=0, box="0,0,10,10"), "list"),
    (lambda e: e.crop(image_index=7, box=[0, 0, 10, 10]), "does not exist"),
    (lambda e: e.crop(image_index=-1, box=[0, 0, 10, 10]), "does not exist"),
    (lambda e: e.crop(image_index="first", box=[0, 0, 10, 10]), "integer"),
    (lambda e: e.crop(image_index=0.5, box=[0, 0, 10, 10]), "integer"),
    (lambda e: e.crop(image_index=True, box=[0, 0, 10, 10]), "integer"),
    (lambda e: e.crop(image_index=0), "box"),
    (lambda e: e.crop(image_index=0, box=[0, 0, 1, 1], color="red"), "color"),
    (lambda e: e.zoom(image_index=0, box=[0, 0, 800, 600], factor=2), "over the budget"),
    (lambda e: e.zoom(image_index=0, box=[0, 0, 10, 10], factor=0.5), "between 1 and 8"),
    (lambda e: e.zoom(image_index=0, box=[0, 0, 10, 10], factor=math.inf), "finite"),
    (lambda e: e.rotate(image_index=0, angle="ninety"), "number"),
    (lambda e: e.flip(image_index=0, direction="diagonal"), "horizontal"),
    (lambda e: e.adjust(image_index=0, contrast=-1), "contrast"),
    (lambda e: e.adjust(image_index=0, brightness=0), "brightness"),
    (lambda e: e.view_image(image_index=2), "does not exist"),
])
def test_bad_calls_return_counted_errors(env, call, message):
    result = call(env)
    assert isinstance(result, str) and result.startswith("Error:"), result
    assert message in result
    assert (env.tool_calls, env.tool_errors) == (1, 1)


def test_dispatch_of_malformed_calls_never_raises(env):
    for name, args, message in [
        ("paint", {}, "unknown tool"),
        ("reset", {}, "unknown tool"),
        ("_image", {"image_index": 0}, "unknown tool"),
        (None, {}, "unknown tool"),
        ("crop", [0, [0, 0, 5, 5]], "JSON object"),
        ("crop", "not json", "JSON object"),
        ("crop", {"self": 1, "image_index": 0, "box": [0, 0, 5, 5]}, "self"),
    ]:
        result = env._call_tool(name, args)
        assert is_error(result) and message in result, (name, result)
    assert env._call_tool("crop", {"image_index": "0", "box": [0, 0, 5, 5]}).startswith("Error:")
    assert not is_error(env._call_tool("crop", {"image_index": 0, "box": [0, 0, 50, 50]}))
    assert (env.tool_calls, env.tool_errors) == (9, 8)


def test_reset_clears_state_and_counts(env):
    env.crop(image_index=0, box=[0, 0, 1, 1])
    env.reset(images=[Image.new("RGB", (50, 50))])
    assert (env.tool_calls, env.tool_errors) == (0, 0)
    assert is_error(env.crop(image_index=1, box=[0, 0, 10, 10]))
    env.reset(question="no images here")
    assert "no images" in env.crop(image_index=0, box=[0, 0, 1, 1])


def test_reset_reads_paths_inside_the_data_root(tmp_path):
    (tmp_path / "data").mkdir()
    gradient(120, 90).save(tmp_path / "data" / "a.png")
    Image.new("RGBA", (20, 20), (255, 0, 0, 0)).save(tmp_path / "data" / "alpha.png")
    env = ImageToolEnv()
    env.reset(images=["data/a.png", "data/alpha.png"], data_root=str(tmp_path))
    assert env._images[0].size == (120, 90)
    assert env._images[1].source.getpixel((0, 0)) == (255, 255, 255)  # transparent -> white
    from lookcloser.data_builders.records import RecordError

    with pytest.raises(RecordError, match="leaves the data root"):
        env.reset(images=["../../etc/passwd"], data_root=str(tmp_path / "data"))
    with pytest.raises(RecordError, match="not found"):
        env.reset(images=["data/missing.png"], data_root=str(tmp_path))


def test_partial_settings_and_schemas():
    factory = functools.partial(ImageToolEnv, max_pixels=4096, min_side=16)
    env = factory()
    env.reset(images=[gradient(400, 300)])
    assert image_of(env.crop(image_index=0, box=[0, 0, 2, 2])).size == (16, 16)
    schemas = {s["function"]["name"]: s["function"] for s in tool_schemas(factory)}
    assert set(schemas) == {"crop", "zoom", "rotate", "flip", "adjust", "view_image"}
    crop = schemas["crop"]["parameters"]
    assert crop["required"] == ["image_index", "box"]
    assert crop["properties"]["box"] == {"type": "array", "items": {"type": "number"},
                                         "description": crop["properties"]["box"]["description"]}
    assert schemas["zoom"]["parameters"]["properties"]["factor"]["type"] == "number"
    photo = {s["function"]["name"] for s in tool_schemas(PhotoCollectionEnv)}
    assert photo == {"image_search", "get_metadata", "filter_metadata", "view_photos", "save_subset",
                     "web_search", "fetch_page"}
    web = {s["function"]["name"] for s in tool_schemas(WebImageEnv)}
    assert web == set(schemas) | {"web_search", "fetch_page"}
    assert ENVIRONMENTS["disbench"] is ImageSeekerEnv and ENVIRONMENTS["tir_bench"] is ImageToolEnv


def _straight(path, max_pixels):
    """The path load_example_images took before it read each file once: check, then open again."""
    from lookcloser.agent.images import open_image
    from lookcloser.data_builders.records import check_image

    check_image(path, source="example", rid="r1", max_pixels=max_pixels)
    return open_image(path)


def _outcome(load, path, max_pixels):
    from lookcloser.agent.openai_policy import image_url

    try:
        image = load(path, max_pixels)
    except Exception as err:  # noqa: BLE001 - the error is the outcome compared
        return ("error", type(err).__name__, str(err))
    return ("image", image.mode, image.size, image.tobytes(), getattr(image, "filename", None),
            image_url(image, 10**8))


def test_one_open_checks_and_decodes_like_check_then_open(tmp_path, monkeypatch):
    """open_checked_image (one open per file, the checks of check_image's own verified_image) gives
    the straightforward path's pixels, file bytes sent and errors, on good files of every mode and
    on missing, broken and oversized ones; a file that passes the checks but does not decode is a
    RecordError naming it, where the straightforward path raised PIL's bare OSError."""
    from lookcloser.agent.images import open_checked_image, open_image
    from lookcloser.data_builders.records import RecordError

    picture = gradient(40, 30)
    picture.save(tmp_path / "rgb.png")
    picture.save(tmp_path / "rgb.jpg", quality=90)
    picture.save(tmp_path / "rgb.webp")
    picture.convert("CMYK").save(tmp_path / "cmyk.jpg")
    Image.new("RGBA", (20, 20), (255, 0, 0, 0)).save(tmp_path / "rgba.png")
    picture.convert("P").save(tmp_path / "palette.gif")
    Image.fromarray((np.arange(600).reshape(20, 30) * 100).astype(np.uint16)).save(tmp_path / "grey16.png")
    data = (tmp_path / "rgb.png").read_bytes()
    (tmp_path / "garbage.png").write_bytes(b"not an image at all" * 10)
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "cut.png").write_bytes(data[: len(data) // 2])
    (tmp_path / "cut.jpg").write_bytes((tmp_path / "rgb.jpg").read_bytes()[:-50])  # headers whole, data cut
    idat = data.index(b"IDAT")  # flip a byte of the image data's CRC: decodes, but PNG's verify refuses it
    crc_at = idat + 4 + int.from_bytes(data[idat - 4: idat], "big")
    (tmp_path / "crc.png").write_bytes(data[:crc_at] + bytes([data[crc_at] ^ 0xFF]) + data[crc_at + 1:])
    (tmp_path / "folder.png").mkdir()

    names = ["rgb.png", "rgb.jpg", "rgb.webp", "cmyk.jpg", "rgba.png", "palette.gif", "grey16.png", "garbage.png",
             "empty.png", "cut.png", "cut.jpg", "crc.png", "folder.png", "missing.png"]
    fast = lambda path, max_pixels: open_checked_image(path, source="example", rid="r1", max_pixels=max_pixels)
    outcomes = {}
    for name in names:
        for max_pixels in (10**8, 1000):  # 40x30 = 1200 pixels: over the second budget
            ours, straight = _outcome(fast, tmp_path / name, max_pixels), _outcome(_straight, tmp_path / name, max_pixels)
            if name == "cut.jpg" and max_pixels == 10**8:  # passes the checks, fails the decode
                assert straight[1] == "OSError" and ours[1] == "RecordError"
                assert ours[2].endswith(f"image {tmp_path / name} does not decode (OSError: {straight[2]})")
                ours = straight
            assert ours == straight, (name, max_pixels, ours[:3], straight[:3])
            outcomes[name, max_pixels] = ours
    assert [n for n in names if outcomes[n, 10**8][0] == "image"] == names[:7]
    assert outcomes["rgb.jpg", 10**8][-1].startswith("data:image/jpeg;base64,")  # the file itself is sent
    assert outcomes["rgb.png", 1000][:2] == ("error", "RecordError")
    assert "40x30 pixels, over 1000" in outcomes["rgb.png", 1000][2]
    assert "does not decode" in outcomes["crc.png", 10**8][2] and open_image(tmp_path / "crc.png").size == (40, 30)
    assert "record 'r1', field 'images': image file not found" in outcomes["missing.png", 10**8][2]
    assert outcomes["folder.png", 10**8][2] == outcomes["missing.png", 10**8][2].replace("missing", "folder")
    with pytest.raises(RecordError, match=r"record 'r1', field 'images': image .*garbage.png does not decode"):
        fast(tmp_path / "garbage.png", 10**8)
    opened = []
    real_open = open

    def counting_open(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    from lookcloser.data_builders import records

    monkeypatch.setattr(records, "open", counting_open, raising=False)  # the module's builtin open
    for name in names[:7]:
        assert fast(tmp_path / name, 10**8).tobytes() == outcomes[name, 10**8][3]
    assert opened == [str(tmp_path / name) for name in names[:7]]  # each file opened once


def test_undecoded_images_for_an_endpoint_are_the_same_pixels_when_read(tmp_path):
    """``decode=False`` (endpoint episodes): an RGB file is checked but decoded only when first read,
    from its bytes in memory (the file may be gone by then); other modes are decoded to RGB as with
    ``decode=True``; the bytes sent are the same. The trade: a file that passes the checks but does
    not decode fails where it is first read, not at the open."""
    from lookcloser.agent.images import open_checked_image
    from lookcloser.agent.openai_policy import image_url
    from lookcloser.data_builders.records import RecordError

    picture = gradient(40, 30)
    picture.save(tmp_path / "rgb.jpg", quality=90)
    picture.save(tmp_path / "rgb.png")
    picture.convert("CMYK").save(tmp_path / "cmyk.jpg")
    Image.new("RGBA", (20, 20), (255, 0, 0, 0)).save(tmp_path / "rgba.png")
    (tmp_path / "cut.jpg").write_bytes((tmp_path / "rgb.jpg").read_bytes()[:-50])
    for name in ("rgb.jpg", "rgb.png", "cmyk.jpg", "rgba.png"):
        path = tmp_path / name
        decoded = open_checked_image(path, rid="r1")
        lazy = open_checked_image(path, rid="r1", decode=False)
        sent = image_url(lazy, 10**8)
        assert lazy.size == decoded.size and lazy.mode == decoded.mode == "RGB"
        assert sent == image_url(decoded, 10**8)
        moved = path.rename(tmp_path / f"gone_{name}")
        assert lazy.tobytes() == decoded.tobytes(), name  # decoded now, from memory
        moved.rename(path)
    lazy = open_checked_image(tmp_path / "rgb.jpg", rid="r1", decode=False)
    checked = (tmp_path / "rgb.jpg").read_bytes()
    (tmp_path / "rgb.jpg").write_bytes(b"changed since")  # the bytes sent are the ones checked at the open
    assert image_url(lazy, 10**8) == "data:image/jpeg;base64," + base64.b64encode(checked).decode()
    lazy = open_checked_image(tmp_path / "cut.jpg", rid="r1", decode=False)
    assert lazy.size == (40, 30)
    with pytest.raises(OSError, match="truncated"):
        lazy.crop((0, 0, 10, 10))
    with pytest.raises(RecordError, match="cut.jpg does not decode"):
        open_checked_image(tmp_path / "cut.jpg", rid="r1")
    with pytest.raises(RecordError, match="over 1000"):
        open_checked_image(tmp_path / "rgb.png", rid="r1", decode=False, max_pixels=1000)


def test_image_checks_follow_pillows_truncation_setting(tmp_path, monkeypatch):
    """The checks are Pillow's own: with ``ImageFile.LOAD_TRUNCATED_IMAGES`` a cut JPEG decodes
    (padded, as Pillow does) and a PNG whose text chunk fails its CRC passes (Pillow skips the CRC
    of ancillary chunks then); without it both are a RecordError naming the file."""
    from PIL import ImageFile, PngImagePlugin

    from lookcloser.agent.images import open_checked_image
    from lookcloser.data_builders.records import RecordError

    picture = gradient(40, 30)
    picture.save(tmp_path / "rgb.jpg", quality=90)
    (tmp_path / "cut.jpg").write_bytes((tmp_path / "rgb.jpg").read_bytes()[:-50])
    text = PngImagePlugin.PngInfo()
    text.add_text("note", "a text chunk")
    picture.save(tmp_path / "text.png", pnginfo=text)
    data = (tmp_path / "text.png").read_bytes()
    chunk = data.index(b"tEXt")
    crc_at = chunk + 4 + int.from_bytes(data[chunk - 4:chunk], "big")
    (tmp_path / "text.png").write_bytes(data[:crc_at] + bytes([data[crc_at] ^ 0xFF]) + data[crc_at + 1:])
    for name in ("cut.jpg", "text.png"):
        with pytest.raises(RecordError, match=rf"record 'r1', field 'images': image .*{name} does not decode"):
            open_checked_image(tmp_path / name, rid="r1")
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    assert open_checked_image(tmp_path / "cut.jpg", rid="r1").size == (40, 30)
    assert open_checked_image(tmp_path / "text.png", rid="r1").tobytes() == picture.tobytes()
