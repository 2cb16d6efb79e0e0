"""Seed the trace corpus (``traces/*.json``) with minimal traces the tool finds itself.

    python -m icecheck.engines.seed_corpus [--out DIR] [--check]

Each seed is an exploration (Hypothesis, derandomized, a fixed seed) that must find a property
violation; its canonical, minimal trace is saved, and the same interleaving is re-run under
stricter configurations (serializable isolation, format v3, a CAS catalog), where it must be
*rejected*: no violation, the second writer's commit stopped by validation or turned into a
retry. Those are saved as ``kind: rejected`` traces, so replay checks the prevention too.

``--check`` regenerates into memory and exits 1 if a saved trace differs (corpus up to date?).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, replace

from icecheck.engines.config import ExploreConfig, _freeze, mix_config
from icecheck.models.system import NEXT_PHASE_ACTION, Action

from icecheck.traces import format as fmt


@dataclass(frozen=True)
class Variant:
    """The same interleaving on a stricter configuration: it must be rejected."""

    name: str
    title: str
    profile: str | None = None
    catalog: str | None = None
    format_version: int | None = None


@dataclass(frozen=True)
class Seed:
    name: str
    title: str
    config: ExploreConfig
    properties: tuple[str, ...]        # the first of these the exploration finds is the seed's
    variants: tuple[Variant, ...] = ()
    max_examples: int = 500


def _merge_absent_key(profile: str) -> ExploreConfig:
    """Two writers MERGE (upsert) the same key 2, absent from the table (it holds key 1)."""
    programs = tuple(
        ((_freeze({"sql": "MERGE", "on": ["id"], "rows": [[2, f"w{w}.1"]]}),),)
        for w in (1, 2))
    return ExploreConfig(profile=profile, initial_rows=((1, "v0"),), writers=programs,
                         name=f"{profile} 2w MERGE ON id USING [[2, ...]] (key 2 absent) cas v2")


SEEDS = (
    Seed("undelete-v2-mor-snapshot",
         "v2 merge-on-read DELETE/UPDATE under snapshot isolation: the DELETE is undone",
         mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update", "insert"), 1),
         ("undelete",),
         (Variant("undelete-v2-mor-serializable-rejected",
                  "the undelete interleaving under serializable isolation: the DELETE is rejected",
                  profile="spark-3.5-mor-serializable"),
          Variant("undelete-v3-mor-snapshot-rejected",
                  "the undelete interleaving on a v3 table (deletion vectors): the DELETE is "
                  "rejected", format_version=3))),
    Seed("lost-write-last-writer-wins",
         "two INSERTs through a catalog without coordination: the first commit is lost",
         mix_config("spark-3.5-cow-serializable", 2, 1, ("insert",), 1,
                    catalog="last_writer_wins"),
         ("lost_write",),
         (Variant("lost-write-cas-rejected",
                  "the lost-write interleaving through a CAS catalog: the second swap loses the "
                  "race and retries on top of the first commit", catalog="cas"),)),
    Seed("lost-update-merge-mor-snapshot",
         "two concurrent MERGE upserts of the same absent key under snapshot isolation: both "
         "insert it",
         _merge_absent_key("spark-3.5-mor-snapshot"),
         ("duplicate_keys", "isolation", "lost_write", "consistent_read"),
         (Variant("lost-update-merge-mor-serializable-rejected",
                  "the concurrent MERGE upserts under serializable isolation: the second is "
                  "rejected", profile="spark-3.5-mor-serializable"),)),
    Seed("double-delete-v2-mor-serializable",
         "a finding: two concurrent merge-on-read DELETEs of the same row both commit under "
         "serializable isolation (G-single)",
         mix_config("spark-3.5-mor-serializable", 2, 1, ("delete",), 1),
         ("isolation",),
         (Variant("double-delete-v3-mor-serializable-rejected",
                  "the double DELETE on a v3 table (deletion vectors): the second is rejected",
                  format_version=3),)),
)


def variant_config(cfg: ExploreConfig, v: Variant) -> ExploreConfig:
    new = replace(cfg, profile=v.profile or cfg.profile, catalog=v.catalog or cfg.catalog,
                  format_version=v.format_version or cfg.format_version)
    name = (cfg.name.replace(cfg.profile, new.profile).replace(f" {cfg.catalog} ", f" {new.catalog} ")
            .replace(f"v{cfg.format_version}", f"v{new.format_version}"))
    return replace(new, name=name)


def complete(cfg: ExploreConfig, actions: list[str]) -> list[str]:
    """The interleaving up to its first disabled action, then every writer that is mid-way
    through an operation runs to its end (in writer order)."""
    from icecheck.traces.execute import model_for, run_actions

    model = model_for(cfg)
    run = run_actions(model, actions)
    done = [str(a) for a in run.actions]
    state = run.final
    for w in state.writers:
        while state.writer(w.name).active:
            a = Action(w.name, NEXT_PHASE_ACTION[state.writer(w.name).phase])
            state = model.step(state, a)
            done.append(str(a))
    return done


def build_seeds(progress=print) -> dict[str, dict]:
    from icecheck.engines.hypothesis_engine import explore
    from icecheck.traces.execute import build_trace, judge, model_for, run_actions

    docs: dict[str, dict] = {}
    for seed in SEEDS:
        progress(f"exploring {seed.name}: {seed.config.name}")
        r = explore(seed.config, max_examples=seed.max_examples, seed=0,
                    properties=seed.properties)
        if r.trace is None or r.property not in seed.properties:
            raise SystemExit(f"seed {seed.name}: the exploration found "
                             f"{r.property or 'nothing'}, expected one of {seed.properties}")
        doc = r.trace
        doc["id"], doc["title"] = seed.name, seed.title
        doc["#meta"]["description"] = seed.title
        docs[seed.name] = doc
        progress(f"  found {r.property} ({doc['kind']}): {' '.join(doc['actions'])}")
        base_cfg = ExploreConfig.from_json(doc["config"])
        for v in seed.variants:
            cfg = variant_config(base_cfg, v)
            actions = complete(cfg, doc["actions"])
            model = model_for(cfg)
            j = judge(cfg, model, run_actions(model, actions).final)
            if r.property in j.names or j.unexpected:
                raise SystemExit(f"variant {v.name}: not rejected: violates "
                                 f"{sorted(j.names)}")
            vdoc = build_trace(cfg, actions, property=None, trace_id=v.name, title=v.title,
                               found_by={"engine": "hypothesis", "rejects": seed.name,
                                         "variant_of": doc["found_by"]})
            docs[v.name] = vdoc
            progress(f"  {v.name}: {' '.join(vdoc['actions'])} -> "
                     f"{vdoc['verdict']['outcomes']}")
    return docs


def main(argv: list[str] | None = None) -> int:
    import icecheck.traces

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(icecheck.traces.__file__)))
    parser.add_argument("--check", action="store_true",
                        help="Do not write; exit 1 if a saved trace differs.")
    args = parser.parse_args(argv)
    docs = build_seeds(progress=lambda m: print(m, file=sys.stderr))
    stale = []
    for name, doc in docs.items():
        path = os.path.join(args.out, f"{name}.json")
        text = fmt.dumps(doc)
        if args.check:
            try:
                with open(path, encoding="utf-8") as f:
                    if f.read() != text:
                        stale.append(path)
            except OSError:
                stale.append(path)
        else:
            fmt.write_trace(path, doc)
            print(f"wrote {path}")
    if stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
