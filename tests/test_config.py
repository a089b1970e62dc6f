"""Configs: strict loading with errors that name the key, overrides, TOML round trips."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import pytest

from frugalzero.config import (
    dump_toml,
    from_dict,
    list_presets,
    load_config,
    parse_override,
    preset_path,
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


def _leaves(table: dict, prefix: str = ""):
    """(dotted key, value) of every value a TOML table sets, tables within it followed."""
    for key, value in table.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


@pytest.mark.parametrize("name", list_presets())
def test_every_shipped_preset_loads_and_holds_what_its_file_says(name):
    """A typo in a preset is found here, not an hour into someone's run (loading is strict and
    each config validates itself); and every value the file sets is the one the run gets."""
    config = dataclasses.asdict(load_config(RunConfig, name))
    written = dict(_leaves(read_toml(preset_path(name))))
    assert written, f"{name}: an empty preset"
    for key, value in written.items():
        held = config
        for part in key.split("."):
            held = held[part]
        assert held == value, f"{name}: {key} is {held!r}, the file says {value!r}"


# --- the command line: generated flags, precedence, config show ----------------------------


def _parse(argv: list[str]):
    from frugalzero.cli import build_parser

    return build_parser().parse_args(argv)


def _words(text: str) -> str:
    return " ".join(text.split())


def test_train_help_shows_every_field_docstring(capsys):
    from frugalzero.cli import main
    from frugalzero.config_cli import field_docs
    from frugalzero.train.config import TrainConfig

    with pytest.raises(SystemExit) as stop:
        main(["train", "--help"])
    assert stop.value.code == 0
    out = _words(capsys.readouterr().out)
    docs = field_docs(TrainConfig)
    assert len(docs) == len(dataclasses.fields(TrainConfig))
    for name, doc in docs.items():
        assert f"--{name.replace('_', '-')}" in out
        assert _words(doc) in out
    assert "defaults <- preset (--config) <- flags <- --set" in out


def test_field_docs_read_the_string_after_each_field():
    from frugalzero.config_cli import field_docs
    from frugalzero.search.config import SearchConfig

    docs = field_docs(SearchConfig)
    assert docs["gumbel"].startswith("Gumbel root search (Danihelka")
    assert "\n" in docs["nscl"] and not docs["nscl"].startswith(" ")


def test_a_flag_beats_the_preset_and_set_beats_a_flag(tmp_path):
    from frugalzero.config_cli import config_from_args

    preset = tmp_path / "p.toml"
    preset.write_text("epochs = 2.0\nswa_cycles = 3\n")
    base = ["train", "--data", "d", "--out", "o", "--config", str(preset)]
    assert config_from_args(_parse(base)).epochs == 2.0
    flagged = config_from_args(_parse([*base, "--epochs", "3", "--no-nesterov"]))
    assert (flagged.epochs, flagged.swa_cycles, flagged.nesterov) == (3.0, 3, False)
    assert config_from_args(_parse([*base, "--epochs", "3", "--set", "epochs=4"])).epochs == 4.0


def test_short_legacy_flags_are_aliases():
    from frugalzero.config_cli import config_from_args

    args = _parse(["selfplay", "--net", "n", "--out", "o", "--sims", "50", "--nscl", "inf"])
    args.set.append("games=3")
    config = config_from_args(args)
    assert (config.search.simulations, math.isinf(config.search.nscl), config.games) == (
        50,
        True,
        3,
    )
    gumbel = config_from_args(_parse(["selfplay", "--net", "n", "--out", "o", "--gumbel"]))
    assert gumbel.search.gumbel and gumbel.method == "gumbel"


def test_an_engine_limit_on_the_command_line_is_the_only_one(tmp_path):
    from frugalzero.config_cli import config_from_args

    preset = tmp_path / "p.toml"
    preset.write_text("[engine]\nnodes = 500\n")
    args = _parse(["explore", "--steps", "1", "--out", "o", "--config", str(preset)])
    assert config_from_args(args).engine.nodes == 500
    args = _parse(
        ["sfgames", "--games", "1", "--out", "o", "--depth", "5", "--config", str(preset)]
    )
    engine = config_from_args(args).engine
    assert (engine.nodes, engine.depth, engine.movetime_ms) == (0, 5, 0)


def test_a_bad_literal_is_a_one_line_error(tmp_path, capsys):
    from frugalzero.cli import main

    out = str(tmp_path / "out")
    argv = ["selfplay", "--net", "default", "--out", out, "--set", "evaluator.precision=bf61"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "evaluator.precision: 'bf61' is not one of 'auto', 'fp32', 'bf16', 'fp16'" in err
    with pytest.raises(SystemExit) as stop:
        main(["selfplay", "--net", "default", "--out", out, "--evaluator.precision", "bf61"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'bf61'" in err and "Traceback" not in err


def test_a_removed_key_loads_when_it_meant_what_runs_and_is_refused_otherwise(tmp_path):
    """``search.core`` is gone (the native core is the only search): an old run's config.toml
    with ``core = "native"`` loads as the run it was; ``python``, from a file, ``--set`` or a
    ``net:`` spec, is one line saying why, never a run on another search."""
    from frugalzero.config import to_dict
    from frugalzero.evaluate.netplayer import net_configs
    from frugalzero.evaluate.specs import parse_spec
    from frugalzero.search.config import SearchConfig
    from frugalzero.selfplay.config import SelfPlayConfig

    text = dump_toml(to_dict(RunConfig()))
    assert "\ncore = " not in text and "[selfplay.search]\n" in text
    old = tmp_path / "config.toml"
    old.write_text(text.replace("[selfplay.search]\n", '[selfplay.search]\ncore = "native"\n'))
    assert to_dict(from_dict(RunConfig, read_toml(old), str(old))) == to_dict(RunConfig())
    old.write_text(text.replace("[selfplay.search]\n", '[selfplay.search]\ncore = "python"\n'))
    why = "is no longer a setting: the native core is the only search"
    with pytest.raises(UserError, match=rf"config.toml.selfplay.search: core = 'python' {why}"):
        from_dict(RunConfig, read_toml(old), str(old))
    with pytest.raises(UserError, match=rf"^--set search.core: core = 'python' {why}"):
        load_config(SelfPlayConfig, overrides=["search.core=python"])
    assert load_config(SelfPlayConfig, overrides=["search.core=native"]) == SelfPlayConfig()
    played, _, _ = net_configs(parse_spec("net:x?core=native"), seats=1)
    assert played == SearchConfig().for_play()
    with pytest.raises(UserError, match=rf"engine 'net:x\?core=python'.*: core = 'python' {why}"):
        net_configs(parse_spec("net:x?core=python"), seats=1)


@pytest.mark.parametrize("name", [None, *list_presets()])
def test_config_show_is_a_config_that_resolves_to_the_same_run(name, tmp_path, capsys):
    from frugalzero.cli import main
    from frugalzero.pipeline.cli import run_config

    assert main(["config", "show", *([name] if name else [])]) == 0
    text = capsys.readouterr().out
    assert "# Generate-train-evaluate iterations.\niterations = " in text
    assert "# When to stop.\n[budget]" in text
    shown = tmp_path / "x.toml"
    shown.write_text(text)
    expected = load_config(RunConfig, name) if name else RunConfig()
    _, config = run_config(_parse(["run", "--config", str(shown), "--dir", str(tmp_path / "r")]))
    assert config == expected


def test_config_show_applies_set(capsys):
    from frugalzero.cli import main

    assert main(["config", "show", "smoke", "--set", "budget.iterations=7"]) == 0
    assert "\niterations = 7\n" in capsys.readouterr().out


# --- validation in __post_init__: one representative bad value per config -------------------


def _bad_configs():
    from frugalzero.evaluate.adjudicate import AdjudicationConfig
    from frugalzero.evaluate.gating import GateConfig
    from frugalzero.evaluate.match import MatchConfig
    from frugalzero.expert.engine import EngineConfig
    from frugalzero.expert.explore import ExploreConfig
    from frugalzero.expert.sfgames import SfGamesConfig
    from frugalzero.nn.config import EvaluatorConfig
    from frugalzero.pipeline.config import (
        BudgetConfig,
        EvaluationSection,
        GenerateSection,
        NetSection,
    )
    from frugalzero.scale.config import RayConfig
    from frugalzero.search.config import SearchConfig
    from frugalzero.selfplay.config import SelfPlayConfig
    from frugalzero.train.config import TrainConfig

    return [
        (lambda: TrainConfig(batch_size=0), r"train: batch_size must be at least 1"),
        (lambda: TrainConfig(optimizer="sdg"), r"train\.optimizer: 'sdg' is not one of"),
        (lambda: SearchConfig(simulations=0), r"search: simulations must be at least 1"),
        (lambda: SearchConfig(fpu_mode="x"), r"search\.fpu_mode: 'x' is not one of"),
        (lambda: SelfPlayConfig(games=0), r"selfplay: games must be at least 1"),
        (lambda: SelfPlayConfig(odds="king"), r"selfplay\.odds: 'king' is not one of"),
        (lambda: EvaluatorConfig(precision="bf61"), r"evaluator\.precision: 'bf61' is not one"),
        (lambda: EvaluatorConfig(cache_size=-1), r"evaluator: cache_size must be >= 0"),
        (lambda: EngineConfig(threads=0), r"engine: threads and hash_mb must be at least 1"),
        (lambda: ExploreConfig(noise_epsilon=2), r"explore: noise_epsilon must be in \[0, 1\]"),
        (lambda: SfGamesConfig(max_plies=0), r"sfgames: max_plies must be at least 1"),
        (lambda: GateConfig(mode="sometimes"), r"gate\.mode: 'sometimes' is not one of"),
        (lambda: AdjudicationConfig(max_plies=-1), r"adjudication: max_plies must be >= 0"),
        (lambda: MatchConfig(games=0), r"match: games must be at least 1"),
        (lambda: MatchConfig(odds_giver="third"), r"match\.odds_giver: 'third' is not one of"),
        (lambda: RayConfig(object_store_mb=10), r"ray: object_store_mb must be >= 80"),
        (
            lambda: BudgetConfig(iterations=0),
            r"budget: set iterations, minutes, positions or evaluations",
        ),
        (lambda: NetSection(value_head="mse"), r"net\.value_head: 'mse' is not one of"),
        (lambda: GenerateSection(window=-1), r"generate: window must be >= 0"),
        (lambda: EvaluationSection(nodes=0), r"evaluation: nodes must be >= 1"),
        (lambda: NetSection(arch="huge"), r"net: arch .huge. is not one of tiny"),
        (lambda: EvaluationSection(anchor_elo=math.nan), r"anchor_elo: nan is not a finite"),
        (lambda: RunConfig(method="pgn"), r"run: method pgn needs generate\.pgn"),
        (lambda: RunConfig(method="mcts"), r"run\.method: 'mcts' is not one of"),
    ]


@pytest.mark.parametrize("index", range(24))
def test_every_config_checks_itself_when_built(index):
    make, message = _bad_configs()[index]
    with pytest.raises(UserError, match=message) as error:
        make()
    assert "\n" not in str(error.value)
