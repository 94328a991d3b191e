"""What produced an output folder's predictions: the model's content and the settings that shape answers.

A resume continues only predictions with the same fingerprint, so a checkpoint retrained in
place (same path, new weights) or a changed setting never brings back old answers. Local
checkpoints are keyed by their files' content (config, weights, adapter); endpoints by URL and
served model name; hub ids by name and revision.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from lookcloser.checkpoint_digest import checkpoint_digest

# Settings that change what the model answers (not how fast, where to, or how it is scored).
ANSWER_SETTINGS = ("data_root", "tools", "max_turns", "max_new_tokens_per_turn", "max_images", "temperature",
                   "system_prompt", "mir_prompt_stage", "search_corpus", "photo_embedder", "served_model_name",
                   "dtype", "gray_images")


def model_fingerprint(model: str, revision: str | None = None) -> str:
    """A short digest of what ``model`` is right now.

    >>> model_fingerprint("http://127.0.0.1:8000/v1") == model_fingerprint("http://127.0.0.1:8000/v1")
    True
    """
    path = Path(model).expanduser()
    if path.is_dir():
        return checkpoint_digest(path)
    return hashlib.sha256(f"{model}@{revision or ''}".encode()).hexdigest()[:16]


def run_fingerprint(cfg, served_name: str | None = None, per_benchmark: dict | None = None) -> dict:
    """The fingerprint stored in ``out/run.json``: the model's digest and the answer-shaping settings
    (with each benchmark's own, where the checkpoint records them)."""
    settings = {k: v for k, v in dataclasses.asdict(cfg).items() if k in ANSWER_SETTINGS}
    if per_benchmark:
        settings["per_benchmark"] = {name: dict(sorted(entry.items())) for name, entry in sorted(per_benchmark.items())}
    if served_name:
        settings["served_model_name"] = served_name
    if cfg.tool_set != "image":  # recorded only when set: folders written before the key still resume
        settings["tool_set"] = cfg.tool_set
    return {"model": cfg.model, "model_digest": model_fingerprint(cfg.model), "settings": settings}


def differences(old: dict | None, new: dict) -> list[str]:
    """What changed between two fingerprints, in words.

    >>> differences({"model": "m", "model_digest": "a", "settings": {"tools": True}},
    ...             {"model": "m", "model_digest": "b", "settings": {"tools": False}})
    ['the model at m changed (weights or config)', 'tools: True -> False']
    """
    if not old:
        return ["no fingerprint recorded (written by an older version)"]
    changes = []
    if old.get("model") != new["model"]:
        changes.append(f"model {old.get('model')!r} -> {new['model']!r}")
    elif old.get("model_digest") != new["model_digest"]:
        changes.append(f"the model at {new['model']} changed (weights or config)")
    previous = old.get("settings", {})
    changes += [f"{k}: {previous.get(k)!r} -> {v!r}" for k, v in new["settings"].items() if previous.get(k) != v]
    if "tool_set" in previous and "tool_set" not in new["settings"]:
        changes.append(f"tool_set: {previous['tool_set']!r} -> 'image'")
    return changes
