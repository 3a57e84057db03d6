"""ramguard client: tell ramguardd about a training run and ask before a Load claims GPU hosts.

Standard library only, Python 3.8+; copy this one file next to your coordinator.

    import ramguard

    client = ramguard.Client(on_verdict=print)      # RAMGUARD_SOCKET or the default path
    admission = client.admit("vit-h14", model_bytes=ramguard.parse_size("2.5GB"),
                             plan="fedavg", hosts=2)
    if not admission.admitted:
        raise SystemExit(admission.reason)          # every term of the sum, with numbers
    with client.start_run("vit-h14", labels={"build": "final"}, admission=admission,
                          model_bytes=2_500_000_000, declared_rounds=3, hosts=2) as run:
        with run.phase("load"):
            load()
        for _ in range(3):
            with run.phase("aggregation"):
                aggregate()
            with run.phase("synchronization"):
                synchronize()
            result = run.round_end(gc_probe=True)   # RSS just before and after gc.collect()
            for verdict in result.verdicts:         # typed Verdict objects
                print(verdict.severity, verdict.summary)
    print(run.end_reply.peak_bytes, run.end_reply.verdicts)

A guard must not break what it guards. Unless the Client is made with strict=True:
  * start_run, marks, phases, round ends and the run's end never raise because ramguardd is
    unreachable, restarting or refuses a mark: the first failure is logged once as a warning on
    the "ramguard" logger (what the resync does, at info), later calls are dropped while the
    client reconnects with a backoff
    (0.5 s doubling to 30 s), and on reconnection the run is resynchronised from the daemon's
    status: a phase the daemon still holds open but this process has left is ended, a phase
    this process is in but the daemon does not know is begun again, and round numbers continue
    from this process's count. A run whose start was never heard is started on reconnection.
    Dropped calls return results with delivered=False.
  * No mark stalls the loop: a mark (with any resync it does first) waits at most
    Client(mark_timeout_seconds=0.05) for a stopped or slow daemon, then is dropped as above.
    It carries its time and that deadline; ramguardd drops a mark it reads after the deadline
    (never applied late) and records the others at the client's time, so a phase end sent again
    by a resync keeps the moment this process left the phase.
  * Admission is the one call whose unavailability the caller decides: admit() raises
    UnavailableError by default (refuse: a Load nobody checked should not claim hosts);
    admit(..., admit_when_unavailable=True) returns an Admission with admitted=True,
    available=False and a reason saying that nothing was checked.
  * Local mistakes (an unknown mark kind, a bad size string) are ValueErrors in both modes.
Queries (hello, status, report, compare, list_runs, release) always raise; their errors are
subclasses of RamguardError per protocol code (UnavailableError, PermissionDeniedError, ...).

A phase left by an exception sends its end mark and names the exception (Phase.exception); a
Run left by an exception ends the run with run_end's `failure` set to the exception's type and
message, so the run carries a critical "failed" verdict; the exception propagates unchanged.
(SystemExit(0) is a normal end.)

Verdicts reach the coordinator in the replies of marks and end() (MarkResult.verdicts,
RunEndResult.verdicts) and, as they arrive, through Client(on_verdict=callback); an exception in
the callback is logged, never raised into the loop. Each verdict names the round it judges
(Verdict.round), which is not always the round whose reply carries it: a round's growth verdict
needs its settled floor, so it comes with the next mark's reply, and the last round's with the
end's. The release verdict is decided after the end: end() asks for it with `report` until it
is there or release_wait_seconds (Client's, 5 s by default; end() takes its own) have passed,
and hands every verdict not yet delivered to on_verdict once (RunEndResult.release,
RunEndResult.verdicts). Leaving the `with` block does not wait: the block's locals are freed
right after it, and that is what the release judges; the release verdict then reaches
on_verdict from a background thread. A release still pending then is for `ramguard report RUN`.

Round ends and the run's end carry allocator_stats() (glibc mallinfo2 / jemalloc mallctl, a
few microseconds) so that memory the C allocator keeps after free() is not taken for a leak;
run.end(trim_probe=True) also measures what malloc_trim(0) gives back.

Inside `ramguard exec -- python train.py`, `ramguard.current_run()` joins the run that the CLI
started (from RAMGUARD_SOCKET and RAMGUARD_RUN).

Wire protocol: one JSON object per line over a Unix socket, the protobuf JSON mapping of
ramguard.v1.Request/Reply (proto/ramguard.proto). 64-bit integers arrive as strings; this module
converts them to int. Commands of the training loop return dataclasses (Admission, RunStart,
MarkResult, RunEndResult, Verdict, Reading), which also answer reply["field"] and .get("field");
queries return dicts with snake_case keys.
"""

import ctypes
import dataclasses
import gc
import itertools
import json
import logging
import math
import mmap
import os
import re
import select
import socket
import sys
import threading
import time
import types
import weakref
from typing import Any, Callable, Dict, List, Literal, Optional, Set, Tuple, Type, TypeVar, Union, cast

__all__ = [
    "Admission", "Client", "DeadlineExceededError", "FailedPreconditionError", "Hello", "InternalError",
    "InvalidArgumentError", "MalformedError", "MarkResult", "NotFoundError",
    "PermissionDeniedError", "Phase", "RamguardError", "Reading", "ResourceExhaustedError",
    "Run", "RunEndResult", "RunStart", "UnavailableError", "UnknownCommandError",
    "UnsupportedVersionError", "Verdict", "current_run", "default_socket_path", "format_bytes",
    "format_seconds", "parse_duration_ns", "parse_size", "rss_bytes",
]
__version__ = "0.2.0"

logger = logging.getLogger("ramguard")

# The values of base/include/ramguard/base/protocol.hpp, which the daemon and the C++ client use (a test
# checks that they match).
PROTOCOL_VERSION = 1
MAX_REQUEST_BYTES = 64 * 1024  # the daemon's default frame limit
MAX_REPLY_BYTES = 64 * 1024 * 1024  # reports with samples can be large; a bound all the same
SOCKET_ENV = "RAMGUARD_SOCKET"
RUN_ENV = "RAMGUARD_RUN"
# Set (with RAMGUARD_RUN) by a launcher that runs this process inside a run of its own, e.g.
# the Slurm plugin (spank_ramguard.so): start_run then attaches to that run.
ATTACH_ENV = "RAMGUARD_RUN_ATTACH"

# Reconnection backoff of the non-strict client: first retry after this, doubling up to the max.
RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 30.0
# How long a mark waits for ramguardd by default (Client(mark_timeout_seconds=...)): a few
# times a loaded machine's slowest mark, far below a training step.
MARK_TIMEOUT_SECONDS = 0.05


class RamguardError(Exception):
    """A request failed: `code` is the protocol's error code (e.g. "PERMISSION_DENIED", or
    "UNAVAILABLE" when the daemon cannot be reached), `message` names the problem. Each code
    has its subclass (PermissionDeniedError, UnavailableError, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class MalformedError(RamguardError):
    """MALFORMED: a request or reply is not a protocol message."""


class UnsupportedVersionError(RamguardError):
    """UNSUPPORTED_VERSION: the daemon does not speak this protocol version."""


class UnknownCommandError(RamguardError):
    """UNKNOWN_COMMAND: the daemon does not know the command."""


class InvalidArgumentError(RamguardError):
    """INVALID_ARGUMENT: a field is missing or out of range (the message names it)."""


class NotFoundError(RamguardError):
    """NOT_FOUND: unknown run, reservation or process."""


class PermissionDeniedError(RamguardError):
    """PERMISSION_DENIED: the caller does not own the target."""


class FailedPreconditionError(RamguardError):
    """FAILED_PRECONDITION: e.g. a mark on a finished run, a phase end without a begin."""


class ResourceExhaustedError(RamguardError):
    """RESOURCE_EXHAUSTED: a limit on frames, runs, marks, connections or request rate."""


class UnavailableError(RamguardError):
    """UNAVAILABLE: ramguardd cannot be reached, or it cannot read the target or its ledger."""


class InternalError(RamguardError):
    """INTERNAL: a bug in ramguardd."""


class DeadlineExceededError(RamguardError):
    """DEADLINE_EXCEEDED: ramguardd read a mark after the deadline it carried and dropped it."""


_ERROR_CLASSES: Dict[str, Type[RamguardError]] = {
    "MALFORMED": MalformedError, "UNSUPPORTED_VERSION": UnsupportedVersionError,
    "UNKNOWN_COMMAND": UnknownCommandError, "INVALID_ARGUMENT": InvalidArgumentError,
    "NOT_FOUND": NotFoundError, "PERMISSION_DENIED": PermissionDeniedError,
    "FAILED_PRECONDITION": FailedPreconditionError, "RESOURCE_EXHAUSTED": ResourceExhaustedError,
    "UNAVAILABLE": UnavailableError, "INTERNAL": InternalError,
    "DEADLINE_EXCEEDED": DeadlineExceededError,
}


def _error(code: str, message: str) -> RamguardError:
    """The exception for a protocol error code: its subclass, or RamguardError itself."""
    return _ERROR_CLASSES.get(code, RamguardError)(code, message)


# --------------------------------------------------------------------------------------------
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


def rss_bytes(statm_path: str = "/proc/self/statm") -> int:
    """This process's resident set size in bytes (second field of statm, in pages)."""
    with open(statm_path, "rb") as f:
        fields = f.read().split()
    return int(fields[1]) * os.sysconf("SC_PAGE_SIZE")


# --------------------------------------------------------------------------------------------
# Allocator probes: what the C allocator holds, measured in this process (ctypes, no imports
# beyond the standard library). Memory a program freed often stays in the allocator (glibc
# keeps free chunks below the heap's top and in per-thread arenas): RSS does not fall, and
# without these facts ramguardd could only blame the application.

class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


_MALLCTL_ARENAS_ALL = 4096  # jemalloc's MALLCTL_ARENAS_ALL: "arena.4096.purge" purges them all
_allocator_cache: Dict[str, Any] = {}


def _process_symbols() -> Any:
    if "libc" not in _allocator_cache:
        _allocator_cache["libc"] = ctypes.CDLL(None)  # every symbol the process has loaded
    return _allocator_cache["libc"]


def _mallctl() -> Any:
    """jemalloc's mallctl when jemalloc is this process's malloc (LD_PRELOAD or linked)."""
    try:
        fn = _process_symbols().mallctl
    except (AttributeError, OSError):
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                   ctypes.c_void_p, ctypes.c_size_t]
    return fn


def _jemalloc_read(mallctl: Any, name: str) -> int:
    value = ctypes.c_size_t(0)
    size = ctypes.c_size_t(ctypes.sizeof(value))
    rc = mallctl(name.encode(), ctypes.byref(value), ctypes.byref(size), None, 0)
    if rc != 0:
        raise OSError(rc, f"mallctl {name} failed: {os.strerror(rc)}")
    return value.value


def _jemalloc_stats(mallctl: Any) -> Dict[str, Any]:
    epoch = ctypes.c_uint64(1)
    size = ctypes.c_size_t(ctypes.sizeof(epoch))
    # Statistics are a snapshot refreshed by writing the epoch.
    rc = mallctl(b"epoch", ctypes.byref(epoch), ctypes.byref(size), ctypes.byref(epoch),
                 ctypes.sizeof(epoch))
    if rc != 0:
        raise OSError(rc, f"mallctl epoch failed: {os.strerror(rc)} (jemalloc built without "
                          "statistics?)")
    allocated = _jemalloc_read(mallctl, "stats.allocated")
    active = _jemalloc_read(mallctl, "stats.active")
    resident = _jemalloc_read(mallctl, "stats.resident")
    mapped = _jemalloc_read(mallctl, "stats.mapped")
    retained = _jemalloc_read(mallctl, "stats.retained")
    return {"allocator": "jemalloc", "available": True, "allocated_bytes": allocated,
            "active_bytes": active, "free_bytes": max(0, resident - allocated),
            "mmapped_bytes": mapped, "resident_bytes": resident,
            "jemalloc_retained_bytes": retained}


def _glibc_stats() -> Dict[str, Any]:
    try:
        mallinfo2 = _process_symbols().mallinfo2
    except (AttributeError, OSError):
        # musl, glibc before 2.33, or another malloc without it: mallinfo() wraps at 4 GiB.
        return {"allocator": "unknown", "available": False,
                "reason": "neither jemalloc's mallctl nor glibc's mallinfo2 is in this process "
                          "(musl, glibc < 2.33 or another allocator)"}
    mallinfo2.restype = _MallInfo2
    mallinfo2.argtypes = []
    m = mallinfo2()
    return {"allocator": "glibc", "available": True,
            "allocated_bytes": m.uordblks + m.hblkhd,   # chunks in use, heap and mmapped
            "active_bytes": m.uordblks + m.hblkhd,
            "free_bytes": m.fordblks,                   # free chunks kept, top included
            "mmapped_bytes": m.hblkhd,
            "resident_bytes": m.arena + m.hblkhd}       # what malloc has from the OS


def _trim() -> Dict[str, Any]:
    """RSS before and after asking the allocator to return its free memory to the OS."""
    mallctl = _mallctl()
    before = rss_bytes()
    started = time.monotonic()
    if mallctl is not None:
        rc = mallctl(f"arena.{_MALLCTL_ARENAS_ALL}.purge".encode(), None, None, None, 0)
        if rc != 0:
            raise OSError(rc, f"mallctl arena.{_MALLCTL_ARENAS_ALL}.purge failed")
        how = "jemalloc arena purge"
    else:
        try:
            trim = _process_symbols().malloc_trim
        except (AttributeError, OSError):
            raise OSError("no malloc_trim or mallctl in this process") from None
        trim.restype = ctypes.c_int
        trim.argtypes = [ctypes.c_size_t]
        trim(0)
        how = "malloc_trim(0)"
    duration = time.monotonic() - started
    return {"rss_before_bytes": before, "rss_after_bytes": rss_bytes(),
            "duration_seconds": duration, "how": how}


def allocator_stats(trim: bool = False) -> Dict[str, Any]:
    """What the C allocator of this process holds, in bytes: {"allocator": "glibc" | "jemalloc"
    | "unknown", "available", "allocated_bytes" (live objects), "active_bytes", "free_bytes"
    (freed memory the allocator keeps instead of returning it), "mmapped_bytes",
    "resident_bytes" (what the allocator has from the OS), "duration_seconds"} plus
    "tracemalloc_current_bytes"/"tracemalloc_peak_bytes" while tracemalloc traces. glibc:
    mallinfo2(); jemalloc: mallctl stats (refreshed through "epoch").
    trim=True adds "trim": RSS before and after malloc_trim(0) (glibc) or arena.<all>.purge
    (jemalloc): memory the allocator gave back only when asked. This really returns it.
    Never raises: a probe that cannot run says "available": False and why ("reason")."""
    started = time.monotonic()
    try:
        mallctl = _mallctl()
        stats = _jemalloc_stats(mallctl) if mallctl is not None else _glibc_stats()
    except Exception as e:  # a guard must not break what it guards
        stats = {"allocator": "unknown", "available": False, "reason": f"{type(e).__name__}: {e}"}
    stats["duration_seconds"] = time.monotonic() - started
    try:
        import tracemalloc
        if tracemalloc.is_tracing():
            current, peak = tracemalloc.get_traced_memory()
            stats["tracemalloc_current_bytes"] = current
            stats["tracemalloc_peak_bytes"] = peak
    except Exception:  # pragma: no cover - tracemalloc is part of CPython
        pass
    if trim:
        try:
            stats["trim"] = _trim()
        except Exception as e:
            stats["trim"] = {"available": False, "reason": f"{type(e).__name__}: {e}"}
    return stats


def _allocator_wire(stats: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """allocator_stats() as the protocol's AllocatorStats: allocated = live application bytes,
    active = in use at the allocator's granularity, resident = bytes the allocator has from the
    OS, retained = free bytes it keeps; None when the probe could not run."""
    if not stats.get("available"):
        return None
    wire = {"allocated_bytes": int(stats["allocated_bytes"]),
            "active_bytes": int(stats["active_bytes"]),
            "resident_bytes": int(stats["resident_bytes"]),
            "retained_bytes": int(stats["free_bytes"])}
    if wire["allocated_bytes"] > wire["resident_bytes"] or \
            wire["retained_bytes"] > wire["resident_bytes"]:
        return None  # the daemon refuses figures that contradict themselves: send none
    return wire


def _gc_probe() -> Dict[str, Any]:
    """RSS just before and just after gc.collect(): what only the cycle collector frees."""
    before = rss_bytes()
    started = time.monotonic()
    collected = gc.collect()
    duration = time.monotonic() - started
    return {"rss_before_bytes": before, "rss_after_bytes": rss_bytes(),
            "collected_objects": collected, "duration_seconds": duration}


# --------------------------------------------------------------------------------------------
# Census: which large objects are alive, who holds them, and whether anything reachable does.
# Opt-in (Run.round_end(census=...), Run.end(census=...), Client(census_every_rounds=N), or
# automatically while a growth warning stands) and budgeted. Never imports torch or numpy: it
# looks at them only when the coordinator already has. It holds no reference after it returns
# and never frees anything (no gc.collect()).

CENSUS_BUDGET_SECONDS = 1.0      # full mode stops here and says it is partial
CENSUS_MIN_BYTES = 1 << 20       # bytes, bytearray, memoryview, mmap and arrays below: ignored
CENSUS_ROWS = 12                 # groups sent with the mark (the rest summed in other_bytes)
CENSUS_RANGES = 256              # address ranges sent, over all groups (the daemon places them)
_CENSUS_CYCLE_STEPS = 8          # how far up the referrers a cycle is looked for
_CENSUS_CYCLE_GROUPS = 4         # groups whose cycle is described (a heap pass each step)
_CENSUS_CHECK_EVERY = 4096       # objects between two looks at the clock


class _CensusBudget(Exception):
    pass


def _census_kinds() -> Dict[str, Any]:
    """The types to look for, from the modules the process already has."""
    kinds: Dict[str, Any] = {"tensor": (), "storage": (), "ndarray": None, "module": None,
                             "torch": sys.modules.get("torch"), "cuda_ready": False}
    torch = kinds["torch"]
    if torch is not None:
        kinds["tensor"] = tuple(t for t in (getattr(torch, "Tensor", None),) if t)
        storage_mod = getattr(torch, "storage", None)
        kinds["storage"] = tuple(t for t in (
            getattr(torch, "UntypedStorage", None), getattr(torch, "TypedStorage", None),
            getattr(storage_mod, "_UntypedStorage", None),
            getattr(storage_mod, "_TypedStorage", None)) if isinstance(t, type))
        nn = sys.modules.get("torch.nn")
        kinds["module"] = getattr(nn, "Module", None)
        cuda = sys.modules.get("torch.cuda")
        try:
            kinds["cuda_ready"] = bool(cuda is not None and cuda.is_initialized())
        except Exception:
            kinds["cuda_ready"] = False
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        kinds["ndarray"] = getattr(numpy, "ndarray", None)
    return kinds


_BYTES_DATA_OFFSET = sys.getsizeof(b"") - 1  # where a bytes object's data starts (CPython)


def _buffer_address(obj: Any) -> int:
    """Where a writable buffer's data lies (0 when it cannot be told without copying)."""
    try:
        return ctypes.addressof((ctypes.c_char * 0).from_buffer(obj))
    except (TypeError, ValueError, BufferError):
        return 0


class _Storage:
    """One block of memory, counted once however many tensors, views and arrays share it."""
    __slots__ = ("key", "nbytes", "address", "device", "dtype", "pinned", "shared", "kind",
                 "objects")

    def __init__(self, key: Any, nbytes: int, address: int, device: str, dtype: str,
                 kind: str, pinned: bool = False, shared: bool = False) -> None:
        self.key, self.nbytes, self.address, self.device = key, nbytes, address, device
        self.dtype, self.kind, self.pinned, self.shared = dtype, kind, pinned, shared
        self.objects = 0


_CENSUS_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                  types.MethodType, types.CodeType, types.FrameType)


class _Root:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _Group:
    __slots__ = ("obj", "holder", "reachable", "cycle", "storages", "objects")

    def __init__(self, obj: Any, holder: str) -> None:
        self.obj, self.holder, self.reachable, self.cycle = obj, holder, bool(holder), ""
        self.storages: List[_Storage] = []
        self.objects = 0


class _Census:
    """One census. Everything it holds is dropped by close(), before census() returns."""

    def __init__(self, roots: Dict[str, Any], mode: str, budget_seconds: float, min_bytes: int,
                 rows: int, model_bytes: int) -> None:
        self.roots, self.mode, self.min_bytes, self.rows = roots, mode, min_bytes, rows
        self.model_bytes = model_bytes
        self.started = time.perf_counter()
        self.deadline = self.started + budget_seconds
        self.partial = ""
        self.kinds = _census_kinds()
        self.storages: Dict[Any, _Storage] = {}
        self.found: Dict[int, Tuple[Any, _Storage]] = {}   # id -> (object, its storage)
        self.parent: Dict[int, Any] = {}       # id -> (parent object, label or None)
        self.objects_seen = 0
        self.ignore: Set[int] = set()
        self.seen: Set[int] = set()
        self._index: Dict[int, Dict[int, Any]] = {}  # container id -> {id(value): key}
        self.unseen: List[Any] = []
        self.referrers: Dict[int, List[Any]] = {}
        self._large_types: Tuple[type, ...] = (bytes, bytearray, memoryview, mmap.mmap) + \
            tuple(t for t in (self.kinds["ndarray"],) if t is not None) + \
            self.kinds["tensor"] + self.kinds["storage"]
        self._type_cache: Dict[type, bool] = {}
        self._tensor_types: Set[type] = set()
        self._dtype_names: Dict[Any, str] = {}
        tensor = self.kinds["tensor"][0] if self.kinds["tensor"] else None
        self._storage_of: Callable[[Any], Any] = (
            (lambda t: t.untyped_storage()) if hasattr(tensor, "untyped_storage") else
            (lambda t: t._storage()) if hasattr(tensor, "_storage") else
            (lambda t: t.storage()))

    def large_type(self, t: type) -> bool:
        hit = self._type_cache.get(t)
        if hit is None:
            hit = self._type_cache[t] = issubclass(t, self._large_types)
        return hit

    # -- what counts ---------------------------------------------------------------------

    def _over(self) -> bool:
        return time.perf_counter() > self.deadline

    def large(self, obj: Any) -> Optional[_Storage]:
        """The storage of a large object, or None: tensors (their storage), torch storages,
        numpy arrays (their base), bytes-likes and mmaps above min_bytes."""
        k = self.kinds
        t = type(obj)
        if t in self._tensor_types:  # the common case first: a state dict's tensors
            return self._tensor(obj)
        if t is bytes:
            if len(obj) < self.min_bytes:
                return None
            return self._storage(("b", id(obj)), len(obj), id(obj) + _BYTES_DATA_OFFSET,
                                 "cpu", "bytes", "bytes")
        if t is bytearray:
            if len(obj) < self.min_bytes:
                return None
            return self._storage(("b", id(obj)), len(obj), _buffer_address(obj), "cpu",
                                 "bytes", "bytearray")
        if t is memoryview:
            try:
                if obj.nbytes < self.min_bytes:
                    return None
                owner = obj.obj
            except ValueError:  # released
                return None
            if self.large(owner) is not None:
                return self.large(owner)
            return self._storage(("b", id(owner)), obj.nbytes, 0, "cpu", "bytes", "memoryview")
        if t is mmap.mmap:
            try:
                size = len(obj)
            except ValueError:  # closed
                return None
            if size < self.min_bytes:
                return None
            return self._storage(("b", id(obj)), size, _buffer_address(obj), "cpu", "bytes",
                                 "mmap")
        if k["ndarray"] is not None and isinstance(obj, k["ndarray"]):
            base = obj
            while isinstance(getattr(base, "base", None), k["ndarray"]):
                base = base.base
            owner = getattr(base, "base", None)
            if owner is not None and not isinstance(owner, (bytes, bytearray, mmap.mmap)):
                # An array over another object's memory (a tensor's, a buffer's): count it
                # once, under that object, when it is itself large.
                inner = self.large(owner) if not isinstance(owner, memoryview) else None
                if inner is not None:
                    return inner
            if base.nbytes < self.min_bytes:
                return None
            address = int(base.__array_interface__["data"][0])
            return self._storage(("a", address, int(base.nbytes)), int(base.nbytes), address,
                                 "cpu", str(base.dtype), "array")
        if k["tensor"] and isinstance(obj, k["tensor"]):
            self._tensor_types.add(t)
            return self._tensor(obj)
        if k["storage"] and isinstance(obj, k["storage"]):
            dtype = str(getattr(obj, "dtype", "uint8")).replace("torch.", "")
            return self._torch_storage(obj, dtype, getattr(obj, "device", None) and
                                       obj.device.type or "cpu")
        return None

    def _tensor(self, obj: Any) -> Optional[_Storage]:
        try:
            # untyped_storage (torch 2) or _storage (1.x), both C; storage() builds a Python
            # TypedStorage each call.
            storage = self._storage_of(obj)
        except Exception:  # sparse, nested, meta without storage
            return None
        dtype = self._dtype_names.get(obj.dtype)
        if dtype is None:
            dtype = self._dtype_names[obj.dtype] = str(obj.dtype).replace("torch.", "")
        return self._torch_storage(storage, dtype, obj.device.type)

    def _torch_storage(self, storage: Any, dtype: str, device: str) -> Optional[_Storage]:
        try:
            address, nbytes = int(storage.data_ptr()), int(storage.nbytes())
        except Exception:
            return None
        if nbytes <= 0 or device == "meta":
            return None
        key = ("t", device, address)
        known = self.storages.get(key)
        if known is not None:
            known.nbytes = max(known.nbytes, nbytes)
            return known
        pinned = shared = False
        if device == "cpu":
            try:
                shared = bool(storage.is_shared())
                # is_pinned asks CUDA: only once the process has initialized it itself.
                pinned = bool(self.kinds["cuda_ready"] and storage.is_pinned())
            except Exception:
                pass
        return self._storage(key, nbytes, address, device, dtype, "tensor", pinned, shared)

    def _storage(self, key: Any, nbytes: int, address: int, device: str, dtype: str,
                 kind: str, pinned: bool = False, shared: bool = False) -> _Storage:
        known = self.storages.get(key)
        if known is None:
            known = self.storages[key] = _Storage(key, nbytes, address, device, dtype, kind,
                                                  pinned, shared)
        return known

    def note(self, obj: Any) -> None:
        """Count obj if it is large."""
        if id(obj) in self.found:
            return
        storage = self.large(obj)
        if storage is None:
            return
        storage.objects += 1
        entry = self.found[id(obj)] = (obj, storage)
        self.seen.add(id(entry))  # the census's own: not a holder

    # -- walking -------------------------------------------------------------------------

    def root_objects(self) -> List[Tuple[str, Any]]:
        """Named roots, in the order paths prefer them: registered roots, live frames' locals
        (the innermost first), __main__'s globals, then every other module's."""
        out: List[Tuple[str, Any]] = [(name, obj) for name, obj in self.roots.items()]
        if self.mode == "roots":
            return out
        frame: Optional[types.FrameType]
        for frame in sys._current_frames().values():
            while frame is not None:
                # Not the census's own frames (nor its callers' in this file), and not a
                # module's body, whose locals are its globals (named below as module.name).
                if frame.f_code.co_filename != _CENSUS_FILE and \
                        frame.f_locals is not frame.f_globals:
                    name = frame.f_code.co_name
                    try:
                        local_items = list(frame.f_locals.items())
                    except Exception:
                        local_items = []
                    for key, value in local_items:
                        out.append((f"{name}() local '{key}'", value))
                frame = frame.f_back
        del frame
        modules = list(sys.modules.items())
        modules.sort(key=lambda item: item[0] != "__main__")
        for modname, module in modules:
            attrs = getattr(module, "__dict__", None)
            if not isinstance(attrs, dict):
                continue
            for key, value in list(attrs.items()):
                if type(value) is type(sys) or key.startswith("__"):
                    continue  # modules are roots of their own; dunders hold no data
                out.append((f"{modname}.{key}", value))
        return out

    def walk(self, roots: List[Tuple[str, Any]]) -> bool:
        """Breadth-first from the roots through what the collector can see, recording the
        first parent of every object reached and counting the large ones. False when it
        stopped at the budget."""
        parent, seen = self.parent, self.seen
        queue: List[Any] = []
        for name, obj in roots:
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            parent[id(obj)] = _Root(name)
            if self.large_type(type(obj)):
                self.note(obj)
            queue.append(obj)
        get_referents, is_tracked = gc.get_referents, gc.is_tracked
        cache, large_type, note = self._type_cache, self.large_type, self.note
        # Roots mode stays within the roots' data: not into classes, modules and functions,
        # through which everything is reachable.
        stop = _CENSUS_OPAQUE if self.mode == "roots" else ()
        head = 0
        while head < len(queue):
            obj = queue[head]
            queue[head] = None
            head += 1
            if not head % _CENSUS_CHECK_EVERY and self._over():
                self.partial = "stopped at its time budget while walking from the roots"
                return False
            for child in get_referents(obj):
                big = cache.get(type(child))
                if big is None:
                    big = large_type(type(child))
                if big:
                    cid = id(child)
                    if cid not in seen:
                        seen.add(cid)
                        parent[cid] = obj
                        note(child)
                        if is_tracked(child):
                            queue.append(child)
                elif is_tracked(child):
                    cid = id(child)
                    if cid not in seen and not isinstance(child, stop):
                        seen.add(cid)
                        parent[cid] = obj
                        queue.append(child)
        return True

    def unreached(self) -> None:
        """Full mode, after a complete walk: the objects no root reaches (held by reference
        cycles, or from outside Python's objects). Their large objects are counted, and who
        refers to whom among them is kept (self.referrers) to name holders and cycles: what
        refers to an unreached object is unreached itself."""
        seen = self.seen
        objs = gc.get_objects()
        unseen = [o for o in objs if id(o) not in seen]
        own = (types.FrameType, _Root, _Storage, _Group, _Census)
        unseen = [o for o in unseen if not isinstance(o, own)]
        del objs
        self.ignore.add(id(unseen))
        self.unseen = unseen
        cache, large_type, note = self._type_cache, self.large_type, self.note
        referrers: Dict[int, List[Any]] = {}
        self.referrers = referrers
        get_referents = gc.get_referents
        for i, obj in enumerate(unseen):
            if not i % _CENSUS_CHECK_EVERY and self._over():
                self.partial = "stopped at its time budget among unreached objects"
                return
            big = cache.get(type(obj))
            if big is None:
                big = large_type(type(obj))
            if big:
                note(obj)
            for child in get_referents(obj):
                cid = id(child)
                if cid in seen:
                    continue
                held = referrers.get(cid)
                if held is None:
                    referrers[cid] = [obj]
                    big = cache.get(type(child))
                    if big is None:
                        big = large_type(type(child))
                    if big and not gc.is_tracked(child):
                        note(child)
                else:
                    held.append(obj)
        for i, (obj, _) in self.found.items():
            if i not in self.parent and i in referrers:
                self.parent[i] = referrers[i][0]

    # -- naming --------------------------------------------------------------------------

    def step(self, parent: Any, child: Any) -> str:
        """How parent refers to child, as Python would write it."""
        if isinstance(parent, (dict, list, tuple)):
            # Where each value sits, once per container: a state dict of 10^4 tensors is
            # looked up 10^4 times.
            index = self._index.get(id(parent))
            if index is None:
                items = parent.items() if isinstance(parent, dict) else enumerate(parent)
                index = self._index[id(parent)] = {}
                for key, value in items:
                    index.setdefault(id(value), key)
            if id(child) not in index:
                return ".<key>" if isinstance(parent, dict) else "[?]"
            key = index[id(child)]
            return f"[{key!r}]" if isinstance(parent, dict) else f"[{key}]"
        if isinstance(parent, types.FunctionType):
            if parent.__globals__ is child:
                return ".__globals__"
            for cell, name in zip(parent.__closure__ or (), parent.__code__.co_freevars):
                if cell is child:
                    return f".<closure {name}>"
            return ".<function>"
        if isinstance(parent, types.CellType) if hasattr(types, "CellType") else False:
            return ""
        if isinstance(parent, types.FrameType):
            for key, value in parent.f_locals.items():
                if value is child:
                    return f" local '{key}'"
            return " <frame>"
        attrs = getattr(parent, "__dict__", None)
        if attrs is child:
            return ""
        if isinstance(attrs, dict):
            for key, value in attrs.items():
                if value is child:
                    return f".{key}"
        if isinstance(parent, (set, frozenset)):
            return ".<member>"
        return f".<{type(parent).__name__}>"

    def path(self, obj: Any) -> Tuple[str, List[Any]]:
        """The path from a root to obj, and the objects on it (root first)."""
        chain: List[Any] = [obj]
        parts: List[str] = []
        current = obj
        for _ in range(64):
            entry = self.parent.get(id(current))
            if entry is None:
                return "", chain
            if isinstance(entry, _Root):
                parts.append(entry.name)
                break
            step = self.step(entry, current)
            if not step and parts and parts[-1].startswith("[") and parts[-1].endswith("]") \
                    and parts[-1][1:2] in "'\"":
                parts[-1] = "." + parts[-1][2:-2]  # obj.__dict__['x'] is obj.x
            parts.append(step)
            chain.append(entry)
            current = entry
        chain.reverse()
        return "".join(reversed(parts)), chain

    def ancestors(self, obj: Any) -> List[Any]:
        """The objects on obj's path from a root, root first (no names: cheap)."""
        chain: List[Any] = []
        current = obj
        for _ in range(64):
            entry = self.parent.get(id(current))
            if entry is None or isinstance(entry, _Root):
                break
            chain.append(entry)
            current = entry
        chain.reverse()
        return chain

    def _referrers(self, obj: Any) -> List[Any]:
        """What refers to an unreached object (the census's own objects aside)."""
        return [r for r in self.referrers.get(id(obj), ())
                if not isinstance(r, (_Group, _Census, _Storage))]

    def cycle(self, obj: Any) -> Tuple[str, str]:
        """For an object no root reaches: (its holder's name, the cycle that keeps it), found by
        climbing the referrers (a heap pass per step, so a few steps for a few groups)."""
        chain: List[Any] = [obj]
        try:
            for _ in range(_CENSUS_CYCLE_STEPS):
                referrers = self._referrers(chain[-1])
                if not referrers:
                    return "", "held from outside Python's objects (an extension's reference)"
                # A referrer already on the chain closes the cycle.
                on_chain = [r for r in referrers if any(r is c for c in chain)]
                nxt = on_chain[0] if on_chain else referrers[0]
                del referrers, on_chain
                if not any(nxt is c for c in chain):
                    chain.append(nxt)
                    continue
                start = next(i for i, c in enumerate(chain) if c is nxt)
                names = [self._name(o) for o in chain[start:]]
                back = self.step(chain[-1], nxt).lstrip(".") or "refers back to"
                shape = " -> ".join(f"{n[0]} `{n[1]}`" for n in names) + \
                    f" -> `{back}` is `{names[0][1]}`"
                holder = names[0][1] + "".join(self.step(chain[i], chain[i - 1])
                                               for i in range(start, 0, -1))
                return holder, shape
            return "", "held by a chain of objects longer than the census follows"
        finally:
            chain.clear()

    def _name(self, obj: Any) -> Tuple[str, str]:
        """(what it is, what to call it) for an object no root names."""
        if isinstance(obj, types.FunctionType):
            return "function", obj.__qualname__
        if isinstance(obj, dict):
            for value in obj.values():  # a namespace: name it by its functions
                if isinstance(value, types.FunctionType) and value.__globals__ is obj:
                    return "dict", f"{value.__name__}.__globals__"
            return "dict", f"dict at {id(obj):#x}"
        return type(obj).__name__, f"{type(obj).__name__} at {id(obj):#x}"

    def group_of(self, obj: Any, path_objects: List[Any]) -> Any:
        """The container that a storage counts under: the outermost torch Module on its path,
        else its direct holder when that is a container, else the object itself."""
        module = self.kinds["module"]
        if module is not None:
            for o in path_objects:
                if isinstance(o, module):
                    return o
        holder = self.parent.get(id(obj))
        if isinstance(holder, (dict, list, tuple)):
            owner = self.parent.get(id(holder))
            if owner is not None and not isinstance(owner, _Root) and \
                    getattr(owner, "__dict__", None) is holder:
                return obj  # an attribute: the object's __dict__ holds all of them
            return holder
        return obj

    def close(self) -> None:
        self.roots = {}
        self.found.clear()
        self.parent.clear()
        self.storages.clear()
        self.ignore.clear()
        self.seen.clear()
        self.unseen = []
        self.referrers = {}
        self._index = {}


_CENSUS_FILE = globals().get("__file__", "")  # frames of this file are not roots


def census(roots: Optional[Dict[str, Any]] = None, mode: str = "full",
           budget_seconds: float = CENSUS_BUDGET_SECONDS, min_bytes: int = CENSUS_MIN_BYTES,
           rows: int = CENSUS_ROWS, model_bytes: int = 0) -> Dict[str, Any]:
    """Which large objects this process holds, grouped by who holds them.

    mode="full": every torch tensor and storage (torch only if already imported), numpy array
    (likewise), bytes/bytearray/memoryview/mmap of min_bytes or more in the heap, each storage
    counted once however many tensors and views share it; grouped by the container holding
    them (a state dict is one group; a torch Module and its submodules are one); each group
    named by its path from a root: registered roots (roots={"name": obj}), live frames' locals
    ("aggregate() local 'updates'"), module globals ("coordinator.state"). A group no root
    reaches is held only by a reference cycle: it is named from the cycle, whose shape is given
    ("dict `aggregate.__globals__` -> function `aggregate` -> __globals__ is ...").
    mode="roots": only what the registered roots reach (cheap). Stops at budget_seconds with
    partial set to why. model_bytes > 0 sizes groups in model copies. Never imports torch or
    numpy, never collects, holds nothing after it returns.

    Returns {"mode", "partial", "duration_seconds", "objects_seen", "storages", "host_bytes",
    "gpu_bytes", "pinned_bytes", "shared_bytes", "unreachable_bytes", "groups": [{"holder",
    "reachable", "cycle", "kind", "bytes", "gpu_bytes", "storages", "objects", "dtype",
    "model_copies", "ranges": [[address, nbytes], ...]}, ...] (largest first, `rows` of them),
    "other_bytes" (groups not listed), "other_groups"}."""
    if mode not in ("full", "roots"):
        raise ValueError(f"invalid census mode {mode!r}; expected 'full' or 'roots'")
    c = _Census(dict(roots or {}), mode, budget_seconds, min_bytes, rows, model_bytes)
    c.ignore.add(id(roots))  # the caller's dict of roots is not a holder
    try:
        return _census_run(c)
    finally:
        c.close()


def _census_is_view(obj: Any) -> bool:
    if isinstance(obj, memoryview):
        return True
    try:
        base = getattr(obj, "_base", None) if not hasattr(obj, "__array_interface__") \
            else obj.base
    except Exception:
        return False
    return base is not None


def _census_run(c: _Census) -> Dict[str, Any]:
    # The census's own objects are not part of the census: mark them seen.
    c.ignore.update(id(o) for o in (c, c.seen, c.parent, c.found, c.storages, c.ignore,
                                    c.roots, c._type_cache))
    roots = c.root_objects()
    c.ignore.add(id(roots))
    c.ignore.update(id(item) for item in roots)
    c.seen.update(c.ignore)
    complete = c.walk(roots)
    del roots
    c.objects_seen = len(c.seen)
    if complete and c.mode == "full":
        c.unreached()
        c.objects_seen += len(c.unseen)
    return _census_groups(c, complete and not c.partial)


def _census_groups(c: _Census, complete: bool) -> Dict[str, Any]:
    groups: Dict[int, _Group] = {}
    c.ignore.add(id(groups))
    counted: Set[Any] = set()
    # Largest storages first, owners before views: a storage counts in the group of the object
    # that owns it (an array's base, a tensor that is not a view), else in the first found.
    items = sorted(c.found.values(),
                   key=lambda item: (-item[1].nbytes, _census_is_view(item[0])))
    c.ignore.add(id(items))
    obj: Any = None
    group_obj: Any = None
    storage: Optional[_Storage] = None
    for obj, storage in items:
        chain = c.ancestors(obj)
        group_obj = c.group_of(obj, chain)
        chain.clear()
        g = groups.get(id(group_obj))
        if g is None:
            # Named once per group; "" when no root reaches it (named from its cycle below).
            g = groups[id(group_obj)] = _Group(group_obj, c.path(group_obj)[0])
        g.objects += 1
        if storage.key not in counted:
            counted.add(storage.key)
            g.storages.append(storage)
    del items
    obj = group_obj = storage = None
    ordered = sorted(groups.values(),
                     key=lambda g: -sum(s.nbytes for s in g.storages))
    groups.clear()
    described = 0
    for g in ordered:
        if g.reachable or not g.storages:
            continue
        what = type(g.obj).__name__
        if not complete:
            g.holder = f"a {what} not reached before the budget"
        elif described >= _CENSUS_CYCLE_GROUPS or c._over():
            g.holder = f"a {what} no root reaches"
            g.cycle = "not described (census budget)"
        else:
            described += 1
            holder, g.cycle = c.cycle(g.obj)
            g.holder = holder or f"a {what} no root reaches"
    module = c.kinds["module"]
    out: List[Dict[str, Any]] = []
    ranges_left = CENSUS_RANGES
    for g in ordered:
        storages = g.storages
        if not storages:  # views of storages another group counts
            continue
        host = sum(s.nbytes for s in storages if s.device == "cpu")
        gpu = sum(s.nbytes for s in storages if s.device != "cpu")
        tensors = sum(1 for s in storages if s.kind == "tensor")
        if module is not None and isinstance(g.obj, module):
            kind = "module"
        elif tensors > 1:
            kind = "state"
        elif tensors:
            kind = "tensor"
        elif any(s.kind == "array" for s in storages):
            kind = "arrays" if len(storages) > 1 else "array"
        else:
            kind = storages[0].kind if len(storages) == 1 else "buffers"
        dtypes: Dict[str, int] = {}
        for s in storages:
            dtypes[s.dtype] = dtypes.get(s.dtype, 0) + s.nbytes
        merged: List[List[int]] = []
        if len(out) < c.rows:
            for address, nbytes in sorted((s.address, s.nbytes) for s in storages
                                          if s.device == "cpu" and s.address):
                if merged and merged[-1][0] + merged[-1][1] == address:
                    merged[-1][1] += nbytes
                else:
                    merged.append([address, nbytes])
            merged = merged[:max(0, ranges_left)]
            ranges_left -= len(merged)
        out.append({
            "holder": g.holder, "reachable": g.reachable, "cycle": g.cycle, "kind": kind,
            "bytes": host, "gpu_bytes": gpu, "storages": len(storages), "objects": g.objects,
            "dtype": max(dtypes, key=lambda d: dtypes[d]) if dtypes else "",
            "pinned_bytes": sum(s.nbytes for s in storages if s.pinned),
            "shared_bytes": sum(s.nbytes for s in storages if s.shared),
            "model_copies": round(host / c.model_bytes, 3) if c.model_bytes else 0.0,
            "ranges": merged,
        })
        g.obj = None
    ordered.clear()
    cpu = [s for s in c.storages.values() if s.device == "cpu"]
    return {
        "mode": c.mode, "partial": c.partial,
        "duration_seconds": time.perf_counter() - c.started,
        "objects_seen": c.objects_seen, "storages": len(c.storages),
        "host_bytes": sum(s.nbytes for s in cpu),
        "gpu_bytes": sum(s.nbytes for s in c.storages.values() if s.device != "cpu"),
        "pinned_bytes": sum(s.nbytes for s in cpu if s.pinned),
        "shared_bytes": sum(s.nbytes for s in cpu if s.shared),
        "unreachable_bytes": sum(g["bytes"] for g in out if not g["reachable"]),
        "model_bytes": c.model_bytes,
        "groups": out[:c.rows],
        "other_groups": max(0, len(out) - c.rows),
        "other_bytes": sum(g["bytes"] for g in out[c.rows:]),
    }




CENSUS_TEXT_BYTES = 256  # a holder's path or a cycle's shape on the wire (the daemon's limit)


def _census_text(text: str) -> str:
    """Printable (control characters written as escapes, as repr() does) and at most
    CENSUS_TEXT_BYTES of UTF-8: the daemon refuses anything else."""
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    data = text.encode("utf-8", "replace")
    if len(data) <= CENSUS_TEXT_BYTES:
        return text
    return data[:CENSUS_TEXT_BYTES - 3].decode("utf-8", "ignore") + "..."


def _census_wire(result: Dict[str, Any]) -> Dict[str, Any]:
    """census()'s result as the protocol's Census (proto/ramguard.proto): the listed groups
    with their address ranges, the totals; texts cut to CENSUS_TEXT_BYTES."""
    groups = [{"holder": _census_text(g["holder"]), "reachable": bool(g["reachable"]),
               "cycle": _census_text(g["cycle"]) or None, "kind": g["kind"],
               "bytes": int(g["bytes"]), "gpu_bytes": int(g["gpu_bytes"]) or None,
               "storages": int(g["storages"]), "objects": int(g["objects"]),
               "dtype": g["dtype"] or None, "pinned_bytes": int(g["pinned_bytes"]) or None,
               "shared_bytes": int(g["shared_bytes"]) or None,
               "ranges": [{"address": int(a), "nbytes": int(n)} for a, n in g["ranges"]]}
              for g in result["groups"]]
    return {"mode": result["mode"], "partial": _census_text(result["partial"]) or None,
            "duration_seconds": float(result["duration_seconds"]),
            "objects_seen": int(result["objects_seen"]), "storages": int(result["storages"]),
            "host_bytes": int(result["host_bytes"]), "gpu_bytes": int(result["gpu_bytes"]),
            "pinned_bytes": int(result["pinned_bytes"]),
            "shared_bytes": int(result["shared_bytes"]),
            "unreachable_bytes": int(result["unreachable_bytes"]), "groups": groups,
            "other_groups": int(result["other_groups"]),
            "other_bytes": int(result["other_bytes"])}


# --------------------------------------------------------------------------------------------
# Wire conversion

# Fields of 64-bit integer type in ramguard.proto: protobuf's JSON mapping writes them as strings.
# Checked against the schema by client_test (PythonMapping): a new 64-bit field goes here too.
_INT64_FIELDS = frozenset("""
    atUnixMs rssBytes anonBytes fileBytes shmemBytes swapBytes hwmBytes budgetBytes parameterCount
    modelBytes allocatedBytes activeBytes residentBytes retainedBytes rssBeforeBytes rssAfterBytes
    collectedObjects startTimeTicks phasePeakBytes peakBytes estimateBytes baselineBytes
    exitMaxRssBytes
    reservedBytes marginBytes headroomBytes releasedBytes floorBytes reservationBytes
    startedUnixMs endedUnixMs bytes minRssBytes maxRssBytes firstFloorBytes lastFloorBytes
    afterCompletionBytes atUnixUs deadlineUnixUs cgroupLimitBytes committedBytes count countedBytes
    earlierVerdicts effectiveBudgetBytes growthMinBytes heldBytes maxFloorBytes maxPeakBytes
    minFloorBytes nodeAvailableBytes nodeCapBytes planBytes pssBytes releaseSlackBytes
    unallocatedBytes gpuBytes pinnedBytes sharedBytes objectsSeen hostBytes unreachableBytes
    otherBytes address nbytes deviceBytes unmappedBytes allocatorFreeBytes unexplainedBytes
    topHolderBytes
""".split())
_FLOAT_SPECIALS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
# Maps whose keys are data, not field names: keep keys as they are.
_MAP_FIELDS = frozenset(["labels", "figures"])


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _from_wire(value: Any, key: Optional[str] = None) -> Any:
    """Reply JSON -> Python: snake_case keys, 64-bit integers as int, special floats as float."""
    if isinstance(value, dict):
        if key in _MAP_FIELDS:
            if key == "figures":
                return {k: _FLOAT_SPECIALS.get(v, v) if isinstance(v, str) else v
                        for k, v in value.items()}
            return dict(value)
        return {_snake(k): _from_wire(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_wire(v, key) for v in value]
    if isinstance(value, str) and key in _INT64_FIELDS:
        try:
            return int(value)
        except ValueError:
            return value
    if isinstance(value, str) and value in _FLOAT_SPECIALS and key is not None \
            and key.endswith("Seconds"):
        return _FLOAT_SPECIALS[value]
    return value


def _to_wire(value: Any) -> Any:
    """Request body -> JSON: camelCase keys, 64-bit integers as strings, None fields dropped."""
    if isinstance(value, dict):
        out: Dict[str, Any] = {}
        for k, v in value.items():
            if v is None:
                continue
            name = _camel(k)
            if name in _MAP_FIELDS:
                out[name] = {str(mk): str(mv) for mk, mv in v.items()}
            elif name in _INT64_FIELDS and isinstance(v, int) and not isinstance(v, bool):
                out[name] = str(v)
            else:
                out[name] = _to_wire(v)
        return out
    if isinstance(value, (list, tuple)):
        return [_to_wire(v) for v in value]
    return value


def default_socket_path() -> str:
    """RAMGUARD_SOCKET, else /run/ramguard/ramguard.sock when the effective UID is 0, else
    $XDG_RUNTIME_DIR/ramguard.sock, else /tmp/ramguard-<effective UID>.sock: the daemon's rule
    (base/include/ramguard/base/socket_path.hpp). The effective UID because the daemon creates its socket, and
    the kernel checks connect(), with effective credentials."""
    explicit = os.environ.get(SOCKET_ENV)
    if explicit:
        return explicit
    uid = os.geteuid()
    if uid == 0:
        return "/run/ramguard/ramguard.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return runtime + "/ramguard.sock"
    return f"/tmp/ramguard-{uid}.sock"


# --------------------------------------------------------------------------------------------
# Results: dataclasses that also answer reply["field"] and reply.get("field"), as dicts did.

class _Fields:
    def __getitem__(self, key: str) -> Any:
        if not isinstance(key, str) or key.startswith("_") or not hasattr(self, key):
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


_T = TypeVar("_T")


def _pick(cls: Type[_T], reply: Dict[str, Any], **converted: Any) -> _T:
    """cls from a reply dict: known fields only (a newer daemon may send more)."""
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in reply.items() if k in names}
    values.update(converted)
    return cls(**values)


@dataclasses.dataclass
class Reading(_Fields):
    """One reading of the target's memory; `complete` readings (at marks) carry the exact split
    and the kernel's high-water mark since the previous mark."""
    at_unix_ms: int = 0
    complete: bool = False
    rss_bytes: int = 0
    anon_bytes: int = 0
    file_bytes: int = 0
    shmem_bytes: int = 0
    swap_bytes: int = 0
    hwm_bytes: int = 0

    @classmethod
    def from_reply(cls, reply: Optional[Dict[str, Any]]) -> "Reading":
        return _pick(cls, reply or {})


@dataclasses.dataclass
class Verdict(_Fields):
    """A conclusion of the daemon: kind (growth_warning, leak, release, over_budget, ...),
    severity (INFO, WARNING, CRITICAL), a one-sentence summary with the numbers, and the figures
    behind it in base units."""
    kind: str = ""
    severity: str = "SEVERITY_UNSPECIFIED"
    passed: bool = False
    run_id: str = ""
    round: int = 0
    phase: str = ""
    summary: str = ""
    figures: Dict[str, float] = dataclasses.field(default_factory=dict)
    at_unix_ms: int = 0
    cleared: bool = False
    # A standing growth warning or leak restated with this round's figures (growth goes on).
    update: bool = False

    @property
    def alarming(self) -> bool:
        """True for a warning or critical verdict that still holds."""
        return self.severity in ("WARNING", "CRITICAL") and not self.cleared

    @property
    def result(self) -> str:
        """pass, fail, cleared, or for a release allocator (memory the allocator keeps free,
        not a leak) or not_verified (the process exited before a settled reading: never a
        pass): the word the CLI, the reports and the daemon's log use."""
        if self.cleared:
            return "cleared"
        if self.passed:
            return "pass"
        if self.kind == "release" and self.figures.get("not_verified"):
            return "not_verified"
        return "allocator" if self.kind == "release" and self.severity == "INFO" else "fail"

    @property
    def heading(self) -> str:
        """"[warning] growth_warning fail": severity, kind and result, as everywhere else."""
        return f"[{self.severity.lower()}] {self.kind} {self.result}"

    @classmethod
    def from_reply(cls, reply: Dict[str, Any]) -> "Verdict":
        return _pick(cls, reply, figures=dict(reply.get("figures", {})))


def _non_finite_path(value: Any, path: str = "") -> str:
    """The dotted path of the first NaN or infinity in a request, "" when there is none."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "the value"
    if isinstance(value, dict):
        for k, v in value.items():
            found = _non_finite_path(v, f"{path}.{k}" if path else str(k))
            if found:
                return found
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = _non_finite_path(v, f"{path}[{i}]")
            if found:
                return found
    return ""


def _verdicts(reply: Dict[str, Any]) -> List[Verdict]:
    return [Verdict.from_reply(v) for v in reply.get("verdicts", [])]


@dataclasses.dataclass
class Hello(_Fields):
    """The daemon's greeting: protocol version, budget, and the caller as the daemon sees it."""
    protocol_version: int = 0
    budget_bytes: int = 0
    peer_pid: int = 0
    peer_uid: int = 0


@dataclasses.dataclass
class Admission(_Fields):
    """The daemon's answer to admit(): `admitted`, `reason` and every term of
    baseline + reserved + estimate <= budget - margin. True in a boolean context when admitted.
    `available` is False when the daemon could not be asked and the caller chose to admit."""
    admitted: bool = False
    reservation_id: str = ""
    baseline_bytes: int = 0
    reserved_bytes: int = 0
    estimate_bytes: int = 0
    budget_bytes: int = 0
    margin_bytes: int = 0
    headroom_bytes: int = 0
    estimate_source: str = ""
    reason: str = ""
    lease_seconds: float = 0.0
    available: bool = True

    def __bool__(self) -> bool:
        return bool(self.admitted)


@dataclasses.dataclass
class RunStart(_Fields):
    """run_start's reply: the run's id, the baseline reading and whether peaks are exact."""
    run_id: str = ""
    baseline: Reading = dataclasses.field(default_factory=Reading)
    start_time_ticks: int = 0
    exact_peaks: bool = False
    # The thresholds this run is judged by (in model copies when it declared model_bytes).
    thresholds: str = ""
    growth_min_bytes: int = 0
    runaway_bytes_per_second: float = 0.0
    release_slack_bytes: int = 0
    # False when the run's start is not in the ledger yet (e.g. a full disk); warning says why
    # and what becomes of it.
    stored: bool = False
    warning: str = ""

    @classmethod
    def from_reply(cls, reply: Dict[str, Any]) -> "RunStart":
        return _pick(cls, reply, baseline=Reading.from_reply(reply.get("baseline")))


@dataclasses.dataclass
class MarkResult(_Fields):
    """A mark's reply. At a phase end, phase_peak_bytes is the phase's peak (exact from the
    kernel's high-water mark when peak_exact); verdicts are those this mark raised.
    warning: a hint beside an accepted mark, e.g. a phase name the run's plan does not list
    (also logged at warning level on the "ramguard" logger); empty when none.
    delivered=False: the daemon was unreachable or refused the mark (see the log)."""
    reading: Reading = dataclasses.field(default_factory=Reading)
    round: int = 0
    phase_peak_bytes: int = 0
    phase_duration_seconds: float = 0.0
    peak_exact: bool = False
    verdicts: List[Verdict] = dataclasses.field(default_factory=list)
    stored: bool = False
    warning: str = ""
    delivered: bool = True

    @classmethod
    def from_reply(cls, reply: Dict[str, Any]) -> "MarkResult":
        return _pick(cls, reply, reading=Reading.from_reply(reply.get("reading")),
                     verdicts=_verdicts(reply))


@dataclasses.dataclass
class RunEndResult(_Fields):
    """run_end's reply: the last reading, the run's peak, and the verdicts the end raised (the
    last round's growth verdict among them), followed by those that arrived while end() waited
    for the release verdict; release is that verdict, None when it was still pending.
    delivered=False: the daemon was unreachable or refused the end (see the log)."""
    reading: Reading = dataclasses.field(default_factory=Reading)
    peak_bytes: int = 0
    verdicts: List[Verdict] = dataclasses.field(default_factory=list)
    stored: bool = False
    warning: str = ""  # set when not stored: why, and what becomes of the run's writes
    delivered: bool = True
    release: Optional[Verdict] = None

    @classmethod
    def from_reply(cls, reply: Dict[str, Any]) -> "RunEndResult":
        return _pick(cls, reply, reading=Reading.from_reply(reply.get("reading")),
                     verdicts=_verdicts(reply))


_MARK_KINDS = {"begin": "PHASE_BEGIN", "end": "PHASE_END", "round_end": "ROUND_END",
               "PHASE_BEGIN": "PHASE_BEGIN", "PHASE_END": "PHASE_END", "ROUND_END": "ROUND_END"}
_ALLOCATOR_FIELDS = ("allocated_bytes", "active_bytes", "resident_bytes", "retained_bytes")
_FAILURE_MAX_BYTES = 200  # the daemon takes 256: the exception's type and its message's start
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]+")


def _remaining(deadline: float) -> float:
    """Seconds left before a monotonic deadline; socket.timeout once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("timed out")
    return left


def _now_us() -> int:
    """Wall-clock microseconds since the epoch: the daemon's clock on the same host."""
    return time.time_ns() // 1000


def _describe(exc_type: Optional[type], exc: Optional[BaseException]) -> str:
    """"ValueError: bad shape" on one line (the type first: it is what one groups by)."""
    name = str(getattr(exc_type, "__qualname__", None) or getattr(exc_type, "__name__", "Exception"))
    try:
        message = str(exc) if exc is not None else ""
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the original exception
        message = ""
    text = _CONTROL_RE.sub(" ", f"{name}: {message}" if message else name)
    return text.encode()[:_FAILURE_MAX_BYTES].decode(errors="ignore")


class Phase:
    """A phase of a run as a context manager: begin mark on entry, end mark on exit (also when
    the body raises: then `exception` names it). `begin_reply` and `end_reply` hold the marks'
    results."""

    def __init__(self, run: "Run", name: str, round_no: Optional[int] = None,
                 allocator: bool = False) -> None:
        self.run, self.name, self.round = run, name, round_no
        self.allocator = allocator  # send allocator_stats() with the end mark
        self.begin_reply: Optional[MarkResult] = None
        self.end_reply: Optional[MarkResult] = None
        self.exception: Optional[str] = None

    def __enter__(self) -> "Phase":
        self.begin_reply = self.run.mark("begin", self.name, round_no=self.round)
        return self

    def __exit__(self, exc_type: Optional[type], exc: Optional[BaseException],
                 tb: Any) -> Literal[False]:
        if exc_type is None:
            # The live bytes at the end: the report puts them next to the plan and the peak.
            stats = _allocator_wire(allocator_stats()) if self.allocator else None
            self.end_reply = self.run.mark("end", self.name, round_no=self.round, allocator=stats)
            return False
        self.exception = _describe(exc_type, exc)
        logger.info("ramguard: phase %s of run %s left by %s", self.name, self.run.run_id,
                    self.exception)
        try:  # the body's exception matters more than a failed end mark
            self.end_reply = self.run.mark("end", self.name, round_no=self.round)
        except (RamguardError, OSError):
            pass
        return False

    @property
    def peak_bytes(self) -> int:
        """The phase's peak (exact from the kernel's high-water mark when `peak_exact`)."""
        return self.end_reply.phase_peak_bytes if self.end_reply is not None else 0


_PHASE_NAME_RE = re.compile(r"[a-z0-9_.-]{1,64}\Z")


def _check_phase(name: str) -> None:
    """The daemon's rule for phase names, checked here: a typo is the caller's to fix now."""
    if not isinstance(name, str) or not _PHASE_NAME_RE.match(name):
        raise ValueError(f"invalid phase name {name!r}: use 1-64 characters of a-z 0-9 _ . -")


def _no_legacy(legacy: Dict[str, Any]) -> None:
    if legacy:
        raise TypeError(f"unexpected arguments {sorted(legacy)}")


class Run:
    """A run on the daemon. As a context manager it ends the run on exit: normally, or as
    failed with the exception's type when the body raises; a run attached to somebody else's
    (attach(), current_run()) is left to its starter."""

    def __init__(self, client: "Client", run_id: str, reply: Optional[RunStart] = None,
                 owned: bool = True, start_body: Optional[Dict[str, Any]] = None) -> None:
        self.client = client
        self.run_id = run_id
        self.start_reply: RunStart = reply if reply is not None else RunStart(run_id=run_id)
        self.owned = owned
        self.end_reply: Optional[RunEndResult] = None
        # What this process believes, to resynchronise the daemon after an outage.
        self._open: List[str] = []        # phases entered and not left, outermost first
        self._began: Set[str] = set()         # phases this process ever began (only those it ends)
        # When this process last began and left each phase (wall-clock us): a resync sends the
        # mark the daemon missed with its real time, not the time of the resync.
        self._began_at: Dict[str, int] = {}
        self._left_at: Dict[str, int] = {}
        # When it first left each phase while the daemon could not hear it: the daemon's phase
        # of that name ended then, even if this process is in the phase again by the resync.
        self._left_unheard: Dict[str, int] = {}
        self._rounds_ended = 0            # round ends this process marked, heard or not
        self._counted = owned             # this process numbers rounds (attached: the daemon)
        self._rounds_unheard = 0          # uncounted round ends the daemon did not hear
        self._start_body = start_body     # set while the daemon has not heard the start
        self._needs_sync = False
        # The connection the run last spoke on; another one may be a restarted daemon.
        self._generation: Optional[int] = client._generation if reply is not None else None
        self._gone = False                # the daemon no longer has this run active
        self._lock = threading.RLock()
        # When the mark being sent (or the end's resync) stops waiting, monotonic: the calls of
        # one mark share it.
        self._mark_deadline = 0.0
        self._delivered: Set[Tuple[str, int, int, bool, str]] = set()  # verdicts handed over
        self.model_bytes = 0              # the run's declared model size: census model copies
        # Census: roots registered by census_roots (weak where the object allows it), whether
        # a growth warning stands (a census goes with every round end while it does), and the
        # last census taken (the whole result, which the mark carries in part).
        self._census_roots: Dict[str, Any] = {}
        self._growth_standing = False
        self.last_census: Optional[Dict[str, Any]] = None

    @property
    def baseline(self) -> Reading:
        return self.start_reply.baseline

    @property
    def exact_peaks(self) -> bool:
        return bool(self.start_reply.exact_peaks)

    @property
    def open_phases(self) -> List[str]:
        """The phases this process is in, outermost first."""
        return list(self._open)

    @classmethod
    def attach(cls, run_id: str, client: Optional["Client"] = None) -> "Run":
        """Join a run that already exists (for example one started by `ramguard exec`)."""
        return cls(client or Client(), run_id, owned=False)

    def phase(self, name: str, round_no: Optional[int] = None, allocator: bool = False,
              **legacy: Any) -> Phase:
        """`with run.phase("aggregation"):` marks the phase's begin and end. allocator=True sends
        allocator_stats() with the end mark (the application's live bytes, next to the plan and
        the exact peak in the report)."""
        round_no = legacy.pop("round", round_no)
        _no_legacy(legacy)
        _check_phase(name)
        return Phase(self, name, round_no, allocator)

    # -- marks ------------------------------------------------------------------------------

    def mark(self, kind: str, phase: str = "", round_no: Optional[int] = None,
             allocator: Optional[Dict[str, int]] = None, gc: Optional[Dict[str, Any]] = None,
             census: Optional[Dict[str, Any]] = None, **legacy: Any) -> MarkResult:
        """Send a mark. kind: "begin", "end" or "round_end" (or the protocol's enum names).
        allocator: dict with allocated_bytes/active_bytes/resident_bytes/retained_bytes;
        gc: dict with rss_before_bytes/rss_after_bytes/collected_objects/duration_seconds.
        Not strict: never raises for the daemon's sake (delivered=False in the result)."""
        round_no = legacy.pop("round", round_no)
        _no_legacy(legacy)
        if kind not in _MARK_KINDS:
            raise ValueError(f"invalid mark kind {kind!r}; expected begin, end or round_end")
        wire_kind = _MARK_KINDS[kind]
        if wire_kind != "ROUND_END":
            _check_phase(phase)
        body: Dict[str, Any] = {"kind": wire_kind, "phase": phase or None,
                                "round": round_no or None}
        if allocator is not None:
            unknown = set(allocator) - set(_ALLOCATOR_FIELDS)
            if unknown:
                raise ValueError(f"unknown allocator fields {sorted(unknown)}; "
                                 f"expected {', '.join(_ALLOCATOR_FIELDS)}")
            body["allocator"] = {k: int(v) for k, v in allocator.items()}
        if gc is not None:
            body["gc"] = dict(gc)
        if census is not None:
            body["census"] = _census_wire(census)
        body["at_unix_us"] = at_us = _now_us()
        with self._lock:
            # One bound for the whole mark, the resynchronisation it may do first included.
            self._mark_deadline = time.monotonic() + self.client.mark_timeout_seconds
            # In step with the daemon as of before this mark (a resync must not replay it).
            failure: Optional[RamguardError] = None
            try:
                ready = self._ready()
            except RamguardError as e:
                ready, failure = False, e
            # This process's view changes whatever the daemon answers: it is what resync restores.
            numbered = bool(round_no)
            if wire_kind == "PHASE_BEGIN":
                self._open.append(phase)
                self._began.add(phase)
                self._began_at[phase] = at_us
            elif wire_kind == "PHASE_END" and phase in self._open:
                self._open.remove(phase)
                self._left_at[phase] = at_us
            elif wire_kind == "ROUND_END":
                self._rounds_ended = round_no if round_no else self._rounds_ended + 1
                if self._counted:
                    body["round"] = self._rounds_ended  # survives round ends never heard
            if failure is not None:
                result = self._dropped(failure)
            elif not ready:
                result = MarkResult(delivered=False)
            else:
                result = self._send_mark(body, wire_kind, phase)
            if wire_kind == "PHASE_END" and not result.delivered:
                self._left_unheard.setdefault(phase, at_us)
            if wire_kind == "ROUND_END" and not result.delivered and not numbered \
                    and not self._counted:
                self._rounds_unheard += 1
            return result

    def _send_mark(self, body: Dict[str, Any], wire_kind: str, phase: str) -> MarkResult:
        try:
            if wire_kind == "ROUND_END" and self._counted:
                body["round"] = max(body["round"] or 0, self._rounds_ended)
            body["run_id"] = self.run_id
            try:
                try:
                    reply = self._call("mark", body)
                except (MalformedError, InvalidArgumentError) as e:
                    if "census" not in body or self.client.strict:
                        raise
                    # A daemon from before the census, or one that refuses this summary: the
                    # mark matters more than the census it carries.
                    logger.warning("ramguard: run %s: ramguardd did not take the census (%s); "
                                   "marking without it", self.run_id, e.message)
                    body = {k: v for k, v in body.items() if k != "census"}
                    reply = self._call("mark", body)
            except FailedPreconditionError as e:
                if self.client.strict:
                    raise
                resent = self._mark_refused(e, wire_kind, phase, body)
                if resent is None:
                    return MarkResult(delivered=False)
                reply = resent
        except RamguardError as e:
            return self._dropped(e)
        result = MarkResult.from_reply(reply)
        if result.warning:
            logger.warning("ramguard: run %s: %s", self.run_id, result.warning)
        self._deliver(result.verdicts)
        return result

    def _mark_refused(self, error: RamguardError, wire_kind: str, phase: str,
                      body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """The daemon's view differs from this process's (a mark was lost while it was
        unreachable, or it restarted): make it this process's and resend."""
        logger.warning("ramguard: run %s: %s; resynchronising", self.run_id, error.message)
        if wire_kind == "PHASE_END":
            return None  # the daemon does not hold it open: nothing left to end
        if wire_kind == "PHASE_BEGIN":
            # It holds a begin from before the outage: end that one when this process left it,
            # then begin afresh.
            self._call("mark", {"run_id": self.run_id, "kind": "PHASE_END", "phase": phase,
                                "at_unix_us": self._left_at.get(phase)})
            return self._call("mark", body)
        self._needs_sync = True  # a round end: the daemon counted further than this process
        self._sync()
        if self._gone:
            return None
        if self._counted:
            body["round"] = self._rounds_ended = max(self._rounds_ended, self._daemon_rounds + 1)
        return self._call("mark", body)

    def _dropped(self, error: RamguardError) -> MarkResult:
        if self.client.strict:
            raise error
        self.client._warn(f"run {self.run_id or '(not started)'}: {error}")
        self._needs_sync = True
        return MarkResult(delivered=False)

    def _call(self, command: str, body: Dict[str, Any], force: bool = False) -> Dict[str, Any]:
        """A call of this run; a reply over a new connection means the daemon may have restarted
        since the last one: resynchronise before the next mark. Marks and the status a resync
        reads wait at most mark_timeout_seconds; a mark carries the time after which the daemon
        must drop it (deadline_unix_us) and, unless given, its own time (at_unix_us)."""
        timeout: Optional[float] = None
        if command in ("mark", "status"):
            timeout = self._mark_deadline - time.monotonic()
            if timeout <= 0:
                raise UnavailableError("UNAVAILABLE", "the mark's time bound of "
                                       f"{self.client.mark_timeout_seconds * 1000:.0f} ms was "
                                       "spent before it could be sent (resynchronising)")
        if command == "mark" and self.client._mark_times:
            now_us = _now_us()
            body = dict(body, deadline_unix_us=now_us + int(cast(float, timeout) * 1e6))
            if not body.get("at_unix_us"):
                body["at_unix_us"] = now_us
        elif command == "mark":
            body = {k: v for k, v in body.items() if k not in ("at_unix_us", "deadline_unix_us")}
        try:
            reply = self.client._guarded_call(command, body, force, timeout)
        except UnknownCommandError as e:
            if command != "mark" or not self.client._mark_times or "UnixUs" not in e.message:
                raise
            # A daemon from before protocol fields atUnixUs and deadlineUnixUs: send without.
            logger.info("ramguard: ramguardd does not take mark times (%s); marks go without "
                        "them", e.message)
            self.client._mark_times = False
            return self._call(command, body, force)
        generation = self.client._generation
        if self._generation is not None and generation != self._generation:
            self._needs_sync = True
        self._generation = generation
        return reply

    def round_end(self, round_no: Optional[int] = None, gc_probe: bool = False,
                  allocator: Union[bool, Dict[str, int], None] = True,
                  census: Union[bool, str, None] = None, **legacy: Any) -> MarkResult:
        """Mark the end of a round; the result's verdicts are those the round raised. With
        gc_probe=True, read this process's RSS just before and just after gc.collect() and send
        both: memory that only the collector frees is held by reference cycles, which a test
        that calls the collector itself would hide. allocator=True (the default; it costs
        microseconds) sends allocator_stats() after the gc probe, so a floor that grows while
        the live bytes stay flat is named allocator retention, not a leak; a dict sends those
        figures; False or None sends none.
        census: True or "full" (the whole heap), "roots" (what census_roots reach), False
        (none) or None: a full census every Client(census_every_rounds=N) rounds and at every
        round end while a growth warning stands. It is taken before the gc probe (which would
        free what only cycles hold), kept in run.last_census, and its summary goes with the
        mark (see census())."""
        round_no = legacy.pop("round", round_no)
        _no_legacy(legacy)
        every = self.client.census_every_rounds
        taken = self._take_census(census, every > 0 and (self._rounds_ended + 1) % every == 0)
        probe = _gc_probe() if gc_probe else None
        if allocator is True:
            allocator = _allocator_wire(allocator_stats())
        elif allocator is False:
            allocator = None
        return self.mark("round_end", round_no=round_no, allocator=allocator, gc=probe,
                         census=taken)

    # -- census -----------------------------------------------------------------------------

    def census_roots(self, **named: Any) -> None:
        """Name the objects the census starts from (census(mode="roots") walks only these):
        run.census_roots(model=model, updates=updates). Objects that take weak references are
        held weakly; others (dicts, lists) are held until the run ends or name=None drops them:
        register the object that holds a dict to avoid that."""
        for name, obj in named.items():
            if obj is None:
                self._census_roots.pop(name, None)
                continue
            try:
                self._census_roots[name] = weakref.ref(obj)
            except TypeError:
                self._census_roots[name] = obj

    def census(self, mode: str = "full", budget_seconds: Optional[float] = None
               ) -> Dict[str, Any]:
        """A census now (see census()), from the registered roots, sized in the run's model
        copies; kept in last_census. Nothing is sent."""
        roots: Dict[str, Any] = {}
        for name, held in self._census_roots.items():
            obj = held() if isinstance(held, weakref.ref) else held
            if obj is not None:
                roots[name] = obj
        obj = None
        budget = self.client.census_budget_seconds if budget_seconds is None else budget_seconds
        try:
            result = census(roots, mode=mode, budget_seconds=budget,
                            min_bytes=self.client.census_min_bytes, model_bytes=self.model_bytes)
        finally:
            roots.clear()
        self.last_census = result
        return result

    def _take_census(self, census: Union[bool, str, None], due: bool) -> Optional[Dict[str, Any]]:
        """The census a round end or the end asked for (None: when due or a growth warning
        stands). Never raises for the census's sake unless strict: a guard must not break what
        it guards."""
        if census is None:
            census = "full" if due or self._growth_standing else False
        if census is False:
            return None
        mode = "full" if census is True else str(census)
        if mode not in ("full", "roots"):
            raise ValueError(f"invalid census {census!r}; expected True, 'full', 'roots' or False")
        try:
            return self.census(mode)
        except Exception as e:
            if self.client.strict:
                raise
            logger.warning("ramguard: run %s: census failed: %s: %s", self.run_id,
                           type(e).__name__, e)
            return None

    # -- resynchronisation ------------------------------------------------------------------

    def _ready(self, force: bool = False) -> bool:
        """Started and in step with the daemon. False while backing off (unless forced) or when
        the run is gone (not strict); strict: raises what failed."""
        if self._gone or self.end_reply is not None:
            return False
        if self._start_body is None and not self._needs_sync:
            return True
        if not (force or self.client._may_try()):
            return False
        try:
            if self._start_body is not None:
                self._start(force)
            self._sync(force)
        except UnavailableError:
            raise
        except RamguardError as e:
            if self.client.strict:
                raise
            self._give_up(str(e))
            return False
        return not self._gone

    def _start(self, force: bool = False) -> None:
        assert self._start_body is not None
        reply = self._call("run_start", self._start_body, force)
        self.start_reply = RunStart.from_reply(reply)
        self.run_id = self.start_reply.run_id
        self._start_body = None
        self._needs_sync = bool(self._open)
        logger.info("ramguard: run %s started late, once ramguardd answered; what happened "
                    "before is not in it", self.run_id)

    _daemon_rounds = 0

    def _sync(self, force: bool = False) -> None:
        """Make the daemon's open phases and round count this process's."""
        if not self._needs_sync:
            return
        status = self._call("status", {"run_id": self.run_id}, force)
        runs = status.get("runs", [])
        if not runs or runs[0].get("state", "active") != "active":
            state = runs[0].get("state") if runs else "unknown"
            self._give_up(f"ramguardd reports run {self.run_id} as {state}")
            return
        run = runs[0]
        self._daemon_rounds = int(run.get("round", 0))
        # Open phases have no duration yet: 0 (or absent) on the wire; a closed one took time.
        held = [p["phase"] for p in run.get("phases", []) if not p.get("duration_seconds")]
        # A phase left unheard ends when it was first left, also when this process is in it
        # again (it begins again below, at its latest begin): else the phase would be made as
        # long as the outage.
        ended = set()
        for name in held:
            unheard = self._left_unheard.get(name)
            if unheard is not None or (name in self._began and name not in self._open):
                logger.info("ramguard: run %s: ending phase %s, which this process left while "
                            "ramguardd could not hear it", self.run_id, name)
                self._call("mark", {"run_id": self.run_id, "kind": "PHASE_END", "phase": name,
                                    "at_unix_us": unheard or self._left_at.get(name)})
                ended.add(name)
        self._left_unheard.clear()
        for name in self._open:
            if name not in held or name in ended:
                logger.info("ramguard: run %s: beginning phase %s again: ramguardd did not "
                            "hear its begin", self.run_id, name)
                self._call("mark", {"run_id": self.run_id, "kind": "PHASE_BEGIN", "phase": name,
                                    "at_unix_us": self._began_at.get(name)})
        if not self._counted and self._rounds_unheard:
            # Rounds the daemon did not hear still count: number the next ones from here on.
            self._rounds_ended = self._daemon_rounds + self._rounds_unheard
            self._counted = True
        self._needs_sync = False

    def _give_up(self, why: str) -> None:
        if not self._gone:
            logger.warning("ramguard: %s; further marks of this run are dropped", why)
        self._gone = True

    # -- end --------------------------------------------------------------------------------

    def _deliver(self, verdicts: List[Verdict]) -> List[Verdict]:
        """Hand the verdicts not handed over before to on_verdict, once each; returns them."""
        new: List[Verdict] = []
        for v in verdicts:
            key = (v.kind, int(v.round), int(v.at_unix_ms), bool(v.cleared), v.summary)
            if v.kind == "growth_warning":
                self._growth_standing = not v.cleared and not v.passed
            if key not in self._delivered:
                self._delivered.add(key)
                new.append(v)
        self.client._deliver(new)
        return new

    def _await_release(self, result: RunEndResult, wait_seconds: float) -> None:
        """Ask for the run's verdicts until the release verdict is among them or wait_seconds
        have passed; deliver the ones no reply carried. Never raises for the daemon's sake."""
        deadline = time.monotonic() + max(0.0, wait_seconds)
        poll = 0.1
        while True:
            for v in result.verdicts:
                if v.kind == "release":
                    result.release = v
            if result.release is not None:
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(min(poll, max(0.0, deadline - time.monotonic())))
            poll = min(1.0, poll * 2)
            try:
                run = self.client.report(self.run_id).get("run", {})
            except RamguardError as e:
                logger.info("ramguard: run %s: cannot ask for the release verdict: %s",
                            self.run_id, e.message)
                return
            late = self._deliver([Verdict.from_reply(v) for v in run.get("verdicts", [])])
            result.verdicts.extend(late)
        logger.info("ramguard: run %s: release pending after %.1f s: see `ramguard report %s`",
                    self.run_id, wait_seconds, self.run_id)

    def end(self, failure: Optional[str] = None, allocator: bool = True,
            trim_probe: bool = False, gc_probe: bool = False,
            release_wait_seconds: Optional[float] = None,
            census: Union[bool, str, None] = None) -> RunEndResult:
        """End the run; the result carries the last reading, the peak and the verdicts the end
        raised. failure: why the run failed (e.g. "ValueError: bad shape"; one line, at most
        256 bytes): the run gets a critical "failed" verdict that says so. Not strict: never
        raises for the daemon's sake (delivered=False).
        The release verdict (RSS back to the baseline after the run) can tell the application's
        memory from the allocator's with facts measured here, in this order: gc_probe=True
        (RSS around gc.collect()), allocator=True (the default: allocator_stats(), live and
        free bytes, microseconds),
        trim_probe=True (RSS around malloc_trim(0) / jemalloc purge, which really returns the
        allocator's free memory).
        release_wait_seconds: how long to wait for the release verdict after the end (default:
        the Client's release_wait_seconds, 5 s); it arrives as soon as RSS is back within the
        slack, or when release.grace (30 s by default) expires with memory still held. While
        end() waits this process still holds what it holds: free first, then end. 0: no wait.
        census: as round_end's, taken first (None: when Client(census_every_rounds) is set or a
        growth warning stands): what is still held at the end, and by whom."""
        facts: Dict[str, Any] = {}
        if self.end_reply is None:
            taken = self._take_census(census, self.client.census_every_rounds > 0)
            if taken is not None:
                facts["census"] = _census_wire(taken)
        if gc_probe:
            facts["gc"] = _gc_probe()
        if allocator or trim_probe:
            stats = allocator_stats(trim=trim_probe)
            wire = _allocator_wire(stats) if allocator else None
            if wire is not None:
                wire["allocator"] = stats["allocator"]
                facts["allocator"] = wire
            trim = stats.get("trim")
            if trim and trim.get("available", True):
                facts["trim"] = {k: trim[k] for k in
                                 ("rss_before_bytes", "rss_after_bytes", "duration_seconds")}
        with self._lock:
            if self.end_reply is not None:
                return self.end_reply
            try:
                # The end is worth one attempt even while backing off: it is the run's last word,
                # and outside the training loop: its resynchronisation has the Client's timeout.
                self._mark_deadline = time.monotonic() + self.client.timeout
                self._census_roots.clear()
                if not self._ready(force=True):
                    raise UnavailableError("UNAVAILABLE", "run end not delivered")
                # A daemon older than run_end's facts or failure refuses them: end the run all
                # the same, dropping the facts first, then the failure.
                bodies = [{"run_id": self.run_id, "failure": failure or None, **facts}]
                if facts:
                    bodies.append({"run_id": self.run_id, "failure": failure or None})
                if failure:
                    bodies.append({"run_id": self.run_id})
                for attempt, body in enumerate(bodies):
                    try:
                        reply = self._call("run_end", body, force=True)
                        break
                    except (MalformedError, InvalidArgumentError) as e:
                        if attempt + 1 == len(bodies):
                            raise
                        logger.warning("ramguard: run %s: ramguardd did not take the end's %s "
                                       "(%s); ending without", self.run_id,
                                       "allocator facts" if attempt == 0 and facts else
                                       f"failure {failure!r}", e.message)
                result = RunEndResult.from_reply(reply)
            except RamguardError as e:
                if self.client.strict:
                    raise
                if not self._gone:
                    self.client._warn(f"run {self.run_id or '(not started)'}: ending failed: {e}")
                result = RunEndResult(delivered=False)
            self.end_reply = result
            self._open.clear()
            result.verdicts = self._deliver(result.verdicts) if result.delivered else []
            wait = (self.client.release_wait_seconds if release_wait_seconds is None
                    else release_wait_seconds)
            if result.delivered and self.owned:
                self._await_release(result, wait)
        return result

    def report(self, include_samples: bool = False) -> Dict[str, Any]:
        return self.client.report(self.run_id, include_samples=include_samples)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type: Optional[type], exc: Optional[BaseException],
                 tb: Any) -> Literal[False]:
        if not self.owned or self.end_reply is not None:
            return False
        normal = exc_type is None or (exc_type is SystemExit and
                                      getattr(exc, "code", None) in (0, None))
        try:  # the body's exception matters more than a failed end
            # No wait here: the with block's own locals are freed only after it returns, and
            # the daemon judges the release on what happens right after the end. The release
            # verdict still reaches on_verdict, from a background thread.
            result = self.end(failure=None if normal else _describe(exc_type, exc),
                              release_wait_seconds=0)
        except (RamguardError, OSError):
            if exc_type is None:
                raise
            return False
        wait = self.client.release_wait_seconds
        if (result.delivered and self.owned and result.release is None and wait > 0 and
                self.client.on_verdict is not None):
            threading.Thread(target=self._await_release, args=(result, wait),
                             name=f"ramguard-release-{self.run_id}", daemon=True).start()
        return False


# --------------------------------------------------------------------------------------------
# The client

VerdictCallback = Callable[[Verdict], None]


class Client:
    """A connection to ramguardd. Connects on first use; one request at a time (thread-safe).

    strict=False (the default): the training loop's calls (start_run, marks, phases, round ends,
    run end) never raise because the daemon is unreachable or refuses them; see the module's
    documentation. strict=True: every failure raises its RamguardError subclass.
    on_verdict: called once with each Verdict of a run, in the caller's thread: those of a
    mark's or run end's reply, and those Run.end() fetches while it waits (release_wait_seconds)
    for the release verdict.
    A refused admission is a normal answer, not an error."""

    def __init__(self, socket_path: Optional[str] = None, timeout: float = 10.0, *,
                 strict: bool = False, on_verdict: Optional[VerdictCallback] = None,
                 release_wait_seconds: float = 5.0,
                 mark_timeout_seconds: float = MARK_TIMEOUT_SECONDS,
                 census_every_rounds: int = 0,
                 census_budget_seconds: float = CENSUS_BUDGET_SECONDS,
                 census_min_bytes: Union[int, str] = CENSUS_MIN_BYTES) -> None:
        self.socket_path = socket_path or default_socket_path()
        self.timeout = timeout
        # How long a mark (with the resynchronisation it may do first) waits for ramguardd:
        # past it the mark is not delivered, and the daemon drops it if it reads it later.
        if not (math.isfinite(mark_timeout_seconds) and mark_timeout_seconds > 0):
            raise ValueError(f"mark_timeout_seconds must be a positive number of seconds, "
                             f"not {mark_timeout_seconds!r}")
        self.mark_timeout_seconds = mark_timeout_seconds
        # Census: a full one every N round ends (0: only when asked or a growth warning stands).
        if census_every_rounds < 0 or not (math.isfinite(census_budget_seconds) and
                                           census_budget_seconds > 0):
            raise ValueError("census_every_rounds must be 0 or more and census_budget_seconds "
                             f"positive, not {census_every_rounds!r}, {census_budget_seconds!r}")
        self.census_every_rounds = census_every_rounds
        self.census_budget_seconds = census_budget_seconds
        self.census_min_bytes = parse_size(census_min_bytes)
        self._mark_times = True  # False once a daemon from before MarkRequest fields 7-8 says so
        self.strict = strict
        self.on_verdict = on_verdict
        # How long Run.end() waits for the release verdict (Run.end's own argument wins).
        self.release_wait_seconds = release_wait_seconds
        self._sock: Optional[socket.socket] = None
        self._buffer = b""
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.server_version = ""
        self._generation = 0  # connections made so far: a change may mean a restarted daemon
        # Outage state of the non-strict calls: when to try again, and whether it was logged.
        self._retry_at = 0.0
        self._retry_seconds = 0.0
        self._warned = False

    # -- transport ------------------------------------------------------------------------

    def _connect(self, timeout: float) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(self.socket_path)
        except OSError as e:
            sock.close()
            raise UnavailableError("UNAVAILABLE",
                                   f"cannot connect to ramguardd at {self.socket_path}: {e}") from e
        self._sock, self._buffer = sock, b""
        self._generation += 1

    def _peer_closed(self) -> bool:
        # select first: with a timeout set, recv would wait for data instead of returning.
        assert self._sock is not None
        try:
            readable, _, _ = select.select([self._sock], [], [], 0)
            return bool(readable) and self._sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        self.close()
        return False

    def _read_line(self, deadline: float) -> bytes:
        assert self._sock is not None
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_REPLY_BYTES:
                raise ResourceExhaustedError("RESOURCE_EXHAUSTED",
                                             f"reply longer than {MAX_REPLY_BYTES} bytes")
            self._sock.settimeout(_remaining(deadline))
            chunk = self._sock.recv(65536)
            if not chunk:
                raise UnavailableError("UNAVAILABLE", "ramguardd closed the connection")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def call(self, command: str, body: Optional[Dict[str, Any]] = None,
             timeout: Optional[float] = None) -> Dict[str, Any]:
        """Send one request {"version":1,"requestId":..., <command>: body} and return the
        result of the reply as a dict with snake_case keys. `command` is the snake_case name of
        the Request field (hello, run_start, mark, run_end, admit, release, status, report,
        compare, list_runs). timeout: seconds for connecting, sending and the whole reply
        (default: the Client's timeout). Always raises on failure, whatever `strict` says."""
        seconds = self.timeout if timeout is None else timeout
        request_id = str(next(self._ids))
        request = {"version": PROTOCOL_VERSION, "requestId": request_id,
                   _camel(command): _to_wire(body or {})}
        try:
            # NaN and Infinity are not JSON: refused here, naming the field, not by the daemon.
            frame = (json.dumps(request, separators=(",", ":"), allow_nan=False) + "\n").encode()
        except ValueError as e:
            bad = _non_finite_path(request)
            raise InvalidArgumentError("INVALID_ARGUMENT",
                                       f"{command}: {bad or 'a number'} is not a finite number "
                                       f"({e})") from e
        if len(frame) > MAX_REQUEST_BYTES:
            raise InvalidArgumentError("INVALID_ARGUMENT",
                                       f"request of {len(frame)} bytes exceeds the frame limit "
                                       f"of {MAX_REQUEST_BYTES} bytes")
        with self._lock:
            if self._sock is not None and self._peer_closed():
                # The daemon closed an idle connection (control.idle_timeout) or restarted.
                self._sock.close()
                self._sock = None
            deadline = time.monotonic() + seconds
            if self._sock is None:
                self._connect(seconds)
            assert self._sock is not None
            try:
                self._sock.settimeout(_remaining(deadline))
                self._sock.sendall(frame)
                line = self._read_line(deadline)
            except (OSError, RamguardError) as e:
                # The stream is out of step or gone; the next call reconnects.
                self._sock.close()
                self._sock = None
                if isinstance(e, RamguardError):
                    raise
                if isinstance(e, socket.timeout):
                    raise UnavailableError("UNAVAILABLE", f"no reply from ramguardd within "
                                           f"{seconds * 1000:.0f} ms") from e
                raise UnavailableError("UNAVAILABLE",
                                       f"talking to ramguardd failed: {e}") from e
        try:
            reply = json.loads(line)
        except ValueError as e:
            raise MalformedError("MALFORMED", f"reply is not JSON: {line[:200]!r}") from e
        if not isinstance(reply, dict):
            raise MalformedError("MALFORMED", f"reply is not a JSON object: {line[:200]!r}")
        error = reply.get("error")
        # A request the daemon could not parse gets its error without the request's id: that
        # error is the answer (one request is in flight per connection).
        if reply.get("requestId", request_id) != request_id and not (error and
                                                                      not reply.get("requestId")):
            raise MalformedError("MALFORMED", f"reply for request {reply.get('requestId')!r}, "
                                              f"expected {request_id!r}")
        if error:
            raise _error(error.get("code", "CODE_UNSPECIFIED"), error.get("message", ""))
        self.server_version = reply.get("serverVersion", "")
        key = _camel(command)
        return cast(Dict[str, Any], _from_wire(reply.get(key, {}), key))

    # -- the non-strict calls' outage handling ----------------------------------------------

    def _may_try(self) -> bool:
        """False while backing off after the daemon was unreachable (strict: always True)."""
        return self.strict or time.monotonic() >= self._retry_at

    def _guarded_call(self, command: str, body: Dict[str, Any],
                      force: bool = False, timeout: Optional[float] = None) -> Dict[str, Any]:
        """call() that keeps the outage state: an unreachable daemon starts (or lengthens) the
        backoff; an answer ends it. force: try even while backing off."""
        if not (force or self._may_try()):
            raise UnavailableError("UNAVAILABLE", "ramguardd unreachable; retrying in "
                                   f"{self._retry_at - time.monotonic():.1f} s")
        try:
            reply = self.call(command, body, timeout)
        except UnavailableError:
            self._retry_seconds = min(RETRY_MAX_SECONDS,
                                      max(RETRY_FIRST_SECONDS, self._retry_seconds * 2))
            self._retry_at = time.monotonic() + self._retry_seconds
            raise
        if self._warned:
            logger.info("ramguard: ramguardd at %s answers again", self.socket_path)
        self._warned, self._retry_seconds, self._retry_at = False, 0.0, 0.0
        return reply

    def _warn(self, message: str) -> None:
        """One warning per outage; the rest at debug level."""
        if self._warned:
            logger.debug("ramguard: %s", message)
            return
        self._warned = True
        logger.warning("ramguard: %s; training continues, marks are dropped until ramguardd "
                       "answers (retrying with backoff)", message)

    def _deliver(self, verdicts: List[Verdict]) -> None:
        if self.on_verdict is None:
            return
        for verdict in verdicts:
            try:
                self.on_verdict(verdict)
            except Exception:  # noqa: BLE001 - a callback must not break the loop either
                if self.strict:
                    raise
                logger.exception("ramguard: the on_verdict callback raised")

    # -- commands -------------------------------------------------------------------------

    def hello(self) -> Hello:
        """Protocol version, budget and the caller as the server sees it (peer_pid, peer_uid)."""
        return _pick(Hello, self.call("hello", {"client": f"ramguard-python/{__version__}"}))

    def admit(self, job: str, estimate_bytes: Union[int, str, None] = None,
              model_bytes: Union[int, str, None] = None, parameter_count: Optional[int] = None,
              bytes_per_parameter: Optional[float] = None, plan: Optional[str] = None,
              hosts: Optional[int] = None, use_calibrated: bool = False,
              pid: Optional[int] = None, admit_when_unavailable: bool = False,
              scope: Optional[str] = None) -> Admission:
        """Ask whether a Load fits the budget before claiming GPU hosts. Give estimate_bytes, or a
        model (model_bytes, or parameter_count x bytes_per_parameter) and a plan name. Sizes may
        be ints or strings like "2.5GB". Returns an Admission; a refusal raises nothing.

        When the daemon cannot be reached the caller decides: by default UnavailableError is
        raised (nothing was checked, so nothing is admitted); with admit_when_unavailable=True
        an Admission with admitted=True and available=False is returned, and a warning logged.
        scope ("tree", "cgroup"): the baseline is that of the run this Load will be, the
        process with its descendants or its memory cgroup, as in start_run(scope=...)."""
        model = None
        if model_bytes is not None or parameter_count is not None:
            model = {"model_bytes": _size_or_none(model_bytes),
                     "parameter_count": parameter_count,
                     "bytes_per_parameter": bytes_per_parameter}
        body = {"job": job, "estimate_bytes": _size_or_none(estimate_bytes), "model": model,
                "plan": plan, "hosts": hosts, "pid": pid,
                "use_calibrated": True if use_calibrated else None, "scope": scope}
        try:
            return _pick(Admission, self.call("admit", body))
        except UnavailableError as e:
            if not admit_when_unavailable:
                raise
            logger.warning("ramguard: admitting %s unchecked: %s", job, e.message)
            return Admission(admitted=True, available=False,
                             reason=f"admitted without a check: {e.message}")

    def start_run(self, job: str, labels: Optional[Dict[str, Any]] = None,
                  model_bytes: Union[int, str, None] = None,
                  declared_rounds: Optional[int] = None, hosts: Optional[int] = None,
                  pid: Optional[int] = None, reservation_id: Optional[str] = None,
                  admission: Optional[Admission] = None, scope: Optional[str] = None,
                  cgroup: Optional[str] = None) -> Run:
        """Start a run on `pid` (default: this process). Pass the Admission (or its
        reservation_id) to claim the admitted reservation. Returns a Run (a context manager).
        scope="tree" measures the process and its descendants (workers, a multiprocessing
        pool; the peak is the sum of their high-water marks, an upper bound); scope="cgroup"
        the process's memory cgroup (every process in it, with the cgroup's exact peak);
        cgroup= names another cgroup (root only).
        Not strict and the daemon unreachable: the Run starts when the daemon answers again.
        Not strict and the daemon at a bound (RESOURCE_EXHAUSTED: control.max_runs, the user's
        cap of active runs; INTERNAL; DEADLINE_EXCEEDED): a warning, and a Run that drops its
        marks (delivered=False). A refusal for the caller's mistake (PERMISSION_DENIED,
        INVALID_ARGUMENT) raises in both modes: it is one to fix.
        Inside a launcher's run (RAMGUARD_RUN_ATTACH and RAMGUARD_RUN set, e.g. a Slurm step
        under spank_ramguard.so) it returns that run, attached, instead of starting another."""
        launched = _launcher_run(pid)
        if launched:
            # The launcher admitted and started the run (a Slurm step): join it, so the marks
            # land on it, and leave its end to the launcher.
            logger.info("ramguard: job %s joins run %s started by its launcher (%s)", job,
                        launched, os.environ.get(ATTACH_ENV))
            return Run.attach(launched, self)
        if admission is not None and reservation_id is None:
            reservation_id = admission.reservation_id or None
        body = {"pid": pid, "job": job, "labels": labels or None,
                "model_bytes": _size_or_none(model_bytes), "declared_rounds": declared_rounds,
                "hosts": hosts, "reservation_id": reservation_id, "scope": scope,
                "cgroup_path": cgroup}
        try:
            reply = self._guarded_call("run_start", body)
        except UnavailableError as e:
            if self.strict:
                raise
            self._warn(f"cannot start run of job {job}: {e}")
            run = Run(self, "", owned=True, start_body=body)
            run.model_bytes = cast(int, body["model_bytes"] or 0)
            return run
        except (ResourceExhaustedError, InternalError, DeadlineExceededError) as e:
            # The daemon's state, not the caller's mistake (the run bound, a per-user cap, a
            # full ledger): training goes on unguarded, and says so once.
            if self.strict:
                raise
            run = Run(self, "", owned=True)
            run.model_bytes = cast(int, body["model_bytes"] or 0)
            run._give_up(f"ramguardd did not start a run of job {job}: {e}")
            return run
        start = RunStart.from_reply(reply)
        run = Run(self, start.run_id, start)
        run.model_bytes = cast(int, body["model_bytes"] or 0)
        return run

    def end_run(self, run_id: str, failure: Optional[str] = None) -> RunEndResult:
        return RunEndResult.from_reply(self.call("run_end", {"run_id": run_id,
                                                            "failure": failure}))

    def release(self, reservation_id: str) -> int:
        """Release an admitted reservation that no run will claim; returns the bytes released."""
        return self.call("release", {"reservation_id": reservation_id}).get("released_bytes", 0)

    def status(self, run_id: Optional[str] = None) -> Dict[str, Any]:
        return self.call("status", {"run_id": run_id})

    def report(self, run_id: str, include_samples: bool = False) -> Dict[str, Any]:
        return self.call("report", {"run_id": run_id,
                                    "include_samples": True if include_samples else None})

    def compare(self, run_ids: Optional[List[str]] = None,
                labels: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
        return self.call("compare", {"run_ids": list(run_ids) if run_ids else None,
                                     "labels": labels or None})

    def list_runs(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        return self.call("list_runs", {"limit": limit}).get("runs", [])


def _launcher_run(pid: Optional[int]) -> Optional[str]:
    """The run a launcher started for this process (RAMGUARD_RUN with RAMGUARD_RUN_ATTACH set),
    when start_run is asked for this process; else None."""
    if pid not in (None, 0, os.getpid()) or not os.environ.get(ATTACH_ENV):
        return None
    return os.environ.get(RUN_ENV) or None


def current_run(client: Optional[Client] = None) -> Optional[Run]:
    """The run this process was started in (RAMGUARD_RUN, set by `ramguard exec`), on the
    daemon at RAMGUARD_SOCKET; None when not running under ramguard. The returned Run does not
    end the run on exit: its starter does."""
    run_id = os.environ.get(RUN_ENV)
    if not run_id:
        return None
    return Run.attach(run_id, client or Client())
