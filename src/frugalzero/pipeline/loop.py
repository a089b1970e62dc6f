"""``frugalzero run``: iterations of generate -> train -> evaluate -> accept, until a budget.

The run directory is the whole truth (``frugalzero.layout``): ``config.toml`` (the run's
identity, ``pipeline.identity``), ``state.json`` (what has finished), ``data/iter-NNNN/``
(shards), ``train/`` (the trainer's resumable state), ``nets/`` (traversing and averaging
networks, each kept once: the trainer's outputs are moved there), ``matches/*.pgn``,
``metrics.jsonl`` with TensorBoard events, ``elo.csv`` and, once the run ends, ``summary.json``.
Iterations are numbered from 1 everywhere (nets, data, metrics of the run and of the trainer).
Each step is written down when it finishes, so ``frugalzero run --dir D`` after a ``kill -9``
goes on from the step that was cut, and nothing finished is redone or lost: a run killed any
number of times ends with the games, nets and metrics of one that never was
(tests/test_chaos.py).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from frugalzero import layout
from frugalzero.data.methods import method
from frugalzero.layout import INITIAL_NET, RunLayout
from frugalzero.nn.checkpoint import NetMeta, load_net, save_net
from frugalzero.output import to_json
from frugalzero.pipeline.assess import evaluate_iteration, final_matches, rate_iterations
from frugalzero.pipeline.budget import fraction_left, scaled, training_budget
from frugalzero.pipeline.clock import RunClock, step_key
from frugalzero.pipeline.config import RunConfig
from frugalzero.pipeline.generate import generate
from frugalzero.pipeline.identity import open_run
from frugalzero.pipeline.state import IterationRecord
from frugalzero.runtime.files import atomic_write_text
from frugalzero.runtime.progress import progress_bar
from frugalzero.scale.runner import runner_for


class RunLoop:
    """The run in ``run_dir`` with ``config``: a new one, or a stopped one whose config.toml
    ``config`` must be (``pipeline.identity``; ``preset``: the one it was asked for with, for
    the refusal's command). The caller holds the directory's lock."""

    def __init__(
        self, config: RunConfig, run_dir: Path, console: Console, preset: str | None = None
    ) -> None:
        self.config = config
        self.dir = run_dir
        self.layout = RunLayout(run_dir)
        self.console = console
        self.state = open_run(self.layout, config, preset)
        self.clock = RunClock(self.layout, self.state)
        self._trainer = None
        self._replayed: dict = {}  # the last window's games: the next replays only new ones
        self.runner = runner_for(config.ray)  # connects once, on the first generation step
        from frugalzero.train.metrics import MetricsLog

        self.metrics = MetricsLog(run_dir, tensorboard=True)
        if 0 <= self.state.metrics_lines < self.metrics.lines:  # written after the last save:
            self.metrics.truncate(self.state.metrics_lines, self.state.iteration)  # redone

    # -- bookkeeping --------------------------------------------------------------------------
    def elapsed(self) -> float:
        return self.clock.elapsed()

    def save(self) -> None:
        self.state.elapsed_s = round(self.elapsed(), 2)
        self.state.metrics_lines = self.metrics.lines
        self.state.save(self.dir)

    def _next_step(self, step: str) -> None:
        """The current step is done (its seconds kept in ``current``); ``step`` is next."""
        s = self.state
        s.current[step_key(s.step)] = round(self.clock.step_seconds(), 2)
        s.step = step
        self.save()
        self.clock.begin(s.iteration, step, s.current.get(step_key(step), 0.0))

    def budget_left(self) -> bool:
        b, s = self.config.budget, self.state
        if b.iterations and s.iteration >= b.iterations:
            return False
        if b.minutes and self.elapsed() >= b.minutes * 60:
            return False
        if b.positions and s.positions >= b.positions:
            return False
        if b.evaluations and s.evaluations >= b.evaluations:
            return False
        if "fraction" not in s.current:  # decided once: a resumed iteration keeps its size
            s.current["fraction"] = round(
                fraction_left(self.config, self.elapsed(), s.iterations), 4
            )
            self.save()
            fraction = s.current["fraction"]
            if fraction < 1:
                left = (b.minutes * 60 - self.elapsed()) / 60
                what = f"{fraction:.0%} of an iteration" if fraction else "too little of one"
                self.console.print(f"iteration {s.iteration + 1}: {what} fits in {left:.1f} min")
        return s.current["fraction"] > 0

    def iteration_config(self) -> RunConfig:
        """The run's config, cut to this iteration's share when the budget's end is near."""
        return scaled(self.config, self.state.current.get("fraction", 1.0))

    def _initial_net(self) -> None:
        path = self.dir / INITIAL_NET
        if path.exists():
            return
        import torch

        from frugalzero.nn.config import architecture
        from frugalzero.nn.model import PolicyValueNet
        from frugalzero.nn.shipped import resolve_net_path

        n = self.config.net
        if n.init:
            net, meta = load_net(resolve_net_path(n.init))
            meta.notes = f"frugalzero run: started from {n.init}"
        else:
            torch.manual_seed(n.seed)
            shape = architecture(n.arch, value_head=n.value_head, history_fill=n.history_fill)
            net = PolicyValueNet(shape)
            meta = NetMeta(net.config, notes="frugalzero run: initial weights")
        path.parent.mkdir(parents=True, exist_ok=True)
        save_net(net, path, meta)

    # -- the loop -----------------------------------------------------------------------------
    def run(self, until_iteration: int = 0) -> dict[str, Any]:
        """Run to the budget's end, or (``until_iteration`` > 0) until that many iterations
        have finished: ``frugalzero experiment`` interleaves its runs an iteration at a time."""
        s = self.state
        self.clock.start()
        try:
            self._initial_net()
            if not s.best:
                s.best = INITIAL_NET
                self.save()
            with self.runner:
                while not s.finished:
                    if s.step == "generate":
                        if not self.budget_left():
                            self._finish()
                            break
                        self._generate()
                    elif s.step == "train":
                        self._train()
                    elif s.step == "evaluate":
                        self._evaluate()
                        if until_iteration and s.iteration >= until_iteration:
                            break
        finally:
            self.clock.stop()
            self.metrics.close()
        summary = self.summary()
        if s.finished:
            if not self.layout.report.exists():  # the session that finished was cut
                self.write_report()
            atomic_write_text(self.layout.summary, to_json(summary) + "\n")
        return summary

    def _generate(self) -> None:
        s, k = self.state, self.state.iteration + 1
        out = self.layout.data(k)
        net_path = self.dir / s.best
        _, meta = load_net(net_path)
        with self._progress() as progress:
            task = progress.add_task(f"iteration {k}: {self.config.method}", total=None)

            def update(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            config = self.iteration_config()
            report = generate(
                config,
                out,
                k,
                net_path,
                meta.net_id,
                s.nscl,
                update,
                self.runner,
                s.temperature,
                self._spend_left(),
            )
        if s.current.get("fraction", 1.0) < 1:
            report["fraction"] = s.current["fraction"]
        s.current["generation"] = report
        s.positions += report.get("positions", 0)
        s.evaluations += report.get("evaluations", 0)
        self._next_step("train")

    def _spend_left(self) -> tuple[int, float] | None:
        """(evaluations left to the budget, a game's mean cost so far) where the budget counts
        network evaluations: the iteration's games end where it does (``pipeline.spend``)."""
        budget, s = self.config.budget, self.state
        if not budget.evaluations:
            return None
        games = sum(r.games for r in s.iterations)
        search = self.config.selfplay
        mean = s.evaluations / games if games else search.search.simulations * search.max_plies / 2
        return budget.evaluations - s.evaluations, mean

    def _trainer_for(self):
        """The trainer, set to this iteration's own settings (a cut iteration stopped mid-way
        must resume with the steps it started with). It keeps no nets of its own: the loop
        moves each iteration's into nets/."""
        train = dataclasses.replace(self.iteration_config().train, keep_iteration_nets=False)
        if self._trainer is None:
            from frugalzero.train.trainer import Trainer

            net, meta = load_net(self.dir / INITIAL_NET)
            self._trainer = Trainer(train, net, self.layout.train, parent=meta.net_id)
        budget = training_budget(
            self.config, self.elapsed, self.state.iterations, self._last_iteration()
        )
        self._trainer.configure(train, budget)
        return self._trainer

    def _last_iteration(self) -> bool:
        """Whether the iteration under way is the run's last: the last of ``iterations``, or
        one cut to the minutes left (what fits after it is less than ``MIN_FRACTION``)."""
        b, s = self.config.budget, self.state
        last_of_count = bool(b.iterations) and s.iteration + 1 >= b.iterations
        return last_of_count or s.current.get("fraction", 1.0) < 1

    def _train(self) -> None:
        from frugalzero.data.selection import replay_window
        from frugalzero.train.data import PositionSet, fixed_holdout

        s, k = self.state, self.state.iteration + 1
        trainer = self._trainer_for()
        if trainer.progress.iteration >= k:  # it finished before the last kill
            summary = trainer.iteration_summary(k)
        else:
            train_sel, holdout_sel = fixed_holdout(
                self.layout.train,
                [*self.config.generate.prior, self.layout.data_root],
                self.config.train.validation_fraction,
                self.config.train.validation_min_positions,
            )
            window = replay_window(train_sel, self.config.generate.window)
            with self._progress() as progress:
                task = progress.add_task(f"iteration {k}: replaying positions", total=None)
                train_set = PositionSet.load(
                    window,
                    lambda d, t: progress.update(task, completed=d, total=t),
                    replayed=self._replayed,
                )
            holdout_set = PositionSet.load(holdout_sel) if holdout_sel.positions else None
            self.console.print(f"iteration {k}: training on {len(train_set):,} positions")
            summary = trainer.run_iteration(train_set, holdout_set)
        self._keep_nets(k)
        s.current["train"] = {k_: v for k_, v in summary.items() if k_ not in ("net", "average")}
        self._next_step("evaluate")

    def _keep_nets(self, k: int) -> None:
        """Move the trainer's finished nets to nets/ (a rename: one copy of each). Done again
        after a kill, a net already moved stays where it is."""
        moves = ((layout.NET, layout.iteration_net(k)), (layout.AVERAGE, layout.average_net(k)))
        for name, kept in moves:
            source = self.layout.train / name
            if source.exists():
                os.replace(source, self.dir / kept)

    def _evaluate(self) -> None:
        s, k = self.state, self.state.iteration + 1
        net = layout.iteration_net(k)
        self.console.print(f"iteration {k}: evaluation matches")
        result = evaluate_iteration(self.dir, self.config, s, k, net)
        _, meta = load_net(self.dir / net)
        generation = s.current.get("generation", {})
        record = IterationRecord(
            iteration=k,
            net=net,
            net_id=meta.net_id,
            games=generation.get("games", 0),
            positions=generation.get("positions", 0),
            generate_s=round(s.current.get("generate_s", 0.0), 1),
            train_s=round(s.current.get("train_s", 0.0), 1),
            evaluate_s=round(self.clock.step_seconds(), 1),
            accepted=bool(result["accepted"]),
            score_vs_random=result.get("vs_random", {}).get("score"),
            score_vs_best=result.get("vs_best", {}).get("score"),
            validation=s.current.get("train", {}).get("validation", {}),
            generation=generation,
        )
        if record.accepted:
            s.best = net
        self._adapt_nscl(generation)
        self._adapt_temperature(generation)
        s.iterations.append(record)
        s.iteration = k
        s.current = {}
        rate_iterations(self.dir, self.config, s)
        self.metrics.write("run", k, k, _flat_metrics(record))
        self.metrics.flush()
        s.step = "generate"
        self.save()
        self.clock.begin(k, s.step, 0.0)
        self.write_report()

    def write_report(self) -> Path | None:
        """``report.html`` of the run so far (``frugalzero report``). A report that cannot be
        drawn is said once and skipped: it never stops a run."""
        from frugalzero.report import write_report

        try:
            return write_report([self.dir], self.layout.report)
        except Exception as exc:
            self.console.print(f"[yellow]report.html not written: {exc!r}[/]")
            return None

    def _adapt_nscl(self, generation: dict[str, Any]) -> None:
        """search-contempt: raise N_scl when games get drawish ((w+l)/d below 1)."""
        raise_by = self.config.generate.nscl_raise
        stats = generation.get("selfplay", {})
        adapts = method(self.config.method).adapts
        if adapts != "nscl" or not raise_by or "w_plus_l_over_d" not in stats:
            return
        ratio, nscl = stats["w_plus_l_over_d"], stats.get("nscl", 5.0)
        if ratio is not None and ratio < 1:
            self.state.nscl = nscl * raise_by
            self.console.print(f"(w+l)/d = {ratio:.2f} < 1: N_scl raised to {self.state.nscl:g}")

    def _adapt_temperature(self, generation: dict[str, Any]) -> None:
        """selfplay: raise the move temperature when games get drawish ((w+l)/d below 1)."""
        g = self.config.generate
        stats = generation.get("selfplay", {})
        adapts = method(self.config.method).adapts
        if adapts != "temperature" or not g.temperature_raise or "temperature" not in stats:
            return
        ratio = stats.get("w_plus_l_over_d")
        if ratio is not None and ratio < 1 and stats["temperature"] < g.max_temperature:
            self.state.temperature = min(
                stats["temperature"] * g.temperature_raise, g.max_temperature
            )
            self.console.print(
                f"(w+l)/d = {ratio:.2f} < 1: temperature raised to {self.state.temperature:g}"
            )

    def _finish(self) -> None:
        s = self.state
        if s.iterations and not s.final and self.config.evaluation.final_games:
            self.console.print("final matches: last net vs random and vs the first iteration")
            s.final = final_matches(self.dir, self.config, s)
            rate_iterations(self.dir, self.config, s)
        s.finished = True
        self.save()
        self.write_report()

    def _progress(self) -> Progress:
        return progress_bar(
            "{task.description}",
            "{task.completed}/{task.total}",
            "elapsed",
            transient=True,
            console=self.console,
        )

    # -- the end ------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        s = self.state
        last = s.iterations[-1].net if s.iterations else s.best
        return {
            "run_dir": str(self.dir),
            "method": self.config.method,
            "iterations": s.iteration,
            "positions": s.positions,
            "evaluations": s.evaluations,
            "minutes": round(s.elapsed_s / 60, 2),
            "train_minutes": round(sum(r.train_s for r in s.iterations) / 60, 2),
            "final_net": str(self.dir / last),
            "best_net": str(self.dir / s.best),
            "elo": [
                {"iteration": r.iteration, "elo": r.elo, "ci95": r.elo_ci95} for r in s.iterations
            ],
            "final": s.final,
        }

    def table(self) -> Table:
        s = self.state
        table = Table(
            title=f"frugalzero run: {self.config.method}, {s.iteration} iterations, "
            f"{s.positions:,} positions, {s.elapsed_s / 60:.1f} min"
        )
        for column in (
            "iter",
            "positions",
            "gen s",
            "train s",
            "eval s",
            "vs random",
            "vs best",
            "Elo (95%)",
            "val policy",
            "val value",
            "accepted",
        ):
            table.add_column(column, justify="right")
        for r in s.iterations:
            val = r.validation.get("traversing", {})
            elo = "" if r.elo is None else f"{r.elo:.0f} [{r.elo_ci95[0]:.0f}, {r.elo_ci95[1]:.0f}]"
            table.add_row(
                str(r.iteration),
                f"{r.positions:,}",
                f"{r.generate_s:.0f}",
                f"{r.train_s:.0f}",
                f"{r.evaluate_s:.0f}",
                _pct(r.score_vs_random),
                _pct(r.score_vs_best),
                elo,
                _num(val.get("policy_loss")),
                _num(val.get("value_loss")),
                "yes" if r.accepted else "no",
            )
        return table


def _pct(score: float | None) -> str:
    return "" if score is None else f"{100 * score:.0f}%"


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _flat_metrics(record: IterationRecord) -> dict[str, Any]:
    out = {
        "positions": record.positions,
        "games": record.games,
        "generate_s": record.generate_s,
        "train_s": record.train_s,
        "evaluate_s": record.evaluate_s,
        "accepted": int(record.accepted),
    }
    for key in ("score_vs_random", "score_vs_best", "elo"):
        value = getattr(record, key)
        if value is not None:
            out[key] = value
    for net, values in record.validation.items():
        for name, value in values.items():
            out[f"validation_{net}_{name}"] = value
    return out
