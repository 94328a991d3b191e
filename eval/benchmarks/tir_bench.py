"""TIR-Bench (Agents-X/TIR-Bench): `TIR-Bench.json` + `data/...` images; scored by ``rewards.tir_bench``
in official mode (eval parity), its tasks as report groups."""

from lookcloser.eval import fixtures, loaders
from lookcloser.eval.benchmarks import BenchmarkSpec, Report
from lookcloser.rewards.benchmarks.tir_bench import SCORER

SPEC = BenchmarkSpec(
    name="tir_bench", scorer=SCORER, order=10, title="TIR-Bench acc",
    data_file="TIR-Bench.json", folders=("tir_bench", "TIR-Bench"),
    load=lambda root, **kw: loaders.load_tir_bench(root, **kw),
    to_info=lambda gold: gold["record"], answer_text=lambda gold: str(gold["record"]["answer"]),
    max_turns=8, environment="tir_bench", prepare_source="hf:Agents-X/TIR-Bench",
    write_fixture=fixtures.write_tir_bench,
    report=Report(published={"note": "The TIR-Bench paper reports tool-using o3 far ahead of non-agentic models; "
                                     "its table is not given numerically in the spec: compare with the paper."}),
    compare_per_task=True, aliases=("tirbench",))
