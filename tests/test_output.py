"""The one JSON float rule: infinity is written "inf" ("-inf"), NaN null, in every JSON we write
(command output, the run's state, the training metrics), so one reader reads them all."""

from __future__ import annotations

import json
import math

import numpy as np

from frugalzero.gamestats import Results, summary
from frugalzero.output import plain, to_json
from frugalzero.pipeline.state import RunState
from frugalzero.train.metrics import MetricsLog, read_metrics

VALUES = {"up": math.inf, "down": -math.inf, "nan": math.nan, "np": np.float32(0.5), "n": 3}
WRITTEN = {"up": "inf", "down": "-inf", "nan": None, "np": 0.5, "n": 3}


def strict(text: str):
    """JSON as any other language reads it: Python's own ``Infinity``/``NaN`` refused."""

    def refuse(constant: str):
        raise AssertionError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def test_plain_and_to_json_follow_the_rule():
    assert plain(VALUES) == WRITTEN
    assert strict(to_json({"nested": [VALUES]})) == {"nested": [WRITTEN]}


def test_metrics_and_run_state_write_non_finite_floats_the_same_way(tmp_path):
    log = MetricsLog(tmp_path, tensorboard=False)
    log.write("train", 1, 20, VALUES)
    (record,) = read_metrics(tmp_path)
    assert {k: record[k] for k in VALUES} == WRITTEN
    strict((tmp_path / "metrics.jsonl").read_text())

    state = RunState(current=dict(VALUES))
    state.save(tmp_path)
    saved = strict((tmp_path / "state.json").read_text())
    assert saved["current"] == WRITTEN


def test_a_set_without_draws_has_open_odds_written_as_inf():
    counts = summary([("start", ["e2e4"]), ("start", ["d2d4"])], Results(2, 0, 0), plies=2)
    assert counts["decisive_over_draws_ci95"][0] == math.inf
    assert strict(to_json(counts))["decisive_over_draws_ci95"][0] == "inf"
