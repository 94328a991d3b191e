"""``python -m data_builders {mir,imagenet-think,synthetic,difficulty,heldout} ... --out DIR``.

Every command writes a Hugging Face data set (``save_to_disk`` layout, or ``--format parquet``)
with a progress bar, then prints a summary: read N, written M, skipped K by reason.
``--on_error fail`` (default) stops at the first bad record, naming its file, record id and
field; ``--on_error skip`` writes each rejected record and its reason to ``--rejects``
(default ``DIR.rejects.jsonl``), so read = written + rejected. Flags are spelled with
underscores like every other command's (the dashed forms, ``--on-error``, still work).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lookcloser.data_builders.output import FORMATS, ON_ERROR, BuildReport
from lookcloser.data_builders.records import DEFAULT_MAX_PIXELS, RecordError
from lookcloser.data_builders.synthetic import SyntheticConfig
from lookcloser.recipes import FlagParser, RecipeError


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, help="output folder (replaced if it exists)")
    parser.add_argument("--format", choices=FORMATS, default="hf", help="hf: save_to_disk layout; parquet: shards")
    parser.add_argument("--on_error", choices=ON_ERROR, default="fail")
    parser.add_argument("--rejects", type=Path, default=None, help="rejects JSONL (default: OUT.rejects.jsonl)")
    parser.add_argument("--max_pixels", type=int, default=DEFAULT_MAX_PIXELS, help="refuse larger images")
    parser.add_argument("--no_progress", action="store_true")


def build_parser() -> argparse.ArgumentParser:
    parser = FlagParser(prog="python -m data_builders", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    mir = sub.add_parser("mir", help="MIR JSON -> SFT stages (one data set per stage)")
    mir.add_argument("path", type=Path, help="MIR JSON (all_data_rel.json)")
    mir.add_argument("--images_root", type=Path, default=None, help="default: the JSON's folder")
    mir.add_argument("--stages", type=int, nargs="+", default=[1, 2, 3, 4],
                     help="stages 0-4; several write OUT/stage_K, one writes OUT")
    mir.add_argument("--faithful_upstream", action="store_true", help="reproduce upstream's img2img leak")
    mir.add_argument("--no_check_images", action="store_true", help="skip opening the images (paths still checked)")
    _common(mir)

    it = sub.add_parser("imagenet-think", help="ImageNet-Think parquet shards -> <think> SFT")
    it.add_argument("paths", type=Path, nargs="+", help="parquet files or folders")
    it.add_argument("--generators", nargs="+", default=None, help="pair numbers to keep (default: every pair)")
    it.add_argument("--column_map", default=None,
                    help='JSON: {"1": {"think": "col", "answer": "col"}, ...} (overrides detection)')
    it.add_argument("--template", default="<think>{think}</think>{answer}")
    it.add_argument("--batch_rows", type=int, default=256)
    it.add_argument("--no_check_images", action="store_true")
    _common(it)

    syn = sub.add_parser("synthetic", help="images -> TIR-Bench-format tasks, GRPO prompts, oracle SFT")
    syn.add_argument("image_dir", type=Path)
    syn.add_argument("--count", type=int, required=True)
    syn.add_argument("--tasks", nargs="+", default=None, help="jigsaw rotation_game spot_difference visual_search ocr")
    syn.add_argument("--seed", type=int, default=0)
    syn.add_argument("--jigsaw_sizes", type=int, nargs="+", default=[2, 3])
    syn.add_argument("--base_size", type=int, default=SyntheticConfig.base_size)
    syn.add_argument("--canvas_size", type=int, default=SyntheticConfig.canvas_size,
                     help="ocr and free visual search canvases")
    syn.add_argument("--search_grid", type=int, default=3,
                     help="visual_search: the target's cell of an N x N grid is named and cropped with a "
                          "normalised box; 0: free search anywhere on --canvas_size, pixel box")
    syn.add_argument("--model_pixels", type=int, default=128 * 128,
                     help="visual_search: the model's input pixel budget (sizes the canvas and the shape)")
    syn.add_argument("--environment", default="tir_bench", choices=["tir_bench", "crop"],
                     help="agent environment whose tools the oracle uses (tir_bench: all image tools; crop)")
    _common(syn)

    dif = sub.add_parser("difficulty", help="pass rates -> easy/medium/hard, curriculum order, two-stage mix")
    dif.add_argument("path", type=Path, help="MIR JSON")
    dif.add_argument("--predictions", type=Path, default=None, help='JSONL {"id": ..., "predictions": [...]}')
    dif.add_argument("--model", default=None, help="sample answers from this model instead (agent loop)")
    dif.add_argument("--samples", type=int, default=10, help="answers per question when sampling")
    dif.add_argument("--max_new_tokens", type=int, default=512, help="per sampled answer")
    dif.add_argument("--images_root", type=Path, default=None)
    dif.add_argument("--recipe", type=Path, default=None,
                     help="YAML with easy_threshold, hard_threshold, hard_share, seed (flags below override)")
    dif.add_argument("--easy_threshold", type=float, default=None)
    dif.add_argument("--hard_threshold", type=float, default=None)
    dif.add_argument("--hard_share", type=float, default=None)
    dif.add_argument("--seed", type=int, default=None)
    _common(dif)
    return parser


def _difficulty_config(args):
    import yaml

    from lookcloser.data_builders.difficulty import DifficultyConfig

    settings = {}
    if args.recipe is not None:
        loaded = yaml.safe_load(args.recipe.read_text(encoding="utf-8")) or {}
        settings = {k: loaded[k] for k in ("easy_threshold", "hard_threshold", "hard_share", "seed") if k in loaded}
    for key in ("easy_threshold", "hard_threshold", "hard_share", "seed"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    return DifficultyConfig(**settings)


def run(args: argparse.Namespace) -> BuildReport:
    rejects = args.rejects or args.out.parent / f"{args.out.name}.rejects.jsonl"
    report = BuildReport(on_error=args.on_error, rejects_path=rejects if args.on_error == "skip" else None)
    progress = not args.no_progress
    try:
        if args.command == "mir":
            from lookcloser.data_builders.mir import build_mir

            outs = build_mir(args.path, args.out, report, images_root=args.images_root, stages=args.stages,
                             faithful_upstream=args.faithful_upstream, fmt=args.format,
                             check_images=not args.no_check_images, max_pixels=args.max_pixels, progress=progress)
            where = ", ".join(f"stage {k}: {v}" for k, v in outs.items())
        elif args.command == "imagenet-think":
            from lookcloser.data_builders.imagenet_think import build_imagenet_think

            column_map = json.loads(args.column_map) if args.column_map else None
            build_imagenet_think(args.paths, args.out, report, fmt=args.format, generators=args.generators,
                                 column_map=column_map, template=args.template,
                                 check_images=not args.no_check_images, max_pixels=args.max_pixels,
                                 batch_rows=args.batch_rows, progress=progress)
            where = str(args.out)
        elif args.command == "synthetic":
            from lookcloser.agent.oracle import (
                build_synthetic,  # runs the agent's tools: this command is an entry point
            )
            from lookcloser.data_builders.synthetic import TASKS

            cfg = SyntheticConfig(seed=args.seed, tasks=tuple(args.tasks or TASKS),
                                  jigsaw_sizes=tuple(args.jigsaw_sizes), base_size=args.base_size,
                                  canvas_size=args.canvas_size, search_grid=args.search_grid,
                                  model_pixels=args.model_pixels)
            outs = build_synthetic(args.image_dir, args.out, args.count, cfg, fmt=args.format, report=report,
                                   max_pixels=args.max_pixels, progress=progress, environment=args.environment)
            where = ", ".join(f"{k}: {v}" for k, v in outs.items())
        else:
            from lookcloser.data_builders.difficulty import build_difficulty

            sample = None
            if args.model is not None and args.predictions is None:
                import functools

                from lookcloser.agent.sampling import sample_predictions  # the model runs in the agent loop

                sample = functools.partial(sample_predictions, model_name_or_path=args.model, k=args.samples,
                                           max_new_tokens=args.max_new_tokens, progress=progress)
            outs = build_difficulty(args.path, args.out, report, predictions=args.predictions, sample=sample,
                                    images_root=args.images_root, cfg=_difficulty_config(args),
                                    fmt=args.format, progress=progress)
            where = f"{outs['dataset']} (levels: {outs['levels']})"
    finally:
        report.close()
    unit = {"imagenet-think": "traces", "synthetic": "source-image draws"}.get(args.command, "records")
    print(report.summary(unit))
    print(f"wrote {where}")
    return report


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["heldout"]:  # held-out benchmark folders: a command of its own (data_builders.heldout)
        from lookcloser.data_builders.heldout import main as heldout_main

        return heldout_main(argv[1:])
    try:
        run(build_parser().parse_args(argv))
    except (RecordError, RecipeError) as err:  # a bad record or a bad command line: one line, exit 2
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
