"""ramguard client: tell ramguardd about a training run and ask before a Load claims GPU hosts.

Standard library only; copy this one file next to your coordinator.

    import ramguard

    client = ramguard.Client()                      # RAMGUARD_SOCKET or the default path
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
            run.round_end(gc_probe=True)            # RSS just before and after gc.collect()
    print(client.report(run.run_id)["run"]["verdicts"])

Inside `ramguard exec -- python train.py`, `ramguard.current_run()` joins the run that the CLI
started (from RAMGUARD_SOCKET and RAMGUARD_RUN).

Wire protocol: one JSON object per line over a Unix socket, the protobuf JSON mapping of
ramguard.v1.Request/Reply (proto/ramguard.proto). 64-bit integers arrive as strings; this module
converts them to int, and returns replies as dicts with snake_case keys.
"""

import gc
import itertools
import json
import os
import re
import select
import socket
import threading
import time

__all__ = [
    "Admission", "Client", "RamguardError", "Run", "Phase", "current_run", "default_socket_path",
    "format_bytes", "format_seconds", "parse_duration_ns", "parse_size", "rss_bytes",
]
__version__ = "0.1.0"

# The values of daemon/common/protocol.hpp, which the daemon and the C++ client use (a test
# checks that they match).
PROTOCOL_VERSION = 1
MAX_REQUEST_BYTES = 64 * 1024  # the daemon's default frame limit
MAX_REPLY_BYTES = 64 * 1024 * 1024  # reports with samples can be large; a bound all the same
SOCKET_ENV = "RAMGUARD_SOCKET"
RUN_ENV = "RAMGUARD_RUN"


class RamguardError(Exception):
    """A request failed: `code` is the protocol's error code (e.g. "PERMISSION_DENIED", or
    "UNAVAILABLE" when the daemon cannot be reached), `message` names the problem."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


# --------------------------------------------------------------------------------------------
# Sizes and durations: the rule of daemon/common/units.hpp, held to the same cases
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


def _round_half_away(x):
    """C's round() for x >= 0 (Python's round() goes to even: 0.5 -> 0, where C gives 1)."""
    whole = float(int(x))
    return int(whole) + (1 if x - whole >= 0.5 else 0)


def parse_size(text):
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


def parse_duration_ns(text):
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


def format_bytes(num_bytes, binary=False):
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


def format_seconds(seconds):
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


def _size_or_none(value):
    return None if value is None else parse_size(value)


def rss_bytes(statm_path="/proc/self/statm"):
    """This process's resident set size in bytes (second field of statm, in pages)."""
    with open(statm_path, "rb") as f:
        fields = f.read().split()
    return int(fields[1]) * os.sysconf("SC_PAGE_SIZE")


# --------------------------------------------------------------------------------------------
# Wire conversion

# Fields of 64-bit integer type in ramguard.proto: protobuf's JSON mapping writes them as strings.
_INT64_FIELDS = frozenset("""
    atUnixMs rssBytes anonBytes fileBytes shmemBytes swapBytes hwmBytes budgetBytes parameterCount
    modelBytes allocatedBytes activeBytes residentBytes retainedBytes rssBeforeBytes rssAfterBytes
    collectedObjects startTimeTicks phasePeakBytes peakBytes estimateBytes baselineBytes
    reservedBytes marginBytes headroomBytes releasedBytes floorBytes reservationBytes
    startedUnixMs endedUnixMs bytes minRssBytes maxRssBytes firstFloorBytes lastFloorBytes
    afterCompletionBytes
""".split())
_FLOAT_SPECIALS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
# Maps whose keys are data, not field names: keep keys as they are.
_MAP_FIELDS = frozenset(["labels", "figures"])


def _snake(name):
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _camel(name):
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _from_wire(value, key=None):
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


def _to_wire(value):
    """Request body -> JSON: camelCase keys, 64-bit integers as strings, None fields dropped."""
    if isinstance(value, dict):
        out = {}
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


def default_socket_path():
    """RAMGUARD_SOCKET, else /run/ramguard/ramguard.sock when the effective UID is 0, else
    $XDG_RUNTIME_DIR/ramguard.sock, else /tmp/ramguard-<effective UID>.sock: the daemon's rule
    (daemon/common/socket_path.hpp). The effective UID because the daemon creates its socket, and
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
# Results

class Admission:
    """The daemon's answer to admit(): `admitted`, `reason` and every term of
    baseline + reserved + estimate <= budget - margin. True in a boolean context when admitted."""

    _FIELDS = ("admitted", "reservation_id", "baseline_bytes", "reserved_bytes", "estimate_bytes",
               "budget_bytes", "margin_bytes", "headroom_bytes", "estimate_source", "reason",
               "lease_seconds")
    _DEFAULTS = {"admitted": False, "reservation_id": "", "estimate_source": "", "reason": "",
                 "lease_seconds": 0.0}

    def __init__(self, reply):
        for name in self._FIELDS:
            setattr(self, name, reply.get(name, self._DEFAULTS.get(name, 0)))

    def __bool__(self):
        return bool(self.admitted)

    def __repr__(self):
        return f"Admission(admitted={self.admitted}, reason={self.reason!r})"


_MARK_KINDS = {"begin": "PHASE_BEGIN", "end": "PHASE_END", "round_end": "ROUND_END",
               "PHASE_BEGIN": "PHASE_BEGIN", "PHASE_END": "PHASE_END", "ROUND_END": "ROUND_END"}
_ALLOCATOR_FIELDS = ("allocated_bytes", "active_bytes", "resident_bytes", "retained_bytes")


class Phase:
    """A phase of a run as a context manager: begin mark on entry, end mark on exit (also when
    the body raises). `begin_reply` and `end_reply` hold the daemon's mark replies."""

    def __init__(self, run, name, round=None):
        self.run, self.name, self.round = run, name, round
        self.begin_reply = None
        self.end_reply = None

    def __enter__(self):
        self.begin_reply = self.run.mark("begin", self.name, round=self.round)
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.end_reply = self.run.mark("end", self.name, round=self.round)
            return False
        try:  # the body's exception matters more than a failed end mark
            self.end_reply = self.run.mark("end", self.name, round=self.round)
        except (RamguardError, OSError):
            pass
        return False

    @property
    def peak_bytes(self):
        """The phase's peak (exact from the kernel's high-water mark when `peak_exact`)."""
        return (self.end_reply or {}).get("phase_peak_bytes", 0)


class Run:
    """A run on the daemon. As a context manager it ends the run on exit, also on an exception,
    unless it was attached to a run somebody else started (attach(), current_run())."""

    def __init__(self, client, run_id, reply=None, owned=True):
        self.client = client
        self.run_id = run_id
        self.start_reply = reply or {}
        self.owned = owned
        self.end_reply = None

    @property
    def baseline(self):
        return self.start_reply.get("baseline", {})

    @property
    def exact_peaks(self):
        return bool(self.start_reply.get("exact_peaks", False))

    @classmethod
    def attach(cls, run_id, client=None):
        """Join a run that already exists (for example one started by `ramguard exec`)."""
        return cls(client or Client(), run_id, owned=False)

    def phase(self, name, round=None):
        """`with run.phase("aggregation"):` marks the phase's begin and end."""
        return Phase(self, name, round)

    def mark(self, kind, phase="", round=None, allocator=None, gc=None):
        """Send a mark. kind: "begin", "end" or "round_end" (or the protocol's enum names).
        allocator: dict with allocated_bytes/active_bytes/resident_bytes/retained_bytes;
        gc: dict with rss_before_bytes/rss_after_bytes/collected_objects/duration_seconds."""
        if kind not in _MARK_KINDS:
            raise ValueError(f"invalid mark kind {kind!r}; expected begin, end or round_end")
        body = {"run_id": self.run_id, "kind": _MARK_KINDS[kind], "phase": phase or None,
                "round": round or None}
        if allocator is not None:
            unknown = set(allocator) - set(_ALLOCATOR_FIELDS)
            if unknown:
                raise ValueError(f"unknown allocator fields {sorted(unknown)}; "
                                 f"expected {', '.join(_ALLOCATOR_FIELDS)}")
            body["allocator"] = {k: int(v) for k, v in allocator.items()}
        if gc is not None:
            body["gc"] = dict(gc)
        return self.client.call("mark", body)

    def round_end(self, round=None, gc_probe=False, allocator=None):
        """Mark the end of a round. With gc_probe=True, read this process's RSS just before and
        just after gc.collect() and send both: memory that only the collector frees is held by
        reference cycles, which a test that calls the collector itself would hide."""
        probe = None
        if gc_probe:
            before = rss_bytes()
            started = time.monotonic()
            collected = gc.collect()
            duration = time.monotonic() - started
            after = rss_bytes()
            probe = {"rss_before_bytes": before, "rss_after_bytes": after,
                     "collected_objects": collected, "duration_seconds": duration}
        return self.mark("round_end", round=round, allocator=allocator, gc=probe)

    def end(self):
        """End the run; the reply carries the last reading, the peak and verdicts so far."""
        self.end_reply = self.client.call("run_end", {"run_id": self.run_id})
        return self.end_reply

    def report(self, include_samples=False):
        return self.client.report(self.run_id, include_samples=include_samples)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self.owned or self.end_reply is not None:
            return False
        if exc_type is None:
            self.end()
            return False
        try:
            self.end()
        except (RamguardError, OSError):
            pass
        return False


# --------------------------------------------------------------------------------------------
# The client

class Client:
    """A connection to ramguardd. Connects on first use; one request at a time (thread-safe).
    Failed requests raise RamguardError; a refused admission is a normal answer, not an error."""

    def __init__(self, socket_path=None, timeout=10.0):
        self.socket_path = socket_path or default_socket_path()
        self.timeout = timeout
        self._sock = None
        self._buffer = b""
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.server_version = ""

    # -- transport ------------------------------------------------------------------------

    def _connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError as e:
            sock.close()
            raise RamguardError("UNAVAILABLE",
                                f"cannot connect to ramguardd at {self.socket_path}: {e}") from e
        self._sock, self._buffer = sock, b""

    def _peer_closed(self):
        # select first: with a timeout set, recv would wait for data instead of returning.
        try:
            readable, _, _ = select.select([self._sock], [], [], 0)
            return bool(readable) and self._sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def close(self):
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _read_line(self):
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_REPLY_BYTES:
                raise RamguardError("RESOURCE_EXHAUSTED",
                                    f"reply longer than {MAX_REPLY_BYTES} bytes")
            chunk = self._sock.recv(65536)
            if not chunk:
                raise RamguardError("UNAVAILABLE", "ramguardd closed the connection")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def call(self, command, body=None):
        """Send one request {"version":1,"requestId":..., <command>: body} and return the
        result of the reply as a dict with snake_case keys. `command` is the snake_case name of
        the Request field (hello, run_start, mark, run_end, admit, release, status, report,
        compare, list_runs)."""
        request_id = str(next(self._ids))
        request = {"version": PROTOCOL_VERSION, "requestId": request_id,
                   _camel(command): _to_wire(body or {})}
        frame = (json.dumps(request, separators=(",", ":")) + "\n").encode()
        if len(frame) > MAX_REQUEST_BYTES:
            raise RamguardError("INVALID_ARGUMENT", f"request of {len(frame)} bytes exceeds the "
                                                    f"frame limit of {MAX_REQUEST_BYTES} bytes")
        with self._lock:
            if self._sock is not None and self._peer_closed():
                # The daemon closed an idle connection (control.idle_timeout): start afresh.
                self._sock.close()
                self._sock = None
            if self._sock is None:
                self._connect()
            try:
                self._sock.sendall(frame)
                line = self._read_line()
            except (OSError, RamguardError) as e:
                # The stream is out of step or gone; the next call reconnects.
                self._sock.close()
                self._sock = None
                if isinstance(e, RamguardError):
                    raise
                raise RamguardError("UNAVAILABLE", f"talking to ramguardd failed: {e}") from e
        try:
            reply = json.loads(line)
        except ValueError as e:
            raise RamguardError("MALFORMED", f"reply is not JSON: {line[:200]!r}") from e
        if not isinstance(reply, dict):
            raise RamguardError("MALFORMED", f"reply is not a JSON object: {line[:200]!r}")
        if reply.get("requestId", request_id) != request_id:
            raise RamguardError("MALFORMED", f"reply for request {reply.get('requestId')!r}, "
                                             f"expected {request_id!r}")
        error = reply.get("error")
        if error:
            raise RamguardError(error.get("code", "CODE_UNSPECIFIED"), error.get("message", ""))
        self.server_version = reply.get("serverVersion", "")
        key = _camel(command)
        return _from_wire(reply.get(key, {}), key)

    # -- commands -------------------------------------------------------------------------

    def hello(self):
        """Protocol version, budget and the caller as the server sees it (peer_pid, peer_uid)."""
        return self.call("hello", {"client": f"ramguard-python/{__version__}"})

    def admit(self, job, estimate_bytes=None, model_bytes=None, parameter_count=None,
              bytes_per_parameter=None, plan=None, hosts=None, use_calibrated=False, pid=None):
        """Ask whether a Load fits the budget before claiming GPU hosts. Give estimate_bytes, or a
        model (model_bytes, or parameter_count x bytes_per_parameter) and a plan name. Sizes may
        be ints or strings like "2.5GB". Returns an Admission; a refusal raises nothing."""
        model = None
        if model_bytes is not None or parameter_count is not None:
            model = {"model_bytes": _size_or_none(model_bytes),
                     "parameter_count": parameter_count,
                     "bytes_per_parameter": bytes_per_parameter}
        body = {"job": job, "estimate_bytes": _size_or_none(estimate_bytes), "model": model,
                "plan": plan, "hosts": hosts, "pid": pid,
                "use_calibrated": True if use_calibrated else None}
        return Admission(self.call("admit", body))

    def start_run(self, job, labels=None, model_bytes=None, declared_rounds=None, hosts=None,
                  pid=None, reservation_id=None, admission=None):
        """Start a run on `pid` (default: this process). Pass the Admission (or its
        reservation_id) to claim the admitted reservation. Returns a Run (a context manager)."""
        if admission is not None and reservation_id is None:
            reservation_id = admission.reservation_id or None
        body = {"pid": pid, "job": job, "labels": labels or None,
                "model_bytes": _size_or_none(model_bytes), "declared_rounds": declared_rounds,
                "hosts": hosts, "reservation_id": reservation_id}
        reply = self.call("run_start", body)
        return Run(self, reply.get("run_id", ""), reply)

    def end_run(self, run_id):
        return self.call("run_end", {"run_id": run_id})

    def release(self, reservation_id):
        """Release an admitted reservation that no run will claim; returns the bytes released."""
        return self.call("release", {"reservation_id": reservation_id}).get("released_bytes", 0)

    def status(self, run_id=None):
        return self.call("status", {"run_id": run_id})

    def report(self, run_id, include_samples=False):
        return self.call("report", {"run_id": run_id,
                                    "include_samples": True if include_samples else None})

    def compare(self, run_ids=None, labels=None):
        return self.call("compare", {"run_ids": list(run_ids) if run_ids else None,
                                     "labels": labels or None})

    def list_runs(self, limit=None):
        return self.call("list_runs", {"limit": limit}).get("runs", [])


def current_run(client=None):
    """The run this process was started in (RAMGUARD_RUN, set by `ramguard exec`), on the
    daemon at RAMGUARD_SOCKET; None when not running under ramguard. The returned Run does not
    end the run on exit: its starter does."""
    run_id = os.environ.get(RUN_ENV)
    if not run_id:
        return None
    return Run.attach(run_id, client or Client())
