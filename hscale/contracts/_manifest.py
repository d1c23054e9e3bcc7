"""``manifest.json``: one resolved, content-hashed run, everything a trainer needs.

It holds records only (:mod:`hscale.contracts._records`); what a run derives from it (its
factor and harness spaces, its harnesses, its jobs) is built by hscale.train.planning._workload."""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from hscale.contracts._records import (
    AlgorithmRecord,
    AssignmentRecord,
    BenchmarkRecord,
    BlackBoxRecord,
    BudgetRecord,
    EvaluationRecord,
    SpaceRecord,
    VerlRecord,
)
from hscale.errors import HscaleError
from hscale.files import atomic_write_text

SCHEMA_VERSION = 1
MANIFEST, SCHEDULE, EVAL, TRAIN, STATUS = (
    "manifest.json", "schedule.parquet", "eval.parquet", "train.parquet", "status.json")
REPLAN = "re-plan the run (hscale plan --force)"



# Fields added after schema 1: hashed only when set, so manifests that lack them keep
# their hashes (a run planned before stays the same run). ``blackbox``: an arm trained
# through a black-box harness; ``verl``: the veRL backend's settings, as planned;
# ``keep_rollouts``: the share of training groups whose transcripts rollouts.parquet keeps
# (a Harness-S arm also keeps every zero-signal group and its rescue).
OPTIONAL_FIELDS = ("tracking", "blackbox", "verl", "keep_rollouts")


class Manifest(BaseModel):
    """One resolved, content-hashed run: ``hash`` is the sha256 of the canonical JSON of every
    other field, so the same spec gives the same hash on any machine. Top-level fields beyond
    these are kept (and hashed): a newer writer may extend the contract. Frozen at the top
    level; its dicts are not, and ``read`` refuses a manifest whose hash no longer matches.

    Optional sections (:data:`OPTIONAL_FIELDS`) are typed records too: ``blackbox`` for an
    arm trained through a black-box harness, ``verl`` for the veRL backend's settings.
    Anything else a newer writer adds is kept as an extension (:meth:`extension`)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    schema_version: int = SCHEMA_VERSION
    experiment: str
    arm: str
    seed: int
    space: SpaceRecord
    train_harnesses: tuple[str, ...]
    eval_sets: dict[str, tuple[str, ...]]
    assignment: AssignmentRecord
    algorithm: AlgorithmRecord
    budget: BudgetRecord
    benchmark: BenchmarkRecord
    model: str
    evaluation: EvaluationRecord
    backend: str
    tracking: tuple[str, ...] | None = None
    blackbox: BlackBoxRecord | None = None
    verl: VerlRecord | None = None
    keep_rollouts: float | None = None
    hash: str = ""

    @classmethod
    def build(cls, **fields: Any) -> Manifest:
        """A manifest from its fields, with its hash computed."""
        draft = cls.model_validate({**fields, "hash": ""})
        return draft.model_copy(update={"hash": canonical_hash(draft.hashed_body())})

    def body(self) -> dict[str, Any]:
        """Everything but the hash (and unset optional fields), as JSON types."""
        unset = {f for f in OPTIONAL_FIELDS if getattr(self, f) is None}
        return self.model_dump(mode="json", exclude={"hash", *unset})

    def hashed_body(self) -> dict[str, Any]:
        """What the hash covers: :meth:`body`, less the paths of benchmarks whose content is
        hashed (the files are the benchmark; where they lie differs between machines)."""
        body = self.body()

        def portable(record: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in record.items() if k != "path"} \
                if record.get("content") else record

        body["benchmark"] = portable(body["benchmark"])
        if body["space"].get("plugins"):  # a plugin is its code, wherever its file lies
            body["space"] = {**body["space"], "plugins": [
                {k: v for k, v in p.items() if k != "path"} for p in body["space"]["plugins"]]}
        if body["evaluation"].get("benchmarks"):
            body["evaluation"] = {**body["evaluation"], "benchmarks": [
                portable(b) for b in body["evaluation"]["benchmarks"]]}
        return body

    def extension(self, key: str) -> Any:
        """A top-level field this contract does not define (a backend's own record, as
        planned), or None when the manifest has none."""
        return (self.model_extra or {}).get(key)

    def to_json(self) -> str:
        return json.dumps({**self.body(), "hash": self.hash}, indent=2) + "\n"

    def write(self, run_dir: str | Path) -> Path:
        path = Path(run_dir) / MANIFEST
        atomic_write_text(path, self.to_json())
        return path

    @classmethod
    def parse(cls, raw: object, where: str) -> Manifest:
        """A manifest from decoded JSON; an HscaleError naming ``where`` and the first bad
        field, or a hash that no longer matches the content (edited after planning)."""
        if not isinstance(raw, dict):
            raise HscaleError(f"{where}: a manifest is a JSON object, found "
                              f"{type(raw).__name__}", REPLAN)
        try:
            manifest = cls.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "(top level)"
            raise HscaleError(f"{where}: {field}: {err['msg']}", REPLAN) from None
        if manifest.schema_version != SCHEMA_VERSION:
            raise HscaleError(f"{where}: schema_version {manifest.schema_version}, this hscale "
                              f"reads {SCHEMA_VERSION}", REPLAN)
        if manifest.hash != canonical_hash(manifest.hashed_body()):
            raise HscaleError(f"{where}: the hash does not match the content (edited after "
                              "planning?)", REPLAN)
        return manifest

    @classmethod
    def read(cls, run_dir: str | Path) -> Manifest:
        """``run_dir/manifest.json`` (or that file itself), checked."""
        path = Path(run_dir)
        path = path / MANIFEST if path.is_dir() else path
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise HscaleError(f"{path}: no such file", "plan the run first (hscale plan)") \
                from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise HscaleError(f"{path}: unreadable ({type(exc).__name__})", REPLAN) from None
        return cls.parse(raw, str(path))

    # --- what every consumer derives from it ------------------------------------------
    def rng(self, purpose: str) -> np.random.Generator:
        """The run's generator for one purpose (``"sampler"``, ``"schedule"``, ...)."""
        return rng_for(self.seed, self.arm, purpose)


def canonical_hash(body: dict[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def rng_for(seed: int, *names: str) -> np.random.Generator:
    """A generator derived from a seed and stable names (not Python's salted hash)."""
    return np.random.default_rng([seed, *(zlib.crc32(n.encode()) for n in names)])


