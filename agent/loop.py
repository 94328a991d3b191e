"""The multi-turn agent loop for evaluation (and anything TRL's GRPO loop does not cover).

``run_episodes(policy, env_cls_or_factory, examples)`` plays each example to the end with its own
environment: the model replies; a reply with tool calls gets the tools' results and another turn;
a reply without a tool call is the final response. Budgets: ``max_turns`` assistant turns,
``max_new_tokens_per_turn`` tokens per turn, ``max_images`` images per trajectory (inputs
included). A turn's tool calls run only when another turn may follow. A tool-call block that does
not parse (bad JSON, no closing tag) is answered with an ``Error:`` observation and counted,
where TRL would end the rollout. Nothing raises out of an episode: failures end it with
``stop_reason="error"``.

A batched policy (``HFPolicy``) gets every live episode in one ``generate`` call per turn. A policy
that answers over the network (``OpenAIPolicy``: ``agenerate``) plays each episode as a coroutine,
``play``, the same steps with ``await`` where the reply comes, many at once on one event loop
(``play_all``, which ``eval.runner`` uses too).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor

from lookcloser.agent.environments import env_class, tool_schemas
from lookcloser.agent.episode import Episode, Policy, image_blocks_in, row_prompt
from lookcloser.agent.images import load_example_images
from lookcloser.agent.parsing import has_unparsed_tool_call
from lookcloser.agent.trajectory import Trajectory
from lookcloser.rewards.format_and_tools import returned_image

logger = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful visual assistant. Use the tools whenever details matter: look closer, then reason. "
    "Each tool result comes back in the next message. When you are done, reply without any tool call and "
    "put the final answer inside <answer></answer>, for example <answer>B</answer>."
)

# play_all starts its episodes this far apart. Started at once, every episode's first request is
# built (~1.5 ms of CPU each) before any leaves, and their replies come back in one burst that
# takes a few rounds to even out: at --concurrency 64 and 200 ms that cost ~2% of items/s
# (docs/benchmarks.md, "Eval client"). 64 episodes start within 0.13 s.
START_SPACING_S = 0.002


def build_messages(example: dict, images: list, system_prompt: str | None = None) -> list[dict]:
    """The opening conversation of an example, the images placed as TRL places them.

    Uses ``prompt`` (messages, or a string) or else the first of question/query/problem/text.
    The images go before the text of the first user message, or fill its ``{"type": "image"}``
    placeholders. ``system_prompt``: None adds ``DEFAULT_SYSTEM_PROMPT`` unless the prompt has a
    system message; "" adds none; any other text sets it.

    >>> msgs = build_messages({"question": "Which?"}, [], system_prompt="")
    >>> msgs
    [{'role': 'user', 'content': [{'type': 'text', 'text': 'Which?'}]}]
    """
    prompt = row_prompt(example)
    if prompt is None:
        raise ValueError(f"example has no prompt or question field (keys: {sorted(example)})")
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else copy.copy(list(prompt))
    messages = [dict(m) for m in messages]
    has_system = bool(messages) and messages[0].get("role") == "system"
    if system_prompt is None and not has_system:
        messages.insert(0, {"role": "system", "content": DEFAULT_SYSTEM_PROMPT})
    elif system_prompt:
        if has_system:
            messages[0]["content"] = system_prompt
        else:
            messages.insert(0, {"role": "system", "content": system_prompt})
    pending = list(images)
    for message in messages:
        if isinstance(message.get("content"), list):
            blocks = []
            for block in message["content"]:
                if block.get("type") == "image" and "image" not in block and pending:
                    block = {**block, "image": pending.pop(0)}
                blocks.append(block)
            message["content"] = blocks
    first_user = next((m for m in messages if m["role"] == "user"), None)
    if first_user is None:
        raise ValueError("the prompt has no user message")
    if isinstance(first_user["content"], str):
        first_user["content"] = [{"type": "text", "text": first_user["content"]}]
    first_user["content"] = [{"type": "image", "image": img} for img in pending] + first_user["content"]
    return messages


def _append_observation(messages: list[dict], observation: str | list | None) -> None:
    """Add ``reset``'s observation to the last message, as TRL does."""
    if not observation:
        return
    blocks = [{"type": "text", "text": observation}] if isinstance(observation, str) else observation
    last = messages[-1]
    content = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
    messages[-1] = {**last, "content": content + blocks}


def _open_episode(index: int, example: dict, factory: Callable, tools: list[dict],
                  system_prompt: str | None, max_images: int, decode: bool = True) -> Episode:
    env = factory()
    try:
        images = load_example_images(example, decode=decode)
        row = {**example, "images": images} if images else example
        messages = build_messages(example, images, system_prompt)
        _append_observation(messages, env.reset(**row))
        episode = Episode(index, env, messages, tools, images=image_blocks_in(messages))
        if len(episode.images) > max_images:
            _stop(episode, "max_images")
        return episode
    except Exception as err:  # a broken row ends its own episode, not the run
        logger.warning("example %d could not start: %r", index, err, exc_info=True)
        episode = Episode(index, env, [], tools)
        episode.stop_reason, episode.error = "error", f"{type(err).__name__}: {err}"
        return episode


def _stop(episode: Episode, reason: str, error: str | None = None) -> None:
    episode.stop_reason = reason
    episode.error = error


def _run_tools(episode: Episode, calls: list[dict] | None, unparsed: bool) -> list[dict]:
    """Execute a turn's tool calls (or answer an unparsable one); returns the tool messages."""
    env = episode.env
    if unparsed:
        text = env._fail("the tool call could not be parsed; write <tool_call>{\"name\": ..., \"arguments\": "
                         "{...}}</tool_call> with valid JSON")
        return [{"role": "tool", "name": "invalid_tool_call", "content": text}]
    messages = []
    for call in calls or []:
        function = call.get("function") if isinstance(call, dict) else None
        function = function if isinstance(function, dict) else {}
        name = function.get("name")
        try:
            result = env._call_tool(name, function.get("arguments"))
        except Exception as err:  # the env's own safety net failed; still answer the model
            logger.warning("tool %r raised: %r", name, err, exc_info=True)
            result = env._fail(f"{name} failed: {type(err).__name__}")
        messages.append({"role": "tool", "name": str(name), "content": result})
    return messages


def _after_turn(episode: Episode, turn, policy: Policy, max_turns: int, max_images: int) -> None:
    episode.num_turns += 1
    if turn.error:
        _stop(episode, "error", turn.error)
        return
    message = turn.message
    episode.messages.append(message)
    episode.truncated = turn.truncated
    calls, unparsed = message.get("tool_calls"), has_unparsed_tool_call(message)
    if not calls and not unparsed:
        _stop(episode, "answer")
        return
    if episode.num_turns >= max_turns:
        _stop(episode, "max_turns")
        return
    tool_messages = _run_tools(episode, calls, unparsed)
    new_images = image_blocks_in(tool_messages)
    if len(episode.images) + len(new_images) > max_images:
        _stop(episode, "max_images")
        return
    episode.messages += tool_messages
    episode.images += new_images
    try:
        policy.extend(episode, tool_messages)
    except Exception as err:
        logger.warning("episode %d: the policy could not take the tool results: %r", episode.index, err,
                       exc_info=True)
        _stop(episode, "error", f"{type(err).__name__}: {err}")


def _generate(policy: Policy, episodes: list[Episode], max_new_tokens: int) -> list:
    from lookcloser.agent.episode import Turn

    try:
        turns = policy.generate(episodes, max_new_tokens)
    except Exception as err:
        logger.warning("generation failed for %d episodes: %r", len(episodes), err, exc_info=True)
        return [Turn({"role": "assistant", "content": ""}, error=f"{type(err).__name__}: {err}") for _ in episodes]
    return turns


def _start(policy: Policy, episode: Episode) -> None:
    if episode.stop_reason is None:
        try:
            policy.start(episode)
        except Exception as err:
            logger.warning("episode %d could not start: %r", episode.index, err, exc_info=True)
            _stop(episode, "error", f"{type(err).__name__}: {err}")


def _trajectory(episode: Episode) -> Trajectory:
    last = next((m for m in reversed(episode.messages) if m.get("role") == "assistant"), None)
    final = str(last.get("content") or "") if last else ""
    env = episode.env
    return Trajectory(
        messages=episode.messages, final_response=final, stop_reason=episode.stop_reason or "error",
        num_turns=episode.num_turns, tool_calls=getattr(env, "tool_calls", 0), tool_errors=getattr(env, "tool_errors", 0),
        images=episode.images, truncated=episode.truncated, error=episode.error, example_index=episode.index,
        tool_images=sum(1 for m in episode.messages if m.get("role") == "tool" and returned_image(m.get("content"))),
    )


def run_episodes(policy: Policy, env_cls_or_factory: type | Callable, examples: list[dict], *, max_turns: int = 8,
                 max_new_tokens_per_turn: int = 512, max_images: int = 16,
                 system_prompt: str | None = None, concurrency: int = 8) -> list[Trajectory]:
    """Play every example to the end; one ``Trajectory`` per example, in order.

    Args:
        policy: ``HFPolicy`` (all live episodes batched per turn) or ``OpenAIPolicy`` (``play_all``:
            ``concurrency`` episodes at once on one event loop), or anything following
            ``agent.episode.Policy``.
        env_cls_or_factory: An environment class or a no-argument factory (``functools.partial``).
        examples: Data-set rows; each is passed whole to the environment's ``reset``.
        max_turns: Most assistant turns per episode.
        max_new_tokens_per_turn: Token cap for each turn.
        max_images: Most images per trajectory, input images included.
        system_prompt: See ``build_messages``.
        concurrency: Endpoint episodes in flight at once.
    """
    if not policy.batched:
        return play_all(policy, env_cls_or_factory, examples, concurrency=concurrency, max_turns=max_turns,
                        max_new_tokens_per_turn=max_new_tokens_per_turn, max_images=max_images,
                        system_prompt=system_prompt)
    tools = tool_schemas(env_class(env_cls_or_factory))
    episodes = [_open_episode(i, ex, env_cls_or_factory, tools, system_prompt, max_images)
                for i, ex in enumerate(examples)]
    for episode in episodes:
        _start(policy, episode)
    live = [ep for ep in episodes if ep.stop_reason is None]
    while live:
        for episode, turn in zip(live, _generate(policy, live, max_new_tokens_per_turn)):
            _after_turn(episode, turn, policy, max_turns, max_images)
        live = [ep for ep in live if ep.stop_reason is None]
    return [_trajectory(ep) for ep in episodes]


async def play(policy, env_cls_or_factory: type | Callable, example: dict, *, index: int = 0, max_turns: int = 8,
               max_new_tokens_per_turn: int = 512, max_images: int = 16, system_prompt: str | None = None,
               tool_threads: Executor | None = None) -> Trajectory:
    """One example's episode on the running event loop, with a policy that has ``agenerate``
    (``OpenAIPolicy``): the steps of ``run_episodes``, with ``await`` where the reply comes. A turn
    with tool calls is taken in ``tool_threads`` (the loop's default executor when None): a tool
    may block (a web search) and must not stall the other episodes. The input images are checked
    but decoded only when first used (``load_example_images(decode=False)``): an endpoint is sent
    the files' own bytes. Never raises."""
    tools = tool_schemas(env_class(env_cls_or_factory))
    episode = _open_episode(index, example, env_cls_or_factory, tools, system_prompt, max_images, decode=False)
    loop = asyncio.get_running_loop()
    try:
        _start(policy, episode)
        while episode.stop_reason is None:
            turn = await policy.agenerate(episode, max_new_tokens_per_turn)
            if turn.message.get("tool_calls"):
                await loop.run_in_executor(tool_threads, _after_turn, episode, turn, policy, max_turns, max_images)
            else:
                _after_turn(episode, turn, policy, max_turns, max_images)
    except Exception as err:  # a bug in one episode must not take the others down
        logger.warning("episode %d failed: %r", episode.index, err, exc_info=True)
        _stop(episode, "error", f"{type(err).__name__}: {err}")
    return _trajectory(episode)


def play_all(policy, env_cls_or_factory: type | Callable, examples: list[dict], *, concurrency: int = 8,
             on_done: Callable | None = None, **play_kwargs) -> list[Trajectory]:
    """``play`` every example, ``concurrency`` at a time, on one event loop (in a thread of its own
    when this thread already runs one, as in a notebook); tool turns run in a pool of
    ``concurrency`` threads. ``on_done(index, trajectory, seconds)`` is called as each episode ends;
    the first error out of it (a prediction that could not be written) stops the run and is raised.
    The policy's connections are closed before the loop ends (``aclose``)."""
    trajectories: list = [None] * len(examples)

    async def main(tool_threads: Executor) -> None:
        pending = iter(enumerate(examples))

        async def worker(slot: int) -> None:
            await asyncio.sleep(slot * START_SPACING_S)
            for index, example in pending:
                start = time.monotonic()
                trajectories[index] = await play(policy, env_cls_or_factory, example, index=index,
                                                 tool_threads=tool_threads, **play_kwargs)
                if on_done is not None:
                    on_done(index, trajectories[index], time.monotonic() - start)

        tasks = [asyncio.ensure_future(worker(slot)) for slot in range(max(1, min(concurrency, len(examples))))]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await policy.aclose()

    with ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="episode-tools") as tool_threads:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the usual case: no loop running here
            asyncio.run(main(tool_threads))
        else:
            with ThreadPoolExecutor(1, thread_name_prefix="episode-loop") as loop_thread:
                loop_thread.submit(asyncio.run, main(tool_threads)).result()
    return trajectories
