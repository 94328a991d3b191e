"""``PhotoCollectionEnv``: DISBench's tools over one user's photo history (docs/formats.md §4).

``image_search`` (embedding index, optionally within a named subset), ``get_metadata``,
``filter_metadata`` (time range, place text, GPS radius, device, within a named subset),
``view_photos`` (a few photos, downscaled), ``save_subset`` (named photo sets kept across
steps), plus ``web_search`` / ``fetch_page``. DISBench's upstream agent (ImageSeeker) names them
``ImageSearch``, ``GetMetadata``, ``FilterMetadata``, ``ViewPhotos``, ``WebSearch``: every env here
accepts both spellings in a call, and ``ImageSeekerEnv`` exposes the upstream names as its tools
(the schemas a prompt or TRL shows), so a model prompted or trained with the upstream tool set
runs unchanged. Each env shows one spelling only: both would double the tool list in every prompt.
A row needs ``user_id`` and ``data_root`` (the DISBench folder with ``metadata/`` and ``images/``).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable
from typing import ClassVar

from lookcloser.agent import photos as ph
from lookcloser.agent.embedders import Embedder, LRUCache, build_or_load_index, default_embedder, thumbnail
from lookcloser.agent.search import SearchBackend
from lookcloser.agent.toolkit import ToolEnv, ToolError, error_text, tool, tool_names
from lookcloser.agent.web_env import WebSearchTools

_COLLECTIONS = LRUCache(size=8)  # (collection, index) per user, shared by the env instances of a process
LAST_FILTER = "last_filter"
# DISBench's upstream tool names -> ours (same functions)
UPSTREAM_NAMES = {"ImageSearch": "image_search", "GetMetadata": "get_metadata", "FilterMetadata": "filter_metadata",
                  "ViewPhotos": "view_photos", "WebSearch": "web_search"}


def listed_ids(observation: str) -> list[str]:
    """The ids a photo tool's observation lists (``PhotoCollectionEnv._list_ids``' JSON list, after its colon);
    a function, not a method: every public method of an env is a tool.

    >>> listed_ids('2 photos, best first: ["49", "56"]')
    ['49', '56']
    """
    return json.JSONDecoder().raw_decode(observation, observation.index(": [") + 2)[0]


class PhotoCollectionEnv(WebSearchTools, ToolEnv):
    """Search, filter and view one user's photo collection; keep named subsets.

    Args:
        embedder: Embeds photos and queries for ``image_search`` (default: ``default_embedder()``).
        cache_dir: Where per-user indexes are cached (default ``~/.cache/lookcloser/photo_index``).
        max_view: Most photos one ``view_photos`` call shows.
        view_side: Longest side of a viewed photo, in pixels.
        max_listed: Most photo ids an observation lists (the full set is still kept in subsets).
        search_backend: Web search backend (see ``agent.web_env``).
    """

    def __init__(self, embedder: Embedder | None = None, cache_dir: str | None = None, max_view: int = 8,
                 view_side: int = 448, max_listed: int = 100, search_backend: SearchBackend | None = None) -> None:
        super().__init__()
        self._embedder = embedder
        self._cache_dir = cache_dir
        self._max_view, self._view_side, self._max_listed = max_view, view_side, max_listed
        self._init_search(search_backend, max_results=5, max_page_chars=6000)
        self._collection: ph.Collection | None = None
        self._index = None
        self._query_embedder: Embedder | None = None
        self._subsets: dict[str, list[str]] = {}
        self.index_from_cache: bool | None = None

    def reset(self, **example) -> str | None:
        """Open the row's user collection (``user_id``, ``data_root``); returns a one-line overview."""
        self._reset_counters()
        self._subsets = {}
        self._reset_search(example)
        root = example.get("data_root") or os.environ.get("LOOKCLOSER_DISBENCH_ROOT")
        user = example.get("user_id")
        if not root or not user:
            raise ValueError("PhotoCollectionEnv needs 'user_id' and 'data_root' in the example")
        embedder = self._embedder or default_embedder()
        key = (str(os.path.abspath(root)), str(user), embedder.name)

        def build():
            collection = ph.load_collection(root, str(user))
            index, cached = build_or_load_index(collection, embedder, self._cache_dir)
            return collection, index, cached

        self._collection, self._index, self.index_from_cache = _COLLECTIONS.get_or_create(key, build)
        self._query_embedder = embedder
        all_photos = list(self._collection.photos.values())
        return f"\nPhoto collection of user {user}: {ph.summarize(all_photos)}."

    # -- helpers --

    def _photos(self, photo_ids: list[str]) -> tuple[list[ph.Photo], list[str]]:
        """Known photos in the given order (de-duplicated) and the unknown ids."""
        if self._collection is None:
            raise ToolError("no photo collection is open")
        known, unknown, seen = [], [], set()
        for pid in photo_ids:
            pid = pid.strip()
            if pid in seen:
                continue
            seen.add(pid)
            (known if pid in self._collection.photos else unknown).append(pid)
        return [self._collection.photos[pid] for pid in known], unknown

    def _list_ids(self, ids: list[str]) -> str:
        # Written as the tools and the answer take ids (a JSON list of strings), so they are copied verbatim.
        more = f" … and {len(ids) - self._max_listed} more" if len(ids) > self._max_listed else ""
        return json.dumps(ids[: self._max_listed]) + more

    def _subset(self, name: str) -> list[str]:
        if name not in self._subsets:
            names = ", ".join(sorted(self._subsets)) or "none yet"
            raise ToolError(f"no subset named {name!r}; saved subsets: {names}")
        return self._subsets[name]

    def _search(self, query: str, top_k: int, subset: str) -> list[tuple[str, float]]:
        """``image_search``'s checks and its (id, score) hits, best first."""
        if not 1 <= top_k <= 50:
            raise ToolError(f"top_k must be between 1 and 50, got {top_k}")
        query = query.strip()
        if not query:
            raise ToolError("query is empty")
        self._photos([])
        if query in self._collection.photos:
            vector = self._index.vectors[self._index.position[query]]
        else:
            vector = self._query_embedder.embed_texts([query])[0]
        if vector.shape[-1] != self._index.vectors.shape[1]:
            raise ToolError("the photo index has no embeddings (no readable images)")
        within = set(self._subset(subset.strip())) if subset.strip() else None
        return self._index.search(vector, top_k, within=within)

    # -- tools --

    @tool
    def image_search(self, query: str, top_k: int = 10, subset: str = "") -> str:
        """Find the photos that best match a description (or look like a given photo), best first.

        Args:
            query: A short visual description, e.g. "red car on a beach", or a photo id to find similar photos.
            top_k: How many photos to return, 1 to 50.
            subset: Only search within this saved subset (e.g. "last_filter").
        """
        hits = self._search(query, top_k, subset)
        rows = []
        for pid, score in hits:
            photo = self._collection.photos[pid]
            when = f" {photo.taken:%Y-%m-%d}" if photo.taken else ""
            where = f" {photo.address}" if photo.address else ""
            rows.append(f"{pid} ({score:.3f}){when}{where}")
        where = f" in subset {subset.strip()!r}" if subset.strip() else ""
        return f"Top {len(rows)} photos for {query!r}{where}:\n" + "\n".join(rows)

    @tool
    def get_metadata(self, photo_ids: list[str]) -> str:
        """Get the time, GPS position, address and device of photos (unknown fields are left out).

        Args:
            photo_ids: Photo ids, at most 50.
        """
        if not photo_ids:
            raise ToolError("photo_ids is empty")
        if len(photo_ids) > 50:
            raise ToolError(f"at most 50 photo ids per call, got {len(photo_ids)}")
        known, unknown = self._photos(photo_ids)
        body = ph.dumps_compact([p.describe() for p in known])
        if unknown:
            return error_text(f"unknown photo ids: {', '.join(unknown)}." + (f" The others:\n{body}" if body else ""))
        return body

    @tool
    def filter_metadata(self, start_time: str = "", end_time: str = "", place: str = "",
                        latitude: float | None = None, longitude: float | None = None,
                        radius_km: float | None = None, device: str = "", subset: str = "") -> str:
        """Find the photos whose metadata match every given criterion; photos lacking a field do not match it. The result is saved as the subset "last_filter".

        Args:
            start_time: Earliest time, "YYYY-MM-DD", "YYYY-MM-DD HH:MM:SS", "YYYY-MM" or "YYYY".
            end_time: Latest time, same formats; a date includes that whole day (a month, that whole month).
            place: Text to find in the address, e.g. "Paris" (case-insensitive).
            latitude: Latitude of a centre point; give it with longitude and radius_km.
            longitude: Longitude of a centre point.
            radius_km: Radius around the centre point, in kilometres.
            device: Text to find in the camera/device name (case-insensitive).
            subset: Only search within this saved subset.
        """
        self._photos([])
        gps = (latitude, longitude, radius_km)
        if any(v is not None for v in gps) and any(v is None for v in gps):
            raise ToolError("a GPS filter needs latitude, longitude and radius_km together")
        if latitude is not None and not (-90 <= latitude <= 90 and -180 <= longitude <= 180 and radius_km > 0):
            raise ToolError("latitude must be in [-90, 90], longitude in [-180, 180] and radius_km > 0")
        start = ph.parse_time(start_time) if start_time.strip() else None
        end = ph.parse_time(end_time, end=True) if end_time.strip() else None
        if start and end and start > end:
            raise ToolError(f"start_time {start_time!r} is after end_time {end_time!r}")
        if not any([start, end, place.strip(), latitude is not None, device.strip(), subset.strip()]):
            raise ToolError("give at least one criterion")
        pool = [self._collection.photos[p] for p in self._subset(subset.strip())] if subset.strip() else \
            list(self._collection.photos.values())
        center = (latitude, longitude) if latitude is not None else None
        found = ph.filter_photos(pool, start=start, end=end, place=place, center=center, radius_km=radius_km,
                                 device=device)
        ids = [p.photo_id for p in found]
        self._subsets[LAST_FILTER] = ids
        if not ids:
            return "No photos match."
        return f"{ph.summarize(found)} match (oldest first), saved as subset {LAST_FILTER!r}: {self._list_ids(ids)}"

    @tool
    def view_photos(self, photo_ids: list[str]) -> list[dict] | str:
        """Look at photos (downscaled), each with its id, time and place.

        Args:
            photo_ids: Photo ids, at most 8 per call.
        """
        if not photo_ids:
            raise ToolError("photo_ids is empty")
        known, unknown = self._photos(photo_ids)
        if unknown:
            raise ToolError(f"unknown photo ids: {', '.join(unknown)}")
        if len(known) > self._max_view:
            raise ToolError(f"at most {self._max_view} photos per call, got {len(known)}")
        blocks = []
        for photo in known:
            path = self._collection.image_path(photo.photo_id)
            if not path.is_file():
                raise ToolError(f"the image of photo {photo.photo_id} is missing")
            meta = {k: v for k, v in photo.describe().items() if k in ("taken_time", "address") and v}
            label = json.dumps(photo.photo_id)  # quoted, as the answer lists it
            # The picture first, then its caption: a causal model reads the id after the picture, so the id
            # it later copies into the answer has already seen what the picture shows.
            blocks.append({"type": "image", "image": thumbnail(path, self._view_side)})
            blocks.append({"type": "text", "text": f"Photo {label} {meta}" if meta else f"Photo {label}"})
        return blocks

    @tool
    def save_subset(self, name: str, photo_ids: list[str]) -> str:
        """Save photos under a name to use later (e.g. with filter_metadata's subset); saving again replaces it.

        Args:
            name: Subset name: letters, digits, "_" or "-", at most 40 characters.
            photo_ids: Photo ids to keep in the subset.
        """
        name = name.strip()
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", name):
            raise ToolError(f"subset name {name!r} must be 1-40 letters, digits, '_' or '-'")
        known, unknown = self._photos(photo_ids)
        if unknown:
            raise ToolError(f"unknown photo ids: {', '.join(unknown)}; nothing saved")
        self._subsets[name] = [p.photo_id for p in known]
        return f"Saved subset {name!r} with {len(known)} photos."

    # -- the other spelling of each tool name --

    _ALIASES: ClassVar[dict[str, str]] = UPSTREAM_NAMES  # a name this class does not show -> the one it does

    def _call_tool(self, name: object, arguments: object) -> list[dict] | str:
        """As ``ToolEnv._call_tool``; a tool may be called by its other spelling (``ImageSearch``)."""
        if isinstance(name, str) and name in self._ALIASES and name not in tool_names(type(self)):
            name = self._ALIASES[name]
        return super()._call_tool(name, arguments)


def _renamed(name: str, target: Callable) -> Callable:
    """The tool ``target`` under another name (its call counted once)."""
    impl = target.__wrapped__  # the undecorated method; @tool below does the checking and counting

    @functools.wraps(impl)
    def renamed(self, /, *args, **kwargs):
        return impl(self, *args, **kwargs)

    renamed.__name__ = renamed.__qualname__ = name
    return tool(renamed)


class ImageSeekerEnv(PhotoCollectionEnv):
    """``PhotoCollectionEnv`` with DISBench's upstream tool names as its tools (``ImageSearch``,
    ``GetMetadata``, ``FilterMetadata``, ``ViewPhotos``, ``WebSearch``; plus ``save_subset`` and
    ``fetch_page``); the snake_case names still work in a call but are not shown."""

    ImageSearch = _renamed("ImageSearch", PhotoCollectionEnv.image_search)
    GetMetadata = _renamed("GetMetadata", PhotoCollectionEnv.get_metadata)
    FilterMetadata = _renamed("FilterMetadata", PhotoCollectionEnv.filter_metadata)
    ViewPhotos = _renamed("ViewPhotos", PhotoCollectionEnv.view_photos)
    WebSearch = _renamed("WebSearch", PhotoCollectionEnv.web_search)
    # Not functions here, so neither TRL nor tool_schemas lists them; _call_tool maps them.
    image_search = get_metadata = filter_metadata = view_photos = web_search = None
    _ALIASES: ClassVar[dict[str, str]] = {ours: theirs for theirs, ours in UPSTREAM_NAMES.items()}


class PhotoSearchEnv(ImageSeekerEnv):
    """``ImageSeekerEnv`` showing only ``FilterMetadata`` (by place and device) and ``ImageSearch`` (upstream
    names): the photo-search curriculum's tools (recipes/photo_search_curriculum.yaml), the two a DISBench
    query about what a photo shows from a given trip needs: the metadata filter, then a search of what it
    found by content. Every tool schema lengthens every prompt (all seven make a system prompt of ~2,340
    tokens for the embedded default, these two ~690); time ranges, GPS radius and saving subsets are
    left out. Both list ids as the answer takes them (a JSON list of strings), so that the answer can be
    a verbatim copy. The hidden tools still answer a call by name."""

    GetMetadata = ViewPhotos = WebSearch = save_subset = fetch_page = None
    _ALIASES: ClassVar[dict[str, str]] = {}

    @tool
    def FilterMetadata(self, place: str = "", device: str = "") -> str:
        """Find the photos whose metadata match every given criterion, oldest first; they are saved as the subset "last_filter".

        Args:
            place: Text to find in the address, e.g. "Paris".
            device: Text to find in the camera name.
        """
        PhotoCollectionEnv.filter_metadata.__wrapped__(self, place=place, device=device)  # checks, keeps last_filter
        found = self._subsets[LAST_FILTER]
        return f"{len(found)} photos match, saved as {LAST_FILTER!r}: {self._list_ids(found)}" if found else \
            "No photos match."

    @tool
    def ImageSearch(self, query: str, top_k: int = 10, subset: str = "") -> str:
        """Find the photos that best match a visual description, best first.

        Args:
            query: A short visual description, e.g. "red car".
            top_k: How many photos to return, 1 to 50.
            subset: Only search within this saved subset, e.g. "last_filter".
        """
        hits = self._search(query, top_k, subset)
        return f"{len(hits)} photos, best first: {self._list_ids([pid for pid, _ in hits])}"


# The environment names this module's classes serve: name -> (class, the benchmark whose tasks it plays).
# agent.environments composes them (and a tool set: agent.environments.TOOL_SETS).
# disbench: DISBench's upstream tool names (ImageSearch, FilterMetadata, ...); photo_search: FilterMetadata +
# ImageSearch (recipes/photo_search_curriculum.yaml).
ENVIRONMENTS: dict[str, tuple[type[ToolEnv], str]] = {
    "disbench": (ImageSeekerEnv, "disbench"), "photo_search": (PhotoSearchEnv, "disbench")}
