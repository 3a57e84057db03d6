"""Sizes and durations as people write them ("16GB", "2s") and as the daemon prints them."""

import re
from typing import Optional, Union


# Sizes and durations: the rule of base/include/ramguard/base/units.hpp, held to the same cases
# (tests/data/units_cases.tsv). Decimal units are powers of 1000 (16GB = 16e9 bytes), binary
# units powers of 1024 (16GiB = 16 x 2**30); Kubernetes' k M G T and Ki Mi Gi Ti are aliases of
# kB MB GB TB and KiB MiB GiB TiB; case-sensitive; anything else is refused.

_SIZE_UNITS = {
    "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "KiB": 1024.0, "MiB": 1048576.0, "GiB": 1073741824.0, "TiB": 1099511627776.0,
    # Kubernetes quantity suffixes, so a pod spec's "16Gi" or "16G" can be pasted as it is.
    "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
    "Ki": 1024.0, "Mi": 1048576.0, "Gi": 1073741824.0, "Ti": 1099511627776.0,
}
_SIZE_ALLOWED = ("expected plain bytes or a number with kB, MB, GB, TB, KiB, MiB, GiB, TiB "
                 "(or the Kubernetes forms k, M, G, T, Ki, Mi, Gi, Ti)")
MAX_SIZE_BYTES = 2**63 - 1  # sizes are int64 in the daemon and its ledger
# Nanoseconds per unit: one float multiplication, as in C++, so both round alike.
_DURATION_UNITS = {"ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}
_DURATION_ALLOWED = "expected a number with ms, s, m or h (for example 2s or 500ms)"
MAX_DURATION_SECONDS = 10**9
# Digits with an optional fraction, then the rest; spaces or tabs around either.
_NUMBER_RE = re.compile(r"[ \t]*([0-9]+(?:\.[0-9]+)?)[ \t]*(.*?)[ \t]*\Z", re.DOTALL)


def _round_half_away(x: float) -> int:
    """C's round() for x >= 0 (Python's round() goes to even: 0.5 -> 0, where C gives 1)."""
    whole = float(int(x))
    return int(whole) + (1 if x - whole >= 0.5 else 0)


def parse_size(text: Union[int, str]) -> int:
    """"16GB" -> 16_000_000_000, "16GiB" -> 17_179_869_184, "123" -> 123 (plain bytes); "16G" and
    "16Gi" (Kubernetes) are "16GB" and "16GiB"; an int is taken as bytes. Fractions need a unit ("2.5GB"); at most MAX_SIZE_BYTES. Anything else is a
    ValueError whose message names the text."""
    if isinstance(text, bool):
        raise ValueError(f"invalid size {text!r}")
    if isinstance(text, int):
        if text < 0 or text > MAX_SIZE_BYTES:
            raise ValueError(f"invalid size {text!r}: out of range 0 to {MAX_SIZE_BYTES}")
        return text
    text = str(text)
    invalid = f"invalid size '{text}'; "
    too_large = invalid + f"too large (at most {MAX_SIZE_BYTES} bytes)"
    match = _NUMBER_RE.match(text)
    if not match:
        raise ValueError(invalid + _SIZE_ALLOWED)
    number, unit = match.groups()
    if not unit:
        if "." in number:
            raise ValueError(invalid + "plain bytes are a whole number; fractions need a unit")
        if int(number) > MAX_SIZE_BYTES:
            raise ValueError(too_large)
        return int(number)
    if unit not in _SIZE_UNITS:
        raise ValueError(invalid + _SIZE_ALLOWED)
    product = float(number) * _SIZE_UNITS[unit]
    if not product < 2.0**63:
        raise ValueError(too_large)
    size = _round_half_away(product)
    if size > MAX_SIZE_BYTES:
        raise ValueError(too_large)
    return size


def parse_duration_ns(text: str) -> int:
    """"500ms" -> 500_000_000, "2s", "1.5m", "1h": nanoseconds. A bare number is a ValueError (a
    duration without a unit is ambiguous), as is anything else; the message names the text."""
    text = str(text)
    invalid = f"invalid duration '{text}'; "
    match = _NUMBER_RE.match(text)
    if not match or match.group(2) not in _DURATION_UNITS:
        raise ValueError(invalid + _DURATION_ALLOWED)
    number, unit = match.groups()
    ns = float(number) * _DURATION_UNITS[unit]
    if not ns <= MAX_DURATION_SECONDS * 1e9:
        raise ValueError(invalid + f"too long (at most {MAX_DURATION_SECONDS} s)")
    return _round_half_away(ns)


def format_bytes(num_bytes: float, binary: bool = False) -> str:
    """"14.10 GB", "70.1 MB", "512 B" (decimal, the default) or "13.13 GiB", "1.0 MiB" (binary):
    always with the unit, as the daemon and the CLI print sizes."""
    gb, mb = (1073741824.0, 1048576.0) if binary else (1e9, 1e6)
    value = float(num_bytes)
    if value != value or value in (float("inf"), float("-inf")):
        return "? B"
    if abs(value) >= gb / 10:
        return "%.2f %s" % (value / gb, "GiB" if binary else "GB")
    if abs(value) >= mb / 10:
        return "%.1f %s" % (value / mb, "MiB" if binary else "MB")
    return "%.0f B" % value


def format_seconds(seconds: float) -> str:
    """"300 ms", "6.75 s", "12.5 min", "11.0 h", as the daemon and the CLI print durations."""
    value = float(seconds)
    if value != value or value in (float("inf"), float("-inf")):
        return "? s"
    if abs(value) < 1.0:
        return "%.0f ms" % (value * 1e3)
    if abs(value) < 600.0:
        return "%.2f s" % value
    if abs(value) < 36000.0:
        return "%.1f min" % (value / 60.0)
    return "%.1f h" % (value / 3600.0)


def _size_or_none(value: Union[int, str, None]) -> Optional[int]:
    return None if value is None else parse_size(value)
