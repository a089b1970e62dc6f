"""The seam between the search's Python side and its C++ core, held in one place.

A parameter is declared twice, once per side (``SearchConfig`` and native/search/params.h's
``FZ_SEARCH_PARAMS``), and a result field too (``SearchResult`` / ``RootLine`` and
native/search/tree.h's ``FZ_RESULT_FIELDS`` / ``FZ_ROOT_LINE_FIELDS``). The core lists its
tables at run time; these tests fail when the two sides disagree on a name, a type or a
default, or when a SearchConfig field neither reaches the core nor is declared Python's own
(``search.config.PYTHON_ONLY``); the exceptions are the named ones (``search.native.NATIVE_FROM``,
``search.types.TARGET_FIELDS``).
"""

from __future__ import annotations

import dataclasses
import math
import typing

import chess
import numpy as np
import pytest

from frugalzero import _native
from frugalzero.search import SearchConfig, UniformEvaluator, search
from frugalzero.search.config import PYTHON_ONLY
from frugalzero.search.native import NATIVE_FROM, NativeTree, search_params
from frugalzero.search.types import TARGET_FIELDS, RootLine, SearchResult, SearchTarget

CPP_TYPES = {"double": float, "int": int, "bool": bool}
"""The Python type of each C++ type a parameter may have."""


def core_params() -> list[tuple[str, str, object]]:
    return [tuple(field) for field in _native.SearchParams.fields()]


def config_fields() -> dict[str, dataclasses.Field]:
    return {field.name: field for field in dataclasses.fields(SearchConfig)}


def source_of(param: str) -> str:
    """The SearchConfig field a core parameter is copied from."""
    return NATIVE_FROM[param][0] if param in NATIVE_FROM else param


def core_value(param: str, config: SearchConfig) -> object:
    """What the core's ``param`` should be for ``config`` (NATIVE_FROM's conversion, if any)."""
    value = getattr(config, source_of(param))
    return NATIVE_FROM[param][1](value) if param in NATIVE_FROM else value


def test_every_core_parameter_is_a_config_field():
    fields = config_fields()
    orphans = [name for name, _, _ in core_params() if source_of(name) not in fields]
    assert not orphans, f"C++ parameters with no SearchConfig field (nor NATIVE_FROM): {orphans}"
    stale = sorted(set(NATIVE_FROM) - {name for name, _, _ in core_params()})
    assert not stale, f"NATIVE_FROM maps parameters the core no longer has: {stale}"


def test_parameter_types_agree():
    hints = typing.get_type_hints(SearchConfig)
    defaults = SearchConfig()
    wrong = []
    for name, cpp_type, _ in core_params():
        assert cpp_type in CPP_TYPES, f"{name}: C++ type {cpp_type} has no Python type here"
        want = CPP_TYPES[cpp_type]
        # a mapped parameter: the type its conversion gives; else the field's annotation
        got = type(core_value(name, defaults)) if name in NATIVE_FROM else hints[name]
        if got is not want:
            wrong.append(f"{name}: C++ {cpp_type}, Python {got}")
    assert not wrong, "types differ across the seam: " + "; ".join(wrong)


def test_parameter_defaults_agree():
    defaults = SearchConfig()
    wrong = []
    for name, _, cpp_default in core_params():
        python = core_value(name, defaults)
        if type(python) is not type(cpp_default) or python != cpp_default:
            wrong.append(f"{name}: C++ {cpp_default!r}, SearchConfig {python!r}")
    assert not wrong, "defaults differ across the seam: " + "; ".join(wrong)


def test_every_config_field_reaches_the_core_or_is_declared_python_only():
    fields = set(config_fields())
    sent = {source_of(name) for name, _, _ in core_params()}
    unaccounted = sorted(fields - sent - set(PYTHON_ONLY))
    assert not unaccounted, (
        f"SearchConfig fields neither sent to C++ nor PYTHON_ONLY: {unaccounted}"
    )
    both = sorted(sent & set(PYTHON_ONLY))
    assert not both, f"PYTHON_ONLY fields the core is sent: {both}"
    stale = sorted(set(PYTHON_ONLY) - fields)
    assert not stale, f"PYTHON_ONLY names no SearchConfig field: {stale}"
    assert all(reason.strip() for reason in PYTHON_ONLY.values())


def _names(fields: list) -> list[str]:
    return [name for name, *_ in fields]


@pytest.mark.parametrize(
    ("table", "cpp", "python"),
    [
        ("FZ_RESULT_FIELDS", _native.result_fields, SearchResult),
        ("FZ_ROOT_LINE_FIELDS", _native.root_line_fields, RootLine),
    ],
)
def test_result_fields_agree(table, cpp, python):
    core = _names(cpp())
    only_cpp = [name for name in core if name not in python._fields]
    only_python = [name for name in python._fields if name not in core]
    assert not only_cpp and not only_python, (
        f"{table} and {python.__name__} differ: only in C++ {only_cpp}, "
        f"only in Python {only_python}"
    )


def test_the_training_target_is_named_by_result_fields():
    assert list(TARGET_FIELDS) == list(SearchTarget._fields)
    assert set(TARGET_FIELDS.values()) <= set(SearchResult._fields)
    assert set(TARGET_FIELDS.values()) <= set(_names(_native.result_fields()))


def _off_default(field: dataclasses.Field, hint: object) -> object:
    """A valid value of a SearchConfig field other than its default."""
    default = field.default
    if typing.get_origin(hint) is typing.Literal:
        return next(arg for arg in typing.get_args(hint) if arg != default)
    if hint is bool:
        return not default
    if hint is int:
        return default - 1 if default > 1 else default + 1
    return default + 0.5 if math.isfinite(default) else 7.0


def test_search_params_copies_every_parameter_from_the_config():
    """Every parameter the core declares is set from the config, none left at its default."""
    fields, hints = config_fields(), typing.get_type_hints(SearchConfig)
    sources = {source_of(name) for name, _, _ in core_params()}
    config = SearchConfig(**{s: _off_default(fields[s], hints[s]) for s in sources})
    params = search_params(config)
    for name, _, cpp_default in core_params():
        assert getattr(params, name) == core_value(name, config), name
        assert getattr(params, name) != cpp_default, name


def test_a_result_crosses_the_seam_whole():
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")  # Ra8 mates
    tree = NativeTree(board, SearchConfig(root_noise=False), seed=1)
    search(tree, UniformEvaluator(), 200)
    result = tree.result(lines=3)
    assert set(tree.core.result(3)) == set(SearchResult._fields)
    mate = chess.Move.from_uci("a1a8")
    assert result.best_move == mate and result.pv[0] == mate and result.mate_in == 1
    assert all(isinstance(move, chess.Move) for move in result.moves + result.pv)
    assert len(result.lines) == 3 and all(isinstance(line, RootLine) for line in result.lines)
    first = result.lines[0]
    assert first.move == mate and first.mate_in == 1 and first.draw is None
    assert first.pv[0] == mate and all(isinstance(m, chess.Move) for m in first.pv)
    assert all(line.mate_in != 1 for line in result.lines[1:])  # the only mate is Ra8
    target = tree.training_target()
    for field, source in TARGET_FIELDS.items():
        assert np.array_equal(getattr(target, field), getattr(result, source), equal_nan=True)
    # self-play's call every move asks for those fields alone; a name the table lacks is refused
    assert list(tree.core.result(0, False, list(TARGET_FIELDS.values()))) == [
        name for name in _names(_native.result_fields()) if name in TARGET_FIELDS.values()
    ]
    with pytest.raises(ValueError, match="a field a result does not have"):
        tree.core.result(0, False, ["value", "best"])


def test_apply_batch_refuses_outputs_that_do_not_fit_the_batch():
    """The validation runs in the core (search/many.cpp); std::invalid_argument arrives as
    ValueError and no tree is touched."""
    trees = [NativeTree(chess.Board(), SearchConfig(root_noise=False), seed=s) for s in (1, 2)]
    cores = [tree.core for tree in trees]
    for tree in trees:
        tree.start(8)
    batch = _native.LeafBatch()
    assert _native.gather_trees(cores, batch, None) == 2
    logits = np.zeros((2, batch.width), np.float32)
    values = np.zeros(2, np.float32)
    wdl = np.full((2, 3), 1 / 3, np.float32)
    bad = [
        ((cores, batch, logits[:1], values), "one output row per network row"),
        ((cores, batch, np.ascontiguousarray(logits[:, :-1]), values), "narrower than the batch"),
        ((cores, batch, logits, values, wdl[:, :2]), "wdl must have 3 columns"),
        ((cores[:1], batch, logits, values), "gathered from other trees"),
    ]
    for arguments, message in bad:
        with pytest.raises(ValueError, match=message):
            _native.apply_batch(*arguments)
        assert [core.in_flight for core in cores] == [1, 1]
    _native.apply_batch(cores, batch, logits, values, wdl)
    assert [core.in_flight for core in cores] == [0, 0]
    assert [core.root_state for core in cores] == [2, 2]  # expanded
