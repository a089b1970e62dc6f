"""The generation step: one iteration's training data, by the run's method, into shards.

Every generator writes small shards as games finish, so a killed step keeps what it finished,
and on resume the step makes only the rest. Game ids are unique within a run: ``iK-`` names
the iteration. Stockfish's games (sfgames) and self-play's (selfplay, contempt, gumbel) are
numbered, each a function of the run's seed, the iteration and its number, and written in
number order whatever order they finish in, so a resume plays exactly the missing numbers and
a run killed any number of times has the games, in the same order, of one that never was
(self-play's, where the network's answer to a position does not depend on the batch it came
in: bf16 on a CPU, not fp32, whose matrix products are blocked by batch size). ε-Explore's
playouts depend on the processes that play them; a resume plays the rest with a fresh seed
(its ids carry the playouts already done, ``rN-``), so new ones are not the lost ones replayed.

A self-play generation reports its network ``evaluations``: the simulations its games' searches
ran (each asks the network for one leaf; the evaluator's cache answers some), summed from the
games on disk, so a budget counted in them is the same after a kill.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from frugalzero.data.methods import method
from frugalzero.data.records import GameRecord
from frugalzero.data.shards import ShardWriter, read_columns, read_shard, scan_shards
from frugalzero.pipeline.config import RunConfig
from frugalzero.scale.runner import Runner

GAMES_PER_SHARD = 25  # small shards: a kill loses at most a few games


def finished(out: Path) -> tuple[int, int]:
    """(games, positions) already written under ``out``."""
    if not out.exists():
        return 0, 0
    infos = scan_shards([out])
    return sum(i.games for i in infos), sum(i.positions for i in infos)


def _writer(out: Path, games_per_shard: int = GAMES_PER_SHARD) -> ShardWriter:
    prefix = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"  # unique per session
    return ShardWriter(out, prefix, games_per_shard=games_per_shard)


def _seed(config: RunConfig, iteration: int, done: int) -> int:
    return config.seed * 1_000_003 + iteration * 10_007 + done


def game_ids(out: Path) -> list[str]:
    """The ids of the games written under ``out``."""
    ids: list[str] = []
    for info in scan_shards([out]) if out.exists() else []:
        ids.extend(str(game.get("g", "")) for game in read_columns(info.path)[1].games)
    return ids


def _with_id(record: GameRecord, prefix: str) -> GameRecord:
    return dataclasses.replace(record, game_id=prefix + record.game_id)


Progress = Callable[[int, int], None]  # (done, total)


def generate(
    config: RunConfig,
    out: Path,
    iteration: int,
    net_path: Path,
    net_id: str,
    nscl: float | None,
    progress: Progress,
    runner: Runner,
    temperature: float | None = None,
    spend: tuple[int, float] | None = None,
) -> dict[str, Any]:
    """Fill ``out`` with this iteration's data, the games and playouts played by ``runner``;
    returns the generator's report. ``spend``: (the network evaluations left to the run's
    budget, a game's mean cost so far): self-play's games end where the budget does."""
    row = method(config.method)
    if row.generator == "pgn":
        return _pgn(config, out, iteration)
    target = config.generate.steps if row.unit == "steps" else config.generate.games
    done, _ = finished(out)
    remaining = max(0, target - done)
    report: dict[str, Any] = {"resumed_with": done} if done else {}
    if row.generator == "sfgames":
        report |= _sfgames(config, runner, out, iteration, target, progress)
    elif row.generator == "selfplay":
        adapted = {"nscl": nscl, "temperature": temperature}
        report |= _selfplay(
            config, runner, out, net_path, iteration, target, adapted, progress, spend
        )
    elif remaining:
        seed = _seed(config, iteration, done)
        prefix = f"i{iteration}-r{done}-"
        if row.generator == "explore":
            report |= _explore(
                config,
                runner,
                out,
                net_path,
                net_id,
                remaining,
                seed,
                done,
                target,
                progress,
                prefix,
            )
    games, positions = finished(out)
    return report | {"games": games, "positions": positions}


def selfplay_config(config: RunConfig, nscl: float | None, temperature: float | None = None):
    """The self-play config of this run's method (contempt and gumbel set their search), at
    the run's adapted temperature when it has one."""
    search = config.selfplay.search
    if temperature is not None:
        search = dataclasses.replace(search, temperature=temperature)
    kind = method(config.method).search
    if kind == "gumbel":
        search = dataclasses.replace(search, gumbel=True)
    elif kind == "contempt":
        value = nscl if nscl is not None else search.nscl
        search = dataclasses.replace(search, nscl=value if value != float("inf") else 5.0)
    elif kind == "puct":
        search = dataclasses.replace(search, nscl=float("inf"), gumbel=False)
    openings = config.generate.openings or config.selfplay.openings
    return dataclasses.replace(config.selfplay, search=search, openings=openings)


def _selfplay(config, runner, out, net_path, iteration, target, adapted, progress, spend=None):
    """Games 0 .. target - 1 of this iteration that are not on disk yet (see the module); the
    statistics are those of every game of the iteration, read back from its shards. With
    ``spend`` (the evaluations left to the run's budget, and a game's mean cost so far) the
    games are those that fit in it, the last one cut (``pipeline.spend``)."""
    from frugalzero.expert.sfgames import game_number
    from frugalzero.pipeline.spend import SpendCut
    from frugalzero.selfplay.stats import selfplay_stats

    sp = dataclasses.replace(
        selfplay_config(config, adapted["nscl"], adapted["temperature"]),
        games=target,
        seed=_seed(config, iteration, 0),
    )
    prefix = f"i{iteration}-s{sp.seed}-g"  # + SelfPlayGame's own id, "s{seed}-g{number}"
    written = {game_number(prefix, g) for g in game_ids(out)}
    report: dict[str, Any] = {}
    if spend is None:
        numbers = [n for n in range(target) if n not in written]
        if numbers:
            shown = _shown(progress, target - len(numbers), target)
            report |= _play_games(runner, out, net_path, sp, iteration, numbers, shown, None)
    else:
        left, mean_cost = spend
        cut = SpendCut(left, _records(out))
        start = 0
        while not cut.reached and cut.games < target:  # rounds: one, but where the budget ends
            wanted = min(target - cut.games, cut.games_wanted(mean_cost))
            numbers = [n for n in range(start, start + wanted + len(written)) if n not in written]
            numbers = numbers[:wanted]
            start = numbers[-1] + 1
            before = cut.charged
            shown = _shown(progress, cut.games, min(target, cut.games + wanted))
            report |= _play_games(runner, out, net_path, sp, iteration, numbers, shown, cut)
            if cut.charged == before:  # games that cost nothing (none searched): never ends
                raise RuntimeError(f"{out}: {len(numbers)} games charged no evaluation")
        if cut.reached:
            report["budget_cut"] = True
    records = _records(out)
    stats = selfplay_stats(records)
    stats["nscl"] = sp.search.nscl
    stats["temperature"] = sp.search.temperature
    stats |= report
    evaluations = sum(int(r.extra.get("simulations", 0)) for r in records)
    return {"selfplay": stats, "evaluations": evaluations}


def _records(out: Path) -> list[GameRecord]:
    """The games written under ``out``, in the order they were written."""
    return [r for info in scan_shards([out]) for r in read_shard(info.path)] if out.exists() else []


def _shown(progress: Progress, offset: int, total: int) -> Progress:
    return lambda n, _: progress(offset + n, total)


def _play_games(runner, out, net_path, sp, iteration, numbers, progress, cut) -> dict[str, Any]:
    """Play the games ``numbers`` and write them in number order (those ``cut`` admits)."""
    from frugalzero.expert.sfgames import InOrder, game_number

    prefix = f"i{iteration}-s{sp.seed}-g"
    with _writer(out, games_per_shard=len(numbers) + 1) as writer:  # InOrder closes the shards

        def sink(record: GameRecord) -> None:
            kept = record if cut is None else cut.admit(record)
            if kept is not None:
                writer.add(kept)

        order = InOrder(sink, numbers, writer.flush, GAMES_PER_SHARD)

        def on_game(record: GameRecord) -> None:
            order.add(
                game_number(prefix, f"i{iteration}-{record.game_id}"),
                _with_id(record, f"i{iteration}-"),
            )

        def each(n: int) -> None:
            progress(n, len(numbers))

        run = runner.selfplay(net_path, sp, on_game, each, numbers=numbers)
        order.drain()  # games after one given up (Ray) are kept
    report: dict[str, Any] = {}
    report["simulations_per_s"] = round(run.simulations / max(run.seconds, 1e-9), 1)
    if "ray_workers" in run.extra:  # where the games were played (this session's)
        keys = ("ray_workers", "nodes", "worker_deaths", "replayed", "failed")
        report["ray"] = {k: run.extra[k] for k in keys if k in run.extra}
    return report


def _explore(
    config, runner, out, net_path, net_id, remaining, seed, done, target, progress, prefix
):
    from frugalzero.chess.positions import load_book
    from frugalzero.expert.explore import EpsExplore
    from frugalzero.nn.checkpoint import load_net

    ex = dataclasses.replace(config.explore, seed=seed)
    if config.generate.openings:
        ex = dataclasses.replace(ex, openings=config.generate.openings)
    openings = load_book(ex.openings) if ex.openings else None
    net, _ = load_net(net_path)
    started = time.perf_counter()
    with (
        runner.playout_pool(ex.engine, ex.workers) as pool,
        EpsExplore(net, ex, net_id, pool=pool, openings=openings) as run,
        _writer(out) as writer,
    ):
        stats = run.run(
            remaining,
            lambda record: writer.add(_with_id(record, prefix)),
            lambda s: progress(done + s.playouts, target),
        )
    elapsed = time.perf_counter() - started
    return {"labels": stats.labels, "labels_per_s": round(stats.labels / max(elapsed, 1e-9), 1)}


def _sfgames(config, runner, out, iteration, target, progress):
    """Games 0 .. target - 1 of this iteration that are not on disk yet (see the module)."""
    from frugalzero.chess.positions import load_book
    from frugalzero.expert.explore import label_playouts
    from frugalzero.expert.sfgames import InOrder, game_number, game_tasks

    sf = dataclasses.replace(config.sfgames, seed=_seed(config, iteration, 0))
    if config.generate.openings:
        sf = dataclasses.replace(sf, openings=config.generate.openings)
    prefix = f"i{iteration}-s"
    written = {game_number(prefix, g) for g in game_ids(out)}
    tasks = [
        t
        for t in game_tasks(sf, target, load_book(sf.openings) if sf.openings else None, prefix)
        if game_number(prefix, t.game_id) not in written
    ]
    if not tasks:
        return {}
    done = target - len(tasks)
    started = time.perf_counter()
    with (
        runner.playout_pool(sf.engine, sf.workers) as pool,
        _writer(out, games_per_shard=target + 1) as writer,  # InOrder closes the shards
    ):
        numbers = [game_number(prefix, t.game_id) for t in tasks]
        order = InOrder(writer.add, numbers, writer.flush, GAMES_PER_SHARD)
        stats = label_playouts(
            pool,
            tasks,
            lambda record: order.add(game_number(prefix, record.game_id), record),
            sf.queue,
            lambda s: progress(done + s.playouts, target),
            lambda task: order.skip(game_number(prefix, task.game_id)),
        )
    elapsed = time.perf_counter() - started
    return {"labels": stats.labels, "games_per_s": round(stats.playouts / max(elapsed, 1e-9), 2)}


def _pgn(config: RunConfig, out: Path, iteration: int) -> dict[str, Any]:
    """PGN data is imported once (first iteration); later iterations train on it again."""
    from frugalzero.data.importer import import_pgn

    if iteration > 1:
        return {"games": 0, "positions": 0, "note": "pgn data was imported in iteration 1"}
    partial = out.with_name(out.name + ".partial")
    if out.exists() and any(out.iterdir()):
        games, positions = finished(out)
        return {"games": games, "positions": positions}
    shutil.rmtree(partial, ignore_errors=True)  # an import cut short starts over
    report = import_pgn(
        config.generate.pgn, partial, min_elo=config.generate.pgn_min_elo, show_progress=False
    )
    if out.exists():
        out.rmdir()
    partial.rename(out)
    return {k: report[k] for k in ("games", "positions", "skipped") if k in report}
