"""``frugalzero experiment``: every arm of every unit an ordinary run, an iteration at a time.

A unit (``spec.Unit``) is what the arms are compared on: a seed from nothing, or a fork of a
shared state (a trunk run's checkpoint, a given net) with a seed. The directory holds
``spec.toml`` (the spec as given), ``state.json`` (the spec's hash, the arms' presets' values
and each arm-unit's CPU seconds), ``trunk/`` (the trunk's run, when the spec forks from one),
``forks/point-P/`` (a trunk checkpoint's net and the list of its data: what its forks start
from), ``arms/ARM/UNIT/`` (a ``frugalzero run`` directory each), ``ratings/`` (every rated
net's games against the anchors, and ``head-to-head/``: each unit's arms against its
baseline, from which the ratings recompute), ``experiment.json`` and ``experiment.html``.
Everything the spec names and every path it writes is checked before the first of these is
written (``Experiment._check``).

The trunk runs first; then the units in order, one at a time: within a unit the next
iteration goes to the arm that has spent least (ties: arm order), and when its arms are done
their final nets play each other, so a stopped experiment has whole pairs, and the order is a
function of what is on disk. A kept net is rated as soon as it exists. Each arm-unit ends at
exactly its budget of evaluations (``pipeline.spend``). Runs resume exactly after ``kill -9``
(``pipeline.loop``), matches are replayed whole, and the state is written atomically after
every step: an experiment killed any number of times ends with the results of one never
killed. No record holds a path of this machine: players are named by arm, unit and net.

A directory lost with its machine is not the experiment lost: started in a new directory with
the same spec and ``--record``, the experiment takes the record's finished units as they stand
(``Experiment._restore``: their results, ratings and head-to-head games; their nets are gone and
no longer needed) and runs the rest, so a lost machine costs the unit it was running.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from frugalzero.config import bounded, from_dict, load_config
from frugalzero.errors import UserError
from frugalzero.experiment.results import (
    ArmResult,
    BudgetResult,
    ExperimentResult,
    ForkPoint,
    ForkResult,
    Generation,
    KeptNet,
    RatingResult,
    UnitResult,
    from_record,
)
from frugalzero.experiment.spec import ArmSpec, ExperimentSpec, Unit
from frugalzero.layout import INITIAL_NET, refuse_run_files
from frugalzero.output import to_json
from frugalzero.pipeline.config import RunConfig
from frugalzero.pipeline.state import RunState
from frugalzero.runtime.files import atomic_write_text, check_destination
from frugalzero.runtime.lock import DirectoryLock

SPEC, STATE, RESULT, PAGE = "spec.toml", "state.json", "experiment.json", "experiment.html"
RATINGS, TRUNK, FORKS = "ratings", "trunk", "forks"
POINT = "point.json"  # a fork point's record, written last: the point exists once it does
# the page's charts take seconds to draw (a fifth of a small experiment's time when drawn after
# every step): between steps it is drawn again once this much time has passed, and at the end
PAGE_EVERY_S = 60.0

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
    restored: dict[str, dict[str, Any]] = field(default_factory=dict)
    """By ``ARM/UNIT``: the arm-units of the finished units taken from the record when the
    experiment started in a new directory (``UnitResult`` tables as the record has them; their
    runs are not on this disk)."""
    restored_points: list[dict[str, Any]] = field(default_factory=list)
    """The record's fork points then (``ForkPoint`` tables): what the results show of a point
    until the trunk, run again for the units left, makes it on this disk."""


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
        self._loops: dict[str, Any] = {}  # the runs' loops of the unit under way
        self._net_ids: dict[str, str] = {}
        self._page_drawn: float | None = None  # time.monotonic() of the last page drawn
        self._restored_units: dict[str, UnitResult] = {}  # ``state.restored``, parsed once
        self.anchors, self.presets = self._check(spec_file)
        self.presets_sha256 = _digest_of(self.presets)
        self.state = self._open(spec_file)

    def _check(self, spec_file: Path) -> tuple[dict[str, float], dict[str, Any]]:
        """The whole spec and where it writes, checked before anything is written (a refusal
        after the state is written would leave a directory the corrected spec cannot resume):
        the directories, the seeds, the anchors, every arm-seed's config and the files each
        arm's config names. Returns the anchors' ratings and the presets' values."""
        from frugalzero.experiment.rating import anchor_ratings
        from frugalzero.pipeline.inputs import check_inputs, check_net

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
                    try:  # a fork's start is made later: its net and data are checked below
                        config = self.run_config(arm, Unit(seed), fork=False)
                    except UserError as exc:
                        raise UserError(f"arm {arm.name}, seed {seed}: {exc}") from None
                try:
                    check_inputs(config)  # the seeds name no file: one check an arm
                except UserError as exc:
                    raise UserError(f"arm {arm.name}: {exc}") from None
            if self.spec.trunk_arm is not None:
                try:
                    self.trunk_config()
                except UserError as exc:
                    raise UserError(f"the trunk: {exc}") from None
            elif self.spec.fork.source:
                check_net("fork.source", self.spec.fork.source)
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
        state = ExperimentState(
            spec_sha256=self.spec.sha256(), spec=self.spec.canonical(), presets=self.presets
        )
        restored = self._restore(state) if self.record is not None else []
        self.dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(spec_file, self.dir / SPEC)
        if restored:
            self._copy_ratings(self.record / RATINGS, self.dir / RATINGS)
            self.console.print(
                f"restored from {self.record}: {', '.join(restored)} (finished; their nets "
                "are not kept, their results and games are)"
            )
        self._save(state)
        return state

    def _restore(self, state: ExperimentState) -> list[str]:
        """Take the record's finished units into a new experiment's ``state``: a unit whose
        every arm is done, every kept net rated (its games in the record) and every
        head-to-head played. A record of another spec, or of other preset values, is refused
        (the record would mix two designs). Returns the units' labels."""
        from frugalzero.experiment.rating import head_to_head_counts

        assert self.record is not None
        path = self.record / RESULT
        if not path.is_file():
            return []
        try:
            old = ExperimentResult.from_json(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{path}: unreadable record ({exc})") from None
        if old.spec_sha256 != self.spec.sha256():
            raise UserError(self._changed(old.spec, f"the record {self.record}"))
        if old.presets_sha256 and old.presets_sha256 != self.presets_sha256:
            raise UserError(
                f"the record {self.record} was made with other values of the arms' presets "
                f"than {', '.join(self.presets)} have now; restore them, or give another --record"
            )
        ratings = self.record / RATINGS
        found = {(arm.name, u.label): u for arm in old.arms for u in arm.seeds}

        def finished(arm: ArmSpec, unit: Unit) -> bool:
            result = found.get((arm.name, unit.label))
            if result is None or not result.finished or not result.kept:
                return False
            rated = all(k.player and self._rated(k.net_id, ratings) for k in result.kept)
            played = (
                arm.name == self.spec.baseline
                or not self.spec.rating.head_to_head
                or head_to_head_counts(ratings, f"{unit.label}-{arm.name}") is not None
            )
            return rated and played

        labels = []
        state.restored_points = [dataclasses.asdict(p) for p in old.fork.points]
        for unit in self.spec.units():
            if not all(finished(arm, unit) for arm in self.spec.arm):
                continue
            labels.append(unit.label)
            for arm in self.spec.arm:
                result = found[(arm.name, unit.label)]
                key = f"{arm.name}/{unit.label}"
                state.seeds[key] = SeedProgress(cpu_s=[result.cpu_s], done=True)
                state.restored[key] = dataclasses.asdict(result)
                state.rated |= {k.net_id: k.player for k in result.kept}
        return labels

    @staticmethod
    def _copy_ratings(source: Path, target: Path) -> None:
        """Every finished match (its PGN) and head-to-head count of ``source`` not in
        ``target`` already."""
        if not source.is_dir():
            return
        for path in sorted([*source.rglob("*.pgn"), *source.rglob("*.json")]):
            kept = target / path.relative_to(source)
            if not kept.exists() or kept.stat().st_size != path.stat().st_size:
                kept.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(kept, path.read_text(encoding="utf-8"))

    def _changed(self, old: dict[str, Any], where: str = "") -> str:
        """The refusal of a spec other than ``old``, the one this directory (or ``where``, a
        record) was made with, naming the first difference."""
        from frugalzero.pipeline.identity import first_difference

        found = first_difference(_flat_arms(old), _flat_arms(self.spec.canonical()))
        what = f"{found[0]}: {found[1]!r} then, {found[2]!r} now" if found else "its spec"
        if where:
            return (
                f"{where} is of another spec ({what}); restore that spec, or give this one "
                "another --record"
            )
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

    # -- the arm-units -----------------------------------------------------------------------
    def keys(self) -> list[tuple[ArmSpec, Unit]]:
        return [(arm, unit) for unit in self.spec.units() for arm in self.spec.arm]

    def run_dir(self, arm: ArmSpec, unit: Unit) -> Path:
        return self.dir / "arms" / arm.name / unit.label

    def progress(self, arm: ArmSpec, unit: Unit) -> SeedProgress:
        return self.state.seeds.setdefault(f"{arm.name}/{unit.label}", SeedProgress())

    def run_config(
        self, arm: ArmSpec, unit: Unit, fork: bool = True, evaluations: int = 0
    ) -> RunConfig:
        """The arm's preset and overrides, with the unit's seeds and the experiment's budget
        (``evaluations``: another, the trunk's); ``fork``: started from the unit's fork (its
        net and its trunk's data), which must exist by then."""
        budget = self.spec.budget
        limits: dict[str, float | bool] = {key: 0 for key in BUDGET_KEYS}
        if evaluations or budget.evaluations:
            limits["budget.evaluations"] = evaluations or budget.evaluations
        elif budget.minutes:
            limits["budget.minutes"] = budget.minutes
        else:
            limits["budget.iterations"] = NO_LIMIT_ITERATIONS
        if not budget.minutes:  # a preset's filling of its minutes has none to fill
            limits["budget.fill"] = False
        overrides = [*RUN_DEFAULTS, *self.spec.set, *arm.set]
        overrides += [f"{k}={str(v).lower()}" for k, v in limits.items()]
        overrides += [f"seed={unit.seed}", f"net.seed={unit.seed}"]
        if arm.method:
            overrides.append(f"method={arm.method}")
        if self.ray:
            overrides.append(f"ray={self.ray}")
        if fork and unit.point >= 0:
            net, prior = self._fork_start(unit.point)
            overrides.append(f"net.init={json.dumps(net)}")
            overrides.append(f"generate.prior={json.dumps(prior)}")
        return load_config(RunConfig, arm.preset, overrides)

    def run_state(self, arm: ArmSpec, unit: Unit) -> RunState | None:
        return RunState.load(self.run_dir(arm, unit))

    def spent(self, arm: ArmSpec, unit: Unit) -> float:
        """What the arm-unit has spent, in the budget's unit."""
        budget = self.spec.budget
        if budget.cpu_seconds:
            return sum(self.progress(arm, unit).cpu_s)
        restored = self._restored(arm, unit)
        if restored is not None:
            return float(restored.evaluations) if budget.evaluations else restored.wall_s / 60
        state = self.run_state(arm, unit)
        if state is None:
            return 0.0
        return float(state.evaluations) if budget.evaluations else state.elapsed_s / 60

    def _restored(self, arm: ArmSpec, unit: Unit) -> UnitResult | None:
        """The arm-unit as the record had it, when it was restored from one."""
        key = f"{arm.name}/{unit.label}"
        if key not in self._restored_units and key in self.state.restored:
            self._restored_units[key] = from_record(UnitResult, self.state.restored[key])
        return self._restored_units.get(key)

    def next_key(self) -> tuple[ArmSpec, Unit] | None:
        """The first unit with an unfinished arm, and of its unfinished arms the one that has
        spent least (ties: arm order)."""
        for unit in self.spec.units():
            open_ = [
                (self.spent(arm, unit), i, arm)
                for i, arm in enumerate(self.spec.arm)
                if not self.progress(arm, unit).done
            ]
            if open_:
                return min(open_, key=lambda k: (k[0], k[1]))[2], unit
        return None

    # -- the trunk and its forks ------------------------------------------------------------
    @property
    def trunk_dir(self) -> Path:
        return self.dir / TRUNK

    def trunk_config(self) -> RunConfig:
        arm = self.spec.trunk_arm
        assert arm is not None
        unit = Unit(self.spec.fork.trunk_seed)
        return self.run_config(arm, unit, fork=False, evaluations=self.spec.fork.points[-1])

    def _trunk_done(self) -> bool:
        if self.spec.trunk_arm is None or self._all_restored():
            return True
        state = RunState.load(self.trunk_dir)
        return state is not None and state.finished

    def _fork_start(self, point: int) -> tuple[str, list[str]]:
        """(net, data folders) a fork at ``point`` starts from: a given net with no data, or
        the trunk's checkpoint (written by ``_make_fork_point``)."""
        source = self.spec.fork.source
        if source != "trunk":
            from frugalzero.nn.shipped import resolve_net_path

            return str(resolve_net_path(source).resolve()), []
        folder = (self.dir / FORKS / f"point-{point}").resolve()
        record = json.loads((folder / POINT).read_text(encoding="utf-8"))
        data = [str((self.trunk_dir / d).resolve()) for d in record["data"]]
        return str(folder / record["net"]), data

    def fork_points(self) -> list[dict[str, Any]]:
        """The fork points made so far: iteration, evaluations and net of the trunk at each
        (a point not on this disk: the record's, when the experiment was restored from one)."""
        out = []
        restored = {p.get("point"): p for p in self.state.restored_points}
        for point in range(len(self.spec.fork.points)):
            path = self.dir / FORKS / f"point-{point}" / POINT
            if path.exists():
                out.append(json.loads(path.read_text(encoding="utf-8")))
            elif point in restored:
                out.append(restored[point])
        return out

    def _make_fork_points(self) -> None:
        """Each trunk checkpoint as a fork point: the net of the first trunk iteration that
        reached it (copied out: the trunk's folder may be deleted) and its data up to it."""
        from frugalzero.layout import RunLayout

        state = RunState.load(self.trunk_dir)
        assert state is not None and state.finished
        spent, records = 0, iter(state.iterations)
        layout = RunLayout(self.trunk_dir)
        for point, target in enumerate(self.spec.fork.points):
            folder = self.dir / FORKS / f"point-{point}"
            record = None
            while spent < target:
                record = next(records, None)
                if record is None:
                    raise UserError(f"{self.trunk_dir}: the trunk ended before {target:,}")
                spent += int(record.generation.get("evaluations", 0))
            if (folder / POINT).exists():
                continue
            assert record is not None, "points are > 0"
            folder.mkdir(parents=True, exist_ok=True)
            net = "net.safetensors"
            shutil.copyfile(self.trunk_dir / record.net, folder / (net + ".tmp"))
            os.replace(folder / (net + ".tmp"), folder / net)
            data = [
                str(layout.data(k).relative_to(self.trunk_dir))
                for k in range(1, record.iteration + 1)
            ]
            entry = {
                "point": point,
                "target": target,
                "iteration": record.iteration,
                "evaluations": spent,
                "net": net,
                "net_id": record.net_id,
                "data": data,
            }
            atomic_write_text(folder / POINT, to_json(entry, indent=1) + "\n")

    # -- the loop -----------------------------------------------------------------------------
    def run(self) -> ExperimentResult:
        with DirectoryLock(self.dir):
            self._rate_kept()  # a kill between an iteration and its ratings
            while not self._trunk_done():
                self._iterate_trunk()
                self.write(page=self._page_due())
            if self.spec.trunk_arm is not None and not self._all_restored():
                self._make_fork_points()
            while (key := self.next_key()) is not None:
                self._iterate(*key)
                self._rate_kept()
                self.write(page=self._page_due())
            self._rate_kept()
            return self.write()

    def _all_restored(self) -> bool:
        """Whether every arm-unit came from the record (no trunk is needed then)."""
        return len(self.state.restored) == len(self.keys())

    def _loop(self, key: str, config: RunConfig, run_dir: Path):
        """The run's loop, kept across its iterations (its trainer, its replay cache): only
        those of one unit at a time are kept, the memory of one comparison."""
        from frugalzero.pipeline.loop import RunLoop

        unit = key.split("/", 1)[-1]
        for old in [k for k in self._loops if k.split("/", 1)[-1] != unit]:
            del self._loops[old]
        if key not in self._loops:
            self._loops[key] = RunLoop(config, run_dir, self.console)
        return self._loops[key]

    def _advance(self, key: str, config: RunConfig, run_dir: Path) -> tuple[RunState, bool]:
        """One iteration of a run (or its end); (its state, whether an iteration finished)."""
        run_dir.mkdir(parents=True, exist_ok=True)
        with DirectoryLock(run_dir):
            loop = self._loop(key, config, run_dir)
            done_before = loop.state.iteration
            loop.run(until_iteration=done_before + 1)
            state = loop.state
        return state, state.iteration > done_before

    def _iterate_trunk(self) -> None:
        state, _ = self._advance(TRUNK, self.trunk_config(), self.trunk_dir)
        self.state.steps += 1
        self._save()
        total = self.spec.fork.points[-1]
        done = " (done)" if state.finished else ""
        self.console.print(
            f"[bold]trunk[/]: iteration {state.iteration}, "
            f"{state.evaluations:,} / {total:,} evaluations{done}"
        )

    def _iterate(self, arm: ArmSpec, unit: Unit) -> None:
        """One iteration of the arm-unit's run (or its end: the run sees its budget spent)."""
        run_dir = self.run_dir(arm, unit)
        before = _cpu_seconds()
        key = f"{arm.name}/{unit.label}"
        state, advanced = self._advance(key, self.run_config(arm, unit), run_dir)
        progress = self.progress(arm, unit)
        if advanced:
            progress.cpu_s.append(round(_cpu_seconds() - before, 2))
        cpu_budget = self.spec.budget.cpu_seconds
        progress.done = state.finished or bool(cpu_budget and sum(progress.cpu_s) >= cpu_budget)
        if progress.done:
            self._loops.pop(key, None)
        self.state.steps += 1
        self._save()
        spent, total = self.spent(arm, unit), self.spec.budget.amount()
        unit_name = self.spec.budget.unit
        self.console.print(
            f"[bold]{arm.name}[/] {unit.label}: iteration {state.iteration}, "
            f"{spent:,.0f} / {total:,.0f} {unit_name}" + (" (done)" if progress.done else "")
        )

    # -- kept nets and their ratings ----------------------------------------------------------
    def _net_id(self, path: Path) -> str:
        """A net's id, read once a process (nets are written once, never changed)."""
        key = str(path)
        if key not in self._net_ids:
            from frugalzero.nn.checkpoint import load_net

            self._net_ids[key] = load_net(path)[1].net_id
        return self._net_ids[key]

    def kept(self, arm: ArmSpec, unit: Unit) -> list[dict[str, Any]]:
        """The nets kept so far: the initial one, then the first iteration reaching each
        checkpoint of the budget."""
        restored = self._restored(arm, unit)
        if restored is not None:
            own = ("checkpoint", "iteration", "net", "net_id", "evaluations", "cpu_s", "minutes")
            return [{k: getattr(net, k) for k in own} for net in restored.kept]
        state = self.run_state(arm, unit)
        run_dir = self.run_dir(arm, unit)
        if state is None or not (run_dir / INITIAL_NET).exists():
            return []  # not started, or killed before its first net was written
        spent = {"evaluations": 0, "cpu_s": 0.0, "minutes": 0.0}
        initial = self._net_id(run_dir / INITIAL_NET)
        out = [spent | {"checkpoint": 0, "iteration": 0, "net": INITIAL_NET, "net_id": initial}]
        cpu = self.progress(arm, unit).cpu_s
        points = iter(self.spec.checkpoints())
        point = next(points, None)
        for record in state.iterations:
            spent["evaluations"] += int(record.generation.get("evaluations", 0))
            if record.iteration <= len(cpu):
                spent["cpu_s"] = round(spent["cpu_s"] + cpu[record.iteration - 1], 2)
            seconds = record.generate_s + record.train_s + record.evaluate_s
            spent["minutes"] = round(spent["minutes"] + seconds / 60, 3)
            unit_key = self._unit_key()
            while point is not None and spent[unit_key] >= point:
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

    def player(self, arm: ArmSpec, unit: Unit, entry: dict[str, Any]):
        """The engine that plays a kept net in every rating game, named by what it is (arm,
        unit, net: no path of this machine in a record)."""
        from frugalzero.evaluate.specs import parse_spec
        from frugalzero.pipeline.assess import net_spec

        run_dir = self.run_dir(arm, unit)
        config = self.run_config(arm, unit)
        config.evaluation.nodes = self.spec.rating.nodes
        spec = parse_spec(net_spec(run_dir, entry["net"], config))
        name = self.state.rated.get(entry["net_id"])
        if name is None:  # a unit's start is every arm's: named by the unit alone
            own = entry["iteration"] > 0
            name = (
                f"{arm.name}/{unit.label}/{Path(entry['net']).stem}"
                if own
                else f"{unit.label}/start"
            )
        return dataclasses.replace(spec, name=name)

    def _rate_kept(self) -> None:
        """Rate every kept net not rated yet (one net id once), and play each finished unit's
        arms against its baseline."""
        from frugalzero.experiment.rating import rate_net

        anchors = self.anchors
        for arm, unit in self.keys():
            for entry in self.kept(arm, unit):
                net_id = entry["net_id"]
                if net_id in self.state.rated and self._rated(net_id):
                    continue
                player = self.player(arm, unit, entry)
                self.state.rated[net_id] = player.name
                self._save()
                self.console.print(f"rating {player.name}")
                rate_net(self.dir / RATINGS, net_id, player, self.spec.rating, anchors)
        if self.spec.rating.head_to_head:
            for unit in self.spec.units():
                self._head_to_head(unit)

    def _final(self, arm: ArmSpec, unit: Unit) -> dict[str, Any] | None:
        """The arm-unit's net at the final checkpoint, once its run is done."""
        if not self.progress(arm, unit).done:
            return None
        final = self.spec.checkpoints()[-1]
        return next((k for k in self.kept(arm, unit) if k["checkpoint"] == final), None)

    def _head_to_head(self, unit: Unit) -> None:
        from frugalzero.experiment.rating import play_head_to_head

        base = next(a for a in self.spec.arm if a.name == self.spec.baseline)
        base_net = self._final(base, unit)
        if base_net is None or self._restored(base, unit) is not None:
            return  # a restored unit's matches came with it
        for arm in self.spec.arm:
            net = self._final(arm, unit) if arm is not base else None
            if net is None:
                continue
            seed = 104_729 + 1_009 * self.spec.units().index(unit)  # the unit's openings
            play_head_to_head(
                self.dir / RATINGS,
                f"{unit.label}-{arm.name}",
                self.player(arm, unit, net),
                self.player(base, unit, base_net),
                self.spec.rating,
                seed,
                self.console,
            )

    def _rated(self, net_id: str, ratings: Path | None = None) -> bool:
        """Whether the net has its games against every anchor in ``ratings`` (default: this
        experiment's; a record's when restoring from it)."""
        from frugalzero.experiment.rating import match_file

        folder = self.dir / RATINGS if ratings is None else ratings
        return all(match_file(folder, net_id, a).exists() for a in self.anchors)

    # -- the results --------------------------------------------------------------------------
    def results(self) -> ExperimentResult:
        """The experiment as it stands on disk: every arm-unit's spend and kept nets with their
        ratings, each unit's head-to-head counts, the arms' means and the verdict."""
        from frugalzero.data.methods import method
        from frugalzero.experiment.rating import head_to_head_counts, ratings
        from frugalzero.experiment.verdict import mean_curve, verdict

        fitted = ratings(self.dir / RATINGS, self.anchors)
        confidence = self.spec.decision.confidence
        arms = []
        for arm in self.spec.arm:
            seeds = []
            for unit in self.spec.units():
                seeds.append(self._seed_result(arm, unit, fitted))
                match = f"{unit.label}-{arm.name}"  # against the baseline's final net
                seeds[-1].head_to_head = head_to_head_counts(self.dir / RATINGS, match)
            name = self.run_config(arm, self.spec.units()[0], fork=False).method
            arms.append(
                ArmResult(
                    name=arm.name,
                    description=arm.description,
                    method=name,
                    method_label=method(name).label,
                    seeds=seeds,
                    mean=mean_curve(seeds, confidence),
                )
            )
        complete = all(self.progress(a, u).done for a, u in self.keys())
        spec = self.spec
        return ExperimentResult(
            name=spec.name,
            description=spec.description,
            question=spec.question,
            spec_sha256=spec.sha256(),
            spec=spec.canonical(),
            presets_sha256=self.presets_sha256,
            budget=BudgetResult(
                evaluations=spec.budget.evaluations,
                cpu_seconds=spec.budget.cpu_seconds,
                minutes=spec.budget.minutes,
                unit=spec.budget.unit,
                checkpoints=spec.checkpoints(),
            ),
            rating=RatingResult(
                nodes=spec.rating.nodes,
                games=spec.rating.games,
                anchors=dict(self.anchors),
                head_to_head=spec.rating.head_to_head,
            ),
            fork=ForkResult(
                source=spec.fork.source,
                trunk_arm=spec.trunk_arm.name if spec.trunk_arm else "",
                trunk_seed=spec.fork.trunk_seed,
                points=[from_record(ForkPoint, p) for p in self.fork_points()],
            ),
            complete=complete,
            arms=arms,
            verdict=verdict(spec, arms, complete),
        )

    def _seed_result(self, arm: ArmSpec, unit: Unit, fitted) -> UnitResult:
        kept = []
        for entry in self.kept(arm, unit):
            net = KeptNet(**entry)
            net.player = self.state.rated.get(net.net_id, "")
            rated = fitted.players.get(net.player) if fitted and net.player else None
            if rated is not None and rated.games:
                net.elo = round(rated.elo, 1)
                net.ci95 = [round(rated.ci95[0], 1), round(rated.ci95[1], 1)]
                net.sigma = round(rated.sigma, 1)
                net.games = rated.games
            kept.append(net)
        restored = self._restored(arm, unit)
        if restored is not None:  # as the record has it, rated with every game now on disk
            return dataclasses.replace(restored, kept=kept, head_to_head=None)
        state = self.run_state(arm, unit)
        progress = self.progress(arm, unit)
        iterations = state.iterations if state else []
        return UnitResult(
            seed=unit.seed,
            unit=unit.label,
            fork_point=unit.point,
            dir=self.run_dir(arm, unit).relative_to(self.dir).as_posix(),
            finished=progress.done,
            iterations=len(iterations),
            evaluations=state.evaluations if state else 0,
            games=sum(r.games for r in iterations),
            positions=state.positions if state else 0,
            wall_s=round(state.elapsed_s, 1) if state else 0.0,
            cpu_s=round(sum(progress.cpu_s), 1),
            kept=kept,
            generations=[_generation(r) for r in iterations],
        )

    def _page_due(self) -> bool:
        """Whether the page is to be drawn again: none yet, or the last PAGE_EVERY_S ago."""
        drawn = self._page_drawn
        return drawn is None or time.monotonic() - drawn >= PAGE_EVERY_S

    def write(self, page: bool = True) -> ExperimentResult:
        """experiment.json, as the experiment stands, and the page unless ``page`` is False
        (then it shows the experiment as it stood when last drawn)."""
        from frugalzero.experiment.page import write_page

        results = self.results()
        atomic_write_text(self.dir / RESULT, results.to_json())
        if page or not (self.dir / PAGE).exists():
            write_page(results, self.dir / PAGE)
            self._page_drawn = time.monotonic()
        if self.record is not None:
            self._keep_record(self.record)
        return results

    def _keep_record(self, record: Path) -> None:
        """Copy what benchmarks/README.md asks of a record (the spec, the results, the page and
        every finished rating game; no net) to ``record``, so a long experiment's record is
        current whenever a session ends. The games go first: a record's experiment.json never
        counts a match its folder lacks (which a restore from it would run again)."""
        self._copy_ratings(self.dir / RATINGS, record / RATINGS)
        for name in (SPEC, RESULT, PAGE):
            atomic_write_text(record / name, (self.dir / name).read_text(encoding="utf-8"))


OPERATIONAL = ("simulations_per_s", "ray")  # how fast and where, not what was made


def _generation(record) -> Generation:
    g = record.generation
    selfplay = None
    if "selfplay" in g:
        selfplay = {k: v for k, v in g["selfplay"].items() if k not in OPERATIONAL}
    return Generation(
        iteration=record.iteration,
        evaluations=int(g.get("evaluations", 0)),
        games=record.games,
        positions=record.positions,
        selfplay=selfplay,
    )


def _digest_of(presets: dict[str, Any]) -> str:
    from frugalzero.pipeline.identity import digest

    return digest(to_json(presets, sort_keys=True))


def _flat_arms(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec with its arms keyed by name, so a difference names the arm."""
    out = dict(spec)
    out["arm"] = {a["name"]: a for a in spec.get("arm", [])}
    return out
