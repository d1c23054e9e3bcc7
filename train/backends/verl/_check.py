"""Checking veRL overrides on a CPU with veRL's own code, as main_ppo and its workers will:
compose the ``ppo_trainer`` Hydra config, refuse mandatory values left unset, run
``validate_config``, and build every config object a launch builds before its first GPU
step (actor, rollout, reference, critic, checkpoint engine, algorithm, tracking). A wrong key,
a missing value or a batch size that does not divide fails here, naming the override, not
minutes into a GPU job. Configs that load the model (its tokenizer and Hugging Face config)
load it when it is a folder on this machine; a hub model (downloaded on the GPU node, not
here) is stood in for by a tiny local model folder, so every other check still runs.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import difflib
import io
import json
import os
import re
import shutil
import tempfile
import warnings
from functools import cache
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError

CONFIG_NAME = "ppo_trainer"
HINT = "check the batch sizes and the spec's verl settings"
# names veRL labels its logs, traces and default checkpoint folder with: no check reads them
_LABELS = ("trainer.project_name", "trainer.experiment_name")


def verl_config_dir() -> Path:
    """veRL's Hydra config folder inside the installed package."""
    try:
        import verl
    except ImportError as exc:
        raise HscaleError(f"veRL is not importable ({exc})", 'pip install -e ".[train]"') from exc
    path = Path(os.path.dirname(verl.__file__)) / "trainer" / "config"
    if not (path / f"{CONFIG_NAME}.yaml").is_file():
        raise HscaleError(f"{path}: no {CONFIG_NAME}.yaml in the installed veRL",
                          "install veRL 0.9.1 (pip install -e \".[train]\")")
    return path


def validate_overrides(overrides: list[str]) -> Any:
    """Compose veRL's ``ppo_trainer`` config with ``overrides`` (CPU only); the composed
    config, or an HscaleError naming the override that does not fit, with a did-you-mean."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(verl_config_dir()), version_base=None):
        try:
            config = compose(config_name=CONFIG_NAME, overrides=list(overrides))
        except HydraException as exc:
            bad = _culprit(str(exc), overrides)
            hint = "check the key against verl/trainer/config/ppo_trainer.yaml"
            if bad is not None:
                base = OmegaConf.to_container(compose(config_name=CONFIG_NAME),
                                              resolve=False)
                hint = _hint(bad, base) or hint
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise HscaleError(f"veRL rejects the override {bad or '(unknown)'!r}: {first}",
                              hint) from None
    _check_built(config)
    return config


def verdict_key(overrides: list[str]) -> tuple[str, ...]:
    """``overrides`` with the run's log labels (:data:`_LABELS`) blanked where Hydra reads
    them as the plain name written: runs that differ only there (the experiment's runs: each
    its ``{arm}-{seed}``) get one verdict, so a dry run composes and checks each key once."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    out = []
    for o in overrides:
        key, _, text = o.partition("=")
        if key in _LABELS and re.fullmatch(r"[A-Za-z0-9_.-]+", text) \
                and parser.parse_override(o).value() == text:
            o = f"{key}="
        out.append(o)
    return tuple(out)


def _check_built(config: Any) -> None:
    """Every config object main_ppo builds before a GPU is touched; veRL's own errors become
    one line naming the part (AssertionError, ValueError, MissingMandatoryValue...)."""
    config = copy.deepcopy(config)
    for node in (config.actor_rollout_ref.model, config.critic.model):
        if not _local(str(node.path)):
            node.path = str(stand_in_model())
    missing = [k for k in _missing(config) if not k.startswith("reward.reward_model.")
               or config.reward.reward_model.enable]
    if missing:
        raise HscaleError(f"veRL needs a value for {missing[0]} (still ??? after the overrides)",
                          f"set it in the spec's verl.overrides, e.g. {missing[0]}=...")
    for part, build in (("the config", _validate), ("the actor", _actor),
                        ("the rollout", _rollout), ("the reference policy", _ref),
                        ("the critic", _critic), ("the model", _model),
                        ("the trainer", _trainer)):
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")  # veRL's notes on what it disabled
                build(config)
        except HscaleError:
            raise
        except Exception as exc:  # veRL raises AssertionError, ValueError, TypeError, ...
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise HscaleError(f"veRL rejects {part}: {text}", HINT) from None


def _missing(node: Any, prefix: str = "") -> list[str]:
    from omegaconf import OmegaConf

    out = []
    keys = node.keys() if OmegaConf.is_dict(node) else range(len(node))
    for key in keys:
        path = f"{prefix}.{key}" if prefix else str(key)
        if OmegaConf.is_missing(node, key):
            out.append(path)
        elif OmegaConf.is_config(node._get_node(key)):
            out += _missing(node[key], path)
    return out


def _gpus(config: Any) -> int:
    return int(config.trainer.n_gpus_per_node) * int(config.trainer.nnodes)


def _validate(config: Any) -> None:
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    validate_config(config=copy.deepcopy(config),
                    use_reference_policy=need_reference_policy(config),
                    use_critic=need_critic(config))


def _actor(config: Any) -> None:
    from verl.utils.config import omega_conf_to_dataclass

    arr = config.actor_rollout_ref
    actor = omega_conf_to_dataclass(arr.actor)
    actor.validate(_gpus(config), config.data.train_batch_size, arr.model)
    if arr.actor.use_dynamic_bsz != arr.rollout.log_prob_use_dynamic_bsz:
        raise ValueError("actor.use_dynamic_bsz and rollout.log_prob_use_dynamic_bsz differ")
    mini = arr.actor.ppo_mini_batch_size * arr.rollout.n
    if mini % _gpus(config):
        raise ValueError(f"a mini batch of {mini} sequences (ppo_mini_batch_size x n) does not "
                         f"split over {_gpus(config)} GPUs")


def _rollout(config: Any) -> None:
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.rollout.base import _ROLLOUT_REGISTRY

    from hscale.train.backends.verl.cpu.settings import is_cpu

    rollout = omega_conf_to_dataclass(config.actor_rollout_ref.rollout)
    if is_cpu(rollout.name):  # registers itself through veRL's registries
        import hscale.train.backends.verl.cpu.plugin  # noqa: F401
    if (rollout.name, rollout.mode) not in _ROLLOUT_REGISTRY:
        known = sorted({name for name, _ in _ROLLOUT_REGISTRY})
        raise ValueError(f"no {rollout.mode} rollout named {rollout.name!r} (veRL has "
                         f"{', '.join(known)})")
    size = (rollout.tensor_model_parallel_size * rollout.data_parallel_size
            * rollout.pipeline_model_parallel_size)
    if _gpus(config) % size:
        raise ValueError(f"{_gpus(config)} GPUs do not split into rollout replicas of {size} "
                         "(tensor x data x pipeline parallel)")
    omega_conf_to_dataclass(config.actor_rollout_ref.rollout.checkpoint_engine)


def _ref(config: Any) -> None:
    from omegaconf import open_dict
    from verl.trainer.ppo.utils import need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass

    if not need_reference_policy(config):
        return
    ref = copy.deepcopy(config.actor_rollout_ref.ref)
    with open_dict(ref):  # as veRL's worker renames them before building the config
        ref.ppo_mini_batch_size = config.actor_rollout_ref.actor.ppo_mini_batch_size
        ref.ppo_micro_batch_size = ref.pop("log_prob_micro_batch_size", None)
        ref.ppo_micro_batch_size_per_gpu = ref.pop("log_prob_micro_batch_size_per_gpu", None)
        ref.use_dynamic_bsz = ref.pop("log_prob_use_dynamic_bsz", False)
        ref.ppo_max_token_len_per_gpu = ref.pop("log_prob_max_token_len_per_gpu", None)
    omega_conf_to_dataclass(ref)


def _local(path: str) -> bool:
    return Path(path).is_dir()


@cache
def stand_in_model() -> Path:
    """A tiny Hugging Face model folder (config.json, a character tokenizer with a chat
    template, no weights): what veRL's model configs load when the real model is not here."""
    from hscale.train.lm import char_chat_tokenizer

    folder = Path(tempfile.mkdtemp(prefix="hscale-stand-in-"))
    atexit.register(shutil.rmtree, folder, True)
    hf = char_chat_tokenizer()
    hf.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": len(hf),
        "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 131072,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16"}))
    return folder


def _critic(config: Any) -> None:
    from verl.trainer.ppo.utils import need_critic
    from verl.utils.config import omega_conf_to_dataclass

    if need_critic(config) and _local(str(config.critic.model.path)):
        critic = omega_conf_to_dataclass(config.critic)
        critic.validate(_gpus(config), config.data.train_batch_size)


def _model(config: Any) -> None:
    from verl.utils.config import omega_conf_to_dataclass

    if _local(str(config.actor_rollout_ref.model.path)):
        omega_conf_to_dataclass(config.actor_rollout_ref.model)


def _trainer(config: Any) -> None:
    from verl.utils.config import omega_conf_to_dataclass
    from verl.utils.tracking import Tracking

    loggers = config.trainer.logger
    loggers = [loggers] if isinstance(loggers, str) else list(loggers)
    bad = [b for b in loggers if b not in Tracking.supported_backend]
    if bad:
        raise ValueError(f"trainer.logger {bad[0]!r} is not one of veRL's loggers "
                         f"({', '.join(Tracking.supported_backend)})")
    omega_conf_to_dataclass(config.algorithm)


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _culprit(message: str, overrides: list[str]) -> str | None:
    """The override a Hydra error message is about (quoted key or value), if any."""
    quoted = re.findall(r"'([^']+)'", message)
    for q in quoted:
        for o in overrides:
            if _key(o) == q or o == q:
                return o
    for o in overrides:
        if _key(o) in message:
            return o
    return None


def _hint(override: str, config: dict) -> str | None:
    """A did-you-mean for the override's key, from the keys of its parent in the config."""
    parts = _key(override).split(".")
    node: Any = config
    for depth, part in enumerate(parts[:-1]):
        if not isinstance(node, dict) or part not in node:
            known = list(node) if isinstance(node, dict) else []
            close = difflib.get_close_matches(part, known, n=1)
            where = ".".join(parts[:depth]) or "the top level"
            return (f"no {part!r} under {where}"
                    + (f"; did you mean {close[0]!r}?" if close else ""))
        node = node[part]
    if not isinstance(node, dict):
        return None
    leaf = parts[-1]
    if leaf in node:
        return f"the key exists; check the value type in {override!r}"
    close = difflib.get_close_matches(leaf, list(node), n=1)
    parent = ".".join(parts[:-1])
    if close:
        return f"did you mean {parent + '.' if parent else ''}{close[0]}?"
    return f"{parent or 'the top level'} has no key {leaf!r}; prefix + to add one"
