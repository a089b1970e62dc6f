"""Configs: strict loading with errors that name the key, overrides, TOML round trips."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest

from frugalzero.config import (
    dump_toml,
    from_dict,
    list_presets,
    load_config,
    parse_override,
    read_toml,
)
from frugalzero.errors import UserError
from frugalzero.pipeline.config import RunConfig


@dataclass
class Inner:
    rate: float = 0.1
    name: str = "x"


@dataclass
class Outer:
    steps: int = 10
    nscl: float = math.inf
    inner: Inner = field(default_factory=Inner)
    tags: list[str] = field(default_factory=list)
    flag: bool = False


def test_unknown_key_is_named():
    with pytest.raises(UserError, match=r"config\.inner: unknown key 'rte'"):
        from_dict(Outer, {"inner": {"rte": 1}})


def test_bad_type_is_named():
    with pytest.raises(UserError, match=r"config\.steps: expected an integer"):
        from_dict(Outer, {"steps": "ten"})


def test_overrides_and_round_trip(tmp_path):
    preset = tmp_path / "p.toml"
    preset.write_text('steps = 5\n[inner]\nname = "a"\n')
    cfg = load_config(
        Outer, str(preset), ["inner.rate=0.5", "tags=['x', 'y']", "nscl=inf", "flag=true"]
    )
    assert (cfg.steps, cfg.inner.rate, cfg.inner.name, cfg.tags, cfg.flag) == (
        5,
        0.5,
        "a",
        ["x", "y"],
        True,
    )
    assert math.isinf(cfg.nscl)
    out = tmp_path / "out.toml"
    from frugalzero.config import to_dict

    out.write_text(dump_toml(to_dict(cfg)))
    assert from_dict(Outer, read_toml(out)) == cfg


def test_bare_words_are_strings():
    assert parse_override("inner.name=hello") == (["inner", "name"], "hello")


def test_bad_toml_file_names_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("steps = = 3\n")
    with pytest.raises(UserError, match="bad.toml: bad TOML"):
        load_config(Outer, str(bad))


@pytest.mark.parametrize("name", list_presets())
def test_every_shipped_preset_loads_and_validates(name):
    """A typo in a preset is found here, not an hour into someone's run."""
    assert load_config(RunConfig, name).budget.iterations >= 0
