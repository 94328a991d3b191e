"""Optional LLM-judge recall through an OpenAI-compatible ``/v1/chat/completions`` endpoint.

Standard library only (urllib). Off unless a caller asks for it. The base URL and model come
from arguments or ``LOOKCLOSER_JUDGE_BASE_URL`` / ``LOOKCLOSER_JUDGE_MODEL``; the key only from
``LOOKCLOSER_JUDGE_API_KEY`` (or ``OPENAI_API_KEY``) and it is never logged. Any failure
(network, timeout, HTTP error, odd reply) returns None so the caller keeps its rule score.
"""

from __future__ import annotations

import json
import logging
import os
import re
import urllib.error
import urllib.request

logger = logging.getLogger(__name__)

_SYSTEM = (
    "You grade answers to a visual search question. Compare the model's final answer with the "
    "reference answer. Minor wording, formatting, unit or language differences are fine; a different "
    "entity, number or extra wrong content is not. Reply with exactly one word: CORRECT or INCORRECT."
)
_INCORRECT = re.compile(r"\bincorrect\b|\bwrong\b|\bno\b", re.IGNORECASE)
_CORRECT = re.compile(r"\bcorrect\b|\byes\b", re.IGNORECASE)
_MAX_CHARS = 6000  # judge prompts stay small: the tail of a response holds its answer


def chat_completions_url(base_url: str) -> str:
    """``…/v1`` → ``…/v1/chat/completions``; a bare host gets ``/v1`` added.

    >>> chat_completions_url("http://127.0.0.1:8000"), chat_completions_url("https://x/api/v1/")
    ('http://127.0.0.1:8000/v1/chat/completions', 'https://x/api/v1/chat/completions')
    """
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if not re.search(r"/v\d+[a-z]*$", base):
        base += "/v1"
    return base + "/chat/completions"


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
    key = os.environ.get("LOOKCLOSER_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")
    user = (f"Question: {question}\n" if question else "") + \
        f"Reference answer: {answer}\nModel response (end): {response[-_MAX_CHARS:]}"
    body = json.dumps({
        "model": model, "temperature": 0, "max_tokens": 8,
        "messages": [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}],
    }).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    try:
        request = urllib.request.Request(chat_completions_url(base_url), data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=timeout) as reply:  # the URL is the user's own endpoint
            payload = json.loads(reply.read(1_000_000).decode("utf-8", "replace"))
        content = payload["choices"][0]["message"]["content"]
    except Exception as exc:  # noqa: BLE001 - the judge is best effort; the rule score stands
        logger.warning("LLM judge unavailable (%s); keeping the rule score", type(exc).__name__)
        return None
    if not isinstance(content, str):
        return None
    if _INCORRECT.search(content):
        return False
    return True if _CORRECT.search(content) else None
