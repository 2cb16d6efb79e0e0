"""Helpers for the property tests: build models, run action lists, explore exhaustively."""

from __future__ import annotations

import dataclasses

from icecheck.engines.config import build_model_config, mix_config
from icecheck.models.commands import make_planner
from icecheck.models.system import Action, Model
from icecheck.properties import evaluate, reached, split_expected


def model_of(profile, properties=None, **kw):
    cfg = mix_config(profile, **kw)
    if properties:
        cfg = dataclasses.replace(cfg, properties=tuple(sorted(properties.items())))
    return cfg, Model(build_model_config(cfg))


def run(model, actions, state=None):
    s = state if state is not None else model.initial()
    for a in actions:
        s = model.step(s, Action.parse(a))
    return s


def planted(profile, transform, **kw):
    """A model whose planner post-processes every planned operation (a planted bug)."""
    cfg = mix_config(profile, **kw)
    mc = build_model_config(cfg)
    inner = make_planner(profile)

    def planner(cmd, **kwargs):
        return transform(cmd, inner(cmd, **kwargs), kwargs)

    return cfg, Model(dataclasses.replace(mc, planner=planner))


def by_property(violations, prop):
    return [v for v in violations if v.property == prop]


def explore(cfg, model, limit=100_000):
    """DFS over every reachable state; yields (state, path)."""
    seen = set()
    stack = [(model.initial(), ())]
    while stack:
        s, path = stack.pop()
        if s in seen:
            continue
        seen.add(s)
        yield s, path
        assert len(seen) <= limit, "state space larger than the test expects"
        for a in model.actions(s):
            stack.append((model.step(s, a), path + (str(a),)))


def unexpected_anywhere(cfg, model):
    """Every unexpected violation of every reachable state, with one action list each."""
    found = {}
    for s, path in explore(cfg, model):
        un, _ = split_expected(cfg.profile, cfg.catalog, cfg.format_version, evaluate(model, s))
        for v in un:
            found.setdefault((v.property, v.message), list(path))
    return found
