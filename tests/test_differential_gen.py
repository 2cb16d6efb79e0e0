"""The differential generator (conformance/differential.py) draws the issue-11 features, and every
scenario it draws that parses also runs on the model (no Java here; the Java side is
tests/conformance/). Bounded by an example count and a fixed seed, never by time."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, seed, settings

from icecheck.conformance.differential import doc_features, parse_doc, scenario_docs
from icecheck.scenarios.errors import InputError
from icecheck.scenarios.runner import execute_scenario, model_config

NEW_FEATURES = {"to_branch", "create_branch", "create_tag", "fast_forward", "append_only",
                "remove_rows", "manifest_merge", "expire_snapshots"}


def test_generated_scenarios_cover_the_new_features_and_run_on_the_model():
    seen: set[str] = set()
    ran = []

    @seed(1)
    @settings(max_examples=120, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(scenario_docs())
    def gen(doc):
        try:
            sc = parse_doc(doc)
        except InputError:
            return          # counted as "rejected" by the differential run
        verdict, _ = execute_scenario(sc, model_config(sc))
        ran.append(verdict.outcome)
        seen.update(doc_features(doc))

    gen()
    assert len(ran) > 60
    assert NEW_FEATURES <= seen, NEW_FEATURES - seen
