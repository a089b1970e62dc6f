"""The experiment's page: read from experiment.json as ``frugalzero experiment`` writes it,
self-contained, tolerant of a half-finished experiment, and drawn in a real browser."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

from frugalzero.experiment.page import build_page, write_page
from test_report import CHROMIUM, _chromium  # pytest puts tests/ on the path

VERDICT = (
    "sfgames vs puct: +35 Elo [-180, +250] at 30,000 evaluations (2 seed pairs): inconclusive;"
    " minimum detectable effect 211 Elo"
)


def _kept(evaluations: list[int], elos: list[float | None]) -> list[dict]:
    """The kept nets of one arm-seed: the initial net at 0, then one a checkpoint; a null Elo is
    a net kept but not rated yet."""
    return [
        {
            "checkpoint": [0, 15000, 30000][k],
            "evaluations": e,
            "cpu_s": e / 200,
            "iteration": k,
            "net": f"nets/iter-{k:04d}.safetensors",
            "net_id": f"id{k}",
            "elo": elo,
            "ci95": None if elo is None else [elo - 80.0, elo + 80.0],
            "sigma": None if elo is None else 40.8,
            "games": 0 if elo is None else 20,
        }
        for k, (e, elo) in enumerate(zip(evaluations, elos))
    ]


def _generations(seed: int, selfplay: bool) -> list[dict]:
    """Three generations; the self-play arm's second seed lacks ``root_kl`` in one of them (an
    older run), the other arm records no self-play statistics at all."""
    out = []
    for k in range(1, 4):
        gen = {
            "iteration": k,
            "evaluations": 10_400 + 50 * seed,  # its own: the page sums them along the seed
            "games": 16,
            "positions": 1000,
        }
        if selfplay:
            stats = {
                "wdl": [5, 6, 5],
                "w_plus_l_over_d": 1.5 + 0.1 * k + 0.05 * seed,
                "mean_length": 62.5,
                "repeated_share_by_ply": [0.0, 0.1],
                "distinct_positions_per_1000": 800.0 + 10 * k,
                "distinct_openings": 16,
                "root_kl": 0.4 - 0.05 * k,
                "decisive_targets": 0.6,
            }
            if seed == 1 and k == 2:
                del stats["root_kl"]
            gen["selfplay"] = stats
        out.append(gen)
    return out


def _seed(arm: str, seed: int, elos: list[float | None], finished: bool = True) -> dict:
    selfplay = arm == "puct"
    return {
        "seed": seed,
        "dir": f"arms/{arm}/seed-{seed}",
        "finished": finished,
        "iterations": 3,
        "evaluations": 31_234 + seed,
        "games": 48,
        "positions": 3021,
        "wall_s": 81.2,
        "cpu_s": 150.3,
        "kept": _kept([0, 15_800 + seed, 31_234 + seed], elos),
        "generations": _generations(seed, selfplay),
    }


def make_experiment() -> dict:
    """experiment.json as the experiment writes it: 2 arms x 2 seeds, the second arm's second
    seed unfinished with its last net not rated yet, and that arm (Stockfish's games) without
    self-play statistics."""
    spec = {
        "name": "smoke",
        "seeds": [0, 1],
        "budget": {"evaluations": 30000, "checkpoints": [0.5, 1.0]},
        "arm": [{"name": "puct", "method": "selfplay"}, {"name": "sfgames", "method": "sfgames"}],
    }
    seeds = {
        "puct": [_seed("puct", 0, [480.1, 610.3, 720.0]), _seed("puct", 1, [479.9, 590.0, 680.0])],
        "sfgames": [
            _seed("sfgames", 0, [480.1, 660.0, 735.0]),
            _seed("sfgames", 1, [479.9, 640.0, None], finished=False),
        ],
    }
    means = {  # (checkpoint, mean evaluations, mean Elo, seeds rated)
        "puct": [(0, 0, 480.0, 2), (15000, 15_800, 600.0, 2), (30000, 31_234, 700.0, 2)],
        "sfgames": [(0, 0, 480.0, 2), (15000, 15_800, 650.0, 2), (30000, 31_234, 735.0, 1)],
    }
    arms = [
        {
            "name": name,
            "description": f"{name} games",
            "method": "selfplay" if name == "puct" else "sfgames",
            "seeds": seeds[name],
            "mean": [
                {"checkpoint": c, "evaluations": e, "elo": m, "ci95": [m - 30, m + 30], "seeds": n}
                for c, e, m, n in means[name]
            ],
        }
        for name in ("puct", "sfgames")
    ]
    return {
        "name": "smoke",
        "description": "PUCT self-play against Stockfish's games at an equal budget",
        "question": "Do Stockfish's games make a stronger net than self-play per evaluation?",
        "spec_sha256": "ab" * 32,
        "spec": spec,
        "budget": {"evaluations": 30000, "cpu_seconds": 0, "checkpoints": [15000, 30000]},
        "rating": {"nodes": 16, "games": 20, "anchors": {"random": 508.0}},
        "complete": False,
        "arms": arms,
        "verdict": {
            "rule": "difference of arm means at the final checkpoint; 95% interval from the seed"
            " pairs and the rating error; inconclusive when it contains 0",
            "baseline": "puct",
            "confidence": 0.95,
            "power": 0.8,
            "mde_elo": 210.5,
            "seed_sd": 120.0,
            "comparisons": [
                {
                    "arm": "sfgames",
                    "vs": "puct",
                    "checkpoint": 30000,
                    "pairs": 2,
                    "difference": 35.2,
                    "ci95": [-180.0, 250.4],
                    "differences": [15.0, 55.4],
                    "conclusion": "inconclusive",
                }
            ],
            "text": VERDICT,
        },
    }


def _group(page: str, gid: str) -> str:
    """The SVG group matplotlib wrote for the artist with this gid (empty when absent)."""
    found = re.search(rf'<g id="{gid}">(.*?)</g>', page, re.S)
    return found.group(1) if found else ""


def test_the_page_shows_the_verdict_the_arms_and_two_charts(tmp_path):
    experiment = make_experiment()
    out = write_page(experiment, tmp_path / "experiment.html")
    page = out.read_text()
    assert out == tmp_path / "experiment.html"
    assert html.escape(VERDICT) in page
    assert page.count("<svg") == 2  # Elo against evaluations; the training games' statistics
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched when viewed
    assert '<span class="inconclusive">inconclusive</span>' in page
    assert "<td>+35</td><td>[-180, +250]</td>" in page and "effect 210.5 Elo" in page
    for arm in ("puct", "sfgames"):
        assert f"<b>{arm}</b>" in page
        assert "<path" in _group(page, f"elo-mean-{arm}")  # each arm's mean line is drawn
        assert "<path" in _group(page, f"elo-band-{arm}")  # with its interval
    # the statistics: the self-play arm's lines, none for the arm without, which is named
    assert "<path" in _group(page, "stats-root_kl-puct")
    assert "stats-root_kl-sfgames" not in page and "(W+L)/D" in page
    assert "No self-play statistics recorded for: sfgames." in page
    assert "N_scl" not in page  # a statistic no arm recorded is not drawn
    # the unfinished seed, its last net not rated yet
    assert "<td>31,235</td><td>not rated</td><td>no</td><td>arms/sfgames/seed-1</td>" in page
    assert "<td>31,234</td><td>720 [640, 800]</td><td>yes</td><td>arms/puct/seed-0</td>" in page
    assert '"checkpoints": [\n      0.5,' in html.unescape(page)  # the spec, in full


def test_an_experiment_just_started_still_makes_a_page(tmp_path):
    """No rating, no statistics, no verdict yet: the page says so instead of failing."""
    experiment = make_experiment()
    del experiment["verdict"]
    for arm in experiment["arms"]:
        arm["mean"] = []
        for seed in arm["seeds"]:
            seed.update(finished=False, kept=_kept([0], [None]), generations=[])
    page = build_page(experiment)
    assert "No verdict yet" in page and page.count("<svg") == 2
    assert "no rating yet" in page and "no self-play statistics yet" in page


def test_a_budget_in_cpu_seconds_is_charted_in_cpu_seconds():
    """Stockfish-labelled methods spend CPU seconds, not evaluations: the checkpoints are in
    CPU seconds, so the Elo chart is too; a comparison not rated yet is said so."""
    experiment = make_experiment()
    experiment["budget"] = {"evaluations": 0, "cpu_seconds": 3600, "checkpoints": [1800, 3600]}
    for arm in experiment["arms"]:
        for mean in arm["mean"]:
            mean["checkpoint"] = mean["checkpoint"] * 3600 // 30000
    experiment["verdict"]["mde_elo"] = None
    experiment["verdict"]["comparisons"][0].update(
        difference=None, ci95=None, conclusion="not yet rated"
    )
    page = build_page(experiment)
    assert (
        "CPU seconds (per arm-seed)" in page
        and "network evaluations of generation (per" not in page
    )
    assert '<span class="pending">not yet rated</span>' in page
    assert "minimum detectable effect none (fewer than two seed pairs)" in page


def _colour_pixels(png, rgb: tuple[int, int, int], tolerance: int = 12) -> int:
    return int((np.abs(png - np.array(rgb)).max(axis=2) <= tolerance).sum())


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (make test installs it)")
@pytest.mark.slow
def test_the_page_renders_its_charts_in_a_real_browser(tmp_path):
    import matplotlib.image

    out = write_page(make_experiment(), tmp_path / "experiment.html")
    url = out.resolve().as_uri()
    dom = _chromium(url, tmp_path / "profile", "--dump-dom")
    assert 'data-charts="2"' in dom  # both charts laid out with a size and paths
    for arm in ("puct", "sfgames"):
        assert "<path" in _group(dom, f"elo-mean-{arm}")
        assert f">{arm}</text>" in dom and f">{arm} seeds</text>" in dom  # legend, as text
    shot = tmp_path / "experiment.png"
    _chromium(url, tmp_path / "p2", f"--screenshot={shot}", "--window-size=1100,2400")
    png = (matplotlib.image.imread(shot)[..., :3] * 255).round().astype(int)
    assert png.shape[:2] == (2400, 1100)
    assert len(np.unique(png.reshape(-1, 3), axis=0)) > 200  # text, lines, shading: not blank
    for colour in ((31, 119, 180), (255, 127, 14)):  # matplotlib's C0 and C1: both arms drawn
        assert _colour_pixels(png, colour) > 100
