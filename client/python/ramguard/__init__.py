"""ramguard client: tell ramguardd about a training run and ask before a Load claims GPU hosts.

Standard library only, Python 3.8+, typed (PEP 561). Install the wheel (`./dev.sh package`
builds it) or Debian's python3-ramguard; see client/python/README.md.

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
ramguard.v1.Request/Reply (proto/ramguard.proto). 64-bit integers arrive as strings; this package
converts them to int (ramguard.wire). Commands of the training loop return dataclasses (Admission,
RunStart, MarkResult, RunEndResult, Verdict, Reading), which also answer reply["field"] and
.get("field"); queries return dicts with snake_case keys.
"""

# First: client.py sends it in hello. The project's version (CMakeLists.txt, debian/changelog):
# tests/python/test_api.py holds the three to one number.
__version__ = "0.1.0"

# The modules, each one concern (docs/development.md has the map). The names below are the
# package's API, as they were when it was one module: those of __all__, then the others, written
# `name as name` so that type checkers see them exported too (mypy --strict).
from .client import Client
from .errors import (DeadlineExceededError, FailedPreconditionError, InternalError,
                     InvalidArgumentError, MalformedError, NotFoundError, PermissionDeniedError,
                     RamguardError, ResourceExhaustedError, UnavailableError, UnknownCommandError,
                     UnsupportedVersionError)
from .launcher import current_run
from .probes import rss_bytes
from .results import Admission, Hello, MarkResult, Reading, RunEndResult, RunStart, Verdict
from .run import Phase, Run
from .units import format_bytes, format_seconds, parse_duration_ns, parse_size
from .wire import default_socket_path

from .largeobjects import CENSUS_BUDGET_SECONDS as CENSUS_BUDGET_SECONDS
from .largeobjects import CENSUS_MIN_BYTES as CENSUS_MIN_BYTES
from .largeobjects import CENSUS_RANGES as CENSUS_RANGES
from .largeobjects import CENSUS_ROWS as CENSUS_ROWS
from .largeobjects import census as census
from .client import VerdictCallback as VerdictCallback
from .client import logger as logger
from .probes import allocator_stats as allocator_stats
from .units import MAX_DURATION_SECONDS as MAX_DURATION_SECONDS
from .units import MAX_SIZE_BYTES as MAX_SIZE_BYTES
from .wire import ATTACH_ENV as ATTACH_ENV
from .wire import CENSUS_TEXT_BYTES as CENSUS_TEXT_BYTES
from .wire import MARK_TIMEOUT_SECONDS as MARK_TIMEOUT_SECONDS
from .wire import MAX_REPLY_BYTES as MAX_REPLY_BYTES
from .wire import MAX_REQUEST_BYTES as MAX_REQUEST_BYTES
from .wire import PROTOCOL_VERSION as PROTOCOL_VERSION
from .wire import RETRY_FIRST_SECONDS as RETRY_FIRST_SECONDS
from .wire import RETRY_MAX_SECONDS as RETRY_MAX_SECONDS
from .wire import RUN_ENV as RUN_ENV
from .wire import SOCKET_ENV as SOCKET_ENV

__all__ = [
    "Admission", "Client", "DeadlineExceededError", "FailedPreconditionError", "Hello", "InternalError",
    "InvalidArgumentError", "MalformedError", "MarkResult", "NotFoundError",
    "PermissionDeniedError", "Phase", "RamguardError", "Reading", "ResourceExhaustedError",
    "Run", "RunEndResult", "RunStart", "UnavailableError", "UnknownCommandError",
    "UnsupportedVersionError", "Verdict", "current_run", "default_socket_path", "format_bytes",
    "format_seconds", "parse_duration_ns", "parse_size", "rss_bytes",
]
