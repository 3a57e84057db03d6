"""A run and its phases: marks, round ends, the run's end with its release verdict, and the
resynchronisation of a run with a daemon that restarted or missed calls."""

import logging
import re
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Dict, List, Literal, Optional, Set, Tuple, Union, cast

from .errors import (FailedPreconditionError, InvalidArgumentError, MalformedError, RamguardError,
                     UnavailableError, UnknownCommandError)
from .largeobjects import CENSUS_ROWS, _census, _census_after_gc, _census_wire
from .probes import _allocator_wire, _gc_probe, allocator_stats
from .results import MarkResult, Reading, RunEndResult, RunStart, Verdict
from .wire import (_ALLOCATOR_FIELDS, _CENSUS_PLACE_SECONDS, _CENSUS_PLACE_SECONDS_PER_GB,
                   _FAILURE_MAX_BYTES, _MARK_KINDS, _PHASE_NAME_RE)

if TYPE_CHECKING:  # client.py imports this module
    from .client import Client

logger = logging.getLogger("ramguard")


_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]+")


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
        from .client import Client  # client.py imports this module
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
            if census is not None:  # the daemon places its ranges before it answers
                placed = sum(int(r["nbytes"]) for g in body["census"]["groups"]
                             for r in g["ranges"])
                self._mark_deadline += _CENSUS_PLACE_SECONDS + \
                    _CENSUS_PLACE_SECONDS_PER_GB * placed / 1e9
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
        mark (see census()). With the gc probe, what the collector freed is marked in it
        (gc_freed_bytes) and its ranges are not sent: the daemon places the census in the state
        that the mark's reading describes, after the probe."""
        round_no = legacy.pop("round", round_no)
        _no_legacy(legacy)
        every = self.client.census_every_rounds
        taken = self._take_census(census, every > 0 and (self._rounds_ended + 1) % every == 0,
                                  watch=gc_probe)
        probe = _gc_probe() if gc_probe else None
        if taken is not None and probe is not None:
            _census_after_gc(taken)
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

    def census(self, mode: str = "full", budget_seconds: Optional[float] = None,
               _watch: bool = False) -> Dict[str, Any]:
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
            result = _census(roots, mode, budget, self.client.census_min_bytes, CENSUS_ROWS,
                             self.model_bytes, watch=_watch)
        finally:
            roots.clear()
        self.last_census = result
        return result

    def _take_census(self, census: Union[bool, str, None], due: bool,
                     watch: bool = False) -> Optional[Dict[str, Any]]:
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
            return self.census(mode, _watch=watch)
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
        taken = None
        if self.end_reply is None:
            taken = self._take_census(census, self.client.census_every_rounds > 0,
                                      watch=gc_probe)
        if gc_probe:
            facts["gc"] = _gc_probe()
            if taken is not None:
                _census_after_gc(taken)
        if taken is not None:
            facts["census"] = _census_wire(taken)
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
