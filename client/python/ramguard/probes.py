"""What this process's memory is, measured in it: RSS, the C allocator's facts (glibc mallinfo2,
jemalloc mallctl, malloc_trim) through ctypes, and the RSS that gc.collect() frees."""

import ctypes
import gc
import os
import time
from typing import Any, Dict, Optional


def rss_bytes(statm_path: str = "/proc/self/statm") -> int:
    """This process's resident set size in bytes (second field of statm, in pages)."""
    with open(statm_path, "rb") as f:
        fields = f.read().split()
    return int(fields[1]) * os.sysconf("SC_PAGE_SIZE")


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


def allocator_name() -> str:
    """This process's C allocator: "jemalloc", "glibc" or "" (not known), what admit() reports
    so that a plan's estimate includes what the allocator keeps (docs/admission.md)."""
    try:
        if _mallctl() is not None:
            return "jemalloc"
        _process_symbols().mallinfo2
        return "glibc"
    except (AttributeError, OSError):
        return ""


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
