"""The step where a trace's anomaly became inevitable: the earliest state of the trace from which
EVERY completion (every way the writers can go on, as the model allows) reaches a state violating
the trace's property. Before it, some schedule still avoids the anomaly (a validation that would
fail, a race that would be lost); after it, nothing the writers can do prevents it. Computed with
the engines' search from a state (``engines.explicit.inevitable``), bounded by a count of states.
"""

from __future__ import annotations

from dataclasses import dataclass

from icecheck.engines.explicit import inevitable, shortest_path

# States each prefix's search may visit (shared memo: a later prefix's verdicts answer for an
# earlier one). Big enough for the corpus traces; a cut search is reported, never guessed.
MAX_STATES = 20000


@dataclass(frozen=True)
class Inevitable:
    step: int | None       # the state after this many actions; None: not even at the end
    explored: int          # distinct states searched
    cut_at: int | None     # the prefix whose search a bound cut (the answer may be earlier)
    escape: tuple[str, ...] | None = None   # from the step before: a completion that avoids it

    def text(self, total: int) -> str:
        if self.step is None:
            return "the violation is not reached by every completion of this trace"
        where = ("from the start (the configuration alone makes it certain)" if self.step == 0
                 else f"after step {self.step}")
        avoid = ("" if self.step == 0 else
                 f"; from step {self.step - 1} some schedule still avoids it"
                 + (f" (e.g. {' '.join(self.escape)})" if self.escape else ""))
        cut = (f" (the search from step {self.cut_at} was cut at its bound of states, so it may "
               f"have been inevitable earlier)" if self.cut_at is not None else "")
        return (f"inevitable {where}: every way the writers can go on reaches it"
                f"{avoid}; {self.explored} states searched{cut}")


def inevitable_step(model, run, prop: str, key: str, *,
                    max_states: int = MAX_STATES) -> Inevitable:
    """Search back from the last state of ``run``: the earliest k such that every completion
    of the first k actions violates ``prop``."""
    from .execute import violated

    def goal(state) -> bool:
        return prop in violated(model, state, key)

    memo: dict[str, bool] = {}
    earliest: int | None = None
    explored = 0
    for k in range(len(run.states) - 1, -1, -1):
        r = inevitable(model, run.states[k], goal, max_states=max_states, memo=memo)
        explored += r.explored
        if r.found is None:
            return Inevitable(earliest, explored, k)
        if not r.found:
            # a witness: the shortest completion from here that ends (no action enabled)
            # without ever violating (None when every escape loops forever instead)
            w = shortest_path(model, run.states[k], lambda s: not model.actions(s),
                              avoid=goal, max_states=max_states)
            explored += w.explored
            escape = tuple(str(a) for a in w.found) if w.found else None
            return Inevitable(earliest, explored, None, escape)
        earliest = k
    return Inevitable(earliest, explored, None)
