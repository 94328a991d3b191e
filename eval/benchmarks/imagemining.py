"""ImageMining (zai-org/ImageMining): `data.jsonl` + `images/`; normalized exact match
(``rewards.imagemining``; LLM-judge recall with ``--llm_judge``), its categories and flags as groups."""

from pathlib import Path

from lookcloser.eval import fixtures, loaders
from lookcloser.eval.benchmarks import BenchmarkSpec, Report
from lookcloser.rewards.benchmarks.imagemining import SCORER


def _arrange(target: Path) -> None:
    from lookcloser.eval.prepare import arrange_imagemining

    arrange_imagemining(target)


SPEC = BenchmarkSpec(
    name="imagemining", scorer=SCORER, order=40, title="ImageMining acc",
    data_file="data.jsonl", folders=("imagemining", "ImageMining"),
    load=lambda root, **kw: loaders.load_imagemining(root, **kw),
    to_info=lambda gold: gold, answer_text=lambda gold: str(gold["answer"]),
    max_turns=16, environment="imagemining", prepare_source="hf:zai-org/ImageMining",
    arrange=_arrange, write_fixture=fixtures.write_imagemining,
    report=Report(published={"note": "ImageMining publishes no scorer; lookcloser's normalized exact match."}),
    corpus_beside="search_corpus.jsonl", aliases=("image_mining",))
