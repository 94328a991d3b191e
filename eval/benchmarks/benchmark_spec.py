"""``BenchmarkSpec`` and ``Report``: what one benchmark's spec module (``eval/benchmarks/<name>.py``) defines."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lookcloser.rewards.benchmarks import Scorer


@dataclass(frozen=True)
class Report:
    """What the reports show of one benchmark's metrics (all of them are in metrics.json).

    Attributes:
        metrics: Every metric; the first is the headline number.
        shown: Metrics in report.md's tables.
        charted: Metrics in its PNG chart (default: the headline).
        published: Published numbers in percent (and a ``note``) where the spec gives them.
    """

    metrics: tuple[str, ...] = ("accuracy",)
    shown: tuple[str, ...] = ("accuracy",)
    charted: tuple[str, ...] = ()
    published: dict = field(default_factory=dict)


@dataclass(frozen=True)
class BenchmarkSpec:
    """Everything about one benchmark (module notes).

    Attributes:
        name: As ``--benchmarks`` and ``data_source`` name it.
        scorer: Its ``rewards.benchmarks`` scorer (the TRL reward and verl source of the same name).
        order: Where it is listed.
        title: Its column in ``compare``'s table and chart.
        data_file: The main file of its official layout: how a folder is recognised.
        folders: Folder names tried under a shared ``--data_root`` (ours first, then upstream's).
        load: ``load(root, check_images=, limit=, strict=, **options)`` -> ``EvalItem``s.
        to_info: An item's ``gold`` -> the scorer's info (``rewards.scoring``'s one shape).
        answer_text: An item's ``gold`` -> the answer as the system prompt asks it stated (gold responses).
        prior_text: An item's ``gold`` -> the fixed answer tried for the answer prior (default ``answer_text``).
        max_turns: Default turns of an episode.
        environment: Its environment in ``agent.environments.ENVIRONMENTS`` (its tools).
        prepare_source: Where ``python -m eval prepare`` downloads it (``hf:OWNER/REPO`` or ``git:URL``).
        corpus_beside: A search corpus file beside the data that eval uses when ``--search_corpus`` is unset.
        arrange: ``arrange(folder)`` after the download: puts it in the layout ``load`` reads (None: as shipped).
        write_fixture: ``write_fixture(folder)``: a small generated copy in the official layout.
        report: Its metrics and what the reports show (``reports`` adds other tables, e.g. a retriever's).
        metrics_of: ``metrics_of(response, info)`` -> every metric, where there are several (default: the
            scorer's value as the headline).
        compare: ``(headline, shown beside it or None)`` in ``compare``'s table.
        compare_per_task: ``comparison.json`` keeps the headline of each ``task`` group too.
        in_default_run: Run when ``--benchmarks`` is not given.
        aliases: Other names.
        protocol: How its rows are made deterministic (option order...), in metrics.json and report.md.
        retriever_report: The extra report of the direct embedding retriever (DISBench): the benchmark's
            environment searches photos with ``--photo_embedder``, and this report ranks with it alone
            (``--disbench_retriever``).
        summarize: ``summarize(metrics)`` adds numbers derived from the groups to ``metrics["derived"]`` and may
            set the overall by the benchmark's own rule (HR-Bench: (FSP + FCP) / 2).
    """

    name: str
    scorer: Scorer
    order: int
    title: str
    data_file: str
    folders: tuple[str, ...]
    load: Callable[..., list]
    to_info: Callable[[dict], dict]
    answer_text: Callable[[dict], str]
    max_turns: int
    environment: str
    prepare_source: str
    write_fixture: Callable[[Path], Any]
    report: Report = field(default_factory=Report)
    reports: dict[str, Report] = field(default_factory=dict)
    prior_text: Callable[[dict], str] | None = None
    metrics_of: Callable[[str, dict], dict[str, float]] | None = None
    compare: tuple[str, str | None] = ("accuracy", None)
    compare_per_task: bool = False
    in_default_run: bool = True
    aliases: tuple[str, ...] = ()
    protocol: str = ""
    summarize: Callable[[dict], None] | None = None
    arrange: Callable[[Path], None] | None = None
    corpus_beside: str | None = None
    retriever_report: str | None = None
