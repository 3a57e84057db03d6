"""What the training loop's commands return: dataclasses that also answer reply["field"] and
reply.get("field"), as dicts did."""

import dataclasses
import math
from typing import Any, Dict, List, Optional, Type, TypeVar


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
