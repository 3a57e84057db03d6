"""ramguard.errors: each protocol error code raises its own RamguardError subclass, carrying
the code and the daemon's message; an unknown code is still a RamguardError."""

import unittest

import ramguard
from ramguard import errors

CODES = {
    "MALFORMED": ramguard.MalformedError,
    "UNSUPPORTED_VERSION": ramguard.UnsupportedVersionError,
    "UNKNOWN_COMMAND": ramguard.UnknownCommandError,
    "INVALID_ARGUMENT": ramguard.InvalidArgumentError,
    "NOT_FOUND": ramguard.NotFoundError,
    "PERMISSION_DENIED": ramguard.PermissionDeniedError,
    "FAILED_PRECONDITION": ramguard.FailedPreconditionError,
    "RESOURCE_EXHAUSTED": ramguard.ResourceExhaustedError,
    "UNAVAILABLE": ramguard.UnavailableError,
    "INTERNAL": ramguard.InternalError,
    "DEADLINE_EXCEEDED": ramguard.DeadlineExceededError,
}


class ErrorCodesTest(unittest.TestCase):
    def test_every_code_has_its_subclass(self):
        for code, cls in CODES.items():
            e = errors._error(code, "what went wrong")
            self.assertIs(type(e), cls, code)
            self.assertIsInstance(e, ramguard.RamguardError)
            self.assertEqual((e.code, e.message), (code, "what went wrong"))
            self.assertEqual(str(e), f"{code}: what went wrong")

    def test_the_table_names_no_other_code(self):
        self.assertEqual(errors._ERROR_CLASSES, CODES)

    def test_an_unknown_code_is_the_base_class(self):
        e = errors._error("CODE_FROM_A_NEWER_DAEMON", "m")
        self.assertIs(type(e), ramguard.RamguardError)
        self.assertEqual(e.code, "CODE_FROM_A_NEWER_DAEMON")

    def test_the_errors_are_exported_by_the_package(self):
        for cls in CODES.values():
            self.assertIn(cls.__name__, ramguard.__all__)
        self.assertIn("RamguardError", ramguard.__all__)


if __name__ == "__main__":
    unittest.main()
