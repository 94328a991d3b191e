"""MIR (ShellyCoder/MIRBench): `all_data_rel.json` + images; the option letter by ``rewards.mir``; its
subtasks and their 3 categories as report groups."""

from pathlib import Path

from lookcloser.eval import fixtures, loaders
from lookcloser.eval.benchmarks import BenchmarkSpec, Report
from lookcloser.rewards.benchmarks.mir import SCORER


def _letter(gold: dict) -> str:
    from lookcloser.rewards.mir import gold_letter

    return str(gold_letter(gold["conclusion"]))


def _arrange(target: Path) -> None:
    from lookcloser.eval.prepare import arrange_mir

    arrange_mir(target)


SPEC = BenchmarkSpec(
    name="mir", scorer=SCORER, order=20, title="MIR acc",
    data_file="all_data_rel.json", folders=("mir", "MIR"),
    load=lambda root, **kw: loaders.load_mir(root, **kw),
    to_info=lambda gold: {"answer": gold["conclusion"], "options": gold.get("options")},
    answer_text=_letter, prior_text=lambda gold: str(gold["conclusion"]),
    max_turns=4, environment="mir", prepare_source="hf:ShellyCoder/MIRBench",
    arrange=_arrange, write_fixture=fixtures.write_mir,
    report=Report(published={"note": "MIR publishes per-model accuracies in its paper; none is carried in the spec."}))
