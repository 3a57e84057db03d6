"""The connection to ramguardd: requests and replies, the non-strict client's reconnection
with backoff, admission, start_run, and the queries."""

import itertools
import json
import logging
import math
import os
import select
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Literal, Optional, Union, cast

from . import __version__
from .errors import (DeadlineExceededError, InternalError, InvalidArgumentError, MalformedError,
                     RamguardError, ResourceExhaustedError, UnavailableError, _error)
from .largeobjects import CENSUS_BUDGET_SECONDS, CENSUS_MIN_BYTES
from .launcher import _launcher_run
from .probes import allocator_name
from .results import Admission, Hello, RunEndResult, RunStart, Verdict, _non_finite_path, _pick
from .run import Run
from .units import _size_or_none, parse_size
from .wire import (ATTACH_ENV, MARK_TIMEOUT_SECONDS, MAX_REPLY_BYTES, MAX_REQUEST_BYTES,
                   PROTOCOL_VERSION, RETRY_FIRST_SECONDS, RETRY_MAX_SECONDS, _camel, _from_wire,
                   _to_wire, default_socket_path)

logger = logging.getLogger("ramguard")


def _remaining(deadline: float) -> float:
    """Seconds left before a monotonic deadline; socket.timeout once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("timed out")
    return left


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
              scope: Optional[str] = None, allocator: Optional[str] = None) -> Admission:
        """Ask whether a Load fits the budget before claiming GPU hosts. Give estimate_bytes, or a
        model (model_bytes, or parameter_count x bytes_per_parameter) and a plan name. Sizes may
        be ints or strings like "2.5GB". Returns an Admission; a refusal raises nothing.

        When the daemon cannot be reached the caller decides: by default UnavailableError is
        raised (nothing was checked, so nothing is admitted); with admit_when_unavailable=True
        an Admission with admitted=True and available=False is returned, and a warning logged.
        scope ("tree", "cgroup"): the baseline is that of the run this Load will be, the
        process with its descendants or its memory cgroup, as in start_run(scope=...).
        allocator: the loading process's C allocator ("glibc", "jemalloc"; "" for not known);
        by default this process's own (allocator_name()); with pid= of another process, give
        that one's. A plan's estimate for glibc includes what glibc keeps."""
        model = None
        if model_bytes is not None or parameter_count is not None:
            model = {"model_bytes": _size_or_none(model_bytes),
                     "parameter_count": parameter_count,
                     "bytes_per_parameter": bytes_per_parameter}
        body = {"job": job, "estimate_bytes": _size_or_none(estimate_bytes), "model": model,
                "plan": plan, "hosts": hosts, "pid": pid,
                "use_calibrated": True if use_calibrated else None, "scope": scope,
                "allocator": (allocator_name() if allocator is None else allocator) or None}
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
