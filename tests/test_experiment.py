"""``frugalzero experiment``: the spec, the decision rule's statistics, the interleaved order,
a changed spec refused, and an experiment killed at seeded moments ending as one never killed."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from experimentspecs import SMALL, SMOKE, spec_file
from frugalzero.errors import UserError
from frugalzero.experiment.results import ArmResult, ExperimentResult, KeptNet, UnitResult
from frugalzero.experiment.spec import ExperimentSpec, Unit, load_spec
from frugalzero.experiment.verdict import (
    compare,
    interval,
    mean_curve,
    minimum_detectable_effect,
    protocol_rating_error,
)
from frugalzero.runtime.interpreter import own_code_env


# -- the spec ---------------------------------------------------------------------------------
def test_the_smoke_spec_is_two_arms_of_two_paired_seeds() -> None:
    spec = load_spec("smoke")
    assert [a.name for a in spec.arm] == ["puct", "contempt"] and spec.seeds == [0, 1]
    assert spec.baseline == "puct"
    assert spec.checkpoints() == [1500, 3000]


@pytest.mark.parametrize(
    "old, new, field",
    [
        ("checkpoints = [0.5, 1.0]", "checkpoints = [0.5]", "the last checkpoint must be 1.0"),
        ('baseline = "puct"', 'baseline = "nobody"', "baseline"),
        ("seeds = [0, 1]", "seeds = [1, 1]", "seeds must differ"),
        ('name = "contempt"', 'name = "puct"', "arm names must differ"),
        ("games = 4", "games = 3", "games must be even"),
    ],
)
def test_a_bad_spec_is_one_line_naming_its_field(tmp_path, old, new, field) -> None:
    with pytest.raises(UserError) as error:
        load_spec(str(spec_file(tmp_path, {old: new})))
    assert field in str(error.value) and "\n" not in str(error.value)


def test_a_changed_spec_is_refused_by_its_first_difference(tmp_path) -> None:
    from rich.console import Console

    from frugalzero.experiment.runner import Experiment

    directory = tmp_path / "exp"
    first = spec_file(tmp_path)
    Experiment(load_spec(str(first)), first, directory, Console(quiet=True))
    Experiment(load_spec(str(first)), first, directory, Console(quiet=True))  # same: opens
    changed = spec_file(tmp_path, {"evaluations = 3000": "evaluations = 7000"})
    with pytest.raises(UserError) as error:
        Experiment(load_spec(str(changed)), changed, directory, Console(quiet=True))
    message = str(error.value)
    assert "budget.evaluations: 3000 then, 7000 now" in message and "\n" not in message
    arm = spec_file(tmp_path, {'"selfplay.search.nscl=5"': '"selfplay.search.nscl=10"'})
    with pytest.raises(UserError, match=r"arm\.contempt\.set"):
        Experiment(load_spec(str(arm)), arm, directory, Console(quiet=True))


def test_each_arm_seed_is_its_arm_with_the_seeds_shared_by_every_arm(tmp_path) -> None:
    from rich.console import Console

    from frugalzero.experiment.runner import Experiment

    spec = load_spec("smoke")
    exp = Experiment(spec, SMOKE, tmp_path / "exp", Console(quiet=True))
    puct, contempt = (exp.run_config(arm, Unit(1)) for arm in spec.arm)
    assert (puct.method, contempt.method) == ("selfplay", "contempt")
    assert puct.seed == contempt.seed == 1 and puct.net.seed == contempt.net.seed == 1
    assert puct.budget.evaluations == 3000 and puct.budget.iterations == 0
    assert contempt.selfplay.search.nscl == 5 and puct.selfplay.search.simulations == 8
    assert puct.evaluation.games_vs_best == 0  # the experiment rates the nets itself
    assert exp.run_config(spec.arm[0], Unit(0)).seed == 0


def test_units_run_in_order_and_within_one_the_arm_that_spent_least(tmp_path, monkeypatch):
    """A unit's arms finish before the next unit starts (a stopped experiment has whole pairs);
    within it, the arm that has spent least goes next (ties: arm order)."""
    from rich.console import Console

    from frugalzero.experiment.runner import Experiment

    spec = load_spec("smoke")
    exp = Experiment(spec, SMOKE, tmp_path / "exp", Console(quiet=True))
    spent = {("puct", 0): 10, ("contempt", 0): 5, ("puct", 1): 0, ("contempt", 1): 0}
    monkeypatch.setattr(exp, "spent", lambda arm, unit: spent[(arm.name, unit.seed)])
    arm, unit = exp.next_key()
    assert (arm.name, unit) == ("contempt", Unit(0))  # not seed 1's, which spent nothing
    spent[("contempt", 0)] = 10
    arm, unit = exp.next_key()
    assert (arm.name, unit) == ("puct", Unit(0))  # a tie: the first arm
    for arm in spec.arm:
        exp.progress(arm, Unit(0)).done = True
    arm, unit = exp.next_key()
    assert (arm.name, unit) == ("puct", Unit(1))


# -- bad input, found before anything is written ----------------------------------------------
def _open(spec: Path, directory: Path, record: Path | None = None):
    from rich.console import Console

    from frugalzero.experiment.runner import Experiment

    return Experiment(load_spec(str(spec)), spec, directory, Console(quiet=True), record=record)


def test_a_preset_edited_between_two_starts_is_refused_naming_it(tmp_path) -> None:
    from frugalzero.config import preset_path

    preset = tmp_path / "mine.toml"
    preset.write_text(preset_path("smoke").read_text())
    own = 'preset = "smoke"\nmethod = "contempt"'
    spec = spec_file(tmp_path, {own: f'preset = "{preset}"\nmethod = "contempt"'})
    directory = tmp_path / "exp"
    _open(spec, directory)
    state = (directory / "state.json").read_bytes()
    preset.write_text("# a comment changes nothing\n" + preset.read_text())
    _open(spec, directory)
    preset.write_text(preset.read_text().replace("batch_size = 128", "batch_size = 256"))
    with pytest.raises(UserError) as error:
        _open(spec, directory)
    message = str(error.value)
    assert f"preset {preset} (arm contempt) has changed" in message and "\n" not in message
    assert "train.batch_size: 128 then, 256 now" in message
    assert (directory / "state.json").read_bytes() == state


def test_an_experiment_from_before_the_presets_were_kept_keeps_them_when_resumed(tmp_path):
    directory = tmp_path / "exp"
    _open(SMOKE, directory)
    path = directory / "state.json"
    old = json.loads(path.read_text())
    del old["presets"]
    path.write_text(json.dumps(old))
    exp = _open(SMOKE, directory)  # opens: it cannot tell what its presets were
    exp._save()
    assert set(json.loads(path.read_text())["presets"]) == {"smoke"}


def test_seeds_out_of_a_runs_range_are_refused_before_anything_is_written(tmp_path) -> None:
    spec = spec_file(tmp_path, {"seeds = [0, 1]": "seeds = [0, 99999999999999999999]"})
    with pytest.raises(UserError) as error:
        _open(spec, tmp_path / "exp")
    message = str(error.value)
    assert "seeds: run.seed: 1e+20 is out of range (0 to 4,294,967,295)" in message
    assert "\n" not in message and not (tmp_path / "exp").exists()


def test_a_negative_seed_is_one_line_and_makes_no_directory(tmp_path, capsys, monkeypatch):
    from frugalzero.cli import main
    from frugalzero.experiment.runner import Experiment

    monkeypatch.setattr(Experiment, "run", lambda self: pytest.fail("the experiment ran"))
    spec = spec_file(tmp_path, {"seeds = [0, 1]": "seeds = [-1, 0]"})
    assert main(["experiment", str(spec), "--dir", str(tmp_path / "exp")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("frugalzero: error: ") and "\n" not in err
    assert "spec.toml: seeds: run.seed: -1 is out of range (0 to 4,294,967,295)" in err
    assert not (tmp_path / "exp").exists()


def test_a_bad_anchor_is_refused_before_anything_is_written_so_its_fix_starts(tmp_path):
    directory = tmp_path / "exp"
    bad = spec_file(tmp_path, {'anchors = ["random"]': 'anchors = ["nosuch"]'})
    with pytest.raises(UserError, match="rating.anchors: engine 'nosuch'"):
        _open(bad, directory)
    assert not directory.exists()
    good = spec_file(tmp_path)  # the spec corrected, in the same --dir
    exp = _open(good, directory)
    assert exp.state.spec_sha256 == load_spec(str(good)).sha256()
    assert (directory / "state.json").is_file()


def test_a_record_that_is_a_file_is_refused_at_once(tmp_path, capsys, monkeypatch) -> None:
    from frugalzero.cli import main
    from frugalzero.experiment.runner import Experiment

    monkeypatch.setattr(Experiment, "run", lambda self: pytest.fail("the experiment ran"))
    record = tmp_path / "record.json"
    record.write_text("{}\n")
    argv = ["experiment", str(SMOKE), "--dir", str(tmp_path / "exp"), "--record", str(record)]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"frugalzero: error: cannot create the directory {record}: Not a directory"
    assert not (tmp_path / "exp").exists() and record.read_text() == "{}\n"


def test_a_dir_or_record_in_a_runs_own_folder_is_refused_before_writing(tmp_path) -> None:
    from frugalzero.config import load_config
    from frugalzero.layout import RunLayout
    from frugalzero.pipeline.config import RunConfig
    from frugalzero.pipeline.identity import open_run

    run = tmp_path / "run"
    open_run(RunLayout(run), load_config(RunConfig, "smoke"))
    files = sorted(p.name for p in run.iterdir())
    with pytest.raises(UserError) as error:
        _open(SMOKE, run / "nets")
    assert f"the run {run}'s own nets" in str(error.value)
    with pytest.raises(UserError) as error:
        _open(SMOKE, tmp_path / "exp", record=run / "data" / "record")
    assert f"the run {run}'s own data" in str(error.value)
    assert sorted(p.name for p in run.iterdir()) == files and not (tmp_path / "exp").exists()


# -- the decision rule (its calibration: tests/test_verdict_calibration.py) --------------------
def test_the_minimum_detectable_effect_holds_the_rating_error_and_shrinks_as_root_n() -> None:
    from frugalzero.stats import minimum_detectable_effect as paired

    assert minimum_detectable_effect(1, 120, 0.95, 0.8) is None
    three = minimum_detectable_effect(3, 120, 0.95, 0.8)
    assert three == pytest.approx(paired(3, 120 * math.sqrt(2), 0.95, 0.8))
    assert three > (4.303 + 1.061) * 120 * math.sqrt(2 / 3)  # the large-sample formula's 525
    with_error = minimum_detectable_effect(3, 120, 0.95, 0.8, rating_error=80)
    assert with_error == pytest.approx(paired(3, math.sqrt(2 * 120**2 + 80**2), 0.95, 0.8))
    big = minimum_detectable_effect(400, 120, 0.95, 0.8)
    assert big == pytest.approx((1.966 + 0.842) * 120 * math.sqrt(2 / 400), rel=1e-2)


def test_an_interval_is_students_t_on_the_spread_which_holds_the_rating_error() -> None:
    mean, low, high = interval([10.0, 30.0], [0.0, 0.0], 0.95)
    assert mean == 20 and high - mean == pytest.approx(12.706 * math.sqrt(200 / 2), rel=1e-3)
    assert interval([10.0, 30.0], [30.0, 30.0], 0.95) == (mean, low, high)  # not counted twice
    one = interval([50.0], [10.0], 0.95)
    assert one == pytest.approx((50.0, 50 - 19.6, 50 + 19.6), abs=0.01)


def _arm(name: str, elos: dict[int, float | None], sigma: float = 5.0) -> ArmResult:
    seeds = []
    for seed, elo in elos.items():
        kept = [KeptNet(0, evaluations=0, elo=500.0, sigma=sigma)]
        kept.append(KeptNet(100, evaluations=110, elo=elo, sigma=None if elo is None else sigma))
        seeds.append(UnitResult(seed=seed, unit=f"seed-{seed}", kept=kept))
    return ArmResult(name=name, seeds=seeds)


def test_paired_differences_decide_better_worse_or_inconclusive() -> None:
    base = _arm("puct", {0: 600, 1: 700, 2: 650})
    better = compare(_arm("c", {0: 700, 1: 805, 2: 748}), base, 100, 0.95)
    assert better.conclusion == "better" and better.differences == [100, 105, 98]
    assert better.pairs == 3 and better.ci95[0] > 0
    assert better.units == ["seed-0", "seed-1", "seed-2"]
    worse = compare(_arm("c", {0: 500, 1: 601, 2: 548}), base, 100, 0.95)
    assert worse.conclusion == "worse"
    noisy = compare(_arm("c", {0: 900, 1: 500, 2: 650}), base, 100, 0.95)
    assert noisy.conclusion == "inconclusive" and noisy.ci95[0] < 0 < noisy.ci95[1]
    partial = compare(_arm("c", {0: 700, 1: None, 5: 800}), base, 100, 0.95)
    assert partial.pairs == 1  # seed 1 unrated, seed 5 has no baseline
    none = compare(_arm("c", {1: None}), base, 100, 0.95)
    assert none.conclusion == "not yet rated" and none.difference is None


def test_the_measured_spread_gives_the_pairs_mde_and_sizes_a_follow_up() -> None:
    from frugalzero.experiment.verdict import FOLLOW_UP_MDE
    from frugalzero.stats import minimum_detectable_effect as paired
    from frugalzero.stats import pairs_for_effect

    base = _arm("puct", {0: 600, 1: 700, 2: 650, 3: 640}, sigma=10.0)
    spread = compare(_arm("c", {0: 640, 1: 700, 2: 710, 3: 620}, sigma=10.0), base, 100, 0.95)
    sd = spread.spread_sd  # above the rating error (10 * sqrt 2): the spread itself
    assert sd > spread.rating_error_sd
    assert spread.mde_measured == pytest.approx(paired(4, sd, 0.95, 0.8), abs=0.2)
    assert spread.follow_up_pairs == pairs_for_effect(FOLLOW_UP_MDE, sd, 0.95, 0.8)
    assert spread.follow_up_pairs > 4 and spread.mde_measured > FOLLOW_UP_MDE
    # a spread below the rating error alone is sampling luck: the error is the floor
    tight = compare(_arm("c", {0: 601, 1: 700, 2: 651, 3: 640}, sigma=10.0), base, 100, 0.95)
    assert tight.seed_sd == 0.0 and tight.spread_sd < tight.rating_error_sd
    floor = tight.rating_error_sd
    assert tight.mde_measured == pytest.approx(paired(4, floor, 0.95, 0.8), abs=0.2)
    assert tight.follow_up_pairs == pairs_for_effect(FOLLOW_UP_MDE, floor, 0.95, 0.8)
    more_power = compare(
        _arm("c", {0: 640, 1: 700, 2: 710, 3: 620}, sigma=10.0), base, 100, 0.95, power=0.9
    )
    assert more_power.follow_up_pairs > spread.follow_up_pairs
    one = compare(_arm("c", {0: 640}), base, 100, 0.95)
    assert one.mde_measured is None and one.follow_up_pairs is None  # one pair has no spread


def test_the_mean_curve_averages_the_seeds_rated_at_each_checkpoint() -> None:
    curve = mean_curve(_arm("a", {0: 600, 1: 700, 2: None}).seeds, 0.95)
    assert [c.seeds for c in curve] == [3, 2]
    assert curve[1].elo == 650 and curve[1].evaluations == 110


def test_the_verdict_states_the_rule_and_the_effect_it_can_detect() -> None:
    from frugalzero.experiment.verdict import verdict

    spec = load_spec("smoke")
    arms = [_arm("puct", {0: 600, 1: 700}), _arm("contempt", {0: 650, 1: 760})]
    for arm in arms:
        for seed in arm.seeds:
            seed.kept[1].checkpoint = spec.checkpoints()[-1]
    result = verdict(spec, arms, complete=True)
    assert result.comparisons[0].difference == 55.0
    assert "contempt vs puct: +55 Elo" in result.text and "inconclusive" in result.text
    # the MDE holds the rating protocol's error: 4 games a net against one anchor
    error = protocol_rating_error(spec)
    assert error == pytest.approx(math.sqrt(2) * 800 / math.log(10) / math.sqrt(4))
    assert result.rating_error_sd == pytest.approx(error, abs=0.1)
    mde = minimum_detectable_effect(2, 120, 0.95, 0.8, error)
    assert result.mde_elo == pytest.approx(mde, abs=0.1)
    assert mde > minimum_detectable_effect(2, 120, 0.95, 0.8)
    comparison = result.comparisons[0]  # the seed spread and the rating error, apart
    assert comparison.rating_error_sd == pytest.approx(5 * math.sqrt(2), abs=0.1)
    assert comparison.spread_sd == pytest.approx(math.sqrt(50), abs=0.1)
    assert "rating error 7 a pair" in result.text
    assert "so far" in verdict(spec, arms, complete=False).text
    assert isinstance(spec, ExperimentSpec)


# -- no path of this machine in a record -------------------------------------------------------
def _paths_in_records(directory: Path) -> list[str]:
    """``FILE: PATH`` for each record of the experiment in ``directory`` (experiment.json, the
    page, every rating game and head-to-head count; not state.json, the machine's own) that
    holds a path of this machine: the experiment's, the home directory's or one in /tmp/."""
    paths = sorted({str(directory), str(directory.resolve()), str(Path.home()), "/tmp/"})
    ratings = directory / "ratings"
    files = [directory / "experiment.json", directory / "experiment.html"]
    files += sorted(ratings.rglob("*.pgn")) + sorted(ratings.glob("head-to-head/*.json"))
    found = []
    for file in files:
        text = file.read_text(encoding="utf-8") if file.is_file() else ""
        found += [f"{file.relative_to(directory)}: {p}" for p in paths if p in text]
    return found


def test_a_player_named_by_its_path_is_found_in_the_records(tmp_path) -> None:
    """The check every experiment's records pass (above and in the killed experiment below):
    a player named by arm, unit and net passes; one named by its net's path, as players were
    before, is found in each record that carries it."""
    from frugalzero.experiment.page import write_page

    directory = tmp_path / "exp"
    net = KeptNet(0, net="nets/iter-0000.safetensors", net_id="ab12", player="seed-0/start")
    unit = UnitResult(seed=0, unit="seed-0", dir="arms/puct/seed-0", kept=[net])
    results = ExperimentResult(name="x", arms=[ArmResult("puct", seeds=[unit])])

    def write(player: str) -> list[str]:
        net.player = player
        (directory / "ratings" / "head-to-head").mkdir(parents=True, exist_ok=True)
        (directory / "experiment.json").write_text(results.to_json())
        write_page(results, directory / "experiment.html")
        game = f'[White "{player}"]\n[Black "random"]\n[Result "1-0"]\n\n1-0\n'
        (directory / "ratings" / "ab12-vs-random.pgn").write_text(game)
        counts = {"arm": player, "baseline": "puct/seed-0/iter-0001", "pentanomial": [0] * 5}
        (directory / "ratings" / "head-to-head" / "seed-0-c.json").write_text(json.dumps(counts))
        return _paths_in_records(directory)

    assert write("seed-0/start") == []
    path = directory.resolve() / "arms" / "puct" / "seed-0" / "nets" / "iter-0000.safetensors"
    found = write(f"net:{path}")
    assert {f.split(": ")[0] for f in found} == {
        "experiment.json",
        "ratings/ab12-vs-random.pgn",
        "ratings/head-to-head/seed-0-c.json",
    }


# -- killed at seeded moments -------------------------------------------------------------------
KILLS = 8
SEED = 61
TIMING = {"wall_s", "cpu_s", "minutes"}


def _comparable(value: Any, directory: Path) -> Any:
    """``value`` without what measures time, its paths relative to the experiment."""
    if isinstance(value, dict):
        return {k: _comparable(v, directory) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_comparable(v, directory) for v in value]
    if isinstance(value, str):
        return value.replace(str(directory.resolve()), "EXP")
    return value


def _command(spec: Path, directory: Path) -> list[str]:
    record = ["--record", str(directory.parent / "record")] if directory.name == "killed" else []
    command = [sys.executable, "-m", "frugalzero", "experiment", str(spec), "--dir"]
    return [*command, str(directory), *record]


def _finish(spec: Path, directory: Path) -> dict[str, Any]:
    done = subprocess.run(
        _command(spec, directory), env=own_code_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((directory / "experiment.json").read_text())


@pytest.mark.slow
def test_an_experiment_killed_many_times_ends_as_one_never_killed(tmp_path) -> None:
    """Self-play games are numbered and replayed from their seeds, training resumes exactly,
    rating matches are replayed whole: the results are the same whatever the kills. (The
    network's answer must not depend on its batch: bf16 on this CPU; see pipeline.generate.)
    One unit of two arms: the order between units is its own test (above), and a second unit
    cost CI a minute."""
    spec = spec_file(tmp_path, {**SMALL, "seeds = [0, 1]": "seeds = [0]"})
    clean = _finish(spec, tmp_path / "clean")
    assert clean["complete"] and clean["verdict"]["comparisons"][0]["pairs"] == 1
    killed_dir = tmp_path / "killed"
    rng = random.Random(SEED)
    kills = 0
    for _ in range(KILLS):
        proc = subprocess.Popen(
            _command(spec, killed_dir),
            env=own_code_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(rng.uniform(3.0, 9.0))
        if proc.poll() is not None:
            break
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
    assert kills >= 3, "the experiment ended before it could be killed"
    killed = _finish(spec, killed_dir)
    assert _comparable(killed, killed_dir) == _comparable(clean, tmp_path / "clean")
    record = json.loads((killed_dir.parent / "record" / "experiment.json").read_text())
    assert _comparable(record, killed_dir) == _comparable(clean, tmp_path / "clean")
    for directory in (tmp_path / "clean", killed_dir, killed_dir.parent / "record"):
        assert _paths_in_records(directory) == []  # players are named by arm, unit and net
    arms = clean["arms"]
    assert all(len(s["kept"]) == 3 for a in arms for s in a["seeds"])  # initial + 2 points
    assert all(k["elo"] is not None for a in arms for s in a["seeds"] for k in s["kept"])
    assert (killed_dir / "experiment.html").is_file()


def test_the_page_is_drawn_again_between_steps_once_a_minute(tmp_path) -> None:
    """experiment.json is current after every step; the page's charts, seconds to draw, are
    drawn again only once PAGE_EVERY_S has passed (and always at the end: ``write()``)."""
    from rich.console import Console

    from frugalzero.experiment import runner

    exp = runner.Experiment(load_spec("smoke"), SMOKE, tmp_path / "exp", Console(quiet=True))
    assert exp._page_due()  # none drawn yet
    exp.write(page=exp._page_due())
    page = tmp_path / "exp" / runner.PAGE
    page.write_text("as drawn")
    (tmp_path / "exp" / runner.RESULT).unlink()
    exp.write(page=exp._page_due())
    assert page.read_text() == "as drawn" and (tmp_path / "exp" / runner.RESULT).is_file()
    exp._page_drawn -= runner.PAGE_EVERY_S
    exp.write(page=exp._page_due())
    assert page.read_text() != "as drawn"
    page.write_text("as drawn")
    exp.write()
    assert page.read_text() != "as drawn"


def test_the_record_is_kept_beside_the_experiment_from_its_first_step(tmp_path) -> None:
    from rich.console import Console

    from frugalzero.experiment.runner import Experiment

    record = tmp_path / "record"
    exp = Experiment(
        load_spec("smoke"), SMOKE, tmp_path / "exp", Console(quiet=True), record=record
    )
    results = exp.write()  # nothing run yet: every seed unrated, the verdict "not yet rated"
    assert not results.complete and results.verdict is not None
    assert results.verdict.comparisons[0].conclusion == "not yet rated"
    assert json.loads((record / "experiment.json").read_text()) == results.to_dict()
    assert [u.label for u in results.arms[0].seeds] == ["seed-0", "seed-1"]
    assert _paths_in_records(tmp_path / "exp") == [] and _paths_in_records(record) == []
    assert (record / "spec.toml").read_text() == SMOKE.read_text()
    assert (record / "experiment.html").read_text() == (
        tmp_path / "exp/experiment.html"
    ).read_text()
    (tmp_path / "exp/ratings").mkdir()
    (tmp_path / "exp/ratings/abc-vs-random.pgn").write_text('[Event "x"]\n\n1-0\n')
    (tmp_path / "exp/ratings/abc-vs-random.pgn.partial").write_text("cut")
    exp.write()
    assert [p.name for p in (record / "ratings").iterdir()] == ["abc-vs-random.pgn"]
