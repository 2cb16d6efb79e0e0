"""Canonical, minimal counterexamples.

``canonicalize``: writers are renamed ``w1, w2, ...`` in the order of their first action (the
writers that never act follow, in their old order). The configuration's programs are permuted
to match (a writer's name and slot decide the names the model derives: files ``w1-1-d1``,
snapshot ids ``1001``, metadata ``v2-w1-1.metadata.json``), the writer tags inside the commands
(``'w2.1'`` values, and ``mix_config``'s INSERT keys ``100*w + n``) are renamed with them, and
the actions are renamed; re-running the model then makes every derived name canonical.

``minimize``: delta debugging (ddmin) of a failing action list: remove a writer's suffix of
actions, then chunks, then single actions, keeping a candidate whenever the same property is
still violated. A candidate runs until its first action that is no longer enabled (which ends
it) and is cut at its first state that violates the property. Then writers that no longer act,
and program entries no writer reaches, are dropped from the configuration when the property is
still violated without them. Everything is deterministic: no randomness, a fixed order of
candidates.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable, Iterable

from icecheck.engines.config import ExploreConfig
from icecheck.models.clock import CLOCK
from icecheck.models.system import BEGIN, Action

from .execute import model_for, parse_actions, run_actions, violated

_WORD = re.compile(r"\bw(\d+)\b")
_TAG = re.compile(r"^w(\d+)\.(\d+)$")


# -- canonical writer names ---------------------------------------------------------------------
def writer_order(cfg: ExploreConfig, actions: Iterable[Action]) -> list[str]:
    """Old writer names in their new order: by first action, then the idle ones."""
    order: list[str] = []
    for a in actions:
        if a.writer not in order and a.writer != CLOCK:   # the clock is no writer
            order.append(a.writer)
    for i in range(1, len(cfg.writers) + 1):
        if f"w{i}" not in order:
            order.append(f"w{i}")
    return order


def _rename_value(value: Any, mapping: dict[int, int]) -> Any:
    if isinstance(value, str):
        return _WORD.sub(lambda m: f"w{mapping.get(int(m.group(1)), int(m.group(1)))}", value)
    if isinstance(value, tuple):
        out = tuple(_rename_value(v, mapping) for v in value)
        # mix_config's INSERT rows: (100*w + n, "w{w}.{n}") -> renumber the key with the tag.
        tags = [_TAG.match(v) for v in value if isinstance(v, str)]
        tags = [t for t in tags if t]
        if tags and all(not isinstance(v, (tuple, list)) for v in value):
            t = tags[0]
            old_w, n = int(t.group(1)), int(t.group(2))
            new_w = mapping.get(old_w, old_w)
            out = tuple(100 * new_w + n if isinstance(v, int) and not isinstance(v, bool)
                        and v == 100 * old_w + n else v2
                        for v, v2 in zip(value, out))
        return out
    return value


def _trim(profiles, default: str) -> tuple[str, ...]:
    """Writer profiles in their shortest form: the default as "", no trailing defaults."""
    out = ["" if p == default else p for p in profiles]
    while out and not out[-1]:
        out.pop()
    return tuple(out)


def rename_writers(cfg: ExploreConfig, actions: list[Action],
                   order: list[str]) -> tuple[ExploreConfig, list[Action]]:
    """Rename writer ``order[i]`` to ``w{i+1}`` in the configuration and the actions."""
    index = {old: i for i, old in enumerate(order)}
    mapping = {int(old[1:]): i + 1 for i, old in enumerate(order)}
    programs = [None] * len(cfg.writers)
    for old, i in index.items():
        programs[i] = _rename_value(cfg.writers[int(old[1:]) - 1], mapping)
    new_cfg = replace(cfg, writers=tuple(programs))
    if any(cfg.writer_profiles):  # each writer keeps its engine profile under its new name
        profiles = [""] * len(cfg.writers)
        for old, i in index.items():
            profiles[i] = cfg.profile_of(int(old[1:]))
        new_cfg = replace(new_cfg, writer_profiles=_trim(profiles, cfg.profile))
    if cfg.schedule:   # a schedule names writers by index: they move with their programs
        new_cfg = replace(new_cfg, schedule=tuple(
            (kind, mapping[i], mapping[j]) for kind, i, j in cfg.schedule))
    if cfg.accepted:   # so do a team's acceptances
        new_cfg = replace(new_cfg, accepted=tuple(
            (p, tuple(sorted(mapping[i] for i in ws)), r) for p, ws, r in cfg.accepted))
    new_actions = [a if a.writer == CLOCK else Action(f"w{index[a.writer] + 1}", a.kind, a.choice)
                   for a in actions]
    return new_cfg, new_actions


def canonicalize(cfg: ExploreConfig, actions: Iterable[Any],
                 renamed: dict[str, str] | None = None) -> tuple[ExploreConfig, list[Action]]:
    """``renamed``, when given, is updated to map each new writer name to the name it had in
    the configuration the caller started from (composed with what it already maps): a
    pipeline names each writer of a counterexample by its job (``pipelines.check``)."""
    acts = parse_actions(actions)
    order = writer_order(cfg, acts)
    if renamed is not None:
        before = dict(renamed) or {w: w for w in order}
        renamed.clear()
        renamed.update({f"w{i}": before.get(old, old) for i, old in enumerate(order, 1)})
    if order == [f"w{i}" for i in range(1, len(order) + 1)]:
        return cfg, acts
    return rename_writers(cfg, acts, order)


def writer_of(renamed: dict[str, str], cfg: ExploreConfig) -> dict[str, str]:
    """Each writer of a trace's configuration ``cfg`` -> its name in the explored configuration
    (``renamed`` as ``canonicalize`` fills it; idle writers are dropped from ``cfg``): a
    trace's ``found_by.writer_of``, by which a pipeline names each writer by its job."""
    return {f"w{i}": renamed.get(f"w{i}", f"w{i}") for i in range(1, len(cfg.writers) + 1)}


# -- minimization ------------------------------------------------------------------------------
class Oracle:
    """Does an action list (on a configuration) still violate ``prop``? Memoized."""

    def __init__(self, cfg: ExploreConfig, prop: str,
                 check: Callable[[Any, Any], set[str]] | None = None):
        self.cfg, self.prop = cfg, prop
        self.model = model_for(cfg)
        self.check = check or (lambda model, state: violated(model, state, cfg.key))
        self.memo: dict[tuple, list[Action] | None] = {}
        self.calls = 0

    def __call__(self, actions: list[Action]) -> list[Action] | None:
        """The prefix of ``actions`` up to the first violating state, or None."""
        key = tuple(actions)
        if key in self.memo:
            return self.memo[key]
        self.calls += 1
        result = None
        run = run_actions(self.model, actions)
        for i, state in enumerate(run.states):
            if self.prop in self.check(self.model, state):
                result = run.actions[:i]
                break
        self.memo[key] = result
        return result


def _ddmin(items: list[Action], test: Oracle) -> list[Action]:
    n = 2
    while len(items) >= 2:
        size = -(-len(items) // n)
        chunks = [(i, min(i + size, len(items))) for i in range(0, len(items), size)]
        for lo, hi in chunks:
            got = test(items[:lo] + items[hi:])
            if got is not None and len(got) < len(items):
                items = got
                n = max(n - 1, 2)
                break
        else:
            if n >= len(items):
                break
            n = min(2 * n, len(items))
    return items


def _drop_writer_suffixes(items: list[Action], test: Oracle) -> list[Action]:
    changed = True
    while changed:
        changed = False
        for w in sorted({a.writer for a in items}):
            positions = [i for i, a in enumerate(items) if a.writer == w]
            for k in range(len(positions)):      # drop from the k-th action on; smallest k first
                drop = set(positions[k:])
                got = test([a for i, a in enumerate(items) if i not in drop])
                if got is not None and len(got) < len(items):
                    items, changed = got, True
                    break
    return items


def minimize_actions(cfg: ExploreConfig, actions: Iterable[Any], prop: str,
                     check=None) -> list[Action]:
    test = Oracle(cfg, prop, check)
    items = test(parse_actions(actions))
    if items is None:
        raise ValueError(f"the action list does not violate {prop!r}")
    items = _drop_writer_suffixes(items, test)
    items = _ddmin(items, test)
    # one-at-a-time to a fixpoint (ddmin ends at granularity 1, but a removal can enable more)
    changed = True
    while changed:
        changed = False
        for i in range(len(items)):
            got = test(items[:i] + items[i + 1:])
            if got is not None and len(got) < len(items):
                items, changed = got, True
                break
    return items


def minimize_config(cfg: ExploreConfig, actions: list[Action], prop: str,
                    check=None) -> ExploreConfig:
    """Drop trailing writers that take no action, and program entries no writer begins."""
    acting = {a.writer for a in actions}
    begins: dict[str, int] = {}
    for a in actions:
        if a.kind == BEGIN:
            begins[a.writer] = begins.get(a.writer, 0) + 1
    n = len(cfg.writers)
    while n > 0 and f"w{n}" not in acting:
        n -= 1
    programs = []
    for i, prog in enumerate(cfg.writers[:n], 1):
        used = max(begins.get(f"w{i}", 0), 1)
        programs.append(prog[:used])
    # a schedule constraint naming a dropped writer goes with it (what it held back no longer
    # exists; the kept writers' constraints are unchanged, as dropping keeps their indexes)
    schedule = tuple(c for c in cfg.schedule if max(c[1:]) <= n)
    accepted = tuple((p, tuple(i for i in ws if i <= n), r) for p, ws, r in cfg.accepted
                     if not ws or any(i <= n for i in ws))
    candidate = replace(cfg, writers=tuple(programs),
                        writer_profiles=_trim(cfg.writer_profiles[:n], cfg.profile),
                        schedule=schedule, accepted=accepted)
    if candidate == cfg:
        return cfg
    if Oracle(candidate, prop, check)(actions) == list(actions):
        return candidate
    # keep all writers' full programs, but drop idle trailing writers alone
    candidate = replace(cfg, writers=cfg.writers[:n],
                        writer_profiles=_trim(cfg.writer_profiles[:n], cfg.profile),
                        schedule=schedule, accepted=accepted)
    if candidate != cfg and Oracle(candidate, prop, check)(actions) == list(actions):
        return candidate
    return cfg


def shrink(cfg: ExploreConfig, actions: Iterable[Any], prop: str, *,
           shrink_config: bool = True, check=None,
           renamed: dict[str, str] | None = None) -> tuple[ExploreConfig, list[Action]]:
    """Canonicalize, minimize, canonicalize again (and shrink the configuration).
    ``renamed``: as for ``canonicalize``, each final writer name -> its name in ``cfg``."""
    acts = parse_actions(actions)
    names: dict[str, str] = {}
    c_cfg, c_acts = canonicalize(cfg, acts, names)
    if Oracle(c_cfg, prop, check)(c_acts) is None:    # renaming must not change the verdict
        c_cfg, c_acts = cfg, acts
        names = {}
    m_acts = minimize_actions(c_cfg, c_acts, prop, check)
    before = dict(names)
    f_cfg, f_acts = canonicalize(c_cfg, m_acts, names)
    if Oracle(f_cfg, prop, check)(f_acts) is None:
        f_cfg, f_acts = c_cfg, m_acts
        names = before
    if renamed is not None:
        renamed.clear()
        renamed.update(names or {f"w{i}": f"w{i}" for i in range(1, len(cfg.writers) + 1)})
    if shrink_config:
        f_cfg = minimize_config(f_cfg, f_acts, prop, check)
    return f_cfg, f_acts
