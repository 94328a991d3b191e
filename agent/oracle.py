"""Oracle tool trajectories: a synthetic task's right tool calls run through the agent's own tools.

``build_synthetic`` writes a folder of synthetic TIR-Bench-format tasks (``data_builders/synthetic.py``)
with, for each, the GRPO prompt and the oracle SFT trajectory (``data_builders/tool_sft.py`` shapes
the records). Tool results are rendered by the agent's ``ImageToolEnv`` (the tools GRPO trains
with), so the cold start sees exactly the pictures and texts it will see later. It lives in the
agent layer because it runs the agent's tools; ``python -m data_builders synthetic`` calls it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from lookcloser.agent.code_oracle import KINDS, solve_with_python
from lookcloser.agent.environments import environment_class
from lookcloser.agent.environments import tool_schemas as env_tool_schemas
from lookcloser.agent.photo_env import listed_ids
from lookcloser.agent.toolkit import call_failed, tool_names
from lookcloser.data_builders.search_tasks import LAST_LISTING
from lookcloser.data_builders.synthetic import SyntheticConfig, SyntheticItem
from lookcloser.data_builders.tool_sft import call_message, final_message, user_message


def check_program_tasks(tasks, environment: str, name: str = "tasks") -> None:
    """The kinds no image tool solves (``data_builders.program_tasks``: the oracle has no tool steps for them) are
    built only for an environment that offers ``python``: elsewhere a trajectory would answer without a call."""
    from lookcloser.data_builders.program_tasks import PROGRAM_TASKS
    from lookcloser.errors import RecipeError

    need = [t for t in PROGRAM_TASKS if t in (tasks or ())]
    if need and "python" not in tool_names(environment_class(environment)):
        raise RecipeError(f"{name}: {', '.join(need)} are solved with the python tool, which environment "
                          f"{environment!r} does not offer (choose one with python, e.g. crop+python)")


def tool_schemas(environment: str = "tir_bench") -> list[dict]:
    """JSON schemas of an environment's tools (``agent.environments.environment_class``), exactly as TRL's
    GRPO and ``agent.loop`` show them to the model."""
    return env_tool_schemas(environment_class(environment))


def oracle_trajectory(item: SyntheticItem, out_dir: str | Path, environment: str = "tir_bench") -> dict | None:
    """Run the oracle's tool calls through the tool environment; return one SFT record.

    Tool-result images are saved as ``oracle/{id:06d}_{k}.png`` under ``out_dir``. With an environment that
    offers ``python`` (``synthetic+python``), a task that programs solve is solved by the python calls of a plan
    composed for the item (``agent.code_programs``), run in the real sandbox, and the answer copies what the last
    call printed. None where no plan printed the answer of a kind whose programs may miss (rotation_game's tie
    of two options a quarter turn apart): a trajectory never teaches copying a wrong answer.
    """
    images = [str(p) for p in item.image_paths]
    env, messages = open_oracle_episode(environment, item.record["prompt"], images)
    tag = f"{item.record['id']:06d}"
    if "python" in tool_names(type(env)) and item.record["task"] in KINDS:
        final_think = solve_with_python(item, messages, images, lambda step, fails: render_steps(
            env, [step], messages, images, Path(out_dir), tag, fails=fails))
        if final_think is None:
            if KINDS[item.record["task"]].exact:  # the oracle's own bug
                raise RuntimeError(f"item {item.record['id']}: no {item.record['task']} program printed the answer "
                                   f"{item.answer_text!r}")
            return None
    else:
        render_steps(env, item.steps, messages, images, Path(out_dir), tag)
        final_think = item.final_think
    messages.append(final_message(final_think, item.answer_text))
    return {"messages": messages, "images": images, "task": item.record["task"], "id": str(item.record["id"])}


def open_oracle_episode(environment: str, question: str, images: list[str], example: dict | None = None) -> tuple:
    """A fresh environment reset on the row (``example`` + ``images``) and the question turn: the images,
    the question, then the reset observation as a text block, as TRL's GRPO appends it (the cold-start
    SFT prompt must read exactly as the GRPO prompt)."""
    env = environment_class(environment)()
    observation = env.reset(**{"question": question, **(example or {}), "images": list(images)})
    messages = [user_message(len(images), question)]
    if observation:
        messages[0]["content"].append({"type": "text", "text": observation})
    return env, messages


def render_steps(env, steps: list, messages: list[dict], images: list[str], out_dir: Path, tag: str,
                 fails: bool = False) -> None:
    """Run the oracle's tool turns through ``env``: append each assistant turn and its tools' results
    (as the agent loop shows them) to ``messages``; tool images go to ``out_dir/oracle/{tag}_{k}.png``
    and onto ``images``. A failing call is the oracle's own bug: it raises; ``fails``: the calls are a
    deliberate mistake (a program trajectory's ``fix``), and one that does not fail raises."""
    for step in steps:
        messages.append(call_message(step))
        for name, args in step.calls:
            result = env._call_tool(name, args)
            if call_failed(result) != fails:
                raise RuntimeError(f"oracle call {name}({args}) {'ran' if fails else 'failed'} on item {tag}: {result}")
            if isinstance(result, str):
                messages.append({"role": "tool", "name": name, "content": result})
                continue
            blocks = []
            for block in result:
                if block["type"] == "image":
                    path = out_dir / "oracle" / f"{tag}_{len(images) + 1}.png"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    block["image"].save(path)
                    images.append(str(path))
                    blocks.append({"type": "image"})
                else:
                    blocks.append({"type": "text", "text": block["text"]})
            messages.append({"role": "tool", "name": name, "content": blocks})


def search_trajectory(task, environment: str, out_dir: str | Path, shortcut: bool = False) -> dict:
    """One SFT record of a ``data_builders.search_tasks.SearchTask``: its oracle plan (or its shortcut)
    run through the environment ``environment``; the prompt reads as the GRPO row's and eval's."""
    images = list(task.images)
    env, messages = open_oracle_episode(environment, task.question, images, task.example)
    steps, think, answer = ((task.shortcut_steps, task.shortcut_think, task.shortcut_answer) if shortcut
                            else (task.steps, task.final_think, task.answer_text))
    render_steps(env, steps, messages, images, Path(out_dir), f"{task.benchmark}_{task.id}")
    if answer == LAST_LISTING:
        answer = json.dumps(listed_ids(messages[-1]["content"]))
    messages.append(final_message(think, answer))
    return {"messages": messages, "images": images, "task": task.task, "id": task.id,
            "tools": json.dumps(tool_schemas(environment))}


DIRECT_THINK = "I answer from the picture as it is."


def direct_trajectory(trajectory: dict) -> dict:
    """The same task answered at once, without a tool: the question turn and the oracle's answer.

    >>> t = {"messages": [user_message(1, "q"), {"role": "assistant", "content": "call"},
    ...                   {"role": "tool", "content": "crop"}, {"role": "assistant", "content": "<answer>C</answer>"}],
    ...      "images": ["a.png", "crop.png"], "task": "visual_search", "id": "7"}
    >>> d = direct_trajectory(t)
    >>> [m["role"] for m in d["messages"]], d["messages"][1]["content"], d["images"]
    (['user', 'assistant'], '<think>I answer from the picture as it is.</think><answer>C</answer>', ['a.png'])
    """
    answer = trajectory["messages"][-1]["content"].rsplit("<answer>", 1)[-1].removesuffix("</answer>")
    n_inputs = sum(1 for b in trajectory["messages"][0]["content"] if isinstance(b, dict) and b.get("type") == "image")
    return {**trajectory, "messages": [trajectory["messages"][0], final_message(DIRECT_THINK, answer)],
            "images": trajectory["images"][:n_inputs]}


def build_synthetic(image_dir: str | Path, out_dir: str | Path, count: int, cfg: SyntheticConfig | None = None, *,
                    fmt: str = "hf", report=None, max_pixels: int | None = None, progress: bool = True,
                    environment: str = "tir_bench", direct_ratio: float = 0.0, copy_drills: int = 0,
                    sft_share: dict[str, float] | None = None) -> dict:
    """Write the TIR-Bench JSON + images, the GRPO prompt data set and the oracle SFT data set.

    Layout: ``TIR-Bench.json`` (also as ``tir_synthetic.json``) and ``data/{task}/`` (TIR-Bench's own layout: the JSON's image
    paths resolve from ``out_dir``), ``oracle/`` (tool-result images), ``grpo/`` and ``sft/``.
    ``look/`` (tasks whose last tool image answers the question alone, e.g. visual_search): that
    image and the question, for reading before calling.
    ``environment``: the agent environment whose tools the oracle calls and the SFT ``tools`` column
    lists (``crop`` for the tool curriculum; it must offer every tool the tasks' oracles use).
    ``direct_ratio``: the share of ``sft/`` records (drawn with the config's seed) that answer at once,
    without a tool (``direct_trajectory``); ``look/`` and ``grpo/`` keep every task.
    ``copy_drills``: per python-tool trajectory, that many ``agent.code_oracle.copy_drill`` records in
    ``copy/`` (drawn with the config's seed): the warm-up on its copies before the cold start.
    ``sft_share``: per task kind, the share of its solved items (drawn with the config's seed) whose
    trajectory goes into ``sft/``; the others still make their ``grpo/`` row, drills and ``look/`` record, so
    the cold start leaves that kind partly to GRPO. Kinds not named: every trajectory.
    What an earlier build wrote there is removed first, and a build that fails or is interrupted
    removes what it wrote (``BUILD_ENTRIES``).
    """
    check_program_tasks((cfg or SyntheticConfig()).tasks, environment)  # before anything is written
    out = Path(out_dir)
    made = [p for p in (out, *out.parents) if not p.exists()]  # folders this build creates
    remove_build(out)  # a rebuild keeps no image of an earlier build (a larger or cancelled one)
    out.mkdir(parents=True, exist_ok=True)
    try:
        return _build_synthetic(image_dir, out, count, cfg, fmt=fmt, report=report, max_pixels=max_pixels,
                                progress=progress, environment=environment, direct_ratio=direct_ratio,
                                copy_drills=copy_drills, sft_share=sft_share or {})
    except BaseException:  # failed or Ctrl-C: no half-built folder (its images would look like a build)
        remove_build(out)
        for folder in made:
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        raise


# What build_synthetic writes in its folder (and nothing else: the folder may hold other files).
BUILD_ENTRIES = ("data", "oracle", "grpo", "sft", "look", "copy", "tir_synthetic.json", "TIR-Bench.json")


def remove_build(out: Path) -> None:
    import shutil

    for name in BUILD_ENTRIES:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def _build_synthetic(image_dir, out: Path, count: int, cfg: SyntheticConfig | None, *, fmt: str, report,
                     max_pixels: int | None, progress: bool, environment: str, direct_ratio: float,
                     copy_drills: int, sft_share: dict[str, float]) -> dict:
    from tqdm import tqdm

    from lookcloser.agent.code_oracle import copy_drill
    from lookcloser.data_builders.output import DatasetWriter
    from lookcloser.data_builders.synthetic import generate_items
    from lookcloser.data_builders.tool_sft import grpo_features, grpo_prompt, look_record, sft_features

    tools_json = json.dumps(tool_schemas(environment))
    records, looks, drills = [], [], []
    direct = random.Random(f"direct-{(cfg or SyntheticConfig()).seed}")
    drill_rng = random.Random(f"drill-{(cfg or SyntheticConfig()).seed}")
    # Its own stream, drawn only for the named kinds: the other rows, drills and looks are those of a build without it.
    thin = random.Random(f"sft-share-{(cfg or SyntheticConfig()).seed}")
    with DatasetWriter(out / "grpo", grpo_features(), fmt=fmt) as grpo, \
            DatasetWriter(out / "sft", sft_features(), fmt=fmt, batch_rows=200) as sft:
        items = generate_items(image_dir, out, count, cfg, report=report, max_pixels=max_pixels)
        for item in tqdm(items, total=count, desc="synthetic", unit="item", disable=None if progress else True):
            records.append(item.record)
            grpo.add(grpo_prompt(item))
            if (solved := oracle_trajectory(item, out, environment)) is None:
                continue  # the GRPO row stays: the policy may still get it right
            trajectory = {**solved, "tools": tools_json}
            answer_at_once = direct.random() < direct_ratio
            if item.record["task"] not in sft_share or thin.random() < sft_share[item.record["task"]]:
                sft.add(direct_trajectory(trajectory) if answer_at_once else trajectory)
            if (look := look_record(item, trajectory)) is not None:
                looks.append(look)
            drills += [d for _ in range(copy_drills) if (d := copy_drill(item, trajectory, drill_rng)) is not None]
    # The warm-ups: on tool images alone (the tool curriculum's `look` stage); on a program's copies
    # (the code curriculum's `copy` stage).
    for name, rows in (("look", looks), ("copy", drills)):
        if rows:
            with DatasetWriter(out / name, sft_features(), fmt=fmt) as writer:
                for row in rows:
                    writer.add(row)
    text = json.dumps(records, ensure_ascii=False, indent=1) + "\n"
    # TIR-Bench.json: the folder is a data root that `python -m eval --benchmarks tir_bench` reads.
    for name in ("tir_synthetic.json", "TIR-Bench.json"):
        (out / name).write_text(text, encoding="utf-8")
    if report is not None:
        report.rows = len(records)
    return {"tir_json": out / "tir_synthetic.json", "grpo": out / "grpo", "sft": out / "sft",
            **({"look": out / "look"} if looks else {}), **({"copy": out / "copy"} if drills else {})}
