"""JUnit XML for every gate (``icecheck check``'s built-in suites, a pipeline's properties): the
one format CI systems (Jenkins, GitLab, GitHub's test reporters) read without help.

It validates against the common schema (tests/junit/junit-10.xsd): every ``testsuite`` has
tests/failures/errors/skipped/time, every ``failure`` a message and a type. A known finding, an
allowed or an accepted anomaly is a ``skipped`` test case whose message says which (CI pages
list skipped cases; they hide ``system-out``). Messages are cut at a word, never mid-word, with
the whole text in the element's body.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

MESSAGE_LIMIT = 500


@dataclass
class Case:
    suite: str          # scenarios | corpus | explorations | a pipeline's name
    name: str
    status: str         # passed | failed | known | skipped
    seconds: float
    message: str = ""
    detail: str = ""
    kind: str = ""      # for failures: violation | known_finding | drift | inconclusive | ...
    skip_label: str = "KNOWN FINDING"   # what a ``known`` case's message starts with


def short(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` on one line, cut at the last word that fits ``limit`` characters ("...")."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 3].rsplit(" ", 1)[0]
    return cut + "..."


def junit_xml(cases: list[Case], run_id: str, suites: tuple[str, ...],
              name: str = "icecheck check", classname: str = "icecheck") -> str:
    root = ET.Element("testsuites", name=name)
    for suite in suites:
        cs = [c for c in cases if c.suite == suite]
        el = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cs)),
                           failures=str(sum(c.status == "failed" for c in cs)),
                           errors="0",
                           skipped=str(sum(c.status in ("skipped", "known") for c in cs)),
                           time=f"{sum(c.seconds for c in cs):.3f}")
        props = ET.SubElement(el, "properties")
        ET.SubElement(props, "property", name="icecheck.run_id", value=run_id)
        for c in cs:
            tc = ET.SubElement(el, "testcase", classname=f"{classname}.{suite}", name=c.name,
                               time=f"{c.seconds:.3f}")
            if c.status == "failed":
                f = ET.SubElement(tc, "failure", message=short(c.message),
                                  type=c.kind or "failure")
                f.text = (c.message + "\n" + c.detail).strip()
            elif c.status == "known":
                ET.SubElement(tc, "skipped", message=short(f"{c.skip_label} {c.message}"))
                so = ET.SubElement(tc, "system-out")
                so.text = (c.message + "\n" + c.detail).strip()
            elif c.status == "skipped":
                ET.SubElement(tc, "skipped", message=short(c.message))
            elif c.message:
                so = ET.SubElement(tc, "system-out")
                so.text = c.message
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
