"""Embedders for photo search, and each user's embedding index, built once and cached on disk.

An embedder maps images and texts into one space (rows L2-normalised, compared by dot product):

- ``TransformersEmbedder``: a CLIP/SigLIP-style checkpoint (``get_image_features`` /
  ``get_text_features``), loaded lazily on first use. This is the one for real runs.
- ``ColorHashEmbedder``: deterministic and model-free, *plumbing only*: an image is a histogram
  over eleven basic colours (plus a coarse 2x2 colour layout), a text is the colour words it
  names. "red car" ranks red photos first and nothing else; it exists so tests, CPU runs and
  index caching work offline, not to measure retrieval quality.

``LOOKCLOSER_PHOTO_EMBEDDER=<checkpoint>`` selects a transformers embedder by default.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol

import numpy as np
from PIL import Image

logger = logging.getLogger(__name__)

# Basic colour terms with RGB prototypes; each pixel votes for its nearest prototype.
COLOR_NAMES = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray")
_PROTOTYPES = np.array([
    (220, 30, 30), (245, 140, 20), (240, 220, 40), (40, 170, 60), (40, 80, 220), (130, 50, 170),
    (245, 150, 190), (120, 75, 35), (15, 15, 15), (245, 245, 245), (128, 128, 128)], dtype=np.float32)
_SYNONYMS = {"grey": "gray", "violet": "purple", "golden": "yellow", "gold": "yellow", "dark": "black",
             "snow": "white", "sky": "blue", "sea": "blue", "ocean": "blue", "grass": "green", "forest": "green"}


class Embedder(Protocol):
    """What the photo index needs: a stable ``name`` (the cache key) and two encoders."""

    name: str

    def embed_images(self, images: list[Image.Image]) -> np.ndarray: ...

    def embed_texts(self, texts: list[str]) -> np.ndarray: ...


def _normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms == 0, 1.0, norms)).astype(np.float32)


class ColorHashEmbedder:
    """Colour histogram for images, colour words for texts (deterministic; plumbing only).

    >>> e = ColorHashEmbedder()
    >>> red, blue = Image.new("RGB", (8, 8), (230, 20, 20)), Image.new("RGB", (8, 8), (30, 60, 230))
    >>> scores = e.embed_texts(["a red car"]) @ e.embed_images([red, blue]).T
    >>> bool(scores[0, 0] > scores[0, 1])
    True
    """

    name = "color-hash-v1"
    dim = len(COLOR_NAMES) + 12

    def embed_images(self, images: list[Image.Image]) -> np.ndarray:
        rows = []
        for image in images:
            small = np.asarray(image.convert("RGB").resize((32, 32), Image.Resampling.BILINEAR), dtype=np.float32)
            pixels = small.reshape(-1, 3)
            nearest = ((pixels[:, None, :] - _PROTOTYPES[None]) ** 2).sum(-1).argmin(1)
            hist = np.bincount(nearest, minlength=len(COLOR_NAMES)).astype(np.float32) / len(pixels)
            layout = small.reshape(2, 16, 2, 16, 3).mean((1, 3)).reshape(-1) / 255.0
            rows.append(np.concatenate([hist, 0.25 * layout]))
        return _normalize(np.array(rows, dtype=np.float32).reshape(len(images), self.dim))

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                word = _SYNONYMS.get(word, word)
                if word in COLOR_NAMES:
                    rows[i, COLOR_NAMES.index(word)] += 1.0
        return _normalize(rows)


class TransformersEmbedder:
    """A CLIP/SigLIP-style transformers checkpoint, loaded on first use (CPU unless told otherwise).

    Args:
        model_name_or_path: Hub id or local folder with model, tokenizer and image processor.
        device: Torch device for encoding.
        batch_size: Images per forward pass when building an index.
    """

    def __init__(self, model_name_or_path: str, device: str = "cpu", batch_size: int = 32) -> None:
        self.model_name_or_path = model_name_or_path
        self.name = f"transformers:{model_name_or_path}"
        self.device, self.batch_size = device, batch_size
        self._parts = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._parts is None:
                from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

                model = AutoModel.from_pretrained(self.model_name_or_path).to(self.device).eval()
                tokenizer = AutoTokenizer.from_pretrained(self.model_name_or_path)
                # The PIL backend: torchvision is not installable on the CPU machines.
                processor = AutoImageProcessor.from_pretrained(self.model_name_or_path, backend="pil")
                self._parts = (model, tokenizer, processor)
        return self._parts

    @staticmethod
    def _features(out) -> np.ndarray:
        tensor = out if hasattr(out, "detach") else out.pooler_output
        return tensor.detach().float().cpu().numpy()

    def embed_images(self, images: list[Image.Image]) -> np.ndarray:
        import torch

        model, _, processor = self._load()
        chunks = []
        for start in range(0, len(images), self.batch_size):
            batch = [img.convert("RGB") for img in images[start:start + self.batch_size]]
            pixels = processor(images=batch, return_tensors="pt")["pixel_values"].to(self.device)
            with torch.inference_mode():
                chunks.append(self._features(model.get_image_features(pixel_values=pixels)))
        return _normalize(np.concatenate(chunks)) if chunks else np.zeros((0, 0), np.float32)

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        import torch

        model, tokenizer, _ = self._load()
        max_len = getattr(model.config.get_text_config(), "max_position_embeddings", 64)
        # SigLIP was trained on max_length padding; CLIP does not mind it either.
        batch = tokenizer(texts, padding="max_length", truncation=True, max_length=max_len, return_tensors="pt")
        inputs = {k: v.to(self.device) for k, v in batch.items() if k in ("input_ids", "attention_mask")}
        with torch.inference_mode():
            return _normalize(self._features(model.get_text_features(**inputs)))


def default_embedder() -> Embedder:
    """``TransformersEmbedder($LOOKCLOSER_PHOTO_EMBEDDER)`` when set, else the colour embedder."""
    name = os.environ.get("LOOKCLOSER_PHOTO_EMBEDDER")
    return TransformersEmbedder(name) if name else ColorHashEmbedder()


def index_cache_dir() -> Path:
    root = os.environ.get("LOOKCLOSER_CACHE") or Path.home() / ".cache" / "lookcloser"
    return Path(root) / "photo_index"


def thumbnail(path: Path, max_side: int) -> Image.Image:
    """Decode an image small: JPEG ``draft`` skips most of the work for large photos."""
    with Image.open(path) as img:
        img.draft("RGB", (max_side, max_side))
        img = img.convert("RGB")
    img.thumbnail((max_side, max_side), Image.Resampling.BICUBIC)
    return img


class PhotoIndex:
    """Embeddings of one user's photos; rows follow ``ids``. Missing images get zero rows."""

    def __init__(self, ids: list[str], vectors: np.ndarray) -> None:
        self.ids, self.vectors = ids, vectors
        self.position = {pid: i for i, pid in enumerate(ids)}

    def search(self, query: np.ndarray, top_k: int, within: set[str] | None = None) -> list[tuple[str, float]]:
        """Best ``top_k`` (id, score) pairs by dot product, optionally only among ``within``."""
        scores = self.vectors @ query.reshape(-1)
        order = np.argsort(-scores, kind="stable")
        hits = [(self.ids[i], float(scores[i])) for i in order if within is None or self.ids[i] in within]
        return hits[:top_k]


def _cache_key(collection, embedder: Embedder) -> str:
    digest = hashlib.sha256(f"{embedder.name}\n{collection.root}\n{collection.user_id}\n".encode())
    for pid in collection.photos:
        path = collection.image_path(pid)
        stat = path.stat() if path.exists() else None
        digest.update(f"{pid}:{stat.st_size if stat else -1}:{stat.st_mtime_ns if stat else -1}\n".encode())
    return digest.hexdigest()[:20]


def build_or_load_index(collection, embedder: Embedder, cache_dir: str | Path | None = None,
                        image_side: int = 224) -> tuple[PhotoIndex, bool]:
    """The user's index from the disk cache, or built and cached; returns (index, loaded_from_cache).

    The key covers the embedder, the collection's location and every photo's file size and mtime,
    so a changed photo or model rebuilds it.
    """
    cache_dir = Path(cache_dir) if cache_dir else index_cache_dir()
    path = cache_dir / f"{collection.user_id}-{_cache_key(collection, embedder)}.npz"
    ids = list(collection.photos)
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as data:
                if list(data["ids"]) == ids:
                    return PhotoIndex(ids, data["vectors"].astype(np.float32)), True
        except (OSError, ValueError, KeyError) as err:
            logger.warning("rebuilding unreadable photo index %s: %s", path, err)
    present = [pid for pid in ids if collection.image_path(pid).is_file()]
    position = {pid: i for i, pid in enumerate(ids)}
    vectors = None
    for start in range(0, len(present), 64):
        chunk = present[start:start + 64]
        embedded = embedder.embed_images([thumbnail(collection.image_path(pid), image_side) for pid in chunk])
        if vectors is None:
            vectors = np.zeros((len(ids), embedded.shape[1]), dtype=np.float32)
        for pid, row in zip(chunk, embedded):
            vectors[position[pid]] = row
    if vectors is None:
        vectors = np.zeros((len(ids), 1), dtype=np.float32)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.{threading.get_ident()}.tmp.npz")
    np.savez(tmp, ids=np.array(ids), vectors=vectors)
    tmp.replace(path)  # atomic: concurrent builders never see half a file
    return PhotoIndex(ids, vectors), False


class LRUCache:
    """A small thread-safe LRU for per-user collections and indexes shared by env instances."""

    def __init__(self, size: int = 8) -> None:
        self.size, self._items, self._lock = size, OrderedDict(), threading.Lock()

    def get_or_create(self, key, create):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = create()  # outside the lock: building an index can take minutes
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value
