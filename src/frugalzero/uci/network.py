"""The network the UCI engine searches with: started, and rebuilt when an option changes it,
in the background, so that neither ``readyok`` nor a search waits for inference processes.

Where the time went (2-core CPU, ``python -X importtime`` and timestamps): the engine's own
process is at ``uciok`` after ~0.3 s, imports torch in ~1.0-1.3 s and loads a shipped net in
0.03-0.2 s (with one torch thread: with two, the first copies waited 0.4-0.7 s on a busy
machine); each inference process then imports torch again, ~1.5 s of a core, and they were
started one after the other: ``readyok`` came 5-8 s after launch, and a ``Threads`` change
that changed their number stopped the next search for 3-5 s while they restarted.

So the engine is ready once the net runs in its own process (an *inline* evaluator, on a CPU
with two cores or more): its inference processes start after that, side by side
(``nn.server.start_servers``), and the first search that begins once they are ready takes
them over. A setting that needs other processes (``Threads`` changing their number, another
net or precision) is built the same way while the searches go on with the evaluator they have;
one the evaluator changes in place (its cache size, threads per process) applies at the next
search's start. ``Precision`` ``auto`` on a CPU is the precision stronger here under a clock
(``nn.choice``): read from the machine's cache, or the float net until a niced process has
timed int8 against it once, after which the builder switches if int8 is faster by enough.

Only the thread that searches touches the evaluator in use (it is not thread-safe); this
module's builder thread makes the next one, and replaced ones are closed in the background.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PARALLEL_BATCHES = 2  # batches one game's search keeps evaluating side by side on a CPU


def network_layout(threads: int, cores: int, cpu: bool) -> tuple[int, int]:
    """(inference processes, threads each) for the ``Threads`` option (0: every core).

    On a CPU, ``PARALLEL_BATCHES`` single-threaded processes run one game's small batches
    side by side with no threads to synchronise (one process with two threads runs them one
    after the other, and its threads spin whenever the search holds a core); more threads go
    to each process. A GPU gets one process."""
    if not cpu:
        return 1, max(1, threads)
    total = threads or cores
    servers = max(1, min(PARALLEL_BATCHES, total))
    return servers, max(1, total // servers)


@dataclass(frozen=True)
class NetSettings:
    """What the engine's evaluator is made from, as its options set it. Fields that change the
    network's answers (``ANSWERS``) also decide whether cached answers carry over."""

    net: str
    """A shipped net's name, ``default`` (the one stronger here under a clock) or a file."""
    threads: int = 0
    """``Threads``: the network's CPU threads in all (0: every core), ``network_layout``."""
    cache_size: int = 200_000
    """``NNCacheSize``: positions the evaluator remembers (applied in place)."""
    precision: str = "auto"
    """``Precision`` (``frugalzero uci --precision``): ``EvaluatorConfig.precision``; ``int8``
    runs compiled (``compile_for``)."""
    history_fill: str = "net"
    """``HistoryFill``: ``EvaluatorConfig.history_fill`` (``net``: the net's own rule)."""


LAYOUT = frozenset({"servers", "threads", "backend", "compile"})
"""``EvaluatorConfig`` fields the engine decides; every other one that ``NetSettings`` has
(``cache_size``, ``precision``, ``history_fill``) passes into it as it is."""
IN_PLACE = ("threads", "cache_size")
"""The settings an evaluator changes in place (``Evaluator.set_threads``, ``resize_cache``;
threads only where the number of inference processes stays): any other needs a rebuild."""
ANSWERS = ("net", "precision", "history_fill")
"""The settings that change what the network answers: an evaluator built with other values
starts with an empty cache (and on a CPU serves in-process first: ``EngineNetwork``)."""


def compile_for(precision: str) -> str:
    """The engine's ``EvaluatorConfig.compile`` for ``precision``: off (torch.compile would
    compile again for each new batch size, and costs seconds at every start), but on for int8,
    which is compiled ahead of time for any batch size and cached per machine and per net
    (``nn.int8_cache``): its second start loads it in milliseconds, and it searches 1.5-1.6x
    bf16's nodes/s."""
    return "on" if precision == "int8" else "off"


@dataclass
class _Built:
    """An evaluator and what it was built for: ``key`` says whether another one is needed."""

    evaluator: Any  # frugalzero.nn.evaluator.Evaluator
    key: tuple
    answers: tuple
    threads: int  # the Threads option it runs with now (changed in place where it can be)


class EngineNetwork:
    """The evaluator a UCI engine searches with (see the module's docstring).

    ``want(settings)`` (any thread) records new settings and wakes the builder; ``take()`` (the
    searching thread, at a search's start) returns the evaluator to search with: a newly built
    one if the builder has finished one, with the settings applied that need no rebuild.
    ``events`` lists what happened, in order, for tests and benchmarks: ``ready`` (the engine
    can search), ``start <key>`` / ``built <key>`` (the builder started / finished an
    evaluator), ``took <key>`` (a search's start swapped it in)."""

    def __init__(self, settings: NetSettings, batch: int) -> None:
        self._wanted = settings
        self._batch = batch  # the search's leaves per batch, for the default net's choice
        self._lock = threading.Condition()
        self._current: _Built | None = None  # in use: changed only by take()
        self._fresh: _Built | None = None  # built, not taken yet
        self._starting: list = []  # inference processes being started (killed at close)
        self._closing = False
        self._idle = False  # the builder has nothing to do
        self._closers: list[threading.Thread] = []
        self._ready = threading.Event()
        self._error: BaseException | None = None
        # spec -> (net, note, its file): the last one loaded
        self._nets: dict[str, tuple[Any, str | None, Path]] = {}
        self.problems: list[str] = []  # said by the searcher once each: failed builds, and
        # the precision chosen once int8 was timed
        self._precisions: dict[str, str] = {}  # net -> auto's precision (chosen once a net:
        # a Threads change keeps it, and so keeps its evaluator where the processes stay)
        self._precision_note: str | None = None
        self._probes: list[tuple[str, Any, int]] = []  # int8 to time: (net, path, threads),
        # one at a time once nothing is left to build
        self._prober: Any = None  # the timing process running (killed at close), and the
        self._timing: threading.Thread | None = None  # thread that waits for it
        self.events: list[str] = []
        self._net_note: str | None = None  # which net plays, and why (the default net's choice)
        self._builder = threading.Thread(target=self._run, name="uci-network", daemon=True)
        self._builder.start()

    # -- any thread -------------------------------------------------------------------------------
    def wait_ready(self) -> None:
        """Block until the engine can search; RuntimeError saying why if it cannot."""
        self._ready.wait()
        if self._error is not None:
            raise RuntimeError(
                f"network {self._wanted.net!r} could not be loaded: {self._error}"
            ) from None

    @property
    def settings(self) -> NetSettings:
        return self._wanted

    @property
    def note(self) -> str | None:
        """Which net and precision play, and why, where the engine chose them."""
        notes = [n for n in (self._net_note, self._precision_note) if n]
        return "; ".join(notes) or None

    def want(self, settings: NetSettings) -> None:
        """Use ``settings`` from the next search on (or as soon as they are built)."""
        with self._lock:
            self._wanted = settings
            self._idle = False
            self._lock.notify_all()

    @property
    def net(self):
        """The network in use (a ``PolicyValueNet``)."""
        self.wait_ready()
        return self._nets[self._current_answers()[0]][0]

    # -- the searching thread ---------------------------------------------------------------------
    def take(self):
        """The evaluator for the search about to start: never waits for a build."""
        self.wait_ready()
        with self._lock:
            fresh, self._fresh = self._fresh, None
            old = self._current
            if fresh is not None:
                self._current = fresh
                self.events.append(f"took {fresh.key}")
            current, wanted = self._current, self._wanted
        assert current is not None
        if fresh is not None and old is not None:
            if fresh.answers == old.answers:
                fresh.evaluator.take_caches(old.evaluator)
            self._close_later(old.evaluator)
        self._apply_in_place(current, wanted)
        return current.evaluator

    def settle(self):
        """Wait until the builder has made what the settings ask for (int8 timed first where
        it is being timed), then ``take`` it: for benchmarks and tests that measure the final
        layout, never in a search."""
        self.wait_ready()
        with self._lock:
            self._lock.wait_for(lambda: (self._idle and self._prober is None) or self._closing)
        return self.take()

    @property
    def evaluator(self):
        """The evaluator in use (the searching thread's, between searches)."""
        self.wait_ready()
        assert self._current is not None
        return self._current.evaluator

    def close(self) -> None:
        """Stop building (inference processes still starting are killed) and close every
        evaluator, waiting for them to end."""
        with self._lock:
            self._closing = True
            starting = list(self._starting)
            prober = self._prober
            self._lock.notify_all()
        for server in starting:
            server.kill()
        if prober is not None:
            prober.kill()
        self._builder.join()
        if self._timing is not None:
            self._timing.join()
        with self._lock:
            built = [b for b in (self._fresh, self._current) if b is not None]
            self._fresh = self._current = None
        for b in built:
            b.evaluator.close()
        for closer in self._closers:
            closer.join()

    # -- internals --------------------------------------------------------------------------------
    def _current_answers(self) -> tuple:
        with self._lock:
            assert self._current is not None
            return self._current.answers

    def _apply_in_place(self, current: _Built, wanted: NetSettings) -> None:
        """What changes without a rebuild: the cache's size, and the threads (per inference
        process where their number stays; all of them in-process)."""
        evaluator = current.evaluator
        if evaluator.config.cache_size != wanted.cache_size:
            evaluator.resize_cache(wanted.cache_size)
        if current.threads == wanted.threads:
            return
        if evaluator.backend == "inline":
            threads = wanted.threads
        else:
            servers, threads = network_layout(wanted.threads, self._cores, self._cpu)
            if servers != evaluator.config.servers:
                return  # the builder makes the processes it needs
        evaluator.set_threads(threads)
        current.threads = wanted.threads

    def _close_later(self, evaluator) -> None:
        closer = threading.Thread(target=evaluator.close, name="uci-network-close", daemon=True)
        closer.start()
        with self._lock:
            self._closers = [c for c in self._closers if c.is_alive()] + [closer]

    def _key(self, settings: NetSettings, inline: bool) -> tuple:
        """What an evaluator is built for: a setting not applied in place (``IN_PLACE``) that
        differs, or another number of inference processes, needs another one."""
        settings = self._resolved(settings)
        rest = tuple(v for k, v in dataclasses.asdict(settings).items() if k not in IN_PLACE)
        if inline:
            return ("inline", *rest)
        servers, _ = network_layout(settings.threads, self._cores, self._cpu)
        return ("process", servers, *rest)

    def _target(self) -> NetSettings | None:
        """Settings to build next (under the lock), or None when what is wanted is in use or
        built. A built evaluator that is no longer wanted, while the one in use is, is
        dropped."""
        wanted = self._key(self._wanted, inline=self._single)
        current = self._current.key if self._current is not None else None
        if self._fresh is not None and self._fresh.key != wanted and current == wanted:
            self._close_later(self._fresh.evaluator)
            self._fresh = None
        if wanted in (current, self._fresh.key if self._fresh is not None else None):
            return None
        return self._wanted

    def _run(self) -> None:
        try:
            self._start()
        except BaseException as exc:  # reported by wait_ready: the engine says why and stops
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        while True:
            with self._lock:
                while not self._closing and (settings := self._target()) is None:
                    if self._probes:
                        break
                    self._idle = True
                    self._lock.notify_all()
                    self._lock.wait()
                if self._closing:
                    return
                self._idle = False
                probe = self._probes.pop(0) if settings is None else None
            if probe is not None:
                self._time_int8(*probe)
                continue
            try:
                self._build(settings, inline=self._single)
            except Exception as exc:  # the searches go on with the evaluator they have
                with self._lock:
                    if self._closing:
                        return
                    failed = self._key(settings, inline=self._single)
                    self.problems.append(
                        f"the network for {settings} could not start ({exc}); the engine goes "
                        "on with the one it has"
                    )
                    self._idle = True  # and tries again when the settings change
                    self._lock.notify_all()
                    self._lock.wait_for(lambda key=failed: self._closing or self._changed(key))

    def _changed(self, key: tuple) -> bool:
        return self._key(self._wanted, inline=self._single) != key

    def _start(self) -> None:
        """Imports, the device, the net, and the first evaluator: in-process on a CPU with
        two cores or more (the inference processes follow), else the evaluator itself."""
        import torch  # noqa: F401 - the long import, timed here in the module's docstring

        from frugalzero.runtime.cores import available_cores
        from frugalzero.runtime.device import resolve_device, set_threads

        device = resolve_device("auto", "uci")
        self._device = str(device)
        self._cpu = device.type == "cpu"
        self._cores = available_cores()
        self._single = self._cpu and self._cores < 2  # where the evaluator is always inline
        self._bridge = self._cpu and not self._single  # in-process until the processes start
        set_threads(1, device)  # loading: one thread copies a net fastest on a busy machine
        self._build(self._wanted, inline=self._cpu)
        with self._lock:
            self._current, self._fresh = self._fresh, None
        self.events.append("ready")

    def _build(self, settings: NetSettings, inline: bool) -> None:
        """An evaluator for ``settings``, left for the next search to take; on a CPU a new
        net or precision is first served in-process while its inference processes start."""
        from frugalzero.nn.evaluator import Evaluator, EvaluatorConfig

        net, note, path = self._load(settings.net)
        settings = self._choose_precision(settings, path)
        servers, per_server = network_layout(settings.threads, self._cores, self._cpu)
        passed = {f.name for f in dataclasses.fields(EvaluatorConfig)} - LAYOUT
        config = EvaluatorConfig(  # single-game batches vary in size: compiling costs more
            compile=compile_for(settings.precision),
            servers=servers,
            threads=settings.threads if inline else per_server,
            backend="inline" if inline else "auto",
            **{k: v for k, v in dataclasses.asdict(settings).items() if k in passed},
        )
        key = self._key(settings, inline)
        answers = tuple(getattr(settings, name) for name in ANSWERS)
        with self._lock:
            newest = self._fresh or self._current
        if not inline and self._bridge and newest is not None and newest.answers != answers:
            self._build(settings, inline=True)  # other answers: served in-process meanwhile
        self.events.append(f"start {key}")
        try:
            evaluator = Evaluator(net, config, spawned=self._spawned)
        finally:
            with self._lock:
                self._starting = []
        if not inline:  # in-process, the first search pays it: readyok comes sooner
            try:
                _warm(evaluator, self._batch)
            except BaseException:
                evaluator.close()
                raise
        with self._lock:
            stale, self._fresh = self._fresh, _Built(evaluator, key, answers, settings.threads)
            self._net_note = note
            self.events.append(f"built {key}")
        if stale is not None:
            self._close_later(stale.evaluator)

    def _spawned(self, servers: list) -> None:
        with self._lock:
            self._starting = list(servers)
            closing = self._closing
        if closing:
            for server in servers:
                server.kill()

    def _load(self, spec: str) -> tuple[Any, str | None, Path]:
        """The net ``spec`` names, the note on its choice and its file (the last one loaded is
        kept: a new layout reloads nothing)."""
        if spec in self._nets:
            return self._nets[spec]
        from frugalzero.nn.checkpoint import load_net
        from frugalzero.nn.evaluator import EvaluatorConfig
        from frugalzero.nn.shipped import DEFAULT_NET, resolve_net_path

        name, note = spec, None
        if spec == DEFAULT_NET:  # the shipped net that is stronger here under a clock
            from frugalzero.nn.choice import clock_net

            servers, per_server = network_layout(self._wanted.threads, self._cores, self._cpu)
            config = EvaluatorConfig(compile="off", servers=servers, threads=per_server)
            choice = clock_net(self._device, per_server, self._batch, config)
            name, note = choice.net, choice.describe()
        path = resolve_net_path(name)
        net, _ = load_net(path)
        with self._lock:  # kept: the nets in use or built, and this one
            used = {b.answers[0] for b in (self._current, self._fresh) if b is not None}
            self._nets = {k: v for k, v in self._nets.items() if k in used}
            self._nets[spec] = (net, note, path)
        return net, note, path

    def _resolved(self, settings: NetSettings) -> NetSettings:
        """``settings`` with ``auto`` as the precision chosen for its net, once chosen
        (``_choose_precision``); as they are elsewhere."""
        chosen = self._precisions.get(settings.net)
        if settings.precision != "auto" or chosen is None:
            return settings
        return dataclasses.replace(settings, precision=chosen)

    def _choose_precision(self, settings: NetSettings, path: Path) -> NetSettings:
        """``auto`` made concrete on a CPU for a shipped net (int8's play was measured for
        them only; ``path`` its file): the precision measured stronger here for this net at
        the threads it first runs with (``nn.choice``, from the cache), else the float one
        ``auto`` means, with int8 queued for timing where it can run (torchao, a C++ compiler,
        and ``$FRUGALZERO_INT8_TIMING`` not ``off``). Any other net: the float one."""
        if settings.precision != "auto" or not self._cpu:
            return settings
        memo = settings.net
        if memo not in self._precisions:
            import torch

            from frugalzero.nn.choice import cached_precision
            from frugalzero.nn.shipped import SHIPPED_NETS
            from frugalzero.runtime.device import resolve_precision

            shipped = settings.net in SHIPPED_NETS
            _, threads = network_layout(settings.threads, self._cores, self._cpu)
            choice = cached_precision(path, threads, self._batch) if shipped else None
            if choice is not None:
                precision, note = choice.precision, choice.describe()
            else:
                precision, _ = resolve_precision("auto", torch.device("cpu"))
                note = None  # nothing chosen: auto is what it always was
                if shipped and _int8_can_run():
                    self._probes.append((memo, path, threads))
                    note = (
                        f"precision {precision} until int8 is timed on this machine (once, in "
                        "the background)"
                    )
            with self._lock:
                self._precisions[memo] = precision
                self._precision_note = note
        return self._resolved(settings)

    def _time_int8(self, memo: str, path, threads: int) -> None:
        """Start timing int8 against the float net in a niced process of its own (the compile
        holds a core for 16-85 s once per machine and net), waited for by a thread of its own
        so that the builder goes on building what options ask for meanwhile."""
        from frugalzero.nn.choice import probe_precision

        process = probe_precision(path, threads, self._batch)
        timing = threading.Thread(
            target=self._timed, args=(process, memo, path, threads), name="uci-int8-timing"
        )
        with self._lock:
            if self._closing:
                process.kill()
            self._prober, self._timing = process, timing
        timing.start()

    def _timed(self, process, memo: str, path, threads: int) -> None:
        """The timing's end: the choice it cached, said once, and the builder woken to build
        int8 where it plays (taken by the first search after it is built)."""
        from frugalzero.nn.choice import cached_precision

        _, err = process.communicate()
        choice = cached_precision(path, threads, self._batch)
        with self._lock:
            self._prober = None
            if not self._closing:
                if choice is None:
                    why = (err.strip().splitlines() or ["no figures"])[-1]
                    self.problems.append(f"int8 could not be timed here ({why}); auto stays float")
                else:
                    choice = dataclasses.replace(choice, cached=False)  # timed by this engine
                    self._precisions[memo] = choice.precision
                    self._precision_note = choice.describe()
                    self.problems.append(choice.describe())
                    self._idle = False  # settle() waits for what the builder makes of it
            self._lock.notify_all()


def _warm(evaluator, rows: int) -> None:
    """One batch of ``rows`` positions through each of ``evaluator``'s networks before a
    search gets it: a network's first call of a batch size sets up its kernels (oneDNN
    primitives, 0.1-0.3 s measured), which would otherwise land in that search's time."""
    import chess

    from frugalzero.chess.history import net_input_from_board
    from frugalzero.nn.evaluator import pack_inputs

    batch = pack_inputs([net_input_from_board(chess.Board())] * rows)
    pending = [evaluator.submit_rows(*batch) for _ in range(len(evaluator.server_pids()) or 1)]
    for answer in pending:
        answer.result()


INT8_TIMING = "FRUGALZERO_INT8_TIMING"
"""``off`` keeps ``auto`` from timing int8 in the background (tests, machines where a compile
in the background is unwelcome): it plays the float net unless the cache says otherwise."""


def _int8_can_run() -> bool:
    """Whether int8 may be timed here: torchao installed (a dependency, but an install may
    lack it: no doomed process then), a C++ compiler for its package, and
    ``$FRUGALZERO_INT8_TIMING`` not ``off``."""
    import importlib.util
    import os

    import torch

    from frugalzero.runtime.device import can_compile

    if os.environ.get(INT8_TIMING, "on") == "off":
        return False
    return importlib.util.find_spec("torchao") is not None and can_compile(torch.device("cpu"))
