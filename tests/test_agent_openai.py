"""OpenAIPolicy against a scripted OpenAI-compatible server on loopback (real HTTP, a threaded server).

The server stands in for ``vllm serve``, which cannot run here: it answers like one, with
server-parsed tool calls on the first turn, raw ``<tool_call>`` text on the second (a server
without a tool parser), then an answer; it can fail with a 500 or hang once."""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from PIL import Image

from lookcloser.agent.environments import ImageToolEnv
from lookcloser.agent.loop import run_episodes
from lookcloser.agent.openai_policy import OpenAIPolicy


class FakeVLLM(BaseHTTPRequestHandler):
    state: ClassVar[dict] = {}

    def log_message(self, *args):
        pass

    def _reply(self, status: int, payload: dict | str):
        body = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout): expected
            pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.state["lock"]:
            self.state["requests"].append((self.headers.get("Authorization"), body))
            question = " ".join(p.get("text", "") for p in body["messages"][1]["content"])
            key = (question, sum(m["role"] == "assistant" for m in body["messages"]))
            attempt = self.state["attempts"][key] = self.state["attempts"].get(key, 0) + 1
        time.sleep(self.state.get("delay", 0.0))
        if "fail once" in question and key[1] == 0 and attempt == 1:
            return self._reply(500, "upstream error")
        if "hang once" in question and attempt == 1:
            time.sleep(1.0)
        if "bad request" in question:
            return self._reply(400, {"error": "bad request"})
        turn = key[1]
        if turn == 0:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "chatcmpl-tool-1", "type": "function",
                "function": {"name": "crop", "arguments": json.dumps({"image_index": 0, "box": [0, 0, 0.5, 0.5]})}}]}
            finish = "tool_calls"
        elif turn == 1:
            message = {"role": "assistant", "content": "Closer.\n<tool_call>\n" + json.dumps(
                {"name": "zoom", "arguments": {"image_index": 1, "box": [0, 0, 32, 32], "factor": 2}}) + "\n</tool_call>"}
            finish = "stop"
        else:
            message = {"role": "assistant", "content": "<answer>A</answer>"}
            finish = "stop"
        self._reply(200, {"id": "x", "object": "chat.completion", "model": body["model"],
                          "choices": [{"index": 0, "message": message, "finish_reason": finish}]})


@pytest.fixture
def endpoint():
    FakeVLLM.state = {"lock": threading.Lock(), "requests": [], "attempts": {}}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeVLLM)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def decode(url: str) -> Image.Image:
    assert url.startswith("data:image/png;base64,")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def test_three_turns_over_http_with_images_and_tool_ids(endpoint, monkeypatch):
    monkeypatch.setenv("LOOKCLOSER_TEST_KEY", "sk-test")
    policy = OpenAIPolicy(endpoint, "tiny", api_key_env="LOOKCLOSER_TEST_KEY", backoff=0.01)
    examples = [{"question": "What colour? fail once", "images": [Image.new("RGB", (128, 96), "red")]}]
    (traj,) = run_episodes(policy, ImageToolEnv, examples, max_turns=5)
    assert traj.stop_reason == "answer" and traj.final_response == "<answer>A</answer>", traj.error
    assert (traj.num_turns, traj.tool_calls, traj.tool_errors) == (3, 2, 0)
    assert [img.size for img in traj.images] == [(128, 96), (64, 48), (64, 64)]
    requests = FakeVLLM.state["requests"]
    assert len(requests) == 4  # the 500 was retried
    auth, last = requests[-1]
    assert auth == "Bearer sk-test" and last["model"] == "tiny"
    assert [t["function"]["name"] for t in last["tools"]] == ["adjust", "crop", "flip", "rotate", "view_image", "zoom"]
    roles = [m["role"] for m in last["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    first_call, first_result = last["messages"][2], last["messages"][3]
    assert first_result["tool_call_id"] == first_call["tool_calls"][0]["id"]
    assert json.loads(first_call["tool_calls"][0]["function"]["arguments"]) == {"image_index": 0, "box": [0, 0, 0.5, 0.5]}
    assert decode(last["messages"][1]["content"][0]["image_url"]["url"]).size == (128, 96)
    assert decode(first_result["content"][0]["image_url"]["url"]).size == (64, 48)
    assert last["messages"][4]["tool_calls"][0]["function"]["name"] == "zoom"  # parsed from text


def test_concurrent_episodes_timeouts_and_client_errors(endpoint):
    FakeVLLM.state["delay"] = 0.2
    policy = OpenAIPolicy(endpoint, "tiny", timeout=0.6, backoff=0.01)
    image = Image.new("RGB", (64, 64), "blue")
    examples = [{"question": f"q{i}", "images": [image]} for i in range(4)]
    examples += [{"question": "hang once", "images": [image]}, {"question": "bad request", "images": [image]}]
    started = time.monotonic()
    trajs = run_episodes(policy, ImageToolEnv, examples, max_turns=5, concurrency=6)
    elapsed = time.monotonic() - started
    assert [t.stop_reason for t in trajs] == ["answer"] * 5 + ["error"]
    assert "HTTP 400" in trajs[-1].error
    assert elapsed < 6 * 3 * 0.2  # one at a time would take at least 3.6 s
    tools_only = OpenAIPolicy(endpoint, "tiny", tool_images_as="user")
    messages = tools_only.to_openai_messages(trajs[0].messages)
    assert [m["role"] for m in messages][3:5] == ["tool", "user"]
    assert messages[4]["content"][0]["type"] == "image_url"
    assert "sk-" not in repr(tools_only)
    thought = tools_only.to_openai_messages([{"role": "assistant", "content": "B", "reasoning_content": "hmm"}])
    assert thought[0]["content"] == "<think>\nhmm\n</think>\n\nB"


def test_episodes_leave_the_shared_tool_schemas_as_built(endpoint, tiny_model_dir):
    """``tool_schemas`` hands every episode the same list: nothing on the way (the loop, this policy's
    request bodies and parsing with typed arguments, the chat template HFPolicy renders) changes it."""
    import copy

    from transformers.utils import get_json_schema

    from lookcloser.agent.environments import tool_schemas
    from lookcloser.agent.models import load_processor
    from lookcloser.agent.toolkit import tool_names

    shared = tool_schemas(ImageToolEnv)
    built = json.loads(json.dumps([get_json_schema(getattr(ImageToolEnv, n)) for n in tool_names(ImageToolEnv)]))
    assert shared == built
    before = copy.deepcopy(shared)
    policy = OpenAIPolicy(endpoint, "tiny", backoff=0.01)
    examples = [{"question": f"Which colour {k}?", "images": [Image.new("RGB", (64, 48), "blue")]} for k in range(3)]
    trajs = run_episodes(policy, ImageToolEnv, examples, max_turns=5)
    assert [(t.stop_reason, t.tool_calls, t.tool_errors) for t in trajs] == [("answer", 2, 0)] * 3
    processor = load_processor(str(tiny_model_dir))
    rendered = processor.apply_chat_template(trajs[0].messages[:2], tools=shared, tokenize=False,
                                             add_generation_prompt=True)
    assert '"name": "view_image"' in rendered
    assert tool_schemas(ImageToolEnv) is shared and shared == before == built
