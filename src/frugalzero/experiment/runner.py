"""``frugalzero experiment``: every arm-seed an ordinary run, advanced an iteration at a time.

The directory holds ``spec.toml`` (the spec as given), ``state.json`` (the spec's hash, the
arms' presets' values and each arm-seed's CPU seconds), ``arms/ARM/seed-K/`` (a ``frugalzero
run`` directory each), ``ratings/`` (every rated net's games, from which the ratings
recompute), ``experiment.json`` and ``experiment.html``. Everything the spec names and every
path it writes is checked before the first of these is written (``Experiment._check``).

The next iteration always goes to the arm-seed that has spent least (ties: seed, then arm
order), so an interrupted experiment has comparable progress in every arm, and the order is a
function of what is on disk. A kept net is rated as soon as it exists. Runs resume exactly
after ``kill -9`` (``pipeline.loop``), rating matches are replayed whole, and the state is
written atomically after every step: an experiment killed any number of times ends with the
results of one never killed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from frugalzero.config import bounded, from_dict, load_config
from frugalzero.errors import UserError
from frugalzero.experiment.spec import ArmSpec, ExperimentSpec
from frugalzero.layout import INITIAL_NET, refuse_run_files
from frugalzero.output import to_json
from frugalzero.pipeline.config import RunConfig
from frugalzero.pipeline.state import RunState
from frugalzero.runtime.files import atomic_write_text, check_destination
from frugalzero.runtime.lock import DirectoryLock

SPEC, STATE, RESULT, PAGE = "spec.toml", "state.json", "experiment.json", "experiment.html"
RATINGS = "ratings"

# what every arm-seed's run is told before the spec's own overrides: the experiment rates
# the nets itself (one protocol for every arm), so the runs play no matches of their own
# (gating then accepts every net, as AlphaZero does); the budget is the experiment's
RUN_DEFAULTS = [
    "evaluation.games_vs_random=0",
    "evaluation.games_vs_best=0",
    "evaluation.final_games=0",
]
BUDGET_KEYS = ("budget.iterations", "budget.minutes", "budget.positions", "budget.evaluations")
NO_LIMIT_ITERATIONS = 100_000  # a CPU-second budget is the experiment's to check


@dataclass
class SeedProgress:
    """What the experiment keeps of one arm-seed beyond its run's own state."""

    cpu_s: list[float] = field(default_factory=list)
    """CPU seconds of each finished iteration (this process and its children; the part of an
    iteration a kill cut is not counted)."""
    done: bool = False


@dataclass
class ExperimentState:
    spec_sha256: str = ""
    spec: dict[str, Any] = field(default_factory=dict)
    """The canonical spec, to name the first difference of a changed one."""
    seeds: dict[str, SeedProgress] = field(default_factory=dict)
    """By ``ARM/seed-K``."""
    presets: dict[str, Any] = field(default_factory=dict)
    """Each arm's preset, as the spec names it -> its values when the experiment started (part
    of its identity, as the spec is; empty in a state from before they were kept)."""
    rated: dict[str, str] = field(default_factory=dict)
    """net id -> the player name its rating games carry."""
    steps: int = bounded(0, 0, 10**9)
    """Iterations run so far, all arm-seeds together."""


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Experiment:
    """The experiment ``spec`` in ``directory`` (new, or one stopped with the same spec)."""

    def __init__(
        self,
        spec: ExperimentSpec,
        spec_file: Path,
        directory: Path,
        console: Console,
        ray: str = "",
        record: Path | None = None,
    ) -> None:
        self.spec = spec
        self.dir = directory
        self.console = console
        self.ray = ray
        self.record = record
        self.anchors, self.presets = self._check(spec_file)
        self.state = self._open(spec_file)

    def _check(self, spec_file: Path) -> tuple[dict[str, float], dict[str, Any]]:
        """The whole spec and where it writes, checked before anything is written (a refusal
        after the state is written would leave a directory the corrected spec cannot resume):
        the directories, the seeds, the anchors, every arm-seed's config and the files each
        arm's config names. Returns the anchors' ratings and the presets' values."""
        from frugalzero.experiment.rating import anchor_ratings
        from frugalzero.pipeline.inputs import check_inputs

        refuse_run_files(self.dir)  # what the directory's lock would refuse, before the state
        if self.record is not None:  # not a file, nor in a run's folder or under a file
            check_destination(self.record / RESULT)
        try:
            for seed in self.spec.seeds:  # in a run's range (``RunConfig.seed``'s, named so)
                try:
                    RunConfig(seed=seed)
                except UserError as exc:
                    raise UserError(f"seeds: {exc}") from None
            anchors = anchor_ratings(self.spec.rating)
            for arm in self.spec.arm:
                for seed in self.spec.seeds:
                    try:
                        config = self.run_config(arm, seed)
                    except UserError as exc:
                        raise UserError(f"arm {arm.name}, seed {seed}: {exc}") from None
                try:
                    check_inputs(config)  # the seeds name no file: one check an arm
                except UserError as exc:
                    raise UserError(f"arm {arm.name}: {exc}") from None
            presets = self.spec.preset_tables()
        except UserError as exc:
            raise UserError(f"{spec_file}: {exc}") from None
        return anchors, presets

    # -- identity -----------------------------------------------------------------------------
    def _open(self, spec_file: Path) -> ExperimentState:
        path = self.dir / STATE
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise UserError(f"{path}: unreadable experiment state ({exc})") from None
            state = from_dict(ExperimentState, data, str(path))
            state.seeds = {  # a table of dataclasses is read back as plain tables
                key: from_dict(SeedProgress, value, f"{path}: seeds.{key}")
                for key, value in state.seeds.items()
            }
            if state.spec_sha256 != self.spec.sha256():
                raise UserError(self._changed(state.spec))
            if state.presets and state.presets != self.presets:
                raise UserError(self._preset_changed(state.presets))
            # a state from before the presets were kept keeps them from its next save (made
            # under the directory's lock, in ``run``)
            state.presets = self.presets
            return state
        self.dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(spec_file, self.dir / SPEC)
        state = ExperimentState(
            spec_sha256=self.spec.sha256(), spec=self.spec.canonical(), presets=self.presets
        )
        self._save(state)
        return state

    def _changed(self, old: dict[str, Any]) -> str:
        from frugalzero.pipeline.identity import first_difference

        found = first_difference(_flat_arms(old), _flat_arms(self.spec.canonical()))
        what = f"{found[0]}: {found[1]!r} then, {found[2]!r} now" if found else "its spec"
        return (
            f"{self.dir}: this experiment was started with another spec ({what}); resume it "
            f"with {self.dir / SPEC}, or start the new spec in a new --dir"
        )

    def _preset_changed(self, old: dict[str, Any]) -> str:
        """The refusal of a preset edited since the experiment started, naming it, its arms
        and its first changed key."""
        from frugalzero.pipeline.identity import first_difference

        names = [*self.presets, *(p for p in old if p not in self.presets)]
        name = next(p for p in names if old.get(p) != self.presets.get(p))
        found = first_difference(old.get(name) or {}, self.presets.get(name) or {})
        what = f"{found[0]}: {found[1]!r} then, {found[2]!r} now" if found else "its values"
        arms = ", ".join(a.name for a in self.spec.arm if a.preset == name)
        return (
            f"{self.dir}: the preset {name} (arm {arms}) has changed since this experiment "
            f"started ({what}); restore it to resume, or start the experiment in a new --dir"
        )

    def _save(self, state: ExperimentState | None = None) -> None:
        data = dataclasses.asdict(state or self.state)
        atomic_write_text(self.dir / STATE, to_json(data, indent=1) + "\n")

    # -- the arm-seeds ------------------------------------------------------------------------
    def keys(self) -> list[tuple[ArmSpec, int]]:
        return [(arm, seed) for seed in self.spec.seeds for arm in self.spec.arm]

    def run_dir(self, arm: ArmSpec, seed: int) -> Path:
        return self.dir / "arms" / arm.name / f"seed-{seed}"

    def progress(self, arm: ArmSpec, seed: int) -> SeedProgress:
        return self.state.seeds.setdefault(f"{arm.name}/seed-{seed}", SeedProgress())

    def run_config(self, arm: ArmSpec, seed: int) -> RunConfig:
        """The arm's preset and overrides, with seed k's seeds and the experiment's budget."""
        budget = self.spec.budget
        limits: dict[str, float | bool] = {key: 0 for key in BUDGET_KEYS}
        if budget.evaluations:
            limits["budget.evaluations"] = budget.evaluations
        elif budget.minutes:
            limits["budget.minutes"] = budget.minutes
        else:
            limits["budget.iterations"] = NO_LIMIT_ITERATIONS
        if not budget.minutes:  # a preset's filling of its minutes has none to fill
            limits["budget.fill"] = False
        overrides = [*RUN_DEFAULTS, *self.spec.set, *arm.set]
        overrides += [f"{k}={str(v).lower()}" for k, v in limits.items()]
        overrides += [f"seed={seed}", f"net.seed={seed}"]
        if arm.method:
            overrides.append(f"method={arm.method}")
        if self.ray:
            overrides.append(f"ray={self.ray}")
        return load_config(RunConfig, arm.preset, overrides)

    def run_state(self, arm: ArmSpec, seed: int) -> RunState | None:
        return RunState.load(self.run_dir(arm, seed))

    def spent(self, arm: ArmSpec, seed: int) -> float:
        """What the arm-seed has spent, in the budget's unit."""
        budget = self.spec.budget
        if budget.cpu_seconds:
            return sum(self.progress(arm, seed).cpu_s)
        state = self.run_state(arm, seed)
        if state is None:
            return 0.0
        return float(state.evaluations) if budget.evaluations else state.elapsed_s / 60

    def next_key(self) -> tuple[ArmSpec, int] | None:
        """The unfinished arm-seed that has spent least (ties: seed order, then arm order)."""
        open_ = [(self.spent(a, s), i, a, s) for i, (a, s) in enumerate(self.keys())]
        open_ = [k for k in open_ if not self.progress(k[2], k[3]).done]
        if not open_:
            return None
        _, _, arm, seed = min(open_, key=lambda k: (k[0], k[1]))
        return arm, seed

    # -- the loop -----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        with DirectoryLock(self.dir):
            self._rate_kept()  # a kill between an iteration and its ratings
            while (key := self.next_key()) is not None:
                self._iterate(*key)
                self._rate_kept()
                self.write()
            return self.write()

    def _iterate(self, arm: ArmSpec, seed: int) -> None:
        """One iteration of the arm-seed's run (or its end: the run sees its budget spent)."""
        from frugalzero.pipeline.loop import RunLoop

        run_dir = self.run_dir(arm, seed)
        config = self.run_config(arm, seed)
        before = _cpu_seconds()
        with DirectoryLock(run_dir):
            loop = RunLoop(config, run_dir, self.console)
            done_before = loop.state.iteration
            loop.run(until_iteration=done_before + 1)
            state = loop.state
        progress = self.progress(arm, seed)
        if state.iteration > done_before:
            progress.cpu_s.append(round(_cpu_seconds() - before, 2))
        cpu_budget = self.spec.budget.cpu_seconds
        progress.done = state.finished or bool(cpu_budget and sum(progress.cpu_s) >= cpu_budget)
        self.state.steps += 1
        self._save()
        spent, total = self.spent(arm, seed), self.spec.budget.amount()
        unit = self.spec.budget.unit
        self.console.print(
            f"[bold]{arm.name}[/] seed {seed}: iteration {state.iteration}, "
            f"{spent:,.0f} / {total:,.0f} {unit}" + (" (done)" if progress.done else "")
        )

    # -- kept nets and their ratings ----------------------------------------------------------
    def kept(self, arm: ArmSpec, seed: int) -> list[dict[str, Any]]:
        """The nets kept so far: the initial one, then the first iteration reaching each
        checkpoint of the budget."""
        state = self.run_state(arm, seed)
        if state is None or not (self.run_dir(arm, seed) / INITIAL_NET).exists():
            return []  # not started, or killed before its first net was written
        from frugalzero.nn.checkpoint import load_net

        spent = {"evaluations": 0, "cpu_s": 0.0, "minutes": 0.0}
        initial = load_net(self.run_dir(arm, seed) / INITIAL_NET)[1].net_id
        out = [spent | {"checkpoint": 0, "iteration": 0, "net": INITIAL_NET, "net_id": initial}]
        cpu = self.progress(arm, seed).cpu_s
        points = iter(self.spec.checkpoints())
        point = next(points, None)
        for record in state.iterations:
            spent["evaluations"] += int(record.generation.get("evaluations", 0))
            if record.iteration <= len(cpu):
                spent["cpu_s"] = round(spent["cpu_s"] + cpu[record.iteration - 1], 2)
            seconds = record.generate_s + record.train_s + record.evaluate_s
            spent["minutes"] = round(spent["minutes"] + seconds / 60, 3)
            unit = self._unit_key()
            while point is not None and spent[unit] >= point:
                out.append(spent | {"checkpoint": point, "iteration": record.iteration})
                out[-1] |= {"net": record.net, "net_id": record.net_id}
                point = next(points, None)
            if state.finished and record is state.iterations[-1] and point is not None:
                # a wall-clock budget ends where its last iteration was cut to fit, a little
                # short of it: that net is the final checkpoint's
                out.append(spent | {"checkpoint": self.spec.checkpoints()[-1]})
                out[-1] |= {"iteration": record.iteration, "net": record.net}
                out[-1]["net_id"] = record.net_id
        return out

    def _unit_key(self) -> str:
        budget = self.spec.budget
        if budget.evaluations:
            return "evaluations"
        return "cpu_s" if budget.cpu_seconds else "minutes"

    def _rate_kept(self) -> None:
        """Rate every kept net not rated yet (one net id once)."""
        from frugalzero.experiment.rating import rate_net
        from frugalzero.pipeline.assess import net_spec

        anchors = self.anchors
        for arm, seed in self.keys():
            run_dir = self.run_dir(arm, seed)
            kept = self.kept(arm, seed)
            if not kept:
                continue
            config = self.run_config(arm, seed)
            config.evaluation.nodes = self.spec.rating.nodes
            for entry in kept:
                net_id = entry["net_id"]
                if net_id in self.state.rated and self._rated(net_id, anchors):
                    continue
                name = self.state.rated.get(net_id) or net_spec(run_dir, entry["net"], config)
                self.state.rated[net_id] = name
                self._save()
                self.console.print(f"rating {arm.name} seed {seed} net {entry['iteration']}")
                rate_net(self.dir / RATINGS, net_id, name, self.spec.rating, anchors)

    def _rated(self, net_id: str, anchors: dict[str, float]) -> bool:
        from frugalzero.experiment.rating import match_file

        return all(match_file(self.dir / RATINGS, net_id, a).exists() for a in anchors)

    # -- the results --------------------------------------------------------------------------
    def results(self) -> dict[str, Any]:
        from frugalzero.experiment.rating import ratings
        from frugalzero.experiment.verdict import mean_curve, verdict

        anchors = self.anchors
        fitted = ratings(self.dir / RATINGS, anchors)
        confidence = self.spec.decision.confidence
        arms = []
        for arm in self.spec.arm:
            seeds = []
            for seed in self.spec.seeds:
                seeds.append(self._seed_result(arm, seed, fitted))
            arms.append(
                {
                    "name": arm.name,
                    "description": arm.description,
                    "method": self.run_config(arm, self.spec.seeds[0]).method,
                    "seeds": seeds,
                    "mean": mean_curve(seeds, confidence),
                }
            )
        complete = all(self.progress(a, s).done for a, s in self.keys())
        spec = self.spec
        return {
            "name": spec.name,
            "description": spec.description,
            "question": spec.question,
            "spec_sha256": spec.sha256(),
            "spec": spec.canonical(),
            "budget": {
                "evaluations": spec.budget.evaluations,
                "cpu_seconds": spec.budget.cpu_seconds,
                "minutes": spec.budget.minutes,
                "unit": spec.budget.unit,
                "checkpoints": spec.checkpoints(),
            },
            "rating": {
                "nodes": spec.rating.nodes,
                "games": spec.rating.games,
                "anchors": anchors,
            },
            "complete": complete,
            "arms": arms,
            "verdict": verdict(spec, arms, complete),
        }

    def _seed_result(self, arm: ArmSpec, seed: int, fitted) -> dict[str, Any]:
        run_dir = self.run_dir(arm, seed)
        state = self.run_state(arm, seed)
        progress = self.progress(arm, seed)
        kept = []
        for entry in self.kept(arm, seed):
            net_id = entry["net_id"]
            rated = fitted.players.get(self.state.rated.get(net_id, "")) if fitted else None
            entry = entry | {"elo": None, "ci95": None, "games": 0}
            if rated is not None and rated.games:
                entry |= {
                    "player": self.state.rated[net_id],
                    "elo": round(rated.elo, 1),
                    "ci95": [round(rated.ci95[0], 1), round(rated.ci95[1], 1)],
                    "sigma": round(rated.sigma, 1),
                    "games": rated.games,
                }
            kept.append(entry)
        iterations = state.iterations if state else []
        return {
            "seed": seed,
            "dir": str(run_dir.relative_to(self.dir)),
            "finished": progress.done,
            "iterations": len(iterations),
            "evaluations": state.evaluations if state else 0,
            "games": sum(r.games for r in iterations),
            "positions": state.positions if state else 0,
            "wall_s": round(state.elapsed_s, 1) if state else 0.0,
            "cpu_s": round(sum(progress.cpu_s), 1),
            "kept": kept,
            "generations": [_generation(r) for r in iterations],
        }

    def write(self) -> dict[str, Any]:
        """experiment.json and the page, as the experiment stands."""
        from frugalzero.experiment.page import write_page

        results = self.results()
        atomic_write_text(self.dir / RESULT, to_json(results, indent=1) + "\n")
        write_page(results, self.dir / PAGE)
        if self.record is not None:
            self._keep_record(self.record)
        return results

    def _keep_record(self, record: Path) -> None:
        """Copy what benchmarks/README.md asks of a record (the spec, the results, the page and
        every finished rating game; no net) to ``record``, so a long experiment's record is
        current whenever a session ends."""
        (record / RATINGS).mkdir(parents=True, exist_ok=True)
        for name in (SPEC, RESULT, PAGE):
            atomic_write_text(record / name, (self.dir / name).read_text(encoding="utf-8"))
        for pgn in sorted((self.dir / RATINGS).glob("*.pgn")):
            kept = record / RATINGS / pgn.name
            if not kept.exists() or kept.stat().st_size != pgn.stat().st_size:
                atomic_write_text(kept, pgn.read_text(encoding="utf-8"))


OPERATIONAL = ("simulations_per_s", "ray")  # how fast and where, not what was made


def _generation(record) -> dict[str, Any]:
    g = record.generation
    out = {
        "iteration": record.iteration,
        "evaluations": int(g.get("evaluations", 0)),
        "games": record.games,
        "positions": record.positions,
    }
    if "selfplay" in g:
        out["selfplay"] = {k: v for k, v in g["selfplay"].items() if k not in OPERATIONAL}
    return out


def _flat_arms(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec with its arms keyed by name, so a difference names the arm."""
    out = dict(spec)
    out["arm"] = {a["name"]: a for a in spec.get("arm", [])}
    return out
