"""An inductive invariant: no acknowledged append is lost with a CAS catalog, for ANY number of
writers, retries and interleavings (``icecheck z3 prove-cas-appends``).

The bounded checkers (z3 search, Hypothesis, explicit) look at 2-3 writers. Here z3 proves the
append case for every number of writers at once, on an abstraction of the model's commit path
(fused as the engines run it):

* catalog: a version counter ``v`` and the table content ``T`` of the current metadata, as a
  set of append ids (an array Int -> Bool); ``Ack``: the appends acknowledged as committed;
* writers: unboundedly many, indexed by Int; writer ``x`` appends the file ``x``. Per writer (arrays
  indexed by writer): its phase (idle / ready / done), the version ``rv`` it refreshed and the
  table content ``rs`` it read (an array of arrays);
* ``refresh(x)``: idle -> ready, ``rv[x] := v``, ``rs[x] := T`` (an append validates nothing);
* ``cas(x)``: the catalog's swap. Applied: ``T := rs[x] + {x}`` (the new metadata is the
  refreshed one plus the writer's manifest, as FastAppend/MergeAppend produce it),
  ``v := rv[x] + 1``, ``Ack[x]``, done. Not applied: back to idle (a retry; any number).
  When is it applied: ``cas``: the pointer is unchanged (``v == rv[x]``); ``put_if_absent``:
  version ``rv[x] + 1`` is free (``v < rv[x] + 1``); ``last_writer_wins``: always.

Proof obligations, each a z3 validity query (UNSAT of the negation), with quantifiers over
writers and appends:

    Init => Inv        Inv /\\ Step => Inv'        Inv => Safe

    Safe = forall a. Ack[a] => T[a]
    Inv  = Safe /\\ (forall x. ready(x) => rv[x] <= v)
                /\\ (forall x. ready(x) /\\ rv[x] = v => rs[x] = T)

For ``last_writer_wins`` the step obligation fails: z3 returns a counterexample to induction
(two writers read the same version; one commits; the other's swap replaces it). To show the
counterexample is real and not a weakness of the invariant, a bounded run from ``Init`` (2
writers) reaches a state violating ``Safe``; it is mapped to the executable model's actions
(INSERTs on a last-writer-wins catalog) and replayed there, where ``lost_write`` must hold.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import z3

from icecheck.models import catalog as cat

IDLE, READY, DONE = 0, 1, 2
I, B = z3.IntSort(), z3.BoolSort()
SET = z3.ArraySort(I, B)


@dataclass
class St:
    v: z3.ArithRef
    T: z3.ArrayRef
    ack: z3.ArrayRef
    ph: z3.ArrayRef
    rv: z3.ArrayRef
    rs: z3.ArrayRef


def state(tag: str) -> St:
    return St(z3.Int(f"v{tag}"), z3.Array(f"T{tag}", I, B), z3.Array(f"ack{tag}", I, B),
              z3.Array(f"ph{tag}", I, I), z3.Array(f"rv{tag}", I, I),
              z3.Array(f"rs{tag}", I, SET))


def init(s: St):
    """An empty table at version 0, nothing acknowledged, every writer idle (constant arrays:
    no quantifier, so bounded runs from Init stay decidable)."""
    return z3.And(s.v == 0, s.T == z3.K(I, z3.BoolVal(False)),
                  s.ack == z3.K(I, z3.BoolVal(False)), s.ph == z3.K(I, z3.IntVal(IDLE)))


def safe(s: St):
    a = z3.Int("a_safe")
    return z3.ForAll([a], z3.Implies(s.ack[a], s.T[a]))


def inv(s: St):
    x = z3.Int("x_inv")
    return z3.And(
        safe(s),
        z3.ForAll([x], z3.Implies(s.ph[x] == READY, s.rv[x] <= s.v)),
        z3.ForAll([x], z3.Implies(z3.And(s.ph[x] == READY, s.rv[x] == s.v), s.rs[x] == s.T)))


def applies(kind: str, s: St, w):
    if kind == cat.CAS:
        return s.v == s.rv[w]
    if kind == cat.PUT_IF_ABSENT:
        return s.v < s.rv[w] + 1
    if kind == cat.LAST_WRITER_WINS:
        return z3.BoolVal(True)
    raise ValueError(kind)


def step(kind: str, s: St, t: St, w, which=None):
    """One step of writer ``w`` (``which``: an Int selecting the action, for traces)."""
    refresh = z3.And(s.ph[w] == IDLE, t.ph == z3.Store(s.ph, w, READY),
                     t.rv == z3.Store(s.rv, w, s.v), t.rs == z3.Store(s.rs, w, s.T),
                     t.v == s.v, t.T == s.T, t.ack == s.ack)
    ok = applies(kind, s, w)
    commit = z3.And(s.ph[w] == READY, ok,
                    t.T == z3.Store(s.rs[w], w, True), t.v == s.rv[w] + 1,
                    t.ack == z3.Store(s.ack, w, True), t.ph == z3.Store(s.ph, w, DONE),
                    t.rv == s.rv, t.rs == s.rs)
    lose = z3.And(s.ph[w] == READY, z3.Not(ok), t.ph == z3.Store(s.ph, w, IDLE),
                  t.v == s.v, t.T == s.T, t.ack == s.ack, t.rv == s.rv, t.rs == s.rs)
    if which is None:
        return z3.Or(refresh, commit, lose)
    return z3.Or(z3.And(which == 0, refresh), z3.And(which == 1, commit),
                 z3.And(which == 2, lose))


@dataclass
class Obligation:
    name: str
    holds: bool
    seconds: float
    counterexample: dict | None = None


@dataclass
class InvariantResult:
    catalog: str
    obligations: list[Obligation] = field(default_factory=list)
    bmc_trace: list[str] | None = None       # model actions of a reachable violation
    enabled_actions: list[str] = field(default_factory=list)   # non-vacuity of Step
    replayed: bool = False
    seconds: float = 0.0

    @property
    def proved(self) -> bool:
        return all(o.holds for o in self.obligations)

    def as_json(self) -> dict:
        return {"catalog": self.catalog, "proved": self.proved,
                "obligations": [{"name": o.name, "holds": o.holds,
                                 "seconds": round(o.seconds, 3),
                                 **({"counterexample": o.counterexample}
                                    if o.counterexample else {})}
                                for o in self.obligations],
                "step_actions_enabled_under_inv": self.enabled_actions,
                "reachable_violation": self.bmc_trace, "replayed_on_model": self.replayed,
                "seconds": round(self.seconds, 3)}


def _valid(name: str, claim, timeout_ms: int = 60000, explain=None) -> Obligation:
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(z3.Not(claim))
    t0 = time.perf_counter()
    r = s.check()
    dt = time.perf_counter() - t0
    if r == z3.unsat:
        return Obligation(name, True, dt)
    cex = None
    if r == z3.sat and explain is not None:
        cex = explain(s.model())
    elif r == z3.unknown:
        cex = {"z3": f"unknown ({s.reason_unknown()})"}
    return Obligation(name, False, dt, cex)


def safety_cti(kind: str) -> dict | None:
    """A counterexample to induction that breaks Safe itself: a state satisfying Inv and one
    step after which an acknowledged append ``lost`` is not in the table (None: no such)."""
    pre, post = state("c0"), state("c1")
    w, lost = z3.Ints("w_cti lost")
    s = z3.Solver()
    s.add(inv(pre), step(kind, pre, post, w), post.ack[lost], z3.Not(post.T[lost]))
    if s.check() != z3.sat:
        return None
    m = s.model()

    def val(x):
        return m.eval(x, model_completion=True).as_long()
    return {"acting_writer": val(w), "lost_append": val(lost),
            "lost_append_in_table_before": z3.is_true(m.eval(pre.T[lost], model_completion=True)),
            "version_before": val(pre.v), "acting_writer_refreshed_version": val(pre.rv[w]),
            "acting_writer_read_lost_append": z3.is_true(
                m.eval(pre.rs[w][lost], model_completion=True)),
            "version_after": val(post.v)}


def non_vacuity(kind: str) -> list[str]:
    """Each action (refresh, applied swap, lost swap where the catalog can lose) is enabled in
    some state satisfying Inv: the step relation is not vacuous."""
    pre, post = state("n0"), state("n1")
    w, which = z3.Ints("w_nv which_nv")
    enabled = []
    for k, name in enumerate(("refresh", "swap applied", "swap lost (retry)")):
        s = z3.Solver()
        s.add(inv(pre), step(kind, pre, post, w, which), which == k)
        if s.check() == z3.sat:
            enabled.append(name)
    return enabled


def prove_appends(kind: str = cat.CAS, *, bmc_depth: int = 6, replay: bool = True) -> InvariantResult:
    started = time.perf_counter()
    res = InvariantResult(kind)
    s0, s1 = state("0"), state("1")
    w = z3.Int("w")
    res.obligations.append(_valid("Init => Inv", z3.Implies(init(s0), inv(s0))))
    res.obligations.append(_valid("Inv /\\ Step => Inv'",
                                  z3.Implies(z3.And(inv(s0), step(kind, s0, s1, w)), inv(s1)),
                                  explain=lambda m: safety_cti(kind)))
    res.obligations.append(_valid("Inv => Safe", z3.Implies(inv(s0), safe(s0))))
    res.enabled_actions = non_vacuity(kind)
    if not res.proved:
        res.bmc_trace = bmc(kind, 2, bmc_depth)
        if res.bmc_trace is not None and replay:
            replay_on_model(kind, res.bmc_trace)
            res.replayed = True
    res.seconds = time.perf_counter() - started
    return res


def bmc(kind: str, writers: int, depth: int) -> list[str] | None:
    """Shortest run from Init (``writers`` writers, ids 1..n) to a state violating Safe, as the
    executable model's actions; None if none within ``depth`` steps."""
    states = [state(f"_b{t}") for t in range(depth + 1)]
    ws = [z3.Int(f"bw{t}") for t in range(depth)]
    which = [z3.Int(f"ba{t}") for t in range(depth)]
    s = z3.Solver()
    s.add(init(states[0]))
    for t in range(depth):
        s.add(1 <= ws[t], ws[t] <= writers)
        a, b = states[t], states[t + 1]
        stutter = z3.And(which[t] == 3, b.v == a.v, b.T == a.T, b.ack == a.ack, b.ph == a.ph,
                         b.rv == a.rv, b.rs == a.rs)
        s.add(z3.Or(step(kind, a, b, ws[t], which[t]), stutter))
    for d in range(depth + 1):
        if s.check(z3.Not(safe(states[d]))) == z3.sat:
            m = s.model()
            out, begun = [], set()
            for t in range(d):
                x = m.eval(ws[t]).as_long()
                a = m.eval(which[t]).as_long()
                name = f"w{x}"
                if a == 3:
                    continue
                if a == 0:
                    if x not in begun:
                        out.append(f"{name}.begin")
                        begun.add(x)
                    out.append(f"{name}.refresh")
                else:
                    out.append(f"{name}.cas")
            return out
    return None


def replay_on_model(kind: str, actions: list[str]) -> None:
    """Replay the abstract violation on the executable model: INSERTs by 2 writers on the
    ``kind`` catalog; ``lost_write`` must be violated, else the abstraction is wrong."""
    from icecheck.engines.config import mix_config
    from icecheck.traces.execute import judge, model_for, run_actions

    cfg = mix_config("spark-3.5-cow-serializable", 2, 1, ("insert",), 1, catalog=kind)
    model = model_for(cfg)
    run = run_actions(model, actions)
    if run.stopped is not None:
        raise AssertionError(f"abstract run {actions} does not replay: {run.stop_reason}")
    j = judge(cfg, model, run.final)
    if "lost_write" not in j.names:
        raise AssertionError(f"abstract run {actions} loses an append, the model says "
                             f"{sorted(j.names) or 'nothing'}")
