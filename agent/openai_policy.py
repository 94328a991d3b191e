"""``OpenAIPolicy``: an OpenAI-compatible chat endpoint (``vllm serve``, ``trl vllm-serve``, ...) as the policy.

Images travel as data URLs (a file's own bytes when they decode to the same pixels, else PNG); the
tool schemas go in ``tools``. Tool calls are taken from the response's ``tool_calls`` when the
server parses them, else parsed from the text the way TRL parses Qwen replies (``agent.parsing``,
TRL's own parser). Requests go through ``lookcloser.http_client`` (httpx: timeouts, retries on
timeouts, connection errors, 429 and 5xx, proxy and CA bundle from the environment); the key is
read from an environment variable and sent as a bearer header, never logged. Episodes are
coroutines on one event loop (``agent.loop.play``) sharing the loop's kept-alive connections; an
image is encoded once per policy and re-sent from a cache on later turns.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import weakref

import orjson
from PIL import Image, ImageFile

from lookcloser.agent.episode import Episode, Turn
from lookcloser.agent.images import fit_under_budget
from lookcloser.agent.parsing import parse_assistant_text
from lookcloser.http_client import RequestFailed, api_url, asend, async_clients, bearer, json_post


class EndpointError(RuntimeError):
    """The endpoint answered with a client error (4xx) or a reply that is not JSON."""


def image_data_url(image: Image.Image, max_pixels: int) -> str:
    """A PNG data URL of the image, scaled under ``max_pixels`` first.

    >>> image_data_url(Image.new("RGB", (4, 4)), 100)[:22]
    'data:image/png;base64,'
    """
    size = fit_under_budget(image.width, image.height, max_pixels)
    if size != image.size:
        image = image.resize(size, Image.Resampling.BICUBIC)
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG", compress_level=1)  # lossless; level 6 took ~4x the CPU
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


# Files whose own bytes a server decodes (PIL, as ours) into exactly the pixels we decoded.
_PASS_THROUGH = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}
_EXIF_ORIENTATION = 0x0112


def _file_url_json(image: Image.Image, max_pixels: int) -> bytes | None:
    """A data URL of the file ``image`` was decoded from, as a JSON string (``image_url_json``), or
    None when sending the file's own bytes could show the model anything else than
    ``image_data_url`` would.

    Only a PNG, JPEG or WebP file opened as plain RGB (``agent.images.open_image`` returns those
    unconverted), one frame, under the pixel budget, without an ICC profile, transparency or an
    EXIF rotation (servers differ in applying those). Re-encoding cost ~0.6 ms for a 128 px image
    and ~0.5 s for a 1600x1200 photo, whose PNG is ~6x its JPEG's bytes (2-core machine, loaded).
    """
    if not isinstance(image, ImageFile.ImageFile) or image.format not in _PASS_THROUGH or image.mode != "RGB":
        return None
    if (getattr(image, "n_frames", 1) != 1 or image.width * image.height > max_pixels
            or {"icc_profile", "transparency"} & image.info.keys()
            or ("exif" in image.info and image.getexif().get(_EXIF_ORIENTATION, 1) != 1)):
        return None
    data = getattr(image, "checked_bytes", None)  # open_checked_image(decode=False) kept what it checked
    if data is None:
        try:
            with open(image.filename, "rb") as fh:
                data = fh.read()
        except (OSError, TypeError, ValueError):
            return None
    return b'"data:%b;base64,%b"' % (_PASS_THROUGH[image.format].encode(), base64.b64encode(data))


def image_url_json(image: Image.Image, max_pixels: int) -> orjson.Fragment:
    """A data URL of ``image`` (``_file_url_json``, else ``image_data_url``) as the JSON string orjson
    writes into a request as it is. Built from bytes, a photo's ~270 KB URL is never turned into a
    str, copied or scanned for escapes: that took ~1 ms of CPU per photo, the most of an endpoint
    episode's (docs/benchmarks.md, "Eval client")."""
    return orjson.Fragment(_file_url_json(image, max_pixels) or orjson.dumps(image_data_url(image, max_pixels)))


def image_url(image: Image.Image, max_pixels: int) -> str:
    """What the model is sent for ``image`` (``image_url_json``) as a str: the file's own bytes when
    they show the same pixels, else a PNG.

    >>> image_url(Image.new("RGB", (4, 4)), 100)[:22]  # made in memory: no file
    'data:image/png;base64,'
    """
    return orjson.loads(orjson.dumps(image_url_json(image, max_pixels)))


class OpenAIPolicy:
    """An OpenAI-compatible ``/chat/completions`` endpoint as the loop's policy.

    Args:
        base_url: The API's base, up to and including ``/v1``, e.g. ``http://127.0.0.1:8000/v1``; a
            query string (``?api-version=...``) is kept on every request.
        model: The served model name.
        api_key_env: Environment variable holding the API key (no header when unset or empty).
        timeout: Seconds per request phase (connect, send, each read).
        retries: Extra attempts after a timeout, connection error, 429 or 5xx.
        backoff: First retry delay in seconds (doubles each retry; ``Retry-After`` wins when given).
        temperature: Sampling temperature (0: greedy).
        max_image_pixels: Images are scaled under this before upload.
        tool_images_as: "tool" puts tool-returned images in the tool message (how Qwen3-VL's
            template and TRL render them); "user" moves them to a user message after it, for
            servers that accept images only from users.
        extra_body: Extra JSON fields for every request (e.g. ``{"top_p": 0.9}``).
        pools: Clients (connection pools) the requests share, each request going to the one with
            the fewest in flight. httpcore2's pool checks each of its connections on every request
            and reply: ~0.8 ms of CPU per request with 64 connections in one pool, a third of an
            episode's (docs/benchmarks.md, "Eval client"); ``python -m eval`` gives one pool per 8
            episodes in flight, so the connections stay about as many as the requests in flight.
    """

    batched = False

    def __init__(self, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY", *, timeout: float = 120.0,
                 retries: int = 3, backoff: float = 1.0, temperature: float = 0.0,
                 max_image_pixels: int = 2048 * 2048, tool_images_as: str = "tool",
                 extra_body: dict | None = None, pools: int = 1) -> None:
        if tool_images_as not in ("tool", "user"):
            raise ValueError("tool_images_as must be 'tool' or 'user'")
        self.base_url, self.model, self.api_key_env = base_url, model, api_key_env
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.temperature, self.max_image_pixels = temperature, max_image_pixels
        self.tool_images_as, self.extra_body = tool_images_as, dict(extra_body or {})
        self.url, self.pools = api_url(base_url, "chat/completions"), max(1, pools)
        self._clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> {client: in flight}
        self._urls: dict[int, orjson.Fragment] = {}  # id(image) -> data URL, dropped when the image is freed

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIPolicy({self.base_url!r}, {self.model!r}, api_key_env={self.api_key_env!r})"

    def start(self, episode: Episode) -> None:
        """Nothing to prepare: every request sends the whole conversation."""

    def extend(self, episode: Episode, tool_messages: list[dict]) -> None:
        """Nothing to do: the next request sends the new messages."""

    # -- request building --

    def _parts(self, content) -> list[dict] | str:
        if not isinstance(content, list):
            return "" if content is None else str(content)
        parts = []
        for block in content:
            if isinstance(block.get("image"), Image.Image):
                parts.append({"type": "image_url", "image_url": {"url": self._image_url(block["image"])}})
            elif block.get("type") == "text" or "text" in block:
                parts.append({"type": "text", "text": str(block.get("text", ""))})
        return parts

    def to_openai_messages(self, messages: list[dict]) -> list[dict]:
        """The conversation in OpenAI chat format, with tool-call ids pairing calls and results; an
        image's URL is an ``orjson.Fragment`` (``image_url_json``), ready for ``orjson.dumps``."""
        out: list[dict] = []
        pending: list[str] = []
        for turn, message in enumerate(messages):
            role = message["role"]
            if role == "assistant":
                text = _text_of(message.get("content"))
                if message.get("reasoning_content"):  # the model wrote it: keep it in its context, as HFPolicy does
                    text = f"<think>\n{message['reasoning_content']}\n</think>\n\n{text}"
                item: dict = {"role": "assistant", "content": text}
                calls = message.get("tool_calls") or []
                if calls:
                    pending = [f"call_{turn}_{k}" for k in range(len(calls))]
                    item["tool_calls"] = [
                        {"id": cid, "type": "function", "function": {
                            "name": call["function"]["name"],
                            "arguments": _arguments_json(call["function"].get("arguments"))}}
                        for cid, call in zip(pending, calls)]
                out.append(item)
            elif role == "tool" and pending:
                parts = self._parts(message.get("content"))
                images = [p for p in parts if isinstance(p, dict) and p["type"] == "image_url"]
                if self.tool_images_as == "user" and images:
                    texts = [p for p in parts if p["type"] == "text"]
                    out.append({"role": "tool", "tool_call_id": pending.pop(0), "content": texts or "(image)"})
                    out.append({"role": "user", "content": images})
                else:
                    out.append({"role": "tool", "tool_call_id": pending.pop(0), "content": parts})
            elif role == "tool":  # an answer to an unparsable call: no id to pair it with
                out.append({"role": "user", "content": f"<tool_response>\n{_text_of(message.get('content'))}\n"
                                                       "</tool_response>"})
            else:
                out.append({"role": role, "content": self._parts(message.get("content"))})
        return out

    def _image_url(self, image: Image.Image) -> orjson.Fragment:
        """``image_url_json``, once per image object: every turn re-sends the whole conversation."""
        key = id(image)
        url = self._urls.get(key)
        if url is None:
            url = image_url_json(image, self.max_image_pixels)
            if key not in self._urls:  # ids are reused after an object dies: forget it then
                weakref.finalize(image, self._urls.pop, key, None)
            self._urls[key] = url
        return url

    # -- HTTP --

    async def agenerate(self, episode: Episode, max_new_tokens: int) -> Turn:
        """One assistant turn for ``episode`` on the running event loop (``agent.loop.play``): many
        episodes share the loop's kept-alive connections. Never raises."""
        loop = asyncio.get_running_loop()
        clients = self._clients.get(loop)
        if clients is None:  # a client's connections belong to one event loop
            clients = self._clients[loop] = dict.fromkeys(async_clients(self.timeout, self.pools), 0)
        http = min(clients, key=clients.get)
        payload = {"model": self.model, "messages": self.to_openai_messages(episode.messages),
                   "max_tokens": max_new_tokens, "temperature": self.temperature, **self.extra_body}
        if episode.tools:  # extra_body naming tools too: the episode's win
            payload["tools"] = episode.tools
        request = json_post(http, self.url, payload, bearer(self.api_key_env))
        clients[http] += 1
        try:
            reply = await asend(http, request, self.retries, self.backoff)
        except RequestFailed as err:
            return _failed(err)
        finally:
            clients[http] -= 1
        if reply.status_code != 200:
            return _failed(EndpointError(f"HTTP {reply.status_code}: {reply.text[:300]}"))
        try:
            body = reply.json()
        except ValueError:
            return _failed(EndpointError("the endpoint's reply is not JSON"))
        return self._turn_of(episode, body)

    async def aclose(self) -> None:
        """Close the running event loop's kept-alive connections (before the loop ends)."""
        for http in self._clients.pop(asyncio.get_running_loop(), []):
            await http.aclose()

    def _turn_of(self, episode: Episode, reply: dict) -> Turn:
        """The assistant turn of a reply."""
        try:
            choice = reply["choices"][0]
            raw = choice["message"]
        except (KeyError, IndexError, TypeError) as err:
            return _failed(err)
        truncated = choice.get("finish_reason") == "length"
        content = raw.get("content") or ""
        if raw.get("tool_calls"):
            message = {"role": "assistant", "content": content, "tool_calls": [
                {"type": "function", "function": {"name": (c.get("function") or {}).get("name"),
                                                  "arguments": _arguments_obj((c.get("function") or {}).get("arguments"))}}
                for c in raw["tool_calls"]]}
        else:
            message = parse_assistant_text(content, tools=episode.tools or None)
        if raw.get("reasoning_content") and "reasoning_content" not in message:
            message["reasoning_content"] = raw["reasoning_content"]
        return Turn(message, truncated=truncated)


def _failed(err: Exception) -> Turn:
    return Turn({"role": "assistant", "content": ""}, error=f"{type(err).__name__}: {err}")


def _text_of(content) -> str:
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and "text" in b)
    return "" if content is None else str(content)


def _arguments_json(arguments) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})


def _arguments_obj(arguments):
    """Server tool calls carry arguments as a JSON string; a string that does not parse stays a string.

    >>> _arguments_obj('{"a": 1}'), _arguments_obj('{bad'), _arguments_obj(None)
    ({'a': 1}, '{bad', {})
    """
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return arguments
