"""The protocol's error codes as exceptions: RamguardError and one subclass per code."""

from typing import Dict, Type


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
