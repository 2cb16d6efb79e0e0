"""``models.values.replace``: ``dataclasses.replace`` for the model's frozen value types,
without the generated ``__init__`` (issue 13)."""

import dataclasses
import inspect

import pytest

from icecheck import models
from icecheck.models import (catalog, files, filters, metadata, operations, system, table,
                             transforms)
from icecheck.models.values import _PLAIN, replace


def _model_dataclasses():
    out = []
    for mod in (catalog, files, filters, metadata, operations, system, table, transforms):
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if dataclasses.is_dataclass(cls) and cls.__module__.startswith(models.__name__):
                out.append(cls)
    return sorted(set(out), key=lambda c: (c.__module__, c.__name__))


def test_a_copy_equals_what_dataclasses_replace_makes_and_carries_no_cache():
    """A writer state through every step of a search: each field change gives what
    ``dataclasses.replace`` gives, field for field, and none of the caches the checker
    keeps on the original."""
    from icecheck.engines.config import mix_config

    from _search_util import walk
    cfg = mix_config("spark-3.5-mor-serializable", 2, 1, ("delete", "update", "compact"), 1)
    _, states = walk(cfg, 300)
    assert _PLAIN[system.WriterState] is not None       # the handlers took the fast path
    seen = 0
    for s in states:
        for w in s.writers:
            object.__setattr__(w, "_icecheck_test_cache", 1)
            for name, value in (("phase", system.DONE), ("attempt", w.attempt + 1),
                                ("history", ()), ("operation", None)):
                got, want = replace(w, **{name: value}), dataclasses.replace(w, **{name: value})
                assert type(got) is type(want) and got == want and hash(got) == hash(want)
                assert [getattr(got, f.name) for f in dataclasses.fields(got)] == \
                    [getattr(want, f.name) for f in dataclasses.fields(want)]
                assert "_icecheck_test_cache" not in got.__dict__
                seen += 1
    assert seen > 100


@pytest.mark.parametrize("cls", _model_dataclasses(), ids=lambda c: c.__name__)
def test_only_plain_frozen_classes_take_the_fast_path(cls):
    """A class whose ``__init__`` does more than store its arguments (``__post_init__``,
    ``InitVar``, ``init=False``, no generated ``__init__``) or that is not frozen goes to
    ``dataclasses.replace``."""
    from icecheck.models.values import _plain
    params = cls.__dataclass_params__
    plain = _plain(cls)
    if hasattr(cls, "__post_init__") or not params.frozen or not params.init:
        assert plain is None
    if plain is not None:
        assert plain[0] == tuple(f.name for f in dataclasses.fields(cls))


def test_a_class_with_post_init_and_an_unknown_field_go_to_dataclasses_replace():
    @dataclasses.dataclass(frozen=True)
    class Checked:
        x: int

        def __post_init__(self):
            if self.x < 0:
                raise ValueError("negative")

    with pytest.raises(ValueError):
        replace(Checked(1), x=-1)          # __post_init__ ran
    w = system.WriterState("w1", 1)
    with pytest.raises(TypeError, match="nope"):
        replace(w, nope=1)
