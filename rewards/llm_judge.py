"""Optional LLM-judge recall through an OpenAI-compatible ``/v1/chat/completions`` endpoint.

Off unless a caller asks for it. The base URL and model come from arguments or
``LOOKCLOSER_JUDGE_BASE_URL`` / ``LOOKCLOSER_JUDGE_MODEL``; the key only from
``LOOKCLOSER_JUDGE_API_KEY`` (or ``OPENAI_API_KEY``) and it is never logged. Requests go through
``lookcloser.http_client`` with no retry: any failure (network, timeout, HTTP error, odd reply)
returns None so the caller keeps its rule score. A missing client library (httpx2, orjson: the
``judge`` extra; a rewards-only install lacks them) is not such a failure: asking for the judge
raises one ``ImportError`` naming it (``require_client``).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re

logger = logging.getLogger(__name__)

_SYSTEM = (
    "You grade answers to a visual search question. Compare the model's final answer with the "
    "reference answer. Minor wording, formatting, unit or language differences are fine; a different "
    "entity, number or extra wrong content is not. Reply with exactly one word: CORRECT or INCORRECT."
)
_INCORRECT = re.compile(r"\bincorrect\b|\bwrong\b|\bno\b", re.IGNORECASE)
_CORRECT = re.compile(r"\bcorrect\b|\byes\b", re.IGNORECASE)
_MAX_CHARS = 6000  # judge prompts stay small: the tail of a response holds its answer


JUDGE_MODULES = ("httpx2", "orjson")  # what lookcloser.http_client imports


def require_client() -> None:
    """Raise one ``ImportError`` naming the judge's missing libraries, if any.

    >>> require_client()  # the training install has them
    """
    missing = [name for name in JUDGE_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(f"the LLM judge needs {' and '.join(missing)}, which this install lacks: "
                          "pip install 'lookcloser[judge]' (or run without llm_judge)")


@functools.lru_cache(maxsize=1)
def _client():
    """One client per process, so that repeated judgements reuse its connections."""
    from lookcloser.http_client import client  # lazy: httpx only when a judge is asked

    return client(20.0)


def judge_answer(response: str, answer: str, question: str | None = None, *, base_url: str | None = None,
                 model: str | None = None, timeout: float = 20.0) -> bool | None:
    """Ask the judge model whether ``response`` answers like ``answer``; None when unavailable.

    >>> judge_answer("Red", "Red", base_url="") is None  # no endpoint configured
    True
    """
    base_url = base_url if base_url is not None else os.environ.get("LOOKCLOSER_JUDGE_BASE_URL", "")
    model = model or os.environ.get("LOOKCLOSER_JUDGE_MODEL", "")
    if not base_url or not model:
        return None
    require_client()  # a missing library is a setup mistake: said once, loudly, not a rule score
    key = os.environ.get("LOOKCLOSER_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")
    user = (f"Question: {question}\n" if question else "") + \
        f"Reference answer: {answer}\nModel response (end): {response[-_MAX_CHARS:]}"
    payload = {"model": model, "temperature": 0, "max_tokens": 8,
               "messages": [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]}
    try:
        from lookcloser.http_client import api_base, api_url, json_post, send

        http = _client()
        request = json_post(http, api_url(api_base(base_url), "chat/completions"), payload,  # the user's own endpoint
                            {"Authorization": f"Bearer {key}"} if key else {}, timeout=timeout)
        reply = send(http, request, retries=0, backoff=0.0)
        reply.raise_for_status()
        content = reply.json()["choices"][0]["message"]["content"]
    except Exception as exc:  # noqa: BLE001 - the judge is best effort; the rule score stands
        logger.warning("LLM judge unavailable (%s); keeping the rule score", type(exc).__name__)
        return None
    if not isinstance(content, str):
        return None
    if _INCORRECT.search(content):
        return False
    return True if _CORRECT.search(content) else None
