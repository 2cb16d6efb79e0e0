"""Named catalogs (models/catalogs.yaml, docs/catalogs.md): every name maps to the kind and the
faults its page documents, for the clients a pipeline's jobs use; bad names and impossible asks
exit 2 naming the line; the starter, the editor schema and the page stay in step with the table;
the PyIceberg citations hold in the installed wheel; and a REST pipeline checks as the model
says its faults make it."""

import importlib.metadata
import json
import os
import re

import pytest
from click.testing import CliRunner

from icecheck.cli.main import main
from icecheck.models import catalog as cat
from icecheck.models import catalogs
from icecheck.pipelines.load import STARTER, load_pipeline
from icecheck.scenarios.errors import InputError

ROOT = os.path.join(os.path.dirname(__file__), "..")
SPARK, PYICEBERG = "spark-3.5-cow-serializable", "pyiceberg-0.12-serializable"
CU, AF = "commit_unknown", "applied_failed"

# name -> (kind, faults with Java jobs, faults with PyIceberg jobs (None: refused)), as
# docs/catalogs.md documents them
DOCUMENTED = {
    "rest": ("cas", {CU, AF}, {CU, AF}),
    "polaris": ("cas", {CU, AF}, {CU, AF}),
    "unity": ("cas", {CU, AF}, {CU, AF}),
    "hive": ("cas", {CU}, {CU}),
    "hive-no-lock": ("cas", {CU}, None),
    "hive-mixed-locking": ("last_writer_wins", {CU}, {CU}),
    "glue": ("cas", {CU, AF}, {CU, AF}),
    "jdbc": ("cas", {CU, AF}, {CU}),
    "sql": ("cas", {CU, AF}, {CU}),
    "sqlite": ("cas", {CU, AF}, {CU}),
    "nessie": ("cas", {CU, AF}, None),
    "dynamodb": ("cas", {CU, AF}, None),
    "hadoop": ("put_if_absent", {AF}, None),
    "hadoop-object-store": ("last_writer_wins", {AF}, None),
}
REFUSED = {"snowflake"}


def _pipeline(tmp_path, catalog: str, profiles=(SPARK, SPARK), name="p.yaml"):
    """A pipeline of one INSERT per profile through ``catalog`` (YAML text after ``catalog:``)."""
    f = tmp_path / name
    jobs = "".join(f"  - name: job{i}\n    profile: {p}\n    program:\n"
                   f"      - {{sql: INSERT, rows: [[{10 * i}, \"{{job}}\"]]}}\n"
                   for i, p in enumerate(profiles, 1))
    f.write_text("table:\n  schema: {id: int, v: string}\n"
                 f"catalog: {catalog}\ninitial_rows: [[1, v0]]\njobs:\n{jobs}")
    return f


def _flags(config) -> tuple[str, set[str]]:
    return config.catalog, {f for f, on in ((CU, config.faults),
                                             (AF, config.phantom_failures)) if on}


def test_the_table_names_what_the_docs_document():
    assert set(catalogs.names()) == set(DOCUMENTED) | REFUSED
    for name in DOCUMENTED:
        c = catalogs.lookup(name)
        assert c.kind in cat.KINDS and c.writable


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_every_named_catalog_loads_with_its_documented_kind_and_faults(name, tmp_path):
    kind, java, pyiceberg = DOCUMENTED[name]
    # named bare: the swap, no fault
    p = load_pipeline(str(_pipeline(tmp_path, name)))
    assert _flags(p.config) == (kind, set()) and not p.config.crashes
    # faults: true, Java jobs
    p = load_pipeline(str(_pipeline(tmp_path, f"{{name: {name}, faults: true, crashes: true}}")))
    assert _flags(p.config) == (kind, java) and p.config.crashes
    # PyIceberg jobs: their own client's faults, or the catalog refuses them at the job's line
    f = _pipeline(tmp_path, f"{{name: {name}, faults: true}}", (PYICEBERG, PYICEBERG))
    if pyiceberg is None:
        with pytest.raises(InputError, match=f"cannot use catalog {catalogs.lookup(name).name}"
                                             ) as e:
            load_pipeline(str(f))
        assert e.value.line == 7                     # the first job's profile line
    else:
        assert _flags(load_pipeline(str(f)).config) == (kind, pyiceberg)
    # with both, the union (the model's flags are global); applied_failed: false drops one
    if pyiceberg is not None:
        f = _pipeline(tmp_path, f"{{name: {name}, faults: true}}", (SPARK, PYICEBERG))
        assert _flags(load_pipeline(str(f)).config) == (kind, java | pyiceberg)
        f = _pipeline(tmp_path, f"{{name: {name}, faults: true, applied_failed: false}}",
                      (SPARK, PYICEBERG))
        assert _flags(load_pipeline(str(f)).config) == (kind, (java | pyiceberg) - {AF})


def test_the_model_kinds_still_load_with_their_raw_flags(tmp_path):
    for kind in cat.KINDS:
        assert _flags(load_pipeline(str(_pipeline(tmp_path, kind))).config) == (kind, set())
    f = _pipeline(tmp_path, "{kind: put_if_absent, faults: true, applied_failed: true}")
    assert _flags(load_pipeline(str(f)).config) == ("put_if_absent", {CU, AF})
    # no catalog section: cas, no fault
    f = tmp_path / "bare.yaml"
    f.write_text(_pipeline(tmp_path, "cas").read_text().replace("catalog: cas\n", ""))
    assert _flags(load_pipeline(str(f)).config) == ("cas", set())


@pytest.mark.parametrize("catalog, line, message", [
    ("restt", 3, "unknown catalog 'restt'"),
    ("\n  name: zzz\n  faults: true", 4, "unknown catalog 'zzz'"),
    ("{name: 7}", 3, "unknown catalog 7"),
    ("snowflake", 3, "catalog snowflake is refused: Iceberg's Snowflake table operations "
                     "implement no commit"),
    ("\n  faults: true\n  name: hive\n  applied_failed: true", 6,
     "catalog.applied_failed: the clients of catalog hive (java) cannot see this fault"),
    ("{name: rest, kind: cas}", 3, "give name (the catalog you run) or kind"),
    ("{kind: glue}", 3, "unknown catalog kind 'glue'; expected one of cas, put_if_absent, "
                        "last_writer_wins; 'glue' is a catalog name: write name: glue"),
    ("\n  name: rest\n  faults: sometimes", 5, "catalog.faults must be true or false"),
    ("{name: rest, retries: 3}", 3, "catalog: unknown key 'retries'"),
    ("[rest]", 3, "catalog must be a catalog name such as rest"),
])
def test_a_bad_catalog_exits_2_naming_its_line(tmp_path, catalog, line, message):
    f = _pipeline(tmp_path, catalog)
    with pytest.raises(InputError) as e:
        load_pipeline(str(f))
    assert e.value.line == line and message in str(e.value), str(e.value)
    r = CliRunner().invoke(main, ["check", str(f), "--reports", str(tmp_path / "r")])
    out = " ".join(r.output.split())
    assert r.exit_code == 2 and f"p.yaml:{line}:" in out and "Traceback" not in r.output, out


def test_an_unknown_name_lists_every_known_name(tmp_path):
    f = _pipeline(tmp_path, "icebergz")
    r = CliRunner().invoke(main, ["check", str(f), "--reports", str(tmp_path / "r")])
    assert r.exit_code == 2
    listed = re.search(r"expected a catalog \(([^;]*);", " ".join(r.output.split())).group(1)
    assert set(listed.split(", ")) == set(DOCUMENTED) | REFUSED
    assert "cas, put_if_absent, last_writer_wins" in r.output.replace("\n", " ")


def test_the_starter_offers_every_catalog_and_fault_in_a_comment(tmp_path):
    text = open(STARTER, encoding="utf-8").read()
    block = re.search(r"^catalog:.*?(?=^\S)", text, re.S | re.M).group(0)
    words = set(re.findall(r"[a-z][a-z_-]*", block))
    assert set(DOCUMENTED) | REFUSED <= words, (set(DOCUMENTED) | REFUSED) - words
    assert {"kind", "faults", "applied_failed", "crashes", "commit_unknown"} <= words
    assert set(cat.KINDS) <= words
    # each catalog on a comment line of its own, with what its commit does (aliases beside it)
    for name in catalogs.load_table():
        assert re.search(rf"^\s*#\s+{re.escape(name)}\s{{2,}}\S", block, re.M), name
    # and it loads as written: a named catalog, no fault
    path = tmp_path / "pipeline.yaml"
    assert CliRunner().invoke(main, ["init", str(path)]).exit_code == 0
    assert _flags(load_pipeline(str(path)).config) == ("cas", set())
    assert "  name: rest" in block


def test_the_editor_schema_offers_the_names_the_loader_accepts():
    with open(os.path.join(ROOT, "pipelines", "schema.json"), encoding="utf-8") as f:
        forms = json.load(f)["properties"]["catalog"]["oneOf"]
    assert set(forms[0]["enum"]) == set(cat.KINDS)
    assert set(forms[1]["enum"]) == set(DOCUMENTED)           # refused names are not offered
    props = forms[2]["properties"]
    assert set(props) == set(catalogs.SECTION_KEYS)
    assert set(props["name"]["enum"]) == set(DOCUMENTED)
    assert set(props["kind"]["enum"]) == set(cat.KINDS)


def test_the_page_is_the_table():
    """docs/catalogs.md's per-catalog part is the table rendered (``python -m
    icecheck.models.catalogs``), so what the page says is what the loader does."""
    with open(os.path.join(ROOT, "docs", "catalogs.md"), encoding="utf-8") as f:
        page = f.read()
    marker = "tests/test_catalogs.py keeps what follows equal to it -->\n\n"
    assert page.split(marker, 1)[1] == catalogs.markdown()
    with open(os.path.join(ROOT, "docs", "pipelines.md"), encoding="utf-8") as f:
        assert "docs/catalogs.md" in f.read()


def test_every_citation_names_a_known_release_and_an_unknown_is_marked():
    table = catalogs.load_table()
    sources = catalogs.sources()
    for c in table.values():
        assert c.kind_sources, c.name
        for x in c.kind_sources + c.other_sources:
            assert x.source in sources and x.first <= x.last
        for client in (c.client(n) for n in catalogs.CLIENTS if c.writable):
            assert client.sources if client.unsupported else all(
                client.fault(f).sources for f in catalogs.FAULTS)
    # the one fault no source settles is on with faults: true, and said so on the page
    assert table["nessie"].client("java").fault(AF).exhibits == "unknown"
    assert "applied_failed (not established)" in catalogs.markdown()


def test_the_pyiceberg_citations_hold_in_the_installed_wheel():
    """Each PyIceberg citation's quote is within its lines of the installed package, when that
    package is the release the table read (the Java ones were checked against the
    apache-iceberg-1.10.2 tag when written; no Java source ships here)."""
    pyiceberg = pytest.importorskip("pyiceberg")
    release = catalogs.sources()["pyiceberg"]["package"].split()[-1]
    if importlib.metadata.version("pyiceberg") != release:
        pytest.skip(f"the table cites PyIceberg {release}")
    root = os.path.dirname(pyiceberg.__file__)
    cited = [x for c in catalogs.load_table().values()
             for x in c.kind_sources + c.other_sources
             + tuple(s for _, cl in c.clients for s in cl.sources)
             + tuple(s for _, cl in c.clients for _, f in cl.faults for s in f.sources)
             if x.source == "pyiceberg"]
    assert len(cited) >= 20
    for x in cited:
        with open(os.path.join(root, x.path), encoding="utf-8") as f:
            lines = f.read().splitlines()
        assert x.last <= len(lines) and x.quote in "\n".join(lines[x.first - 1:x.last]), str(x)


def _check(tmp_path, catalog: str, sub: str):
    d = tmp_path / sub
    d.mkdir()
    f = _pipeline(d, catalog)
    r = CliRunner().invoke(main, ["check", str(f), "--reports", str(d / "r"), "--json"])
    doc = json.loads((d / "r" / "pipeline.json").read_text())
    return r.exit_code, doc


def test_two_spark_appends_through_rest_check_with_its_faults(tmp_path):
    """``{name: rest, faults: true}`` is what the model gives for the faults the table says
    Java's REST client sees (a lost reply, an applied-but-failed answer): the same exploration
    and anomalies as the raw flags, which fail lost_write and metadata_integrity (the
    applied-but-failed append's retry rolls main back) and readable (its cleanAll deletes the
    current manifest list): Java's known findings, each failing the gate."""
    code, named = _check(tmp_path, "{name: rest, faults: true}", "named")
    raw_code, raw = _check(tmp_path, "{kind: cas, faults: true, applied_failed: true}", "raw")

    def seen(doc):
        return [(a["property"], a["status"], a["verdict"], a["trace"]["actions"])
                for a in doc["anomalies"]]
    assert (code, named["exploration"], named["passed"], seen(named)) == \
           (raw_code, raw["exploration"], raw["passed"], seen(raw))
    assert code == 1 and named["passed"] is False and named["complete"] is True
    # (readable too since issue 45's fix to engines/por.py: the reduced search reaches the
    # state where the applied-but-failed retry's cleanAll deleted the current manifest list)
    assert {a["property"] for a in named["anomalies"]} == {"lost_write", "metadata_integrity",
                                                         "readable"}
    assert {a["status"] for a in named["anomalies"]} == {"known_finding"}
    # its timeline reads the deleted manifest list from the archive (it used to raise
    # KeyError, so the pipeline's SVG and `trace show` crashed on it)
    from icecheck.traces.timeline import build_timeline
    readable = next(a for a in named["anomalies"] if a["property"] == "readable")
    commits = build_timeline(readable["trace"]).commits
    assert any("deleted since (reading the table fails)" in line
               for files, _ in commits.values() for line in files), commits
    assert all(any(s.endswith(".cas_applied_failed") for s in a["trace"]["actions"])
               for a in named["anomalies"])
    # the swap alone: no anomaly
    code, bare = _check(tmp_path, "rest", "bare")
    assert code == 0 and bare["passed"] is True and bare["anomalies"] == []
