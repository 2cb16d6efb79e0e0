"""Adya's classification on hand-built dependency graphs, and the graph the model builds."""

import networkx as nx

from _props_util import model_of, run

from icecheck.properties import dependency_graph
from icecheck.properties.isolation import LEVEL_VIOLATED, classify_cycle, find_cycles


def graph(*edges):
    g = nx.MultiDiGraph()
    for a, b, t, k in edges:
        g.add_edge(a, b, key=f"{t}:{k!r}", type=t, row_key=k)
    return g


def test_g0_write_cycle():
    g = graph(("T1", "T2", "ww", "x"), ("T2", "T1", "ww", "y"))
    [(anomaly, cyc)] = find_cycles(g)
    assert anomaly == "G0" and LEVEL_VIOLATED[anomaly] == "read-uncommitted"
    assert cyc == [["T1", "T2", "ww", "x"], ["T2", "T1", "ww", "y"]]


def test_g1c_circular_information_flow():
    g = graph(("T1", "T2", "wr", "x"), ("T2", "T1", "ww", "y"))
    assert [a for a, _ in find_cycles(g)] == ["G1c"]
    assert LEVEL_VIOLATED["G1c"] == "read-committed"


def test_g_single_one_antidependency():
    g = graph(("T1", "T2", "rw", "x"), ("T2", "T1", "ww", "x"))
    [(anomaly, cyc)] = find_cycles(g)
    assert anomaly == "G-single" and LEVEL_VIOLATED[anomaly] == "snapshot-isolation"
    assert ["T1", "T2", "rw", "x"] in cyc


def test_g2_item_write_skew():
    g = graph(("T1", "T2", "rw", "x"), ("T2", "T1", "rw", "y"))
    assert [a for a, _ in find_cycles(g)] == ["G2-item"]
    assert LEVEL_VIOLATED["G2-item"] == "serializable"


def test_weakest_reading_of_parallel_edges():
    # T1 -> T2 by ww and rw: the cycle reads as G0, not as G-single
    g = graph(("T1", "T2", "rw", "x"), ("T1", "T2", "ww", "x"), ("T2", "T1", "ww", "y"))
    assert [a for a, _ in find_cycles(g)] == ["G0"]


def test_commit_order_edges_are_not_dependencies():
    g = graph(("T1", "T2", "co", None), ("T2", "T1", "rw", "x"))
    assert find_cycles(g) == []


def test_three_node_cycle_and_acyclic():
    g = graph(("T1", "T2", "rw", "x"), ("T2", "T3", "wr", "y"), ("T3", "T1", "ww", "z"))
    anomaly, cyc = classify_cycle(g, ["T1", "T2", "T3"])
    assert anomaly == "G-single" and len(cyc) == 3
    assert find_cycles(graph(("T1", "T2", "ww", "x"), ("T2", "T3", "rw", "x"))) == []


def test_model_graph_of_the_known_anomaly():
    cfg, m = model_of("spark-3.5-mor-snapshot")
    s = run(m, ["w1.begin#1", "w2.begin#0", "w1.refresh", "w1.cas", "w2.refresh", "w2.cas"])
    g = dependency_graph(m, s)
    assert set(g.nodes) == {"setup.1", "w1.1", "w2.1"}
    types = {(a, b, d["type"], d["row_key"]) for a, b, d in g.edges(data=True)}
    assert ("w1.1", "w2.1", "ww", 1) in types
    assert ("w2.1", "w1.1", "rw", 1) in types            # w2 read v0; w1 wrote the next version
    assert ("setup.1", "w1.1", "wr", 1) in types
    assert ("setup.1", "w1.1", "co", None) in types and ("w1.1", "w2.1", "co", None) in types
    assert g.nodes["w2.1"]["sequence_number"] == 3


def test_serial_history_is_acyclic():
    cfg, m = model_of("spark-3.5-mor-snapshot")
    s = run(m, ["w1.begin#1", "w1.refresh", "w1.cas", "w2.begin#0", "w2.refresh", "w2.cas"])
    assert find_cycles(dependency_graph(m, s)) == []


def test_elementary_cycles_match_networkx_on_random_small_graphs():
    """The plain search that replaced networkx.simple_cycles (issue 13, speed) finds the same
    cycles, each once, from its least node, on every random graph of up to 6 nodes tried."""
    import random

    from icecheck.properties.isolation import elementary_cycles

    rnd = random.Random(13)
    for _ in range(300):
        n = rnd.randint(1, 6)
        nodes = [f"w{i}.{j}" for i in range(1, 4) for j in (1, 2)][:n]
        succ = {a: {b for b in nodes if b != a and rnd.random() < 0.4} for a in nodes}
        d = nx.DiGraph()
        d.add_nodes_from(nodes)
        d.add_edges_from((a, b) for a in nodes for b in succ[a])
        expected = set()
        for cyc in nx.simple_cycles(d):
            i = cyc.index(min(cyc))
            expected.add(tuple(cyc[i:] + cyc[:i]))
        got = [tuple(c) for c in elementary_cycles(succ)]
        assert len(got) == len(set(got))
        assert set(got) == expected
