"""What the code tool's programs can reach, and what a checkpoint copies into them (docs/grpo.md, "Code tool").

``programs``: generates synthetic items of a seed (one no recipe trains or reports on) and solves each with the
program grammar's plans (``agent.code_programs.KINDS``) in the real sandbox, as the oracle does: how often a
plan printed the gold answer, and for rotation_game how many items hold two options a quarter turn apart (a
square picture looks the same then: a tie no program breaks). For jigsaw it also counts the items whose
scrambled image holds two identical pieces: two such pieces can swap places, so the picture does not determine
the answer and no program can be exact (the bundled pictures often; the procedural ones never).

``heldout``: the same on the items of a held-out folder: the score a policy that copies the program reaches
there.

``copies``: reads the trajectories ``python -m eval`` saved and counts, per kind (spot_difference with a stated
grid, rotation_game), the episodes whose programs neither read (``stated_grid(question)``, ``options(question)``)
nor repeat the question's grid or options, and those whose answer is not the line the last program printed.

Prints one JSON object.

    python bench/probe_code_tool.py programs --seed 11 --count 200 --pictures procedural --out /tmp/probe_programs
    python bench/probe_code_tool.py heldout /tmp/h3740 --out /tmp/probe_3740
    python bench/probe_code_tool.py copies /tmp/e3739-sft /tmp/e3739-grpo
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

SEAM = 2  # the white seams make_jigsaw draws between pieces: compared without them


def _count(kind: dict, item, out: Path) -> None:
    """Run ``item``'s program as the oracle does; count whether it printed the gold answer."""
    from lookcloser.agent.oracle import oracle_trajectory

    kind["items"] += 1
    solved = oracle_trajectory(item, out, "crop+python")  # an exact kind's miss raises
    kind["right"] += solved is not None
    if solved is not None:  # the plan's shape: how many python calls it made
        calls = sum(bool(m.get("tool_calls")) for m in solved["messages"])
        kind[f"{calls}_calls"] = kind.get(f"{calls}_calls", 0) + 1
    if item.record["task"] == "rotation_game":
        meta = item.record["meta_data"]
        kind["ties"] = kind.get("ties", 0) + any(o != meta["angle"] and (o - meta["angle"]) % 90 == 0
                                                 for o in meta["options"])


def _shares(result: dict) -> dict:
    for kind in result.values():
        if isinstance(kind, dict):
            kind.update({f"{k}_share": round(v / kind["items"], 3) for k, v in list(kind.items()) if k != "items"})
    return result


def heldout_reach(data_root: str, out: str) -> dict:
    """Each program's score on the items of a held-out folder (``python -m data_builders heldout``): the
    ceiling of a policy that copies it."""
    from lookcloser.agent.code_oracle import KINDS
    from lookcloser.data_builders.synthetic import SyntheticItem
    from lookcloser.eval.loaders import load_benchmark

    result: dict = {"data_root": data_root}
    for item in load_benchmark("tir_bench", Path(data_root) / "tir_bench"):  # eval's reader: paths checked
        record = item.gold["record"]
        if record["task"] in KINDS:
            images = [Path(p) for p in item.example["images"]]
            _count(result.setdefault(record["task"], {"items": 0, "right": 0}), SyntheticItem(record, images), Path(out))
    return _shares(result)


def program_reach(seed: int, count: int, out: str, pictures: str = "procedural") -> dict:
    """Each kind's items of ``seed`` solved by the grammar's plans in the sandbox (``pictures``: the procedural
    source, or ``folder``: the bundled pictures)."""
    import numpy as np
    from PIL import Image

    from lookcloser.agent.code_oracle import KINDS
    from lookcloser.data_builders.grpo_rows import source_pictures
    from lookcloser.data_builders.synthetic import SyntheticConfig, generate_items

    source = None if pictures == "procedural" else source_pictures(None, out, seed)
    result: dict = {"seed": seed, "pictures": pictures}
    for task in KINDS:
        folder = Path(out) / task
        kind = result.setdefault(task, {"items": 0, "right": 0})
        cfg = SyntheticConfig(seed=seed, tasks=(task,), base_size=256, pictures=pictures)
        for item in generate_items(source, folder, count, cfg):
            _count(kind, item, folder)
            if task != "jigsaw":
                continue
            n = item.record["meta_data"]["difficulty"]
            with Image.open(item.image_paths[0]) as opened:
                pixels = np.asarray(opened.convert("RGB"))
            h, w = pixels.shape[0] // n, pixels.shape[1] // n
            pieces = {pixels[r * h + SEAM:(r + 1) * h - SEAM, c * w + SEAM:(c + 1) * w - SEAM].tobytes()
                      for r in range(n) for c in range(n)}
            kind["with_identical_pieces"] = kind.get("with_identical_pieces", 0) + (len(pieces) < n * n)
    return _shares(result)


def copy_errors(eval_dirs: list[str]) -> dict:
    result = {}
    for folder in eval_dirs:
        kinds: dict = {}
        for path in sorted(Path(folder, "tir_bench", "trajectories").glob("*.json")):
            saved = json.loads(path.read_text(encoding="utf-8"))
            messages = saved["messages"] if isinstance(saved, dict) else saved
            question = " ".join(b.get("text", "") for b in messages[0]["content"] if b.get("type") == "text")
            calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
            code = "\n".join(c["function"]["arguments"].get("code", "") for c in calls)
            if "CLOCKWISE" in question:  # the options: read from the question's text, or copied as a list
                kind, wanted = "rotation_game", re.findall(r"\n[A-J]\. (\d+)°", question)
                copied = "options(question)" in code or any(
                    re.findall(r"\d+", listed) == wanted for listed in re.findall(r"=\[([\d,]*)\]", code))
            elif stated := re.search(r"n is (\d+) and m is (\d+)", question):  # the grid: read, or copied
                kind, wanted = "spot_difference", stated.groups()  # into changed(a,b,n,m or n,m=
                copied = "stated_grid(question)" in code or wanted in re.findall(
                    r"changed\(\w+,\s*\w+,\s*(\d+),\s*(\d+)", code) + re.findall(r"n,\s*m\s*=\s*(\d+),\s*(\d+)", code)
            else:
                continue
            results = [m for m in messages if m["role"] == "tool"]
            shown = results[-1]["content"] if results else None  # a block list, or an error line
            printed = (shown if isinstance(shown, str) else shown[0]["text"]).split("Output:\n", 1)[-1].strip() \
                if results else None
            answer = re.search(r"<answer>(.*?)</answer>", messages[-1].get("content") or "", re.DOTALL)
            counts = kinds.setdefault(kind, {"episodes": 0, "no_call": 0, "question_miscopied": 0,
                                             "answer_not_printed": 0})
            counts["episodes"] += 1
            counts["no_call"] += not calls
            counts["question_miscopied"] += bool(calls) and not copied
            counts["answer_not_printed"] += bool(calls) and (answer.group(1).strip() if answer else None) != printed
        result[folder] = kinds
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    programs = commands.add_parser("programs", help="each program's reach on a seed's items (real sandbox)")
    programs.add_argument("--seed", type=int, default=11)
    programs.add_argument("--count", type=int, default=200)
    programs.add_argument("--out", required=True, help="folder for the generated items")
    programs.add_argument("--pictures", choices=("procedural", "folder"), default="procedural",
                          help="the procedural source, or the bundled pictures")
    heldout = commands.add_parser("heldout", help="each program's score on a held-out folder's items (real sandbox)")
    heldout.add_argument("data_root", help="a folder python -m data_builders heldout wrote (tir_bench/TIR-Bench.json)")
    heldout.add_argument("--out", required=True, help="folder for the programs' tool images")
    copies = commands.add_parser("copies", help="copy errors in saved eval trajectories")
    copies.add_argument("eval_dirs", nargs="+", help="python -m eval output folders (tir_bench/trajectories)")
    args = parser.parse_args()
    if args.command == "programs" and args.count < 1:
        parser.error(f"--count {args.count}: must be at least 1")
    for folder in getattr(args, "eval_dirs", []):
        if not Path(folder, "tir_bench", "trajectories").is_dir():
            parser.error(f"{folder}: no tir_bench/trajectories folder (python -m eval with --save_trajectories true)")
    if args.command == "heldout" and not Path(args.data_root, "tir_bench", "TIR-Bench.json").is_file():
        parser.error(f"{args.data_root}: no tir_bench/TIR-Bench.json (python -m data_builders heldout --benchmarks tir_bench)")
    result = (program_reach(args.seed, args.count, args.out, args.pictures) if args.command == "programs"
              else heldout_reach(args.data_root, args.out) if args.command == "heldout"
              else copy_errors(args.eval_dirs))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
