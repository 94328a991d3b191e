"""Running the agent loop over a benchmark: policies, concurrency, and resumable predictions.

Every finished episode is appended to ``predictions.jsonl`` at once (flushed; one writer: the
event loop's thread or this one), so a killed run loses only the episodes in flight, and a rerun
skips what is done. Endpoint episodes run ``concurrency`` at a time as coroutines on one event loop
(``agent.loop.play_all``; the policy retries each request with backoff); local-checkpoint
episodes run ``batch_size`` at a time, batched per turn. An episode that ends in an error (the
endpoint failed after its retries, an image would not open, the context overflowed) is recorded
with ``status: "failed"`` and its error: it scores 0, is counted and listed, and a rerun tries it
again (``retry_failed``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import time
from pathlib import Path

from lookcloser.eval.config import EvalConfig
from lookcloser.eval.loaders import EvalItem

logger = logging.getLogger(__name__)


class PredictionStore:
    """An append-only JSONL file of prediction records; the last record of an id wins."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fh = None  # kept open between appends (``close``): one open per run, not per record

    def load(self) -> dict[str, dict]:
        """Records by id. A line cut short by a crash is skipped (its item simply runs again)."""
        records: dict[str, dict] = {}
        if not self.path.exists():
            return records
        for lineno, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                records[str(record["id"])] = record
            except (json.JSONDecodeError, KeyError, TypeError):
                logger.warning("%s line %d is not a complete record (interrupted write?); ignoring it",
                               self.path, lineno)
        return records

    def append(self, record: dict) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - until close()
            self._fh.seek(0, os.SEEK_END)
            if self._fh.tell():  # a torn last line from a crash must not swallow this record
                self._fh.seek(self._fh.tell() - 1)
                if self._fh.read(1) != "\n":
                    self._fh.write("\n")
        self._fh.write(line)
        self._fh.flush()  # in the OS's hands now: a killed process loses nothing written

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


# -- policies --

def is_endpoint(model: str) -> bool:
    return model.startswith(("http://", "https://"))


def served_model(base: str, cfg: EvalConfig) -> str:
    """The name to request: ``--served_model_name``, else the one model ``GET /models`` lists.

    The endpoint is asked either way, so that one that cannot be reached stops the run here, in
    seconds. With a name given, any HTTP reply will do (``transformers serve`` pins one model and may
    answer 500 there; listing models is optional in the API), and a list that lacks the name is an
    error. Without one, a failed, empty or unreadable list is an error naming ``--served_model_name``
    (requesting a made-up name fails every item on a server that pins its model).
    """
    from http import HTTPStatus

    from lookcloser import http_client
    from lookcloser.eval.loaders import EvalError

    url = http_client.api_url(base, "models")
    name = cfg.served_model_name
    with http_client.client(min(10.0, cfg.request_timeout)) as http:
        request = http.build_request("GET", url, headers=http_client.bearer(cfg.api_key_env))
        try:
            reply = http_client.send(http, request, retries=0, backoff=0.0)
            status = reply.status_code
        except http_client.RequestFailed as err:
            if err.status is None:
                raise EvalError(f"cannot reach the endpoint {base} ({err.why}): is the server up?") from err
            status = err.status
    try:
        models = [str(m["id"]) for m in reply.json()["data"]] if status == 200 else None
    except Exception:  # noqa: BLE001 - a reply that is no model list: treated as no list
        models = None
    if name:
        if models and name not in models:
            raise EvalError(f"--served_model_name {name}: the endpoint {base} serves {', '.join(models)} "
                            f"(GET {url})")
        return name
    if models is None:
        try:
            what = "no model list" if status == 200 else f"HTTP {status} {HTTPStatus(status).phrase}"
        except ValueError:  # a status outside the standard's
            what = f"HTTP {status}"
        raise EvalError(f"GET {url} answered {what}: name the served model with --served_model_name NAME")
    if not models:
        raise EvalError(f"the endpoint {base} lists no models (GET {url}): name the served model with "
                        "--served_model_name NAME")
    return models[0]


def build_policy(cfg: EvalConfig):
    """``OpenAIPolicy`` for an endpoint URL, else ``HFPolicy`` on a local/hub checkpoint."""
    if is_endpoint(cfg.model):
        from lookcloser.agent.openai_policy import OpenAIPolicy
        from lookcloser.http_client import api_base

        base = api_base(cfg.model)
        return OpenAIPolicy(base, served_model(base, cfg), api_key_env=cfg.api_key_env, timeout=cfg.request_timeout,
                            retries=cfg.request_retries, backoff=cfg.retry_backoff, temperature=cfg.temperature,
                            pools=cfg.concurrency // 8)
    import torch

    from lookcloser.agent.hf_policy import HFPolicy
    from lookcloser.agent.models import load_model, load_processor
    from lookcloser.agent.template_files import read_template

    device = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = cfg.dtype if cfg.dtype != "auto" else ("bfloat16" if device.startswith("cuda") else "float32")
    model = load_model(cfg.model, dtype=dtype).to(device).eval()
    kwargs = {"do_sample": True, "temperature": cfg.temperature} if cfg.temperature > 0 else {}
    processor = load_processor(cfg.model, chat_template=read_template(cfg.chat_template_path))
    return HFPolicy(model, processor, generation_kwargs=kwargs)


def env_factory(benchmark: str, cfg: EvalConfig, embedder=None):
    """The benchmark's environment (its tools), or ``NoToolsEnv`` when tools are off."""
    from lookcloser.agent.environments import (
        ALIASES,
        ENVIRONMENT_NAMES,
        PhotoCollectionEnv,
        environment_class,
        with_tool_set,
    )
    from lookcloser.agent.toolkit import NoToolsEnv

    if not cfg.tools:
        return NoToolsEnv
    from lookcloser.eval.benchmarks import SPECS

    name = with_tool_set(cfg.environment or SPECS[benchmark].environment, cfg.tool_set)
    if name not in ENVIRONMENT_NAMES:
        from lookcloser.eval.loaders import EvalError  # a user's setting: one `error:` line

        raise EvalError(f"unknown environment {name!r}; choose from {sorted(ENVIRONMENT_NAMES)}")
    env_cls = environment_class(name)
    if name in ALIASES:  # the python tool, e.g. recorded by a checkpoint: the sandbox must run here, or nothing does
        from lookcloser.agent.sandbox import sandbox_problem
        from lookcloser.eval.loaders import EvalError

        if sandbox_problem():
            raise EvalError(f"{benchmark}: environment {name}: {sandbox_problem()}")
    if issubclass(env_cls, PhotoCollectionEnv):  # the photo tools: eval's embedder and index cache
        return functools.partial(env_cls, embedder=embedder, cache_dir=cfg.photo_index_dir)
    return env_cls




# -- running --

def trajectory_name(item_id: str) -> str:
    """A file-safe, unique name for an item's trajectory.

    >>> trajectory_name("17"), trajectory_name("a/b")
    ('17', 'a_b-3ec69c')
    """
    safe = re.sub(r"[^\w.-]", "_", item_id)[:80]
    return safe if safe == item_id else f"{safe}-{hashlib.sha1(item_id.encode()).hexdigest()[:6]}"


def _record(item: EvalItem, trajectory, attempt: int, seconds: float, out_dir: Path, save: bool) -> dict:
    record = {
        "id": item.id, "benchmark": item.benchmark,
        "status": "failed" if trajectory.stop_reason == "error" else "ok",
        "response": trajectory.final_response, "stop_reason": trajectory.stop_reason,
        "num_turns": trajectory.num_turns, "tool_calls": trajectory.tool_calls,
        "tool_errors": trajectory.tool_errors, "tool_images": trajectory.tool_images,
        "truncated": trajectory.truncated, "error": trajectory.error,
        "attempt": attempt, "seconds": round(seconds, 3),
    }
    if save and trajectory.messages:
        try:
            path = trajectory.to_json(out_dir / "trajectories", trajectory_name(item.id))
            record["trajectory"] = str(path.relative_to(out_dir))
        except Exception as err:  # noqa: BLE001 - a trajectory we cannot write must not lose the prediction
            logger.warning("could not save the trajectory of %s: %r", item.id, err)
    return record


def _failed(item: EvalItem, error: str, attempt: int, seconds: float) -> dict:
    return {"id": item.id, "benchmark": item.benchmark, "status": "failed", "response": "", "stop_reason": "error",
            "num_turns": 0, "tool_calls": 0, "tool_errors": 0, "truncated": False, "error": error,
            "attempt": attempt, "seconds": round(seconds, 3)}


class _Progress:
    def __init__(self, name: str, total: int, done: int) -> None:
        self.name, self.total, self.done, self.failed = name, total, done, 0
        self.start = self.last = time.monotonic()
        self.new = 0

    def update(self, record: dict) -> None:
        self.done, self.new = self.done + 1, self.new + 1
        self.failed += record["status"] != "ok"
        now = time.monotonic()
        if now - self.last >= 10 or self.done == self.total or self.new == 1:
            self.last = now
            rate = self.new / max(now - self.start, 1e-9)
            left = (self.total - self.done) / max(rate, 1e-9)
            logger.info("[%s] %d/%d done, %d failed this run, %.2f items/s, ETA %s", self.name, self.done,
                        self.total, self.failed, rate, _duration(left))


def _duration(seconds: float) -> str:
    """A short human duration.

    >>> _duration(0), _duration(75), _duration(4000)
    ('0s', '1m15s', '1h06m')
    """
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def run_benchmark(benchmark: str, items: list[EvalItem], policy, cfg: EvalConfig, out_dir: str | Path,
                  factory) -> dict[str, dict]:
    """Run every item not yet done in ``out_dir/predictions.jsonl``; return all records by id."""
    from lookcloser.agent.loop import play_all, run_episodes

    out_dir = Path(out_dir)
    store = PredictionStore(out_dir / "predictions.jsonl")
    previous = store.load()
    items = [it for it in items if not it.bad]  # a record that did not load is scored failed, never run
    pending = [it for it in items if it.id not in previous
               or (previous[it.id].get("status") != "ok" and cfg.retry_failed)]
    logger.info("[%s] %d items: %d already done, %d to run", benchmark, len(items), len(items) - len(pending),
                len(pending))
    progress = _Progress(benchmark, len(items), len(items) - len(pending))
    loop_kwargs = {"max_turns": cfg.turns(benchmark), "max_new_tokens_per_turn": cfg.max_new_tokens_per_turn,
                   "max_images": cfg.max_images, "system_prompt": cfg.system_prompt}

    def write(chunk: list[EvalItem], outcome: list | Exception, seconds: float) -> None:
        """Record a chunk's trajectories (or the error that ended them all) and count them."""
        attempts = [int(previous.get(it.id, {}).get("attempt", 0)) + 1 for it in chunk]
        try:
            if isinstance(outcome, Exception):
                raise outcome
            records = [_record(it, tr, attempt, seconds, out_dir, cfg.save_trajectories)
                       for it, tr, attempt in zip(chunk, outcome, attempts)]
        except Exception as err:  # the loop should not raise; if it does, record, don't drop
            logger.warning("[%s] episodes %s raised %r", benchmark, [it.id for it in chunk], err, exc_info=True)
            records = [_failed(it, f"{type(err).__name__}: {err}", attempt, seconds)
                       for it, attempt in zip(chunk, attempts)]
        for record in records:
            store.append(record)
            progress.update(record)

    try:
        if policy.batched:
            size = max(1, cfg.batch_size)
            for start in range(0, len(pending), size):
                chunk, began = pending[start:start + size], time.monotonic()
                try:
                    outcome = run_episodes(policy, factory, [it.example for it in chunk], **loop_kwargs)
                except Exception as err:  # noqa: BLE001 - recorded as failed by write(), never dropped
                    outcome = err
                write(chunk, outcome, (time.monotonic() - began) / len(chunk))
        elif pending:  # an endpoint: its episodes as coroutines on one event loop
            play_all(policy, factory, [it.example for it in pending], concurrency=cfg.concurrency,
                     on_done=lambda index, trajectory, seconds: write([pending[index]], [trajectory], seconds),
                     **loop_kwargs)
    finally:
        store.close()
    return store.load()
