"""The context-manager half that every closable resource shares: ``with x:`` ends in ``x.close()``."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["Closing"]


class Closing:
    """Mixin for a resource with ``close()``: ``__enter__`` returns it, ``__exit__`` closes it.

    A resource that acquires something on entry overrides ``__enter__``; ``close`` stays its own.
    """

    def __enter__(self) -> Self:
        """Nothing to acquire by default."""
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close, whether or not the block raised."""
        self.close()

    def close(self) -> None:
        """Release what the resource holds (each subclass says what)."""
        raise NotImplementedError
