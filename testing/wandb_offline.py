"""Read back an offline W&B run from the files wandb writes (no server, no network).

wandb 0.31 keeps an offline run in ``offline-run-*/run-<id>.wandb``: a LevelDB-style log of
protobuf ``Record`` messages (wandb's own ``wandb.proto``); a logged table is a ``run_table``
artifact whose manifest points at the staged files (``WANDB_DATA_DIR``).
"""

from __future__ import annotations

import json
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

BLOCK = 32768


def records(path: Path):
    """The ``Record`` messages of a ``.wandb`` file, in order."""
    from wandb.proto import wandb_internal_pb2 as pb

    raw, pos, buf = Path(path).read_bytes(), 7, b""
    while pos + 7 <= len(raw):
        if BLOCK - pos % BLOCK < 7:
            pos += BLOCK - pos % BLOCK
            continue
        _, length, kind = struct.unpack("<IHB", raw[pos:pos + 7])
        data, pos = raw[pos + 7:pos + 7 + length], pos + 7 + length
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(buf + data if kind == 4 else data)
            yield record
        elif kind == 2:
            buf = data
        elif kind == 3:
            buf += data


@dataclass
class OfflineRun:
    run_id: str = ""
    group: str = ""
    name: str = ""
    config: dict = field(default_factory=dict)
    history_keys: set = field(default_factory=set)
    tables: dict = field(default_factory=dict)  # key -> [{"path in artifact": local file}, ...] in logging order

    def table(self, key: str, version: int = -1) -> dict:
        """A logged table's JSON (``columns``, ``data``) and where its files are (``files``)."""
        files = self.tables[key][version]
        table = json.loads(Path(files[f"{key}.table.json"]).read_text())
        return {**table, "files": files}


def _finished_records(run_file: Path, timeout: float = 60.0) -> list:
    """The file's records once the run is written out: ``wandb.finish()`` returns before wandb's
    service has written an offline run (seen with 0.31), so wait for the ``exit`` record and a size
    that holds still."""
    deadline, size = time.monotonic() + timeout, -1
    while True:
        current = Path(run_file).stat().st_size
        found = list(records(run_file))
        done = any(r.WhichOneof("record_type") == "exit" for r in found)
        if (done and current == size) or time.monotonic() > deadline:
            return found
        size = current
        time.sleep(0.2)


def read_offline_run(run_file: Path) -> OfflineRun:
    run = OfflineRun()
    for record in _finished_records(run_file):
        kind = record.WhichOneof("record_type")
        if kind == "run":  # wandb.init: the run's identity and the config given to init
            run.run_id, run.group, run.name = record.run.run_id, record.run.run_group, record.run.display_name
            run.config.update({item.key: json.loads(item.value_json) for item in record.run.config.update})
        elif kind == "config":
            run.config.update({item.key: json.loads(item.value_json) for item in record.config.update})
        elif kind == "history":
            run.history_keys |= {"/".join(item.nested_key) or item.key for item in record.history.item}
        elif kind == "artifact" and record.artifact.type == "run_table":
            files = {entry.path: entry.local_path for entry in record.artifact.manifest.contents}
            key = next(p.removesuffix(".table.json") for p in files if p.endswith(".table.json"))
            run.tables.setdefault(key, []).append(files)
    return run


def offline_runs(wandb_dir: Path) -> list[OfflineRun]:
    """Every offline run under ``WANDB_DIR`` (its ``wandb/`` folder), oldest first."""
    return [read_offline_run(f) for f in sorted(Path(wandb_dir).glob("wandb/offline-run-*/run-*.wandb"))]
