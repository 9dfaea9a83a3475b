"""Dataset parameters given after a colon: ``NAME:key=value[,key=value]``."""

from __future__ import annotations

__all__ = ["DatasetParams", "parse_spec"]


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``"NAME:k=v,k2=v2"`` into ``("NAME", {"k": "v", "k2": "v2"})``."""
    name, _, rest = spec.partition(":")
    params: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"dataset parameter {item!r} in {spec!r} is not key=value")
        params[key.strip()] = value.strip()
    return name.strip(), params


class DatasetParams:
    """Typed access to the string parameters of one dataset spec.

    Each getter consumes its key; :meth:`finish` rejects keys no getter asked for,
    so a misspelt parameter is an error rather than silently ignored.
    """

    def __init__(self, dataset: str, raw: dict[str, str]) -> None:
        self.dataset = dataset
        self._raw = dict(raw)
        self._used: set[str] = set()

    def _take(self, key: str) -> str | None:
        self._used.add(key)
        return self._raw.get(key)

    def _fail(self, key: str, value: str, what: str) -> ValueError:
        return ValueError(f"dataset {self.dataset!r}: parameter {key}={value!r} must be {what}")

    def get_int(self, key: str, default: int, minimum: int | None = None) -> int:
        """An integer parameter (``>= minimum`` when given)."""
        value = self._take(key)
        if value is None:
            return default
        try:
            out = int(value)
        except ValueError:
            raise self._fail(key, value, "an integer") from None
        if minimum is not None and out < minimum:
            raise self._fail(key, value, f"an integer >= {minimum}")
        return out

    def get_float(self, key: str, default: float, positive: bool = False) -> float:
        """A float parameter (``> 0`` when ``positive``)."""
        value = self._take(key)
        if value is None:
            return default
        try:
            out = float(value)
        except ValueError:
            raise self._fail(key, value, "a number") from None
        if positive and not out > 0:
            raise self._fail(key, value, "a number > 0")
        return out

    def get_optional_float(self, key: str) -> float | None:
        """A float parameter without default (None when absent)."""
        value = self._take(key)
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            raise self._fail(key, value, "a number") from None

    def get_bool(self, key: str, default: bool) -> bool:
        """A boolean parameter (true/false, 1/0, yes/no)."""
        value = self._take(key)
        if value is None:
            return default
        if value.lower() in ("1", "true", "yes"):
            return True
        if value.lower() in ("0", "false", "no"):
            return False
        raise self._fail(key, value, "true or false")

    def finish(self) -> None:
        """Raise ``ValueError`` on parameters nobody asked for."""
        unknown = sorted(set(self._raw) - self._used)
        if unknown:
            known = ", ".join(sorted(self._used)) or "none"
            raise ValueError(
                f"unknown parameter(s) {', '.join(unknown)} for dataset {self.dataset!r}; "
                f"known: {known}"
            )
