"""The embedded trainer's optimizer: torch's AdamW update, without a torch.optim.Optimizer.

Building any torch.optim.Optimizer imports torch._dynamo (about 1.4 s, most of a worker's
start), which the embedded trainer never uses. :class:`AdamW` keeps the parameters' state
and calls torch's own functional AdamW (``torch.optim.adamw.adamw``) with the arguments
``torch.optim.AdamW.step`` passes it, so its steps are the same numbers; its state dict has
torch's layout, so a checkpoint of either loads into the other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch.optim.adamw import adamw

# torch.optim.AdamW's param-group fields besides the tunables and "params", as it saves them
_FIXED = {"amsgrad": False, "foreach": None, "maximize": False, "capturable": False,
          "differentiable": False, "fused": None, "decoupled_weight_decay": True}


class AdamW:
    """``torch.optim.AdamW(params, lr, betas, eps, weight_decay)`` for one group of
    parameters: ``zero_grad``, ``step``, ``state_dict`` and ``load_state_dict``."""

    def __init__(self, params: Iterable[torch.nn.Parameter], lr: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2) -> None:
        self.params = list(params)
        self.group: dict[str, Any] = {"lr": lr, "betas": tuple(betas), "eps": eps,
                                      "weight_decay": weight_decay, **_FIXED}
        self.state: dict[int, dict[str, torch.Tensor]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        """One AdamW step of every parameter that has a gradient."""
        params, grads, avgs, squares, steps = [], [], [], [], []
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            state = self.state.get(i)
            if state is None:  # as torch.optim.Adam._init_group starts a parameter
                state = self.state[i] = {
                    "step": torch.tensor(0.0, dtype=torch.get_default_dtype()),
                    "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                    "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format)}
            params.append(p)
            grads.append(p.grad)
            avgs.append(state["exp_avg"])
            squares.append(state["exp_avg_sq"])
            steps.append(state["step"])
        if not params:
            return
        g = self.group
        adamw(params, grads, avgs, squares, [], steps, foreach=g["foreach"],
              capturable=False, differentiable=False, fused=g["fused"], grad_scale=None,
              found_inf=None, has_complex=any(torch.is_complex(p) for p in params),
              amsgrad=False, beta1=g["betas"][0], beta2=g["betas"][1], lr=g["lr"],
              weight_decay=g["weight_decay"], eps=g["eps"], maximize=False)

    def state_dict(self) -> dict[str, Any]:
        """torch.optim's layout: per-parameter state by index, and the one group."""
        return {"state": {i: dict(s) for i, s in self.state.items()},
                "param_groups": [{**self.group, "params": list(range(len(self.params)))}]}

    def load_state_dict(self, saved: dict[str, Any]) -> None:
        """A state dict of this class or of ``torch.optim.AdamW`` over the same parameters."""
        groups = saved["param_groups"]
        if len(groups) != 1 or len(groups[0]["params"]) != len(self.params):
            raise ValueError("the saved optimizer state is of other parameters")
        order = groups[0]["params"]
        self.group = {k: v for k, v in groups[0].items() if k != "params"}
        self.group["betas"] = tuple(self.group["betas"])
        self.state = {}
        for slot, key in enumerate(order):
            if key in saved["state"]:
                p = self.params[slot]
                self.state[slot] = {
                    name: value.clone() if name == "step" else value.to(p.dtype).clone()
                    for name, value in saved["state"][key].items()}
