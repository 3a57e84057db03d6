"""The protocol as this client speaks it: its constants and limits (the values of
base/include/ramguard/base/protocol.hpp and of the daemon's checks; one place, so that a test can
hold them to the C++ side), the socket's path, and the protobuf JSON mapping of requests and
replies (proto/ramguard.proto)."""

import os
import re
from typing import Any, Dict, Optional

# The values of base/include/ramguard/base/protocol.hpp, which the daemon and the C++ client use
# (tests/python/test_wire.py checks that they match).
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
# A mark with a census waits longer: ramguardd places the census's ranges (maps and pagemap)
# before it answers: 16.5 ms of CPU for 1 GiB of resident ranges (census_place_bench,
# docs/benchmarks.md).
_CENSUS_PLACE_SECONDS = 0.2
_CENSUS_PLACE_SECONDS_PER_GB = 0.1

# The daemon's limits on what a client sends, checked here so that a mistake is the caller's
# ValueError now rather than a refused request later.
CENSUS_TEXT_BYTES = 256  # a holder's path or a cycle's shape on the wire (the daemon's limit)
PHASE_MAX_BYTES = 64  # phase names: 1 to 64 characters of a-z, 0-9, '_', '.', '-'
_PHASE_NAME_RE = re.compile(r"[a-z0-9_.-]{1,%d}\Z" % PHASE_MAX_BYTES)
MAX_FAILURE_BYTES = 256  # the daemon's limit on a run end's failure text
_FAILURE_MAX_BYTES = 200  # of MAX_FAILURE_BYTES: the exception's type and its message's start
_MARK_KINDS = {"begin": "PHASE_BEGIN", "end": "PHASE_END", "round_end": "ROUND_END",
               "PHASE_BEGIN": "PHASE_BEGIN", "PHASE_END": "PHASE_END", "ROUND_END": "ROUND_END"}
_ALLOCATOR_FIELDS = ("allocated_bytes", "active_bytes", "resident_bytes", "retained_bytes")


# The protobuf JSON mapping

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
