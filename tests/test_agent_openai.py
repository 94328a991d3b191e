"""OpenAIPolicy against a scripted OpenAI-compatible server on loopback (``testing.fake_endpoint``:
real HTTP). The server stands in for ``vllm serve``, which cannot run here: it answers like one,
with server-parsed tool calls on the first turn, raw ``<tool_call>`` text on the second (a server
without a tool parser), then an answer; it can fail with a 500 or a 400, or hang once."""

from __future__ import annotations

import base64
import io
import json
import time

from PIL import Image

from lookcloser.agent.environments import ImageToolEnv
from lookcloser.agent.loop import run_episodes
from lookcloser.agent.openai_policy import OpenAIPolicy
from testing.fake_endpoint import FakeEndpoint, conversation_key


def like_vllm(request: dict, attempt: int) -> dict:
    question, turn = conversation_key(request), sum(m["role"] == "assistant" for m in request["messages"])
    if "fail once" in question and attempt == 1:
        return {"status": 500}
    if "hang once" in question and attempt == 1:
        return {"sleep": 1.0, "content": "too late"}
    if "bad request" in question:
        return {"status": 400}
    if turn == 0:
        return {"tool_calls": [{"name": "crop", "arguments": {"image_index": 0, "box": [0, 0, 0.5, 0.5]}}]}
    if turn == 1:
        return {"content": "Closer.\n<tool_call>\n" + json.dumps(
            {"name": "zoom", "arguments": {"image_index": 1, "box": [0, 0, 32, 32], "factor": 2}}) + "\n</tool_call>"}
    return {"content": "<answer>A</answer>"}


def decode(url: str) -> Image.Image:
    assert url.startswith("data:image/png;base64,")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def test_three_turns_over_http_with_images_and_tool_ids(monkeypatch):
    monkeypatch.setenv("LOOKCLOSER_TEST_KEY", "sk-test")
    seen = []
    with FakeEndpoint(lambda request, attempt: seen.append(request) or like_vllm(request, attempt)) as endpoint:
        policy = OpenAIPolicy(endpoint.url, "tiny", api_key_env="LOOKCLOSER_TEST_KEY", backoff=0.01)
        examples = [{"question": "What colour? fail once", "images": [Image.new("RGB", (128, 96), "red")]}]
        (traj,) = run_episodes(policy, ImageToolEnv, examples, max_turns=5)
    assert traj.stop_reason == "answer" and traj.final_response == "<answer>A</answer>", traj.error
    assert (traj.num_turns, traj.tool_calls, traj.tool_errors) == (3, 2, 0)
    assert [img.size for img in traj.images] == [(128, 96), (64, 48), (64, 64)]
    assert len(seen) == 4  # the 500 was retried
    last = seen[-1]
    assert endpoint.authorizations[-1] == "Bearer sk-test" and last["model"] == "tiny"
    assert [t["function"]["name"] for t in last["tools"]] == ["adjust", "crop", "flip", "rotate", "view_image", "zoom"]
    roles = [m["role"] for m in last["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    first_call, first_result = last["messages"][2], last["messages"][3]
    assert first_result["tool_call_id"] == first_call["tool_calls"][0]["id"]
    assert json.loads(first_call["tool_calls"][0]["function"]["arguments"]) == {"image_index": 0, "box": [0, 0, 0.5, 0.5]}
    assert decode(last["messages"][1]["content"][0]["image_url"]["url"]).size == (128, 96)
    assert decode(first_result["content"][0]["image_url"]["url"]).size == (64, 48)
    assert last["messages"][4]["tool_calls"][0]["function"]["name"] == "zoom"  # parsed from text


def test_concurrent_episodes_timeouts_and_client_errors():
    image = Image.new("RGB", (64, 64), "blue")
    examples = [{"question": f"q{i}", "images": [image]} for i in range(4)]
    examples += [{"question": "hang once", "images": [image]}, {"question": "bad request", "images": [image]}]
    with FakeEndpoint(like_vllm, delay=0.2) as endpoint:
        policy = OpenAIPolicy(endpoint.url, "tiny", timeout=0.6, backoff=0.01)
        started = time.monotonic()
        trajs = run_episodes(policy, ImageToolEnv, examples, max_turns=5, concurrency=6)
        elapsed = time.monotonic() - started
    assert [t.stop_reason for t in trajs] == ["answer"] * 5 + ["error"]
    assert "HTTP 400" in trajs[-1].error
    assert elapsed < 6 * 3 * 0.2  # one at a time would take at least 3.6 s
    tools_only = OpenAIPolicy(endpoint.url, "tiny", tool_images_as="user")
    messages = tools_only.to_openai_messages(trajs[0].messages)
    assert [m["role"] for m in messages][3:5] == ["tool", "user"]
    assert messages[4]["content"][0]["type"] == "image_url"
    assert "sk-" not in repr(tools_only)
    thought = tools_only.to_openai_messages([{"role": "assistant", "content": "B", "reasoning_content": "hmm"}])
    assert thought[0]["content"] == "<think>\nhmm\n</think>\n\nB"


def test_episodes_leave_the_shared_tool_schemas_as_built(tiny_model_dir):
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
    examples = [{"question": f"Which colour {k}?", "images": [Image.new("RGB", (64, 48), "blue")]} for k in range(3)]
    with FakeEndpoint(like_vllm) as endpoint:
        trajs = run_episodes(OpenAIPolicy(endpoint.url, "tiny", backoff=0.01), ImageToolEnv, examples, max_turns=5)
    assert [(t.stop_reason, t.tool_calls, t.tool_errors) for t in trajs] == [("answer", 2, 0)] * 3
    processor = load_processor(str(tiny_model_dir))
    rendered = processor.apply_chat_template(trajs[0].messages[:2], tools=shared, tokenize=False,
                                             add_generation_prompt=True)
    assert '"name": "view_image"' in rendered
    assert tool_schemas(ImageToolEnv) is shared and shared == before == built
