"""An experiment whose directory was lost resumes from its record: the record's finished units
are taken as they stand (results, rating and head-to-head games), the rest run again; a record
of another design is refused. The records are the pilots' own (benchmarks/results/experiments),
so the check runs on what a real experiment wrote."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from frugalzero.errors import UserError
from frugalzero.experiment.results import ExperimentResult
from frugalzero.experiment.runner import Experiment
from frugalzero.experiment.spec import load_spec, spec_path

RECORDS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "experiments"
PILOTS = ["pilot-trunk", "pilot-small"]


def _record(tmp_path: Path, name: str) -> Path:
    record = tmp_path / "record"
    shutil.copytree(RECORDS / name, record)
    return record


def _finished_units(record: Path) -> list[str]:
    """The units whose every arm the record has finished (the pilot's, as it stands)."""
    result = ExperimentResult.from_json((record / "experiment.json").read_text())
    labels = [u.label for u in result.arms[0].seeds]
    return [lab for lab in labels if all(a.unit(lab) and a.unit(lab).finished for a in result.arms)]


def _open(name: str, directory: Path, record: Path, spec: Path | None = None) -> Experiment:
    spec = spec or spec_path(name)
    return Experiment(load_spec(str(spec)), spec, directory, Console(quiet=True), record=record)


@pytest.mark.parametrize("name", PILOTS)
def test_a_lost_directory_resumes_from_the_records_finished_units(tmp_path, name) -> None:
    record = _record(tmp_path, name)
    before = json.loads((record / "experiment.json").read_text())
    finished = _finished_units(record)
    assert finished, f"{name}'s record has no finished unit to restore"
    exp = _open(name, tmp_path / "exp", record)
    restored = sorted({key.split("/", 1)[1] for key in exp.state.restored})
    assert restored == sorted(finished)
    # what runs next is the first unit the record had not finished, from its start
    key = exp.next_key()
    open_units = [u for u in exp.spec.units() if u.label not in finished]
    assert (key[1] if key else None) == (open_units[0] if open_units else None)
    # the restored units' results, ratings and verdict are the record's (refitted from the
    # same games, copied into the new directory)
    after = exp.write(page=False).to_dict()
    assert after.pop("presets_sha256") == exp.presets_sha256
    before.pop("presets_sha256", None)
    if not open_units:
        assert after == before
    for arm_before, arm_after in zip(before["arms"], after["arms"], strict=True):
        for unit_before, unit_after in zip(arm_before["seeds"], arm_after["seeds"], strict=True):
            if unit_before["unit"] in finished:
                assert unit_after == unit_before
    for pgn in (record / "ratings").rglob("*.pgn"):
        copy = tmp_path / "exp" / "ratings" / pgn.relative_to(record / "ratings")
        assert copy.read_text() == pgn.read_text()
    if not open_units:  # nothing left: no trunk is run again, no game played
        done = exp.run()
        assert done.complete and done.to_dict()["verdict"] == before["verdict"]
        assert not (tmp_path / "exp" / "trunk").exists()


def test_a_unit_without_its_head_to_head_is_run_again(tmp_path) -> None:
    record = _record(tmp_path, "pilot-small")
    finished = _finished_units(record)
    last = finished[-1]
    (record / "ratings" / "head-to-head" / f"{last}-contempt.json").unlink()
    exp = _open("pilot-small", tmp_path / "exp", record)
    assert f"contempt/{last}" not in exp.state.restored
    assert f"puct/{last}" not in exp.state.restored
    assert exp.next_key()[1].label == last


def test_a_record_of_another_spec_is_refused_naming_the_difference(tmp_path) -> None:
    record = _record(tmp_path, "pilot-small")
    text = spec_path("pilot-small").read_text()
    spec = tmp_path / "pilot-small.toml"
    spec.write_text(text.replace('"train.steps=150"', '"train.steps=100"'))
    with pytest.raises(UserError, match=r"record .* is of another spec \(set: "):
        _open("pilot-small", tmp_path / "exp", record, spec)
    assert not (tmp_path / "exp").exists()  # refused before anything is written


def test_a_record_made_with_other_preset_values_is_refused(tmp_path) -> None:
    record = _record(tmp_path, "pilot-small")
    data = json.loads((record / "experiment.json").read_text())
    data["presets_sha256"] = "0" * 64
    (record / "experiment.json").write_text(json.dumps(data))
    with pytest.raises(UserError, match="other values of the arms' presets"):
        _open("pilot-small", tmp_path / "exp", record)
    assert not (tmp_path / "exp").exists()
