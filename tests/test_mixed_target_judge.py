"""The mixed target's judging of a Spark writer, without engines: a validation message that
differs from the model's only by the not_null conjuncts Spark's optimizer infers and pushes
into the conflict filter agrees, as on the spark target (docs/conformance-spark.md,
"Comparing"); any other difference in the filter is still a disagreement. Found by the mixed
random differential (seed 2612): a Spark merge-on-read UPDATE WHERE cat = 'b' on a
bucket(2, id) table failed validation on both sides, Spark's message adding
not_null(ref(name="cat"))."""

from icecheck.conformance.compare import AGREE, DISAGREE, Comparison
from icecheck.conformance.java_runner import ModelOp
from icecheck.conformance.mixed_target import _judge, _Run
from icecheck.models.operations import Operation

MODEL = ('Found conflicting files that can contain records matching ref(name="cat") == "b": '
         '[d2]')
SPARK = ('Found conflicting files that can contain records matching '
         '(not_null(ref(name="cat")) and ref(name="cat") == "b"): [d2]')


class _Scenario:
    def profile_of(self, writer):
        return {"w1": "pyiceberg-0.12-serializable", "w2": "spark-3.5-mor-serializable"}[writer]


class _Plan:
    def __init__(self, ops):
        self.ops = ops


def _judged(spark_message: str) -> Comparison:
    ops = [ModelOp("w1", 0, Operation(kind="append"), "committed", None, None, 1, 0, 0, 0),
           ModelOp("w2", 0, Operation(kind="row_delta"), "validation_failed", MODEL,
                   "no_conflicting_data_files", 1, 0, 0, 0)]
    real = _Run(outcomes={("w1", 0): ("committed", None),
                          ("w2", 0): ("validation_failed", spark_message)},
                rows=[[1]])
    c = Comparison("x", "x.yaml", "random", AGREE)
    _judge(c, _Scenario(), _Plan(ops), real, [[1]])
    return c


def test_spark_writer_inferred_not_null_conjunct_agrees():
    c = _judged(SPARK)
    assert c.status == AGREE, c.differences
    note = [o for o in c.ops if o.writer == "w2"][0]
    assert note.agree and "not_null" in (note.note or "")


def test_spark_writer_other_filter_difference_disagrees():
    c = _judged(SPARK.replace('== "b"', '== "a"'))
    assert c.status == DISAGREE
    assert c.differences and c.differences[0].startswith("w2: message:")
