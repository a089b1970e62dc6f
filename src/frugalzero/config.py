"""Typed configs: dataclasses filled from TOML presets and ``key.sub=value`` overrides.

Loading is strict: an unknown key, a value of the wrong type or outside its field's range
(``bounded``) is a one-line error naming the file and the key (or the ``--set`` flag that gave
it), so a typo never silently runs the default and ``games = 1e100`` never starts a run that
cannot end. Every run writes its resolved config back as TOML (``dump_toml``) beside its
outputs.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import tomllib
import types
import typing
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from frugalzero.errors import UserError

T = TypeVar("T")

INT64 = (-(2**63), 2**63 - 1)
"""The range of an integer field that declares none: what the C++ core and NumPy can hold."""

BOM = "\ufeff"
"""The UTF-8 byte order mark some editors write first: text files we read accept it."""


def bounded(default: Any, low: float, high: float) -> Any:
    """A config field whose value must lie in ``[low, high]``: declared beside the field, checked
    wherever configs are (``from_dict`` for files and flags, ``check`` for configs built in
    Python), so a count like ``games`` can never be a 101-digit number."""
    return dataclasses.field(default=default, metadata={"range": (low, high)})


@dataclasses.dataclass(frozen=True)
class Given:
    """A value given on the command line (``--set KEY=VALUE`` or a generated flag): a bad one
    is blamed on ``flag``, not on the preset it overrides."""

    flag: str
    value: Any


def preset_path(name: str) -> Path:
    """A preset by name (``configs/NAME.toml`` shipped in the package) or a path to a TOML file."""
    path = Path(name)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise UserError(f"{path}: config file not found")
        return path
    shipped = Path(str(resources.files("frugalzero") / "configs" / f"{name}.toml"))
    if not shipped.is_file():
        raise UserError(f"unknown preset {name!r}; presets: {', '.join(list_presets())}")
    return shipped


def list_presets() -> list[str]:
    folder = resources.files("frugalzero") / "configs"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def toml_text(path: Path) -> str:
    """A TOML file's text (a byte order mark dropped); a binary file is one line naming it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return data.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a TOML file (it is not UTF-8 text)") from None


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(toml_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: bad TOML ({exc})") from None


def parse_override(text: str) -> tuple[list[str], Any]:
    """``a.b=value`` -> (['a', 'b'], value), the value read as TOML (bare words are strings)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise UserError(f"--set {text!r}: expected key=value")
    return [part.strip() for part in key.split(".")], parse_value(raw)


def parse_value(raw: str) -> Any:
    """A command-line value read as TOML (``inf``, ``[1, 2]``, ``true``); bare words are strings."""
    raw = raw.strip()
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def merge_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """``data`` with each ``--set`` value put in place, as a ``Given`` naming its flag."""
    for text in overrides:
        path, value = parse_override(text)
        node = data
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if isinstance(child, Given) and isinstance(child.value, dict):  # an earlier table
                child = node[part] = dict(child.value)
            node = child
            if not isinstance(node, dict):
                raise UserError(f"--set {text!r}: {part} is not a section")
        node[path[-1]] = Given(f"--set {'.'.join(path)}", value)
    return data


def plain_value(value: Any) -> Any:
    """``value`` with every ``Given`` replaced by what it holds (a table or a field of type
    ``Any`` keeps no record of where its values came from)."""
    if isinstance(value, Given):
        return plain_value(value.value)
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_value(v) for v in value]
    return value


def _coerce(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is Any:
        return plain_value(value)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            if type(None) in options:
                return None
        for option in options:
            if option is type(None):
                continue
            try:
                return _coerce(value, option, where)
            except UserError:
                continue
        raise UserError(f"{where}: {value!r} is not a {hint}")
    if origin is typing.Literal:
        if value not in typing.get_args(hint):
            options = ", ".join(repr(a) for a in typing.get_args(hint))
            raise UserError(f"{where}: {value!r} is not one of {options}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, list | tuple):
            raise UserError(f"{where}: expected a list, got {value!r}")
        args = typing.get_args(hint)
        item = args[0] if args else Any
        items = [_coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(value, dict):
            raise UserError(f"{where}: expected a table, got {value!r}")
        return plain_value(value)
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise UserError(f"{where}: expected a table, got {value!r}")
        return from_dict(hint, value, where)
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise UserError(f"{where}: expected true or false, got {value!r}")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise UserError(f"{where}: expected an integer, got {value!r}")
    if hint is float:
        if isinstance(value, str) and value.lower().lstrip("+-") in ("inf", "infinity"):
            return -math.inf if value.startswith("-") else math.inf
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise UserError(f"{where}: expected a number, got {value!r}")
    if hint is str:
        if isinstance(value, str):
            return value
        raise UserError(f"{where}: expected a string, got {value!r}")
    return value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def check(config: Any, section: str, checks: list[tuple[bool, str]] | None = None) -> None:
    """The validation of every config's ``__post_init__`` (a dataclass built in Python never
    passes through ``from_dict``): a value outside its ``Literal`` set, a number that is not
    finite (``_not_finite``), the first failed ``(ok, message)`` check, or a number outside
    its field's range (``bounded``), is a one-line UserError naming ``section``. A NaN comes
    first: ``nan < 0`` is false, so it would otherwise pass every range check."""
    fields = dataclasses.fields(config)
    for f in fields:
        hint = _hints(type(config)).get(f.name)
        value = getattr(config, f.name)
        if typing.get_origin(hint) is typing.Literal:
            allowed = typing.get_args(hint)
            if value not in allowed:
                options = ", ".join(repr(a) for a in allowed)
                raise UserError(f"{section}.{f.name}: {value!r} is not one of {options}")
        _not_finite(f, value, f"{section}.{f.name}")
    for ok, message in checks or []:
        if not ok:
            raise UserError(f"{section}: {message}")
    for f in fields:
        _out_of_range(f, getattr(config, f.name), f"{section}.{f.name}")


def from_dict(cls: type[T], data: dict[str, Any], where: str = "config") -> T:
    """Build dataclass ``cls`` from ``data``; unknown keys, bad types, numbers that are not
    finite or out of their field's range name their place (a ``Given`` value, its flag)."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    data = _without_removed(cls, data, where)
    unknown = sorted(set(data) - set(fields))
    if unknown:
        given = data[unknown[0]]
        place = given.flag if isinstance(given, Given) else where
        raise UserError(f"{place}: unknown key {unknown[0]!r} (known: {', '.join(sorted(fields))})")
    kwargs = {}
    for key, value in data.items():
        place = f"{where}.{key}"
        if isinstance(value, Given):
            place, value = value.flag, value.value
        kwargs[key] = value = _coerce(value, hints[key], place)
        _not_finite(fields[key], value, place)
        _out_of_range(fields[key], value, place)
    return cls(**kwargs)


def _without_removed(cls: type, data: dict[str, Any], where: str) -> dict[str, Any]:
    """``data`` without the keys ``cls`` no longer has (its ``REMOVED``: key -> (the value
    that still means what it meant, why the key went)). That value is dropped, so an older
    run's config loads as it ran; any other is a one-line UserError saying why it is gone,
    never a silent change of what the run does."""
    removed = getattr(cls, "REMOVED", {})
    gone = sorted(set(data) & set(removed))
    for key in gone:
        given = data[key]
        place, value = (given.flag, given.value) if isinstance(given, Given) else (where, given)
        kept, why = removed[key]
        if value != kept:
            raise UserError(f"{place}: {key} = {value!r} is no longer a setting: {why}")
    return {key: value for key, value in data.items() if key not in gone}


def _not_finite(f: dataclasses.Field, value: Any, where: str) -> None:
    """A UserError for a NaN anywhere in a field's value (lists included), or an infinity in
    a field whose default is not itself infinite (``search.nscl = inf`` means "off") nor
    marked ``infinite`` in its metadata (a rating of a net that lost every game)."""
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _not_finite(f, item, f"{where}[{i}]")
        return
    if not isinstance(value, float) or math.isfinite(value):
        return
    infinite_default = isinstance(f.default, float) and math.isinf(f.default)
    if math.isnan(value) or not (infinite_default or f.metadata.get("infinite")):
        raise UserError(f"{where}: {value!r} is not a finite number")


def _out_of_range(f: dataclasses.Field, value: Any, where: str) -> None:
    """A UserError for a number outside its field's ``bounded`` range (an integer field
    without one: outside ``INT64``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    low, high = f.metadata.get("range", INT64 if isinstance(value, int) else (None, None))
    if low is None or low <= value <= high:
        return
    raise UserError(
        f"{where}: {_number(value)} is out of range ({_number(low)} to {_number(high)})"
    )


def _number(value: float) -> str:
    if isinstance(value, int) and abs(value) < 10**12:
        return f"{value:,}"
    if isinstance(value, int) and abs(value) >= 10**300:  # past what a float holds
        return f"a {len(str(abs(value)))}-digit integer"
    return f"{value:.3g}"


def load_config(
    cls: type[T],
    preset: str | None = None,
    overrides: list[str] | None = None,
    base: dict[str, Any] | None = None,
) -> T:
    """Defaults <- preset file <- ``base`` (e.g. a run's saved config) <- ``--set`` overrides.
    An error in a value of ``base`` or ``overrides`` that came from a flag names the flag."""
    data: dict[str, Any] = {}
    where = "config"
    if preset:
        path = preset_path(preset)
        data = read_toml(path)
        where = str(path)
    if base:
        data = deep_merge(data, base)
    data = merge_overrides(data, list(overrides or []))
    return from_dict(cls, data, where)


def deep_merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """``a`` with ``b``'s values on top, tables merged key by key."""
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if math.isnan(value):
            return "nan"
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def dump_toml(data: dict[str, Any], comments: dict[str, str] | None = None) -> str:
    """TOML text for nested dicts of scalars and lists (None values are left out);
    ``comments`` maps dotted keys (``search.nscl``, or a section's ``search``) to text written
    as ``#`` lines above them."""
    lines: list[str] = []
    notes = comments or {}

    def comment(key: str) -> None:
        lines.extend(f"# {line}".rstrip() for line in notes.get(key, "").splitlines())

    def section(prefix: str, table: dict[str, Any]) -> None:
        scalars = {k: v for k, v in table.items() if not isinstance(v, dict) and v is not None}
        tables = {k: v for k, v in table.items() if isinstance(v, dict)}
        if prefix and (scalars or not tables):
            lines.append("")
            comment(prefix)
            lines.append(f"[{prefix}]")
        for key, value in scalars.items():
            comment(f"{prefix}.{key}" if prefix else key)
            bare = key.replace("_", "").replace("-", "").isalnum() and key.isascii()
            lines.append(f"{key if bare else _toml_value(key)} = {_toml_value(value)}")
        for key, sub in tables.items():
            section(f"{prefix}.{key}" if prefix else key, sub)

    section("", data)
    return "\n".join(lines).lstrip("\n") + "\n"
