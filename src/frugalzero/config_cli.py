"""Config dataclasses on the command line: one flag per field, its help the field's docstring.

A ~100-line helper over argparse rather than a dependency (tyro does this, but costs a package
the brief keeps off the list). Every config command resolves its settings the same way:
defaults <- preset (``--config``) <- generated flags <- ``--set KEY=VALUE``. Also the command
``frugalzero config show``, which prints a resolved RunConfig as commented TOML; it lives here
because it is the same docstrings put to a second use.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import importlib
import inspect
import textwrap
import types
import typing
from typing import Any

from frugalzero.config import Given, deep_merge, dump_toml, load_config, parse_value, to_dict

PRECEDENCE = (
    "Settings resolve as: defaults <- preset (--config) <- flags <- --set KEY=VALUE "
    "(later wins; --set is TOML, e.g. --set search.nscl=inf)."
)
_DEST = "config_flag:"


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Each field's attribute docstring (the string literal written right after the field)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__[:-1]):
        if not dataclasses.is_dataclass(klass):
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body  # type: ignore[attr-defined]
        for node, after in zip(body, body[1:]):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _fields(cls: type, prefix: str = "") -> typing.Iterator[tuple[str, Any, Any, type]]:
    """(dotted name, type, default, owner class) of every field, nested dataclasses flattened."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]
        if dataclasses.is_dataclass(hint):
            yield from _fields(hint, f"{prefix}{f.name}.")  # type: ignore[arg-type]
        else:
            yield f"{prefix}{f.name}", hint, default, cls


def _flag_kwargs(hint: Any) -> dict[str, Any] | None:
    """How argparse reads one field, or None for a field left to ``--set`` (an optional table)."""
    origin = typing.get_origin(hint)
    if hint is bool:
        return {"action": argparse.BooleanOptionalAction}
    if origin is typing.Literal:
        choices = typing.get_args(hint)
        return {"choices": choices, "type": type(choices[0])}
    if origin in (typing.Union, types.UnionType):
        if any(dataclasses.is_dataclass(a) for a in typing.get_args(hint)):
            return None
        return {"type": parse_value, "metavar": "TOML"}
    if hint in (int, float, str):
        return {"type": hint, "metavar": hint.__name__.upper()}
    return {"type": parse_value, "metavar": "TOML"}


class CommandParser(argparse.ArgumentParser):
    """A command's parser whose config flags are added when that command is parsed: config
    modules import torch, and ``frugalzero --help`` should not wait for it."""

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        pending = self.__dict__.setdefault("pending", [])
        while pending:
            pending.pop()()
        return super().parse_known_args(args, namespace)


def add_config_flags(
    parser: argparse.ArgumentParser,
    cls: str,
    aliases: dict[str, tuple[str, ...]] | None = None,
    exclusive: tuple[tuple[str, ...], ...] = (),
    skip: tuple[str, ...] = (),
    config_aliases: tuple[str, ...] = (),
) -> None:
    """``--config``, ``--set`` and one flag per field of config class ``cls`` ('module:Class'),
    such as ``--search.c-init``, each defaulting to "not given". ``aliases`` maps a field to
    the short flags it also answers to; a field of an ``exclusive`` tuple given on the command
    line zeroes the others of its tuple (an engine limit given there is the only one)."""
    parser.epilog = f"{parser.epilog}\n\n{PRECEDENCE}" if parser.epilog else PRECEDENCE
    parser.add_argument(
        "--config", *config_aliases, metavar="PRESET_OR_TOML", help="preset name or TOML file"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any setting, e.g. --set search.simulations=200 (repeatable)",
    )
    add = functools.partial(_add_fields, parser, cls, aliases or {}, exclusive, skip)
    if isinstance(parser, CommandParser):
        parser.__dict__.setdefault("pending", []).append(add)
    else:
        add()


def _add_fields(
    parser: argparse.ArgumentParser,
    path: str,
    aliases: dict[str, tuple[str, ...]],
    exclusive: tuple[tuple[str, ...], ...],
    skip: tuple[str, ...],
) -> None:
    module, _, name = path.partition(":")
    cls = getattr(importlib.import_module(module), name)
    groups: dict[str, argparse._ArgumentGroup] = {}
    exclusive_groups = {name: group for group in exclusive for name in group}
    mutex: dict[tuple[str, ...], argparse._MutuallyExclusiveGroup] = {}
    for name, hint, default, owner in _fields(cls):
        kwargs = _flag_kwargs(hint)
        if kwargs is None or name in skip:
            continue
        section = name.rpartition(".")[0]
        if section not in groups:
            title = f"[{section}]" if section else f"{cls.__name__} settings"
            groups[section] = parser.add_argument_group(title, (owner.__doc__ or "").split("\n")[0])
        target: Any = groups[section]
        if name in exclusive_groups:
            key = exclusive_groups[name]
            if key not in mutex:
                mutex[key] = groups[section].add_mutually_exclusive_group()
            target = mutex[key]
        doc = field_docs(owner).get(name.rpartition(".")[2], "").replace("%", "%%")
        shown = "''" if default == "" else default
        target.add_argument(
            f"--{name.replace('_', '-')}",
            *aliases.get(name, ()),
            dest=_DEST + name,
            default=None,
            help=f"{doc} (default: {shown})".replace("\n", " "),
            **kwargs,
        )
    parser.set_defaults(config_class=cls, config_exclusive=exclusive)


def flag_values(args: argparse.Namespace) -> dict[str, Any]:
    """The generated flags that were given, as a nested table of ``Given`` values (an error
    in one names its flag)."""
    given = {
        key[len(_DEST) :]: value
        for key, value in vars(args).items()
        if key.startswith(_DEST) and value is not None
    }
    for group in getattr(args, "config_exclusive", ()):
        if any(name in given for name in group):
            given.update({name: 0 for name in group if name not in given})
    table: dict[str, Any] = {}
    for name, value in given.items():
        *parents, leaf = name.split(".")
        node = table
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = Given(f"--{name.replace('_', '-')}", value)
    return table


def config_from_args(args: argparse.Namespace, under: dict[str, Any] | None = None):
    """The command's config: defaults <- preset <- ``under`` <- flags <- ``--set``."""
    base = deep_merge(under or {}, flag_values(args))
    return load_config(args.config_class, args.config, args.set, base)


def field_comments(cls: type, prefix: str = "") -> dict[str, str]:
    """Docstrings by dotted key, for ``dump_toml(..., comments=...)``."""
    notes: dict[str, str] = {}
    hints = typing.get_type_hints(cls)
    for name, doc in field_docs(cls).items():
        notes[prefix + name] = doc
        if dataclasses.is_dataclass(hints.get(name)):
            notes.update(field_comments(hints[name], f"{prefix}{name}."))
    return notes


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("config", help="show a resolved run config")
    commands = parser.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    show = commands.add_parser(
        "show",
        help="print a preset (or the defaults), resolved, as commented TOML",
        description="Print the RunConfig that `frugalzero run --config PRESET` would use, every "
        "field with its documentation. The output is itself a config file for --config.",
    )
    show.add_argument(
        "preset",
        nargs="?",
        metavar="PRESET_OR_TOML",
        help="a preset name or TOML file (none: the defaults)",
    )
    show.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a setting"
    )
    show.set_defaults(handler=_show)


def show_config(config: Any) -> str:
    """``config`` as TOML, each field's docstring as comments above it."""
    cls = type(config)
    head = "".join(f"# {line}\n".replace("# \n", "#\n") for line in (cls.__doc__ or "").split("\n"))
    return head + "\n" + dump_toml(to_dict(config), field_comments(cls))


def _show(args: argparse.Namespace) -> int:
    from frugalzero.pipeline.config import RunConfig

    print(show_config(load_config(RunConfig, args.preset, args.set)), end="")
    return 0
