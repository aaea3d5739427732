"""Typed parameter dataclasses from TOML tables and ``--set key=value`` strings."""

from __future__ import annotations

import dataclasses
import difflib
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from driftbench.errors import ConfigError, UnknownNameError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

P = TypeVar("P", bound="DataclassInstance")


def lookup(registry: Mapping[str, Any], name: str, kind: str) -> Any:
    """Return ``registry[name]`` or raise an error listing the valid names."""
    if not isinstance(name, str):
        raise UnknownNameError(f"{kind} must be a name (a string), got {name!r}; valid: {', '.join(sorted(registry))}")
    if name in registry:
        return registry[name]
    close = difflib.get_close_matches(name, list(registry), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownNameError(f"unknown {kind} {name!r}{hint}; valid: {', '.join(sorted(registry))}")


def catalog_files(directory: Path, kind: str) -> dict[str, Path]:
    """Names and paths of the ``*.toml`` files of a top-level catalog folder (``traces/``, ``methods/``)."""
    if not directory.is_dir():
        raise ConfigError(f"{kind} catalog {directory} not found; the installation is incomplete: reinstall driftbench")
    return {path.stem: path for path in sorted(directory.glob("*.toml"))}


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; a syntax error names the file and line."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


SET_KEY = re.compile(r"[\w-]+(\.[\w-]+)*")  # a --set key: a name, or names joined by dots (train.lr, source.classes)


def parse_sets(items: list[str]) -> dict[str, str]:
    """Split ``key=value`` strings from the command line into a dict.

    A value written as a TOML array or inline table, as claim and suite files write them, reads as
    it does there (``flat_sets``): ``quarter_turns=[0, 2]`` is ``quarter_turns=0,2``, and
    ``source={classes = 10}`` is ``source.classes=10``.
    """
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not SET_KEY.fullmatch(key.strip()):
            raise ConfigError(f"--set {item!r}: expected key=value, the key a name or a dotted name such as train.lr")
        out.update(flat_sets({key.strip(): toml_value(value.strip(), f"--set {key.strip()}")}))
    return out


def toml_value(text: str, where: str) -> Any:
    """``text`` as the TOML array or inline table it is written as (starting with ``[`` or ``{``), else ``text`` itself."""
    if not text.startswith(("[", "{")):
        return text
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{where}: {text!r} is not a TOML array or inline table ({exc}); write a list as [0, 2] or 0,2, "
            "a table as {classes = 10}"
        ) from None


def flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested table as ``prefix + dotted.key`` entries; lists and other values stay as they are."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def flat_sets(table: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """A TOML table of overrides as ``--set`` strings: ``train.lr = 0.1`` becomes ``{"train.lr": "0.1"}``."""
    return {key: set_text(value) for key, value in flatten(table, prefix).items()}


def set_text(value: Any) -> str:
    """A TOML value as a ``--set`` string: a list comma-separated, a boolean lower-case."""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def _field_type(cls: type, field: dataclasses.Field[Any]) -> Any:
    return typing.get_type_hints(cls)[field.name]


def _coerce(value: Any, typ: Any, where: str) -> Any:
    """Convert ``value`` (a TOML value or a --set string) to ``typ`` or raise."""
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(typ) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null", "")):
            return None
        return _coerce(value, args[0], where)
    if origin is tuple:
        (inner, _ellipsis) = typing.get_args(typ)
        if isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return tuple(_coerce(v, inner, where) for v in value)
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if typ in (int, float):
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected {typ.__name__}, got {value!r}")
        try:
            number = typ(value.strip() if isinstance(value, str) else value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected {typ.__name__}, got {value!r}") from None
        if typ is int and isinstance(value, float) and value != int(value):
            raise ConfigError(f"{where}: expected int, got {value!r}")
        return number
    if typ is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    raise TypeError(f"unsupported parameter type {typ!r}")


def build(cls: type[P], values: Mapping[str, Any], where: str, base: P | None = None) -> P:
    """Create dataclass ``cls`` from ``values`` over ``base`` (or defaults), checking names and types.

    ``where`` names the source (a file, a table, ``--set``) in error messages; range checks
    live in the dataclass's ``__post_init__`` and raise ``ConfigError`` themselves.
    """
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    if not isinstance(values, Mapping):
        raise ConfigError(f"{where}: expected a table of settings, got {values!r}")
    check_keys(values, fields, where)
    kwargs = dataclasses.asdict(base) if base is not None else {}
    for name, raw in values.items():
        kwargs[name] = _coerce(raw, _field_type(cls, fields[name]), f"{where}: {name}")
    try:
        return cls(**kwargs)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def check_keys(keys: Any, allowed: Any, where: str) -> None:
    """Raise ``ConfigError`` naming the first of ``keys`` that is not in ``allowed``."""
    unknown = sorted(set(keys) - set(allowed))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(allowed)) or '(none)'}")


TOML_TYPES: dict[type, str] = {str: "a string", dict: "a table", list: "an array"}


def check_types(raw: Mapping[str, Any], types: Mapping[str, type], where: str) -> None:
    """Raise ``ConfigError`` naming the first key of ``raw`` whose value is not of its TOML type in ``types``."""
    for key, typ in types.items():
        if key in raw and not isinstance(raw[key], typ):
            raise ConfigError(f"{where}: {key} must be {TOML_TYPES[typ]}, got {raw[key]!r}")


def check_table(raw: Mapping[str, Any], types: Mapping[str, type], where: str) -> None:
    """A TOML table holds only the keys of ``types``, each of its type."""
    check_keys(raw, types, where)
    check_types(raw, types, where)


def described(raw: Mapping[str, Any], path: Path, inherited: str = "") -> str:
    """A catalog TOML's one-line ``description`` (or the one its base gives it); none at all is a ConfigError."""
    description = raw.get("description") or inherited
    require(bool(description), f'{path}: no description; add a one-line description = "..." (shown by driftbench list)')
    return description


def require(condition: bool, message: str) -> None:
    """Raise ``ConfigError(message)`` unless ``condition`` holds."""
    if not condition:
        raise ConfigError(message)


def as_plain(obj: Any) -> Any:
    """A dataclass (or nested values) as JSON-ready dicts and lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {k: as_plain(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, Mapping):
        return {k: as_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [as_plain(v) for v in obj]
    return obj


# Field metadata of a parameter added after traces or runs were published: it enters a trace's info or a
# run's config only when set away from its default, so the records made before it keep their hash.
RECORDED_WHEN_SET = "recorded_when_set"


def recorded_params(params: DataclassInstance) -> dict[str, Any]:
    """``params`` as a record holds them: a ``RECORDED_WHEN_SET`` field only when it differs from its default."""
    plain: dict[str, Any] = as_plain(params)
    for f in dataclasses.fields(params):
        if f.metadata.get(RECORDED_WHEN_SET) and getattr(params, f.name) == f.default:
            del plain[f.name]
    return plain
