"""The package's API (ramguard/__init__.py): every name the single-file client had is still
imported from `ramguard` itself, __all__ is complete, and each module holds its concern without
a name defined twice (one definition, re-exported)."""

import ast
import os
import re
import unittest

import ramguard

# The public names of ramguard.py, the one-file client before the split.
API = """
    ATTACH_ENV Admission CENSUS_BUDGET_SECONDS CENSUS_MIN_BYTES CENSUS_RANGES CENSUS_ROWS
    CENSUS_TEXT_BYTES Client DeadlineExceededError FailedPreconditionError Hello InternalError
    InvalidArgumentError MARK_TIMEOUT_SECONDS MAX_DURATION_SECONDS MAX_REPLY_BYTES
    MAX_REQUEST_BYTES MAX_SIZE_BYTES MalformedError MarkResult NotFoundError PROTOCOL_VERSION
    PermissionDeniedError Phase RETRY_FIRST_SECONDS RETRY_MAX_SECONDS RUN_ENV RamguardError
    Reading ResourceExhaustedError Run RunEndResult RunStart SOCKET_ENV UnavailableError
    UnknownCommandError UnsupportedVersionError Verdict VerdictCallback allocator_stats census
    current_run default_socket_path format_bytes format_seconds logger parse_duration_ns
    parse_size rss_bytes
""".split()
ALL = """
    Admission Client DeadlineExceededError FailedPreconditionError Hello InternalError
    InvalidArgumentError MalformedError MarkResult NotFoundError PermissionDeniedError Phase
    RamguardError Reading ResourceExhaustedError Run RunEndResult RunStart UnavailableError
    UnknownCommandError UnsupportedVersionError Verdict current_run default_socket_path
    format_bytes format_seconds parse_duration_ns parse_size rss_bytes
""".split()


class ApiTest(unittest.TestCase):
    def test_every_name_of_the_one_file_client_imports(self):
        missing = [name for name in API if not hasattr(ramguard, name)]
        self.assertEqual(missing, [])
        self.assertTrue(callable(ramguard.census), "ramguard.census is the function")

    def test_all_is_as_it_was(self):
        self.assertEqual(sorted(ramguard.__all__), sorted(ALL))
        namespace = {}
        exec("from ramguard import *", namespace)
        self.assertTrue(set(ALL) <= set(namespace))

    def test_each_name_is_defined_once(self):
        package = os.path.dirname(ramguard.__file__)
        where = {}
        for module in sorted(os.listdir(package)):
            if not module.endswith(".py") or module == "__init__.py":
                continue
            with open(os.path.join(package, module), encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in tree.body:
                names = []
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    names = [node.name]
                elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names = [t.id for t in targets if isinstance(t, ast.Name)]
                for name in names:
                    if name != "logger":  # each module logs to the "ramguard" logger
                        where.setdefault(name, []).append(module)
        twice = {name: modules for name, modules in where.items() if len(modules) > 1}
        self.assertEqual(twice, {})
        for name in API:
            if name not in ("logger",):
                self.assertIn(name, where, f"{name} is not defined in a module of the package")

    def test_the_version_is_sent_in_hello(self):
        from ramguard import client
        self.assertIs(client.__version__, ramguard.__version__)


class VersionTest(unittest.TestCase):
    def test_one_version_for_the_project_its_debian_packages_and_this_package(self):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
            project = re.search(r"project\(ramguard VERSION ([0-9.]+)", f.read())
        with open(os.path.join(root, "debian", "changelog"), encoding="utf-8") as f:
            debian = re.match(r"ramguard \(([0-9.]+)\)", f.readline())
        self.assertIsNotNone(project)
        self.assertIsNotNone(debian)
        self.assertEqual(ramguard.__version__, project.group(1))
        self.assertEqual(debian.group(1), project.group(1))


if __name__ == "__main__":
    unittest.main()
