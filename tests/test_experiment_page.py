"""The experiment's page: drawn from the typed results ``frugalzero experiment`` builds (or an
``experiment.json`` read back), self-contained, tolerant of a half-finished experiment and of
older records, its axes fitted to the data, and drawn in a real browser."""

from __future__ import annotations

import html
import io
import re

import numpy as np
import pytest

from frugalzero.experiment.page import _series, build_page, selfplay_chart, write_page
from frugalzero.experiment.results import (
    ArmResult,
    BudgetResult,
    Comparison,
    ExperimentResult,
    ForkPoint,
    ForkResult,
    Generation,
    KeptNet,
    MeanPoint,
    RatingResult,
    UnitResult,
    Verdict,
)
from test_report import CHROMIUM, _chromium  # pytest puts tests/ on the path

VERDICT = (
    "sfgames vs puct: +35 Elo [-180, +250] at 30,000 evaluations (2 seed pairs): inconclusive;"
    " minimum detectable effect 211 Elo"
)


def _kept(evaluations: list[int], elos: list[float | None]) -> list[KeptNet]:
    """The kept nets of one arm-seed: the initial net at 0, then one a checkpoint; a null Elo is
    a net kept but not rated yet."""
    return [
        KeptNet(
            checkpoint=[0, 15000, 30000][k],
            evaluations=e,
            cpu_s=e / 200,
            iteration=k,
            net=f"nets/iter-{k:04d}.safetensors",
            net_id=f"id{k}",
            player="" if elo is None else f"puct/seed-0/iter-{k:04d}",
            elo=elo,
            ci95=None if elo is None else [elo - 80.0, elo + 80.0],
            sigma=None if elo is None else 40.8,
            games=0 if elo is None else 20,
        )
        for k, (e, elo) in enumerate(zip(evaluations, elos))
    ]


def _generations(seed: int, selfplay: bool) -> list[Generation]:
    """Three generations; the self-play arm's second seed lacks ``root_kl`` in one of them (an
    older run), the other arm records no self-play statistics at all."""
    out = []
    for k in range(1, 4):
        stats = None
        if selfplay:
            stats = {
                "wdl": [5, 6, 5],
                "w_plus_l_over_d": 1.5 + 0.1 * k + 0.05 * seed,
                "mean_length": 62.5,
                "repeated_share_by_ply": [0.0, 0.1],
                "distinct_positions_per_1000": 800.0 + 10 * k,
                "distinct_openings": 16,
                "distinct_opening_share": 1.0,
                "root_kl": 0.4 - 0.05 * k,
                "decisive_targets": 0.6,
            }
            if seed == 1 and k == 2:
                del stats["root_kl"]
        # its own evaluations: the page sums them along the seed
        out.append(Generation(k, 10_400 + 50 * seed, 16, 1000, stats))
    return out


def _seed(arm: str, seed: int, elos: list[float | None], finished: bool = True) -> UnitResult:
    return UnitResult(
        seed=seed,
        unit=f"seed-{seed}",
        dir=f"arms/{arm}/seed-{seed}",
        finished=finished,
        iterations=3,
        evaluations=31_234 + seed,
        games=48,
        positions=3021,
        wall_s=81.2,
        cpu_s=150.3,
        kept=_kept([0, 15_800 + seed, 31_234 + seed], elos),
        generations=_generations(seed, arm == "puct"),
    )


def make_experiment() -> ExperimentResult:
    """The results as the experiment builds them: 2 arms x 2 seeds, the second arm's second
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
        ArmResult(
            name=name,
            description=f"{name} games",
            method="selfplay" if name == "puct" else "sfgames",
            seeds=seeds[name],
            mean=[MeanPoint(c, e, m, [m - 30, m + 30], n) for c, e, m, n in means[name]],
        )
        for name in ("puct", "sfgames")
    ]
    comparison = Comparison(
        arm="sfgames",
        vs="puct",
        checkpoint=30000,
        pairs=2,
        difference=35.2,
        ci95=[-180.0, 250.4],
        differences=[15.0, 55.4],
        difference_errors=[57.7, 57.7],
        units=["seed-0", "seed-1"],
        measured_by=["anchors", "anchors"],
        conclusion="inconclusive",
        p_value=0.31,
        spread_sd=28.6,
        rating_error_sd=57.7,
        seed_sd=0.0,
    )
    return ExperimentResult(
        name="smoke",
        description="PUCT self-play against Stockfish's games at an equal budget",
        question="Do Stockfish's games make a stronger net than self-play per evaluation?",
        spec_sha256="ab" * 32,
        spec=spec,
        budget=BudgetResult(evaluations=30000, checkpoints=[15000, 30000]),
        rating=RatingResult(nodes=16, games=20, anchors={"random": 508.0}),
        complete=False,
        arms=arms,
        verdict=Verdict(
            rule="difference of arm means at the final checkpoint; 95% interval from the seed"
            " pairs and the rating error; inconclusive when it contains 0",
            baseline="puct",
            mde_elo=210.5,
            seed_sd=120.0,
            rating_error_sd=57.7,
            comparisons=[comparison],
            text=VERDICT,
        ),
    )


def _group(page: str, gid: str) -> str:
    """The SVG group matplotlib wrote for the artist with this gid (empty when absent)."""
    found = re.search(rf'<g id="{gid}">(.*?)</g>', page, re.S)
    return found.group(1) if found else ""


def _charts(page: str) -> list[str]:
    return re.findall(r'<div class="chart">(.*?)</div>', page, re.S)


def _tick_labels(svg: str, axis: str) -> list[str]:
    """An axis's tick labels of a chart (text stays text in our SVGs)."""
    return re.findall(rf'<g id="{axis}tick_\d+">.*?<text[^>]*>([^<]*)</text>', svg, re.S)


def _ytick_labels(svg: str) -> list[float]:
    return [float(t.replace("\u2212", "-").replace(",", "")) for t in _tick_labels(svg, "y")]


def test_the_page_shows_the_verdict_its_evidence_the_arms_and_three_charts(tmp_path):
    experiment = make_experiment()
    out = write_page(experiment, tmp_path / "experiment.html")
    page = out.read_text()
    assert out == tmp_path / "experiment.html"
    assert html.escape(VERDICT) in page
    assert page.count("<svg") == 3  # each pair's difference; Elo; the training games
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched when viewed
    assert '<span class="inconclusive">inconclusive</span>' in page
    assert "<td>+35</td><td>[-180, +250]</td><td>0.310</td>" in page and "effect 210.5" in page
    for arm in ("puct", "sfgames"):
        assert f"<b>{arm}</b>" in page
        assert "<path" in _group(page, f"elo-mean-{arm}")  # each arm's mean line is drawn
        assert "<path" in _group(page, f"elo-band-{arm}")  # with its interval
    # each net's own interval: an error bar a rated net (2 + 2 + 2 + 1 of the 2 arms' units)
    bars = [_group(page, f"elo-errors-{a}-seed-{s}") for a in ("puct", "sfgames") for s in (0, 1)]
    assert [g.count("<path") for g in bars] == [3, 3, 3, 2]
    # the evidence: each unit's difference with its interval, and their mean with the rule's
    assert "<use" in _group(page, "pair-sfgames-seed-0")  # a marker
    assert "<use" in _group(page, "pair-mean-sfgames")
    assert "<td>seed-1</td><td>anchors</td><td>+55</td><td>[-58, +168]</td><td>-</td>" in page
    assert (
        '<tr class="mean"><td>mean of 2</td><td>Student\'s t</td><td>+35</td>'
        '<td>[-180, +250]</td><td><span class="inconclusive">' in page
    )
    # the statistics: the self-play arm's lines, none for the arm without, which is named
    assert "<path" in _group(page, "stats-root_kl-puct")
    assert "stats-root_kl-sfgames" not in page and "(W+L)/D" in page
    assert "No self-play statistics recorded for: sfgames." in page
    assert "N_scl" not in page  # a statistic no arm recorded is not drawn
    # the unfinished unit, its last net not rated yet; the nets labelled by what they spent
    assert "<td>sfgames</td><td>seed-1</td><td>31,235</td>" in page
    assert "<td>not rated (31,235)</td><td>-</td><td>no</td></tr>" in page
    assert "<td>720 [640, 800] (31,234)</td><td>baseline</td><td>yes</td>" in page
    assert "<td>700 [670, 730] (2, spent 31,234)</td>" in page  # the mean at 30,000
    assert "The finished arm-units spent 31,234 to 31,235. 3 of 4 arm-units finished." in page
    assert "Each unit is a seed run from fresh weights" in page
    assert '"checkpoints": [\n      0.5,' in html.unescape(page)  # the spec, in full


def _forked() -> ExperimentResult:
    """Two arms forked from two trunk points with two seeds each, every arm-unit at exactly the
    budget, the differences measured head-to-head; two fork points' nets far apart."""
    experiment = make_experiment()
    experiment.complete = True
    experiment.budget.checkpoints = [30000]
    experiment.rating.head_to_head = 40
    experiment.fork = ForkResult(
        source="trunk",
        trunk_arm="puct",
        trunk_seed=7,
        points=[ForkPoint(0, 900, 1, 960, "net.safetensors", "aa11"), ForkPoint(1, 1800, 2, 1800)],
    )
    units = [(p, s) for p in (0, 1) for s in (0, 1)]
    for arm in experiment.arms:
        arm.seeds = [
            UnitResult(
                seed=s,
                unit=f"fork-{p}-seed-{s}",
                fork_point=p,
                dir=f"arms/{arm.name}/fork-{p}-seed-{s}",
                finished=True,
                evaluations=30000,
                kept=[
                    KeptNet(0, 0, "nets/iter-0000.safetensors", evaluations=0, elo=500.0 + p),
                    KeptNet(30000, 3, "nets/iter-0003.safetensors", evaluations=30000, elo=600.0),
                ],
                head_to_head=[1, 4, 8, 5, 2] if arm.name == "sfgames" else None,
            )
            for p, s in units
        ]
    experiment.verdict.comparisons[0] = Comparison(
        "sfgames",
        "puct",
        30000,
        pairs=4,
        difference=20.0,
        ci95=[-10.0, 50.0],
        differences=[26.4, 10.0, 30.0, 13.6],
        difference_errors=[60.1, 70.0, 55.0, 65.0],
        units=[f"fork-{p}-seed-{s}" for p, s in units],
        measured_by=["head-to-head"] * 4,
        conclusion="inconclusive",
        spread_sd=9.8,
        rating_error_sd=62.7,
        seed_sd=0.0,
        mde_measured=151.2,
        follow_up_pairs=27,
    )
    experiment.verdict.follow_up_mde = 50.0
    return experiment


def test_a_forked_experiment_names_its_units_fork_points_and_head_to_head_games():
    page = build_page(_forked())
    assert (
        "a trunk run of puct's recipe (seed 7), its net and its replay window at each fork point:"
        " point 0: trunk iteration 1, 960 evaluations (asked 900), net aa11" in page
    )
    assert "Units compared (4): fork-0-seed-0, fork-0-seed-1, fork-1-seed-0, fork-1-seed-1" in page
    assert "40 games in colour-swapped pairs" in page
    assert "Every finished arm-unit spent exactly 30,000." in page
    assert "<td>sfgames</td><td>fork-1-seed-1</td><td>30,000</td>" in page  # the units table
    # a head-to-head pair: its difference, interval and score (21.5 points of 40)
    assert "<td>fork-0-seed-0</td><td>head-to-head</td><td>+26</td><td>[-91, +144]</td>" in page
    assert "<td>54% of 40 games</td>" in page and ">4 fork</td>" in page
    assert "<use" in _group(page, "pair-sfgames-fork-1-seed-1")
    # what the measured spread can see, and the follow-up it sizes
    assert (
        "spread of the differences 10, their rating error 63 (root mean square), the seed s.d. "
        "that leaves 0; at that spread these pairs detect 151.2 Elo, and a follow-up rated the "
        "same way needs 27 pairs for 50 Elo" in page
    )


def test_an_axis_fits_the_data_and_a_band_far_wider_is_clipped_with_a_note():
    """Two units' Student's t (12.7 s.d.) stretched the Elo axis to +-3,000 around nets 100 Elo
    apart: the axis holds the nets and their intervals; the band is clipped and named."""
    experiment = make_experiment()
    experiment.arms[0].mean[-1].ci95 = [-2950.0, 4350.0]
    page = build_page(experiment)
    elo_svg = next(c for c in _charts(page) if "elo-mean-puct" in c)
    ticks = _ytick_labels(elo_svg)
    assert ticks and min(ticks) >= 300 and max(ticks) <= 900  # nets 480-735, intervals +-80
    assert "<path" in _group(page, "elo-band-puct")  # still drawn, clipped
    assert (
        "The 95% band of puct&#x27;s mean runs past the axis (drawn clipped): [-2,950, 4,350] at "
        "30,000 evaluations (2 units: Student&#x27;s t with one degree of freedom is 12.7)."
    ) in page
    experiment.verdict.comparisons[0].ci95 = [-3000.0, 3070.0]
    page = build_page(experiment)
    assert "interval of sfgames&#x27;s mean difference, [-3000, +3070], runs past" in page


def test_the_elo_axis_spans_the_budget_while_only_the_start_nets_are_rated():
    """Every net at 0 evaluations drew an axis of "−0, −0, 0, 0" (pilot-trunk's page after its
    forks' start nets were rated): the axis is the budget's from the first rating on."""
    experiment = make_experiment()
    experiment.verdict = None
    for arm in experiment.arms:
        arm.mean = []
        for seed in arm.seeds:
            seed.kept = seed.kept[:1]
    elo_svg = next(c for c in _charts(build_page(experiment)) if "elo-unit-puct" in c)
    ticks = _tick_labels(elo_svg, "x")
    assert "\u22120" not in ticks and len(set(ticks)) == len(ticks)
    values = [_count(t) for t in ticks]
    assert min(values) <= 0 and max(values) >= 25000  # the budget: 30,000 evaluations


def _count(label: str) -> float:
    """A tick label of evaluations read back (5,000, 25k, 1.25M, with matplotlib's minus)."""
    text = label.replace("\u2212", "-").replace(",", "")
    scale = {"k": 1e3, "M": 1e6}.get(text[-1:], 1.0)
    return float(text.rstrip("kM")) * scale


def test_evaluation_ticks_are_short_so_that_millions_do_not_run_together():
    """pilot-small's axis read "1,000,0001,250,0001,500,000": labels in k and M leave room."""
    from frugalzero.experiment.page import _short_count

    labels = [_short_count(x) for x in (0, 250, 5000, 25000, 250000, 1.25e6, 2e6, -5e5)]
    assert labels == ["0", "250", "5,000", "25k", "250k", "1.25M", "2M", "\u2212500k"]
    assert all(
        _count(lab) == x for lab, x in zip(labels, (0, 250, 5e3, 25e3, 25e4, 1.25e6, 2e6, -5e5))
    )


def test_an_experiment_just_started_still_makes_a_page(tmp_path):
    """No rating, no statistics, no verdict yet: the page says so instead of failing."""
    experiment = make_experiment()
    experiment.verdict = None
    for arm in experiment.arms:
        arm.mean = []
        for seed in arm.seeds:
            seed.finished = False
            seed.kept = _kept([0], [None])
            seed.generations = []
    page = build_page(experiment)
    assert "No verdict yet" in page and page.count("<svg") == 3
    assert "no rating yet" in page and "no self-play statistics yet" in page
    assert "no paired difference yet" in page
    experiment.arms = []  # nothing at all
    assert build_page(experiment).count("<svg") == 3


def test_a_record_reads_back_as_it_was_written_and_an_older_one_still_renders():
    experiment = _forked()
    assert ExperimentResult.from_json(experiment.to_json()) == experiment
    # an older record: seeds without units, no fork, no head-to-head, nets without sigma or
    # player, a comparison without its errors, an open interval ("inf"), a key we no longer
    # write and a value of the wrong kind
    old = make_experiment().to_dict()
    del old["fork"]
    old["rating"].pop("head_to_head")
    old["verdict"]["comparisons"][0].pop("difference_errors")
    old["verdict"]["comparisons"][0].pop("units")
    for arm in old["arms"]:
        for seed in arm["seeds"]:
            for key in ("unit", "fork_point", "head_to_head"):
                seed.pop(key)
            for kept in seed["kept"]:
                kept.pop("sigma")
                kept.pop("player")
    old["arms"][0]["seeds"][0]["kept"][2]["ci95"] = [640.0, "inf"]
    old["arms"][0]["seeds"][0]["gone"] = 1
    old["arms"][0]["seeds"][1]["games"] = "many"
    back = ExperimentResult.from_json(old)
    unit = back.arms[0].seeds[0]
    assert unit.label == "seed-0" and unit.kept[2].ci95 == [640.0, float("inf")]
    assert back.arms[0].seeds[1].games == 0 and back.fork == ForkResult()
    page = build_page(back)
    assert page.count("<svg") == 3 and "<td>-</td><td>anchors</td><td>+55</td>" in page
    assert "<td>720 [640, inf] (31,234)</td>" in page  # an open end, written as is
    assert build_page(ExperimentResult.from_json("{not json")).count("<svg") == 3


def test_a_budget_in_cpu_seconds_is_charted_in_cpu_seconds():
    """Stockfish-labelled methods spend CPU seconds, not evaluations: the checkpoints are in
    CPU seconds, so the Elo chart is too; a comparison not rated yet is said so."""
    experiment = make_experiment()
    experiment.budget = BudgetResult(cpu_seconds=3600, unit="CPU seconds", checkpoints=[1800, 3600])
    for arm in experiment.arms:
        for mean in arm.mean:
            mean.checkpoint = mean.checkpoint * 3600 // 30000
    experiment.verdict.mde_elo = None
    experiment.verdict.comparisons[0] = Comparison("sfgames", "puct", 3600)
    page = build_page(experiment)
    elo_svg = next(c for c in _charts(page) if "elo-mean-puct" in c)
    assert "CPU seconds (per arm-unit)" in elo_svg and "network evaluations" not in elo_svg
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
    assert 'data-charts="3"' in dom  # every chart laid out with a size and paths
    for arm in ("puct", "sfgames"):
        assert "<path" in _group(dom, f"elo-mean-{arm}")
        assert f">{arm}</text>" in dom and f">{arm} units</text>" in dom  # legend, as text
    shot = tmp_path / "experiment.png"
    _chromium(url, tmp_path / "p2", f"--screenshot={shot}", "--window-size=1100,2400")
    png = (matplotlib.image.imread(shot)[..., :3] * 255).round().astype(int)
    assert png.shape[:2] == (2400, 1100)
    assert len(np.unique(png.reshape(-1, 3), axis=0)) > 200  # text, lines, shading: not blank
    for colour in ((31, 119, 180), (255, 127, 14)):  # matplotlib's C0 and C1: both arms drawn
        assert _colour_pixels(png, colour) > 100


def test_the_summary_table_names_each_unit_its_spend_final_elo_and_head_to_head_score():
    """The table ``frugalzero experiment`` ends with (its rows as text)."""
    from rich.console import Console

    from frugalzero.experiment.summary import summary_table

    experiment = _forked()
    experiment.arms[1].seeds[3].kept[1].ci95 = [560.0, 640.0]
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(summary_table(experiment))
    rows = [re.split(r"\s*│\s*", line.strip("│ ")) for line in console.export_text().splitlines()]
    assert ["puct", "fork-0-seed-1", "0", "30,000", "0", "0", "0.0", "0.0", "600", "baseline"] in [
        r[:10] for r in rows
    ]
    last = next(r for r in rows if r[:2] == ["sfgames", "fork-1-seed-1"])
    assert last[3] == "30,000" and last[8:] == ["600 [560, 640]", "54% of 40 (+26)", "yes"]


def test_a_generation_cut_to_one_game_does_not_make_a_point_of_its_own():
    """pilot-trunk's page: one unit's last generation, cut by the budget to 1 game of 512
    plies, was drawn as the arm's last point (N_scl 80, mean length 512, where every other
    unit's games averaged ~110). Pooled by spend and weighted by games, it barely moves its
    bin."""

    def unit(seed: int, lengths: list[tuple[int, int, float]]) -> UnitResult:
        gens = [
            Generation(k + 1, evaluations, games, 100 * games, {"mean_length": length})
            for k, (evaluations, games, length) in enumerate(lengths)
        ]
        return UnitResult(seed=seed, unit=f"seed-{seed}", generations=gens)

    arm = ArmResult(
        name="contempt",
        seeds=[
            unit(0, [(100_000, 48, 200.0), (100_000, 48, 110.0)]),
            unit(1, [(100_000, 48, 200.0), (95_000, 48, 110.0), (5_000, 1, 512.0)]),
        ],
    )
    series = _series(arm, "mean_length")
    # three bins of 66,667 (the median unit's generations, rounded up): the first
    # generations' middles fall in the first, the rest in the last
    assert [round(x) for x, _ in series] == [
        50_000,
        round((150_000 + 147_500 + 197_500 / 48) / (2 + 1 / 48)),
    ]
    assert series[0][1] == 200.0
    assert series[1][1] == pytest.approx((110 * 96 + 512) / 97)  # 114.1, not 512


def test_a_fork_experiment_charts_each_fork_point_apart():
    """Units of different fork points start from different nets (pilot-trunk: games of ~200
    plies at its first point, ~120 at its second); pooled, their generations zig-zag with
    whichever point fills a bin. Each point gets its own line."""

    def unit(point: int, seed: int, length: float) -> UnitResult:
        gens = [Generation(k, 100_000, 48, 4800, {"mean_length": length}) for k in (1, 2)]
        return UnitResult(
            seed=seed, unit=f"fork-{point}-seed-{seed}", fork_point=point, generations=gens
        )

    arm = ArmResult(name="puct", seeds=[unit(0, 0, 200.0), unit(0, 1, 190.0), unit(1, 0, 120.0)])
    assert [y for _, y in _series(arm, "mean_length", 0)] == [195.0, 195.0]
    assert [y for _, y in _series(arm, "mean_length", 1)] == [120.0, 120.0]
    svg = selfplay_chart([arm])
    for point in (0, 1):
        assert "<path" in _group(svg, f"stats-mean_length-puct-fork-{point}")
    assert 'stats-mean_length-puct"' not in svg  # no line mixing the points
