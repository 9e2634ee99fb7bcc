"""Reading ``world.yaml``: a mapping reader whose errors name the file and the field path."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from r2s2r_sim.errors import WorldError

_T = TypeVar("_T")


def check(cond: bool, field: str, msg: str) -> None:
    """Raise a WorldError naming ``field`` unless ``cond`` holds."""
    if not cond:
        raise WorldError(f"{field}: {msg}")


def check_range(value: tuple[float, float], field: str, *, ordered: bool = True) -> None:
    """A finite [low, high] range (``ordered``), or two finite ends that differ."""
    check(all(math.isfinite(v) for v in value), field, f"must be finite, got {list(value)}")
    if ordered:
        check(value[0] < value[1], field, f"must be [low, high] with low < high, got {list(value)}")
    else:
        check(value[0] != value[1], field, f"the two ends must differ, got {list(value)}")


class Reader:
    """Reads one YAML mapping with field-path aware errors."""

    def __init__(self, data: Any, where: str, path: str) -> None:
        self.where = where  # the world.yaml path, for messages
        self.path = path  # dotted field path of this mapping ('' at top level)
        if not isinstance(data, Mapping):
            raise WorldError(
                f"{where}: {path or '<top level>'}: must be a mapping, got {type(data).__name__}"
            )
        self.data: Mapping[str, Any] = data
        self.used: set[str] = set()

    def field(self, key: str) -> str:
        """The dotted path of ``key`` in this mapping, for messages."""
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: str, msg: str) -> WorldError:
        """A WorldError naming the file and the field of ``key``."""
        return WorldError(f"{self.where}: {self.field(key)}: {msg}")

    def has(self, key: str) -> bool:
        """Whether ``key`` is present with a value (``null`` counts as absent)."""
        return key in self.data and self.data[key] is not None

    def raw(self, key: str, *, required: bool) -> Any:
        """The value at ``key`` unchecked (marked used); None when absent and not required."""
        self.used.add(key)
        if key not in self.data or self.data[key] is None:
            if required:
                raise self.fail(key, "required field is missing")
            return None
        return self.data[key]

    def _of_type(self, key: str, kind: type, expected: str, *, required: bool, default: Any) -> Any:
        """The value at ``key`` if it is a ``kind``, ``default`` when absent; ``expected`` opens the error."""
        value = self.raw(key, required=required)
        if value is None:
            return default
        if not isinstance(value, kind):
            got = f"{type(value).__name__} {value!r}" if kind is str else repr(value)
            raise self.fail(key, f"must be {expected}, got {got}")
        return value

    def str_(self, key: str, *, required: bool = True, default: str | None = None) -> str | None:
        """A string field."""
        return self._of_type(key, str, "a string", required=required, default=default)

    def float_(self, key: str, *, required: bool = True, default: float | None = None) -> float | None:
        """A finite number field (integers accepted, booleans not)."""
        value = self.raw(key, required=required)
        if value is None:
            return default
        return _to_float(value, lambda msg: self.fail(key, msg))

    def int_(self, key: str) -> int:
        """A required integer field (booleans refused)."""
        value = self.raw(key, required=True)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"must be an integer, got {type(value).__name__} {value!r}")
        return value

    def bool_(self, key: str, *, default: bool) -> bool:
        """An optional true/false field."""
        return self._of_type(key, bool, "true or false", required=False, default=default)

    def floats(self, key: str, n: int | None, *, required: bool = True) -> tuple[float, ...] | None:
        """A list of finite numbers, of length ``n`` unless None."""
        value = self.raw(key, required=required)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.fail(key, f"must be a list of numbers, got {type(value).__name__} {value!r}")
        if n is not None and len(value) != n:
            raise self.fail(key, f"must have {n} numbers, got {len(value)}")
        result = []
        for i, v in enumerate(value):
            item = f"{self.field(key)}[{i}]"

            def fail(msg: str, item: str = item) -> WorldError:
                return WorldError(f"{self.where}: {item}: {msg}")

            result.append(_to_float(v, fail))
        return tuple(result)

    def strs(self, key: str, *, required: bool = True) -> tuple[str, ...] | None:
        """A list of non-empty strings."""
        value = self.raw(key, required=required)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.fail(key, f"must be a list of strings, got {type(value).__name__} {value!r}")
        for i, v in enumerate(value):
            if not isinstance(v, str) or not v:
                raise WorldError(
                    f"{self.where}: {self.field(key)}[{i}]: must be a non-empty string, got {v!r}"
                )
        return tuple(value)

    def sub(self, key: str, *, required: bool = True) -> Reader | None:
        """A nested mapping, read with this file's name and the field path extended."""
        value = self.raw(key, required=required)
        if value is None:
            return None
        return Reader(value, self.where, self.field(key))

    def finish(self) -> None:
        """Refuse keys this reader never asked for, naming the allowed ones."""
        unknown = sorted(set(self.data) - self.used, key=str)
        if unknown:
            raise WorldError(
                f"{self.where}: {self.path or '<top level>'}: unknown key(s) {unknown} "
                f"(allowed: {sorted(self.used)})"
            )

    def build(self, cls: Callable[..., _T], **kwargs: Any) -> _T:
        """Construct a config dataclass, prefixing its validation errors with file and field."""
        self.finish()
        try:
            return cls(**kwargs)
        except WorldError as err:
            prefix = f"{self.path}." if self.path else ""
            raise WorldError(f"{self.where}: {prefix}{err}") from None


def _to_float(value: Any, fail: Callable[[str], WorldError]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(f"must be a number, got {type(value).__name__} {value!r}")
    result = float(value)
    if not math.isfinite(result):
        raise fail(f"must be finite, got {value!r}")
    return result


def read_pair(reader: Reader, key: str, *, required: bool = True) -> tuple[float, float] | None:
    """A two-number list as a tuple, e.g. a [low, high] range."""
    value = reader.floats(key, 2, required=required)
    return None if value is None else (value[0], value[1])


def resolve_file(reader: Reader, key: str, base: Path, world_dir: Path, allow_external: bool) -> Path:
    """A file path relative to ``base``, kept inside ``world_dir`` unless ``allow_external``."""
    rel = reader.str_(key)
    assert rel is not None  # required=True
    candidate = Path(rel)
    if candidate.is_absolute() and not allow_external:
        raise reader.fail(key, f"absolute path {rel!r} not allowed (paths are relative to {world_dir})")
    resolved = (base / candidate).resolve()
    if not allow_external and not resolved.is_relative_to(world_dir.resolve()):
        raise reader.fail(
            key, f"path {rel!r} escapes the world folder {world_dir} (set allow_external_paths only in tests)"
        )
    if not resolved.is_file():
        raise reader.fail(key, f"file {rel!r} not found (looked for {resolved})")
    return resolved
