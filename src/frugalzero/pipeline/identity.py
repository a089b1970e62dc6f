"""A run's identity: its ``config.toml``, written at the first start and never rewritten.

Every net, shard and match of a run was made with that config, so a resume reads it back and
refuses whatever would change it (a flag, ``--set``, a deleted or edited file) instead of
going on under other settings while the run's data says otherwise. Its SHA-256 is kept in
``state.json``, so an edit is noticed. The fields of ``OPERATIONAL`` say where the work runs,
not what it makes: a resumed session may set them for itself (the file keeps the first
value). A directory is a whole run (config.toml and state.json agreeing, the state's fields of
their types) or refused with one line saying what is missing and how to recover: never a
resume that guesses.
"""

from __future__ import annotations

import hashlib
import shlex
import tomllib
from collections.abc import Iterator
from typing import Any

from frugalzero.config import dump_toml, from_dict, load_config, parse_value, to_dict, toml_text
from frugalzero.errors import UserError
from frugalzero.layout import CLOCK, CONFIG, DATA, MATCHES, METRICS, NETS, STATE, TRAIN, RunLayout
from frugalzero.pipeline.config import RunConfig
from frugalzero.pipeline.inputs import check_inputs
from frugalzero.pipeline.state import RunState
from frugalzero.runtime.files import atomic_write_text

OPERATIONAL = ("ray",)
# what a run writes besides its config and state: present without state.json, the run's
# progress is unknown
_RUN_FILES = (DATA, NETS, TRAIN, MATCHES, METRICS, CLOCK)


def config_text(config: RunConfig) -> str:
    return dump_toml(to_dict(config))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def open_run(layout: RunLayout, config: RunConfig, preset: str | None = None) -> RunState:
    """The state of the run in ``layout`` for a session with ``config``: a new run's first
    state (its config.toml written first), or a stopped run's, after checking that
    ``config`` is the run's own. Anything else is a one-line UserError saying what to do.
    ``preset``: the preset ``config`` was asked for with (none: the run's own config.toml
    with changes), which a refusal's command for a new run starts from."""
    state = RunState.load(layout.root)
    if state is not None:
        _check_same(layout, config, state.config_sha256, preset)
        if not state.config_sha256:  # a run from before the hash was kept
            state.config_sha256 = digest(toml_text(layout.config))
        return state
    found = [name for name in _RUN_FILES if (layout.root / name).exists()]
    if layout.config.is_file():
        if found:  # it ran, and how far is unknown: replaying would cut and redo its work
            raise UserError(
                f"{layout.root}: holds a run's {_listed([CONFIG, *found])} but no {STATE}, so what "
                f"it did is unknown; restore {STATE} to resume, or start a new run from its "
                f"config: frugalzero run --config {layout.config} --dir NEW_DIR"
            )
        _check_same(layout, config, "", preset)  # stopped between its config and its state
        text = toml_text(layout.config)
    else:
        if found:
            raise UserError(
                f"{layout.root}: holds a run's {_listed(found)} but no {STATE} or {CONFIG}, so "
                "what it did is unknown; start a new run in another --dir"
            )
        check_inputs(config)
        text = config_text(config)
        atomic_write_text(layout.config, text)
    state = RunState(config_sha256=digest(text), metrics_lines=0)
    state.save(layout.root)
    return state


def _listed(names: list[str]) -> str:
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _check_same(layout: RunLayout, config: RunConfig, sha256: str, preset: str | None) -> None:
    path = layout.config
    if not path.is_file():
        raise UserError(
            f"{path}: missing, and it is what this run was made with; restore it to resume, "
            "or start a new run in another --dir"
        )
    text = toml_text(path)
    if sha256 and digest(text) != sha256:
        raise UserError(
            f"{path}: changed since the run started (its SHA-256 is not the one in {STATE}); "
            f"restore it to resume, or start a new run from it: frugalzero run --config {path} "
            "--dir NEW_DIR"
        )
    try:
        saved = from_dict(RunConfig, tomllib.loads(text), str(path))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: bad TOML ({exc})") from None
    changed = first_difference(to_dict(saved), to_dict(config))
    if changed is not None:
        key, old, new = changed
        start = (preset, load_config(RunConfig, preset)) if preset else (str(path), saved)
        raise UserError(
            f"{key}: this run was made with {_toml(old)}, and a resume keeps its {CONFIG} "
            f"(so not {_toml(new)}); for a run with it: {new_run_command(*start, config)}"
        )


def new_run_command(preset: str, base: RunConfig, config: RunConfig) -> str:
    """``frugalzero run`` of a new run with ``config``: ``preset`` (which gives ``base``) and a
    ``--set`` for each field where ``config`` differs from it, so the command builds what was
    asked for, whichever flags asked for it."""
    words = ["frugalzero", "run", "--config", _shell_word(preset)]
    for key, _, value in differences(to_dict(base), to_dict(config)):
        for name, leaf in _leaves(key, value):
            text = "none" if leaf is None else _toml(leaf)  # "none" is read back as None
            words += ["--set", _shell_word(f"{name}={text}", leaf)]
    return " ".join([*words, "--dir", "NEW_DIR"])


def _leaves(key: str, value: Any) -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of each value a table holds (``--set`` takes no table)."""
    if not isinstance(value, dict):
        yield key, value
        return
    for name, sub in value.items():
        yield from _leaves(f"{key}.{name}", sub)


def _shell_word(text: str, value: Any = None) -> str:
    """``text`` as one shell word: as it is where the shell leaves it one word that reads back
    as ``value`` (``net.arch="small"``), else quoted."""
    try:
        words = shlex.split(text)
    except ValueError:
        words = []
    if words == [text] or (
        value is not None and len(words) == 1 and parse_value(words[0].partition("=")[2]) == value
    ):
        return text
    return shlex.quote(text)


def differences(
    old: dict[str, Any], new: dict[str, Any], prefix: str = ""
) -> Iterator[tuple[str, Any, Any]]:
    """(dotted key, old value, new value) of each field that differs, in key order, leaving out
    the ``OPERATIONAL`` ones."""
    for key in sorted(set(old) | set(new)):
        name = f"{prefix}{key}"
        if name in OPERATIONAL:
            continue
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            yield from differences(a, b, f"{name}.")
        elif a != b:
            yield name, a, b


def first_difference(
    old: dict[str, Any], new: dict[str, Any], prefix: str = ""
) -> tuple[str, Any, Any] | None:
    """(dotted key, old value, new value) of the first field that differs, leaving out the
    ``OPERATIONAL`` ones; None when the configs are the same run."""
    return next(differences(old, new, prefix), None)


def _toml(value: Any) -> str:
    if value is None:
        return "(none)"
    return dump_toml({"v": value}).strip()[len("v = ") :]
