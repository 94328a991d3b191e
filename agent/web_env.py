"""``web_search`` / ``fetch_page`` tools, and ``WebImageEnv`` (ImageMining: image tools + web search).

The search backend of an episode is, in order: the row's ``search_corpus`` (a JSONL corpus path,
see ``agent.search.CorpusBackend``), the ``search_backend`` given to the constructor, or the one
configured by environment variables (``agent.search.search_backend_from_env``). With none, the
tools answer with an error observation saying web search is not configured.
"""

from __future__ import annotations

from pathlib import Path

from lookcloser.agent.embedders import LRUCache
from lookcloser.agent.image_env import ImageToolEnv
from lookcloser.agent.search import CorpusBackend, SearchBackend, search_backend_from_env
from lookcloser.agent.toolkit import ToolEnv, ToolError, tool

_CORPORA = LRUCache(size=4)  # BM25 indexes shared by all env instances of a process


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, saying how much was left out.

    >>> truncate("abcdef", 4)
    'abcd […2 more characters]'
    """
    return text if len(text) <= limit else f"{text[:limit]} […{len(text) - limit} more characters]"


class WebSearchTools:
    """Mixin: the two web tools. Hosts call ``_init_search`` in ``__init__`` and ``_reset_search`` in ``reset``."""

    def _init_search(self, search_backend: SearchBackend | None, max_results: int, max_page_chars: int) -> None:
        self._default_backend = search_backend
        self._search_backend: SearchBackend | None = None
        self._max_results, self._max_page_chars = max_results, max_page_chars

    def _reset_search(self, example: dict) -> None:
        corpus = example.get("search_corpus")
        if corpus:
            path = Path(corpus).resolve()
            self._search_backend = _CORPORA.get_or_create(str(path), lambda: CorpusBackend(path))
        else:
            self._search_backend = self._default_backend or search_backend_from_env()

    def _backend(self) -> SearchBackend:
        if self._search_backend is None:
            raise ToolError("web search is not configured for this run")
        return self._search_backend

    @tool
    def web_search(self, query: str) -> str:
        """Search the web and list the top results (title, URL, snippet).

        Args:
            query: What to search for, in a few words.
        """
        query = query.strip()
        if not query:
            raise ToolError("query is empty")
        if len(query) > 500:
            raise ToolError("query is longer than 500 characters")
        results = self._backend().search(query, self._max_results)
        if not results:
            return f"No results for {query!r}."
        lines = [f"{i}. {truncate(r.title, 200)}\n   {r.url}\n   {truncate(' '.join(r.snippet.split()), 300)}"
                 for i, r in enumerate(results, start=1)]
        return "\n".join(lines)

    @tool
    def fetch_page(self, url: str) -> str:
        """Read the text of a web page, e.g. one found with web_search.

        Args:
            url: The page's full http(s) URL.
        """
        title, text = self._backend().fetch(url.strip())
        head = f"{title}\n{url}\n\n" if title else f"{url}\n\n"
        return head + truncate(text, self._max_page_chars)


class WebImageEnv(WebSearchTools, ImageToolEnv):
    """ImageMining: the image tools on the question's image plus ``web_search`` and ``fetch_page``.

    Args:
        search_backend: Backend used when the row has no ``search_corpus``.
        max_results: Results listed per search.
        max_page_chars: Characters of a fetched page shown to the model.
        **image_kwargs: ``ImageToolEnv`` settings (``max_pixels``, ``min_side``, ``max_zoom``).
    """

    def __init__(self, search_backend: SearchBackend | None = None, max_results: int = 5,
                 max_page_chars: int = 6000, **image_kwargs) -> None:
        ImageToolEnv.__init__(self, **image_kwargs)
        self._init_search(search_backend, max_results, max_page_chars)

    def reset(self, **example) -> str | None:
        """Start an episode: the row's image(s) and its search backend."""
        observation = super().reset(**example)
        self._reset_search(example)
        return observation


class WebSearchEnv(WebSearchTools, ToolEnv):
    """``web_search`` alone, on questions whose image is in the prompt (the web-search curriculum,
    recipes/web_search_curriculum.yaml): the look is the model's own. Each tool schema lengthens every
    prompt (the full ``WebImageEnv`` list is ~2,250 tokens for the embedded default, this one ~400), and the
    snippet holds the fact, so ``fetch_page`` is not shown. It lists the top result only: shown three, the
    embedded default read its city from the second as often as from the first (docs/grpo.md).

    Args:
        search_backend: Backend used when the row has no ``search_corpus``.
        max_results: Results listed per search.
    """

    fetch_page = None  # not a function here, so neither TRL nor tool_schemas lists it

    def __init__(self, search_backend: SearchBackend | None = None, max_results: int = 1) -> None:
        super().__init__()
        self._init_search(search_backend, max_results, max_page_chars=2000)

    def reset(self, **example) -> str | None:
        """Start an episode: the row's search backend (its image is already in the prompt)."""
        self._reset_counters()
        self._reset_search(example)
        return None


# The environment names this module's classes serve: name -> (class, the benchmark whose tasks it plays).
# agent.environments composes them (and a tool set: agent.environments.TOOL_SETS).
# web_search: web_search only (recipes/web_search_curriculum.yaml).
ENVIRONMENTS: dict[str, tuple[type[ToolEnv], str]] = {
    "imagemining": (WebImageEnv, "imagemining"), "web_search": (WebSearchEnv, "imagemining")}
