"""Work budgets for the searches: a count of steps, never seconds.

A wall-clock limit makes a search's answer depend on the machine and its load (the same
command gave N = 48 on an idle machine and N = 64 on a busy one). A step count makes every
search a pure function of its arguments. One step is about ten microseconds of one core.
"""

from __future__ import annotations


class OutOfSteps(Exception):
    """A budget ran out: searches answer None, enumerations raise a user error."""


class StepBudget:
    """Steps left to a piece of work; a share of it also counts against the whole."""

    def __init__(self, steps: int, parent: StepBudget | None = None) -> None:
        self.left = int(steps)
        self._parent = parent

    def share(self, steps: int) -> StepBudget:
        """A budget of at most ``steps`` (and at most what is left here) spent from this one."""
        return StepBudget(min(int(steps), self.left), self)

    def spend(self, steps: int = 1) -> None:
        """Take ``steps``; raise :class:`OutOfSteps` when that overdraws this budget."""
        budget: StepBudget | None = self
        while budget is not None:
            budget.left -= steps
            budget = budget._parent
        if self.left < 0:
            raise OutOfSteps
