"""Scoring predictions with ``rewards/`` (the only place scoring rules live) and aggregating them.

Per item: by the benchmark's spec (``eval/benchmarks/<name>.py``): its ``rewards/`` scorer on the
gold as the spec hands it over (TIR-Bench in official mode; DISBench's set metrics on the parsed
photo ids; ImageMining's LLM-judge recall only when asked). A failed or
missing prediction scores 0 on every metric and is counted and listed, never dropped.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from lookcloser.eval.benchmarks import REPORTS, SPECS
from lookcloser.eval.loaders import EvalItem

# Metrics per report table (each benchmark's, and DISBench's retriever); the first is the headline number.
METRICS = {name: report.metrics for name, report in REPORTS.items()}
# Published numbers, in percent, where the spec gives them (benchmarks.md); None: not published.
PUBLISHED = {name: report.published for name, report in REPORTS.items() if report.published}


def score_response(item: EvalItem, response: str, *, llm_judge: bool = False) -> dict[str, float]:
    """Every metric of one response, by the benchmark's scorer in ``rewards/`` (its spec's ``scorer``).

    >>> item = EvalItem("1", "mir", {}, {"conclusion": "B"})
    >>> score_response(item, "Answer: (b)")
    {'accuracy': 1.0}
    """
    if item.benchmark not in SPECS:
        raise ValueError(f"unknown benchmark {item.benchmark!r}")
    spec = SPECS[item.benchmark]
    info = spec.to_info(item.gold)
    if spec.metrics_of is not None:
        return spec.metrics_of(response, info)
    return {spec.report.metrics[0]: float(spec.scorer.score(response, info, "official", llm_judge=llm_judge))}


def zero_scores(benchmark: str) -> dict[str, float]:
    return dict.fromkeys(METRICS[benchmark], 0.0)


def gold_response(item: EvalItem) -> str:
    """A response stating the gold answer the way the system prompt asks (tests: it must score 1.0).

    >>> gold_response(EvalItem("q", "disbench", {}, {"answer": ["11", "12"]}))
    '<answer>["11", "12"]</answer>'
    """
    return f"<answer>{SPECS[item.benchmark].answer_text(item.gold)}</answer>"


def score_predictions(items: list[EvalItem], predictions: dict[str, dict], *,
                      llm_judge: bool = False) -> list[dict]:
    """One row per item: its status ("ok", "failed" or "missing"), metrics and tags."""
    rows = []
    for item in items:
        pred = {"status": "bad_record", "error": item.bad} if item.bad else predictions.get(item.id)
        status = "missing" if pred is None else pred.get("status", "failed")
        if status == "ok":
            scores = score_response(item, pred.get("response") or "", llm_judge=llm_judge)
        else:
            scores = zero_scores(item.benchmark)
        rows.append({"id": item.id, "status": status, "scores": scores, "tags": item.tags,
                     "error": None if pred is None else pred.get("error"),
                     "stop_reason": None if pred is None else pred.get("stop_reason"),
                     "num_turns": 0 if pred is None else pred.get("num_turns", 0),
                     "tool_calls": 0 if pred is None else pred.get("tool_calls", 0),
                     "tool_errors": 0 if pred is None else pred.get("tool_errors", 0),
                     "tool_images": 0 if pred is None else pred.get("tool_images", 0)})
    return rows


def _means(rows: list[dict], names: tuple[str, ...]) -> dict[str, float]:
    return {name: (sum(r["scores"][name] for r in rows) / len(rows) if rows else 0.0) for name in names}


def _gold_text(item: EvalItem) -> str:
    spec = SPECS[item.benchmark]
    return (spec.prior_text or spec.answer_text)(item.gold)


def task_answer_priors(items: list[EvalItem]) -> dict[str, tuple[int, float]]:
    """Per task (its first ``task`` tag; ``all`` without one): how many good items, and the best mean score
    of one fixed gold answer given to all of them, measured with the benchmark's own scorer.

    >>> items = [EvalItem(str(k), "mir", {}, {"conclusion": c}, {"task": [t]}) for k, (c, t) in enumerate(
    ...     [("A", "t"), ("A", "t"), ("B", "t"), ("C", "u")])]
    >>> {task: (n, round(prior, 3)) for task, (n, prior) in task_answer_priors(items).items()}
    {'t': (3, 0.667), 'u': (1, 1.0)}
    """
    groups: dict[str, list[EvalItem]] = defaultdict(list)
    for item in items:
        if not item.bad:
            groups[(item.tags.get("task") or ["all"])[0]].append(item)
    priors = {}
    for task, members in groups.items():
        primary = METRICS[members[0].benchmark][0]
        candidates = sorted({_gold_text(item) for item in members})
        best = max(sum(score_response(item, answer)[primary] for item in members) for answer in candidates)
        priors[task] = (len(members), best / len(members))
    return priors


def answer_prior(items: list[EvalItem], priors: dict[str, tuple[int, float]] | None = None) -> float | None:
    """The best score without looking: per task, the one fixed gold answer that scores best on it
    (``task_answer_priors``, passed in where the caller has them already), averaged over the items.

    It is the reference a model that ignores its input is held against (MIR's balanced letters: 0.375; a
    task whose answers repeat: higher).

    >>> items = [EvalItem(str(k), "mir", {}, {"conclusion": c}, {"task": ["t"]}) for k, c in enumerate("AAB")]
    >>> round(answer_prior(items), 3)
    0.667
    """
    priors = task_answer_priors(items) if priors is None else priors
    good = sum(n for n, _ in priors.values())
    return sum(n * prior for n, prior in priors.values()) / good if good else None


def aggregate(benchmark: str, rows: list[dict]) -> dict:
    """Overall and per-group means (an item with several values of a group counts in each).

    >>> rows = [{"id": "a", "status": "ok", "scores": {"accuracy": 1.0}, "tags": {"task": ["x"]}},
    ...         {"id": "b", "status": "failed", "scores": {"accuracy": 0.0}, "tags": {"task": ["y"]},
    ...          "error": "HTTP 500"}]
    >>> m = aggregate("mir", rows)
    >>> m["overall"], m["groups"]["task"]["y"], m["n_failed"], m["failed"]
    ({'accuracy': 0.5}, {'n': 1, 'accuracy': 0.0}, 1, [{'id': 'b', 'status': 'failed', 'error': 'HTTP 500'}])
    """
    names = METRICS[benchmark]
    groups: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        for group, values in row.get("tags", {}).items():
            for value in values:
                groups[group][value].append(row)
    failed = [{"id": r["id"], "status": r["status"], "error": r.get("error")} for r in rows if r["status"] != "ok"]
    out = {
        "n": len(rows),
        "n_failed": len(failed),
        "failed": failed,
        # records that did not load (``--strict false``): failed too, listed apart with their reason
        "bad_records": [{"id": f["id"], "reason": f["error"]} for f in failed if f["status"] == "bad_record"],
        "primary": names[0],
        "overall": _means(rows, names),
        "groups": {g: {v: {"n": len(members), **_means(members, names)} for v, members in sorted(values.items())}
                   for g, values in groups.items()},
    }
    agent_rows = [r for r in rows if "stop_reason" in r]
    if agent_rows:
        out["agent"] = {
            "stop_reasons": dict(Counter(str(r.get("stop_reason")) for r in agent_rows)),
            "mean_turns": sum(r.get("num_turns") or 0 for r in agent_rows) / len(agent_rows),
            "mean_tool_calls": sum(r.get("tool_calls") or 0 for r in agent_rows) / len(agent_rows),
            "tool_errors": sum(r.get("tool_errors") or 0 for r in agent_rows),
        }
        calls = sum(r.get("tool_calls") or 0 for r in agent_rows)
        # 1 - failed calls / calls, a failed call as agent.toolkit.call_failed says (None: no call was made);
        # the share that returned an image is kept apart (a search or a filter returns text)
        out["agent"]["tool_success_rate"] = 1 - out["agent"]["tool_errors"] / calls if calls else None
        out["agent"]["tool_image_rate"] = (sum(r.get("tool_images") or 0 for r in agent_rows) / calls
                                           if calls else None)
    if benchmark in PUBLISHED:
        out["published_percent"] = PUBLISHED[benchmark]
    spec = SPECS.get(benchmark)
    if spec is not None and spec.protocol:
        out["protocol"] = spec.protocol
    if spec is not None and spec.summarize is not None:
        spec.summarize(out)
    return out
