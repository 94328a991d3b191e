"""``OpenAIPolicy``: an OpenAI-compatible chat endpoint (``vllm serve``, ``trl vllm-serve``, ...) as the policy.

Images travel as base64 PNG data URLs; the tool schemas go in ``tools``. Tool calls are taken
from the response's ``tool_calls`` when the server parses them, else parsed from the text the
way TRL parses Qwen replies (``agent.parsing``, TRL's own parser). Requests have timeouts and are retried with
backoff on timeouts, connection errors, 429 and 5xx; the key is read from an environment
variable and sent as a bearer header, never logged.

Many episodes run at once, so the client's own CPU time per request bounds the requests in flight
(docs/benchmarks.md, "Eval client concurrency"). ``eval.runner`` plays them as coroutines on one
event loop (``agenerate``: no thread per episode, whose GIL handoffs cost more CPU than the work)
sharing a pool of kept-alive HTTP/1.1 connections; ``generate`` is the same request from a plain
thread, each thread with its own connection (``agent.http_client``: ~0.03 ms of CPU per request
where ``http.client`` took ~0.15 ms and urllib3 twice that; urllib3 only behind a proxy). The
environment's proxy/CA settings are read once, the tool schemas are serialized once, and an image
goes once per policy, then again from the cache on later turns: as the bytes of the file it was
decoded from when those decode to exactly the same pixels (``file_data_url``), else PNG-encoded
fast (compression level 1).
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import io
import json
import os
import re
import secrets
import ssl
import threading
import time
import weakref
from urllib.parse import urlsplit

from PIL import Image, ImageFile

from lookcloser.agent.episode import Episode, Turn
from lookcloser.agent.http_client import AsyncConnections, Connection
from lookcloser.agent.images import fit_under_budget
from lookcloser.agent.parsing import parse_assistant_text

POOL_SIZE = 256  # behind a proxy: kept-alive connections; more episodes in flight than this open (and close) extra ones


class EndpointError(RuntimeError):
    """The endpoint failed for good (after retries, or with a client error)."""


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


def file_data_url(image: Image.Image, max_pixels: int) -> str | None:
    """A data URL of the file ``image`` was decoded from, or None when sending the file's own
    bytes could show the model anything else than ``image_data_url`` would.

    Only a PNG, JPEG or WebP file opened as plain RGB (``agent.images.open_image`` returns those
    unconverted), one frame, under the pixel budget, without an ICC profile, transparency or an
    EXIF rotation (servers differ in applying those). Re-encoding cost ~0.6 ms for a 128 px image
    and ~0.5 s for a 1600x1200 photo, whose PNG is ~6x its JPEG's bytes (2-core machine, loaded).

    >>> file_data_url(Image.new("RGB", (4, 4)), 100) is None  # made in memory: no file
    True
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
    return f"data:{_PASS_THROUGH[image.format]};base64," + base64.b64encode(data).decode("ascii")


def image_url(image: Image.Image, max_pixels: int) -> str:
    """What the model is sent for ``image``: ``file_data_url``, else ``image_data_url``."""
    return file_data_url(image, max_pixels) or image_data_url(image, max_pixels)


class _TransportError(Exception):
    """No HTTP reply: timed out, refused, reset, dropped, TLS, proxy."""


class OpenAIPolicy:
    """An OpenAI-compatible ``/chat/completions`` endpoint as the loop's policy.

    Args:
        base_url: Up to and including ``/v1``, e.g. ``http://127.0.0.1:8000/v1``.
        model: The served model name.
        api_key_env: Environment variable holding the API key (no header when unset or empty).
        timeout: Seconds per request.
        retries: Extra attempts after a retryable failure.
        backoff: First retry delay in seconds (doubles each retry).
        max_workers: Episodes in flight at once.
        temperature: Sampling temperature (0: greedy).
        max_image_pixels: Images are scaled under this before upload.
        tool_images_as: "tool" puts tool-returned images in the tool message (how Qwen3-VL's
            template and TRL render them); "user" moves them to a user message after it, for
            servers that accept images only from users.
        extra_body: Extra JSON fields for every request (e.g. ``{"top_p": 0.9}``).
    """

    batched = False

    def __init__(self, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY", *, timeout: float = 120.0,
                 retries: int = 3, backoff: float = 1.0, max_workers: int = 8, temperature: float = 0.0,
                 max_image_pixels: int = 2048 * 2048, tool_images_as: str = "tool",
                 extra_body: dict | None = None) -> None:
        if tool_images_as not in ("tool", "user"):
            raise ValueError("tool_images_as must be 'tool' or 'user'")
        self.base_url, self.model, self.api_key_env = base_url.rstrip("/"), model, api_key_env
        self.timeout, self.retries, self.backoff, self.max_workers = timeout, retries, backoff, max_workers
        self.temperature, self.max_image_pixels = temperature, max_image_pixels
        self.tool_images_as, self.extra_body = tool_images_as, dict(extra_body or {})
        self._setup_lock = threading.Lock()
        self._route = None  # how to connect, settled on the first request (``_setup``)
        self._local = threading.local()  # each thread's kept-alive connection
        self._pools: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> AsyncConnections
        self._urls: dict[int, str] = {}  # id(image) -> data URL, dropped when the image is freed
        self._tools_json: tuple[list, str] | None = None  # (episode.tools, its JSON): serialized once
        self._url_mark = f"lookcloser-image-{secrets.token_hex(8)}-"  # no reply or prompt holds it
        self._url_marks = re.compile(b'"(' + re.escape(self._url_mark.encode()) + rb'\d+)"')

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIPolicy({self.base_url!r}, {self.model!r}, api_key_env={self.api_key_env!r})"

    def start(self, episode: Episode) -> None:
        """Nothing to prepare: every request sends the whole conversation."""

    def extend(self, episode: Episode, tool_messages: list[dict]) -> None:
        """Nothing to do: the next request sends the new messages."""

    def generate(self, episodes: list[Episode], max_new_tokens: int) -> list[Turn]:
        return [self._turn(ep, max_new_tokens) for ep in episodes]

    # -- request building --

    def _parts(self, content, urls: dict | None = None) -> list[dict] | str:
        if not isinstance(content, list):
            return "" if content is None else str(content)
        parts = []
        for block in content:
            if isinstance(block.get("image"), Image.Image):
                url = self._image_url(block["image"])
                if urls is not None:  # a mark in its place, spliced into the JSON after (``_request_body``)
                    mark = f"{self._url_mark}{len(urls)}"
                    urls[mark], url = url, mark
                parts.append({"type": "image_url", "image_url": {"url": url}})
            elif block.get("type") == "text" or "text" in block:
                parts.append({"type": "text", "text": str(block.get("text", ""))})
        return parts

    def to_openai_messages(self, messages: list[dict], urls: dict | None = None) -> list[dict]:
        """The conversation in OpenAI chat format, with tool-call ids pairing calls and results.
        With ``urls``, each image's URL is a mark instead, and ``urls`` maps the marks to the URLs."""
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
                parts = self._parts(message.get("content"), urls)
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
                out.append({"role": role, "content": self._parts(message.get("content"), urls)})
        return out

    def _image_url(self, image: Image.Image) -> str:
        """``image_url``, once per image object: every turn re-sends the whole conversation."""
        key = id(image)
        url = self._urls.get(key)
        if url is None:
            url = image_url(image, self.max_image_pixels)
            if key not in self._urls:  # ids are reused after an object dies: forget it then
                weakref.finalize(image, self._urls.pop, key, None)
            self._urls[key] = url
        return url

    # -- HTTP --

    def _setup(self) -> tuple:
        """How to connect, with the proxy and CA settings ``requests.post`` would take from the
        environment (``HTTPS_PROXY``/``NO_PROXY``, ``REQUESTS_CA_BUNDLE``), read once: ("direct",
        (host, port, TLS context or None), the request's first lines) or, behind a proxy, ("proxy", urllib3
        ProxyManager, URL)."""
        if self._route is None:
            with self._setup_lock:
                if self._route is None:
                    import requests
                    from requests.utils import DEFAULT_CA_BUNDLE_PATH, select_proxy

                    with requests.Session() as probe:
                        settings = probe.merge_environment_settings(self.base_url, {}, None, None, None)
                    url, https = urlsplit(self.base_url), self.base_url.startswith("https")
                    verify = settings["verify"]
                    ca = (verify if isinstance(verify, str) else DEFAULT_CA_BUNDLE_PATH) if verify else None
                    proxy = select_proxy(self.base_url, settings["proxies"])
                    if proxy:
                        import urllib3

                        kwargs: dict = {"maxsize": POOL_SIZE, "retries": False}
                        if https:
                            kwargs.update(cert_reqs="CERT_REQUIRED" if verify else "CERT_NONE", ca_certs=ca)
                        self._route = ("proxy", urllib3.ProxyManager(proxy, **kwargs),
                                       f"{self.base_url}/chat/completions")
                    else:
                        context = None
                        if https:
                            context = ssl.create_default_context(cafile=ca)
                            if not verify:
                                context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
                        host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname
                        head = (f"POST {url.path}/chat/completions HTTP/1.1\r\n"
                                f"Host: {host}{'' if url.port is None else f':{url.port}'}\r\n"
                                "Accept-Encoding: identity\r\n")
                        port = url.port or (443 if https else 80)
                        self._route = ("direct", (url.hostname, port, context), head)
        return self._route

    def _send(self, body: bytes, headers: dict) -> tuple[int, bytes]:
        """One POST; (status, body), or ``_TransportError``. Direct: this thread's kept-alive
        connection (a new one if the server closed it while idle, as urllib3 does)."""
        kind, how, target = self._setup()  # target: the URL behind a proxy, else the request's first lines
        if kind == "proxy":
            import urllib3

            try:
                resp = how.request("POST", target, body=body, headers=headers,
                                   timeout=urllib3.Timeout(connect=self.timeout, read=self.timeout))
            except urllib3.exceptions.HTTPError as err:
                timed_out = (isinstance(err, urllib3.exceptions.TimeoutError)  # a refusal subclasses it too
                             and not isinstance(err, urllib3.exceptions.NewConnectionError))
                raise _TransportError(f"timed out after {self.timeout:g}s" if timed_out else type(err).__name__)
            return resp.status, resp.data
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = Connection(how[0], how[1], self.timeout, how[2])
        try:
            return conn.post(_request_bytes(target, headers, body))
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            raise self._transport_error(err) from None

    async def _asend(self, body: bytes, headers: dict) -> tuple[int, bytes]:
        """``_send`` on the running event loop: a connection of its pool (``AsyncConnections``)."""
        kind, how, target = self._setup()
        loop = asyncio.get_running_loop()
        if kind == "proxy":  # urllib3 blocks: off the loop (only behind a proxy)
            return await loop.run_in_executor(None, self._send, body, headers)
        pool = self._pools.get(loop)
        if pool is None:
            pool = self._pools[loop] = AsyncConnections(how[0], how[1], self.timeout, how[2])
        try:
            return await pool.post(_request_bytes(target, headers, body))
        except (OSError, http.client.HTTPException) as err:
            raise self._transport_error(err) from None

    def _transport_error(self, err: Exception) -> _TransportError:
        return _TransportError(f"timed out after {self.timeout:g}s" if isinstance(err, TimeoutError)
                               else type(err).__name__)

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _judge(self, status: int, data: bytes) -> dict | str:
        """The reply's JSON, or why it is worth another attempt; ``EndpointError`` when it is not."""
        if status == 429 or status >= 500:
            return f"HTTP {status}"
        if status != 200:
            raise EndpointError(f"HTTP {status}: {data[:300].decode(errors='replace')}")
        try:
            return json.loads(data)
        except ValueError:
            return "a reply that is not JSON"

    def _post(self, body: bytes) -> dict:
        headers, last = self._headers(), "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                last = self._judge(*self._send(body, headers))
            except _TransportError as err:
                last = str(err)
            if isinstance(last, dict):
                return last
        raise EndpointError(f"endpoint failed after {self.retries + 1} attempts ({last})")

    async def _apost(self, body: bytes) -> dict:
        """``_post`` on the running event loop."""
        headers, last = self._headers(), "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                last = self._judge(*await self._asend(body, headers))
            except _TransportError as err:
                last = str(err)
            if isinstance(last, dict):
                return last
        raise EndpointError(f"endpoint failed after {self.retries + 1} attempts ({last})")

    def _body(self, payload: dict, tools: list | None) -> bytes:
        """The request's JSON; the tool schemas (the same list for every episode of an environment,
        ~4 KB for six tools) are serialized once, and appended as ``json.dumps`` would."""
        if tools and "tools" in payload:  # extra_body named tools too: the episode's win, in its place
            payload["tools"], tools = tools, None
        if not tools:
            return json.dumps(payload).encode()
        cached = self._tools_json  # ``tool_schemas`` hands every episode the same list; another equal one: compare
        if cached is None or (cached[0] is not tools and cached[0] != tools):
            cached = self._tools_json = (tools, json.dumps(tools))
        return (json.dumps(payload)[:-1] + ', "tools": ' + cached[1] + "}").encode()

    def _request_body(self, episode: Episode, max_new_tokens: int) -> bytes:
        """The request's JSON. The images' data URLs (~270 KB for a 200 KB JPEG; every turn re-sends
        them) are spliced in as JSON strings after the rest is serialized: ``json.dumps`` scanned
        them again on every request, ~1 ms each, most of the client's CPU with photo-sized images."""
        urls: dict[str, str] = {}
        payload = {"model": self.model, "messages": self.to_openai_messages(episode.messages, urls),
                   "max_tokens": max_new_tokens, "temperature": self.temperature, **self.extra_body}
        body = self._body(payload, episode.tools)
        if not urls:
            return body
        pieces = self._url_marks.split(body)  # text, mark, text, mark, ..., text
        for k in range(1, len(pieces), 2):
            pieces[k] = _json_string(urls[pieces[k].decode()])
        return b"".join(pieces)

    def _turn(self, episode: Episode, max_new_tokens: int) -> Turn:
        try:
            reply = self._post(self._request_body(episode, max_new_tokens))
        except EndpointError as err:
            reply = err
        return self._turn_of(episode, reply)

    async def agenerate(self, episode: Episode, max_new_tokens: int) -> Turn:
        """``generate`` for one episode on the running event loop (``agent.loop.play``): many
        episodes share one thread and a pool of kept-alive connections. Never raises."""
        try:
            reply = await self._apost(self._request_body(episode, max_new_tokens))
        except EndpointError as err:
            reply = err
        return self._turn_of(episode, reply)

    async def aclose(self) -> None:
        """Close the running event loop's kept-alive connections (before the loop ends)."""
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            pool.close()

    def _turn_of(self, episode: Episode, reply: dict | EndpointError) -> Turn:
        """The assistant turn of a reply (or of the error that took its place)."""
        try:
            if isinstance(reply, EndpointError):
                raise reply
            choice = reply["choices"][0]
            raw = choice["message"]
        except (EndpointError, KeyError, IndexError, TypeError) as err:
            return Turn({"role": "assistant", "content": ""}, error=f"{type(err).__name__}: {err}")
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


def _json_string(url: str) -> bytes:
    """``json.dumps(url).encode()`` for an image's URL, without scanning a data URL we built
    (``image_url``): its ``data:<type>;base64,`` prefix and the base64 after it need no escaping,
    and a JSON scan of a photo's ~270 KB took ~0.7 ms a request. Anything else: ``json.dumps``.

    >>> _json_string("data:image/png;base64,iVBO+/==")
    b'"data:image/png;base64,iVBO+/=="'
    >>> _json_string('http://x/"a"\\n') == json.dumps('http://x/"a"\\n').encode()
    True
    """
    head, comma, _ = url[:64].partition(",")
    if (comma and head.startswith("data:") and head.endswith(";base64") and head.isprintable() and url.isascii()
            and '"' not in url and "\\" not in url):
        return b'"' + url.encode("ascii") + b'"'
    return json.dumps(url).encode()


def _request_bytes(head: str, headers: dict, body: bytes) -> bytes:
    """The whole request: ``head`` (its first lines), ``headers``, the length, ``body``."""
    if any("\r" in v or "\n" in v for v in headers.values()):
        raise ValueError("a request header value holds a line break")  # as http.client refuses it
    return (head + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            + f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1") + body


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
