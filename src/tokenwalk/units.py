"""Field types that fix the unit and the kind of number of a result object's keys.

Byte counts and parameter counts are whole numbers in every result, whatever arithmetic
produced them (an expected share of experts, a quantized cache of 34/32 bytes per element):
such fields are declared `Bytes` or `Count`, which round a float to the nearest integer when
the object is built. `--json` therefore never prints `1.5e9` for one key and `1500000000`
for another.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BeforeValidator

__all__ = ["Bytes", "Count", "to_int"]


def to_int(value: Any) -> Any:
    """A finite float rounded to the nearest int (half to even); anything else unchanged, left
    to pydantic's own checks (which refuse nan, inf and strings that are not integers)."""
    if isinstance(value, float) and math.isfinite(value):
        return round(value)
    return value


Bytes = Annotated[int, BeforeValidator(to_int)]
"""A number of bytes: an int in every result object (rounded when computed as a float)."""

Count = Annotated[int, BeforeValidator(to_int)]
"""A count (parameters, tokens): an int in every result object (rounded when a float)."""
