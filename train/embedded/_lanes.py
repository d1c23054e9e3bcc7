"""The sampler's KV cache, one row of it (a *lane*) per set of playing rows that fed the same
tokens (:class:`Lanes`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from hscale.train.policy import cache_slots

if TYPE_CHECKING:
    from hscale.train.embedded._rows import Row


class Lanes:
    """The keys and values of a batch's rows, one cache row (a *lane*) per set of rows that
    fed the same tokens. Rows that start alike (a GRPO group, an evaluation's decodings of a
    task) share a lane until they differ (one draws another token, its harness replies
    otherwise), when the rows that differ take a copy of it. A row's numbers do not depend
    on which rows share its forward call, so a lane's are those each of its rows would have
    computed alone, and alike rows are computed once. Storage holds as many lanes as the
    batch has rows; the first ``used`` are in play."""

    def __init__(self, layers: list[tuple[torch.Tensor, torch.Tensor]], used: int) -> None:
        self.layers, self.used = layers, used

    def view(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(k[:self.used], v[:self.used]) for k, v in self.layers]

    def members(self, live: list[Row]) -> list[list[Row]]:
        """Each lane's playing rows, in the order of ``live``."""
        out: list[list[Row]] = [[] for _ in range(self.used)]
        for r in live:
            if not r.engine.done:
                out[r.lane].append(r)
        return out

    def unheld(self, live: list[Row]) -> int:
        """Lanes whose rows all finished."""
        return self.used - len({r.lane for r in live if not r.engine.done})

    def fork(self, source: int, upto: int) -> int:
        """A new lane holding lane ``source``'s first ``upto`` keys and values."""
        new, self.used = self.used, self.used + 1
        self._copy(new, source, upto)
        return new

    def _copy(self, to: int | torch.Tensor, source: int | torch.Tensor, upto: int) -> None:
        """The first ``upto`` keys and values of lanes ``source`` into lanes ``to``."""
        for k, v in self.layers:
            k[to, :, :upto] = k[source, :, :upto]
            v[to, :, :upto] = v[source, :, :upto]

    def split(self, groups: list[list[Row]]) -> None:
        """After a tick's draws and turns: the rows of a lane (``groups``) that no longer
        match its first playing one move to lanes of their own, alike ones together."""
        for group in groups:
            if len(group) < 2:
                continue
            kinds: dict[tuple, list[Row]] = {}
            for r in group:
                if not r.engine.done:
                    kinds.setdefault((r.pos, len(r.fed), r.next_token, len(r.gen),
                                      tuple(r.pending)), []).append(r)
            for alike in list(kinds.values())[1:]:
                new = self.fork(alike[0].lane, alike[0].pos)
                for r in alike:
                    r.lane = new

    def leave(self, live: list[Row]) -> list[Row]:
        """The playing rows; the lanes they hold become the first ones: a freed lane among
        them takes the keys and values of a held one from the end, so a leaving copies as
        many lanes as were freed, not every lane that stays."""
        live = [r for r in live if not r.engine.done]
        held = {r.lane for r in live}
        holes = [s for s in range(len(held)) if s not in held]
        movers = sorted(s for s in held if s >= len(held))
        if holes:
            moved = dict(zip(movers, holes, strict=True))
            upto = cache_slots(max(r.pos for r in live if r.lane in moved) + 1)
            self._copy(torch.tensor(holes), torch.tensor(movers), upto)
            for r in live:
                r.lane = moved.get(r.lane, r.lane)
        self.used = len(held)
        return live

    def grow(self, need: int, rows: int) -> None:
        """At least ``need`` cache positions, half as many again as now (it grows rarely),
        for as many lanes as there are ``rows`` (a lane has one row at least)."""
        have = self.layers[0][0].shape[2]
        if need <= have:
            return
        slots = cache_slots(max(need, have * 3 // 2))
        out = []
        for k, v in self.layers:
            shape = (max(rows, self.used), k.shape[1], slots, k.shape[3])
            k2, v2 = k.new_zeros(shape), v.new_zeros(shape)
            k2[:self.used, :, :have] = k[:self.used]
            v2[:self.used, :, :have] = v[:self.used]
            out.append((k2, v2))
        self.layers = out
