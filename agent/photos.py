"""One DISBench user's photo collection: reading its metadata and filtering it (docs/formats.md §4).

On disk: ``{root}/metadata/{user_id}.jsonl`` (``{"photo_id", "metadata": {"taken_time",
"longitude", "latitude", "accuracy", "address", "capturedevice"}}``, any metadata field may be
missing or null) and ``{root}/images/{user_id}/{photo_id}.jpg``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from lookcloser.agent.toolkit import ToolError

_TIME_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d", "%Y-%m", "%Y")


@dataclass
class Photo:
    """One photo's metadata, normalised: missing or unusable fields are ``None``."""

    photo_id: str
    taken: datetime | None = None
    latitude: float | None = None
    longitude: float | None = None
    address: str | None = None
    device: str | None = None

    def describe(self) -> dict:
        """JSON-ready metadata as the tools show it."""
        return {
            "photo_id": self.photo_id,
            "taken_time": self.taken.strftime("%Y-%m-%d %H:%M:%S") if self.taken else None,
            "latitude": self.latitude,
            "longitude": self.longitude,
            "address": self.address,
            "device": self.device,
        }


@dataclass
class Collection:
    """The photos of one user, in metadata-file order, with where their images live."""

    root: Path
    user_id: str
    photos: dict[str, Photo] = field(default_factory=dict)

    def image_path(self, photo_id: str) -> Path:
        from lookcloser.data_builders.records import resolve_image_path

        return resolve_image_path(self.root, f"images/{self.user_id}/{photo_id}.jpg", source=str(self.root),
                                  rid=photo_id, field="photo_id")


def parse_time(text: str, *, end: bool = False) -> datetime:
    """Parse a time bound; a partial date means the start (or, with ``end``, the end) of that period.

    >>> parse_time("2020-06")
    datetime.datetime(2020, 6, 1, 0, 0)
    >>> parse_time("2020-06", end=True)
    datetime.datetime(2020, 6, 30, 23, 59, 59)
    >>> parse_time("2021-03-04T10:30", end=True)
    datetime.datetime(2021, 3, 4, 10, 30, 59)
    """
    text = text.strip().replace("T", " ").replace("/", "-")
    for fmt in _TIME_FORMATS:
        try:
            start = datetime.strptime(text, fmt)
        except ValueError:
            continue
        if not end:
            return start
        if fmt == "%Y":
            nxt = start.replace(year=start.year + 1)
        elif fmt == "%Y-%m":
            nxt = (start.replace(day=28) + timedelta(days=4)).replace(day=1)
        elif fmt == "%Y-%m-%d":
            nxt = start + timedelta(days=1)
        elif fmt == "%Y-%m-%d %H:%M":
            nxt = start + timedelta(minutes=1)
        else:
            return start
        return nxt - timedelta(seconds=1)
    raise ToolError(f"time {text!r} is not understood; use YYYY-MM-DD, YYYY-MM-DD HH:MM:SS, YYYY-MM or YYYY")


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in kilometres.

    >>> round(haversine_km(48.8566, 2.3522, 51.5074, -0.1278))  # Paris to London
    344
    """
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 6371.0088 * 2 * math.asin(min(1.0, math.sqrt(a)))


def _float(value: object, lo: float, hi: float) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and lo <= number <= hi else None


def _text(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def parse_photo(record: object, source: Path, lineno: int) -> Photo:
    """Read one metadata line; a bad id raises ``RecordError``, bad optional fields become None."""
    from lookcloser.data_builders.records import RecordError

    if not isinstance(record, dict):
        raise RecordError(source, f"line {lineno}", None, "expected an object")
    photo_id = record.get("photo_id")
    if isinstance(photo_id, int) and not isinstance(photo_id, bool):
        photo_id = str(photo_id)
    if not isinstance(photo_id, str) or not re.fullmatch(r"[\w.@-]+", photo_id):
        raise RecordError(source, f"line {lineno}", "photo_id", f"must be a plain id string, got {photo_id!r}")
    meta = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    taken = None
    if isinstance(meta.get("taken_time"), str):
        try:
            taken = parse_time(meta["taken_time"])
        except ToolError:
            taken = None
    lat, lon = _float(meta.get("latitude"), -90, 90), _float(meta.get("longitude"), -180, 180)
    if lat is None or lon is None:
        lat = lon = None  # half a position is no position
    return Photo(photo_id, taken, lat, lon, _text(meta.get("address")), _text(meta.get("capturedevice")))


def load_collection(root: str | Path, user_id: str) -> Collection:
    """Read ``metadata/{user_id}.jsonl`` under the DISBench root."""
    from lookcloser.data_builders.records import RecordError, iter_jsonl

    if not isinstance(user_id, str) or not re.fullmatch(r"[\w.@-]+", user_id):
        raise RecordError(str(root), user_id, "user_id", "must be a plain id string")
    root = Path(root).resolve()
    source = root / "metadata" / f"{user_id}.jsonl"
    collection = Collection(root, user_id)
    for lineno, record in enumerate(iter_jsonl(source), start=1):
        photo = parse_photo(record, source, lineno)
        collection.photos[photo.photo_id] = photo
    if not collection.photos:
        raise RecordError(source, None, None, "no photos")
    return collection


def filter_photos(photos: list[Photo], *, start: datetime | None = None, end: datetime | None = None,
                  place: str = "", center: tuple[float, float] | None = None, radius_km: float | None = None,
                  device: str = "") -> list[Photo]:
    """Photos meeting every given criterion, oldest first; a photo lacking a field fails that criterion.

    >>> ps = [Photo("a", datetime(2020, 6, 2), 48.86, 2.35, "Paris, France", "Canon"),
    ...       Photo("b", datetime(2020, 7, 1), None, None, "Paris, France", None),
    ...       Photo("c", None, 48.85, 2.34, None, "Canon")]
    >>> [p.photo_id for p in filter_photos(ps, place="paris")]
    ['a', 'b']
    >>> [p.photo_id for p in filter_photos(ps, center=(48.8566, 2.3522), radius_km=5)]
    ['a', 'c']
    >>> [p.photo_id for p in filter_photos(ps, end=parse_time("2020-06", end=True))]
    ['a']
    """
    place, device = place.strip().lower(), device.strip().lower()
    kept = []
    for photo in photos:
        if (start or end) and photo.taken is None:
            continue
        if start and photo.taken < start or end and photo.taken > end:
            continue
        if place and (photo.address is None or place not in photo.address.lower()):
            continue
        if device and (photo.device is None or device not in photo.device.lower()):
            continue
        if center is not None and (
                photo.latitude is None or haversine_km(*center, photo.latitude, photo.longitude) > radius_km):
            continue
        kept.append(photo)
    return sorted(kept, key=lambda p: (p.taken is None, p.taken or datetime.min, p.photo_id))


def summarize(photos: list[Photo]) -> str:
    """One line about a set of photos: count, time span, how many have GPS.

    >>> summarize([Photo("a", datetime(2019, 1, 5)), Photo("b", datetime(2021, 2, 1), 1.0, 2.0)])
    '2 photos, taken 2019-01-05 to 2021-02-01, 1 with GPS'
    """
    times = [p.taken for p in photos if p.taken]
    span = f", taken {min(times):%Y-%m-%d} to {max(times):%Y-%m-%d}" if times else ""
    with_gps = sum(p.latitude is not None for p in photos)
    return f"{len(photos)} photos{span}, {with_gps} with GPS"


def dumps_compact(rows: list[dict]) -> str:
    """JSON lines without null fields: shorter observations for the model.

    >>> dumps_compact([{"photo_id": "a", "address": None, "latitude": 1.5}])
    '{"photo_id": "a", "latitude": 1.5}'
    """
    return "\n".join(json.dumps({k: v for k, v in row.items() if v is not None}, ensure_ascii=False) for row in rows)
