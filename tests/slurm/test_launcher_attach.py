"""The Python client inside a launcher's run (the Slurm plugin sets RAMGUARD_RUN_ATTACH with
RAMGUARD_RUN): start_run joins that run instead of starting a second one, and leaves its end to
the launcher. Against the fake daemon of the client's unit tests."""
import os
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))  # the client tests' fake daemon
sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python"))
import ramguard  # noqa: E402
from test_ramguard_client import ServerTestCase  # noqa: E402


class LauncherAttachTest(ServerTestCase):
    def test_start_run_attaches_to_the_launchers_run(self):
        env = {"RAMGUARD_RUN": "r-step", "RAMGUARD_RUN_ATTACH": "slurm"}
        with mock.patch.dict(os.environ, env):
            with self.client.start_run("coordinator", labels={"x": "y"}) as run:
                self.assertEqual(run.run_id, "r-step")
                self.assertFalse(run.owned)
                with run.phase("load"):
                    pass
                run.round_end()
        # Marks only: no run_start, and no run_end (the launcher ends the run).
        self.assertEqual(self.server.commands(), ["mark", "mark", "mark"])
        self.assertEqual(self.server.requests[0]["mark"]["runId"], "r-step")

    def test_another_pid_or_no_attach_flag_starts_a_run(self):
        env = {"RAMGUARD_RUN": "r-step", "RAMGUARD_RUN_ATTACH": "slurm"}
        with mock.patch.dict(os.environ, env):
            self.client.start_run("worker", pid=os.getpid() + 100000)
        with mock.patch.dict(os.environ, {"RAMGUARD_RUN": "r-exec"}):
            os.environ.pop("RAMGUARD_RUN_ATTACH", None)
            self.client.start_run("coordinator")
        self.assertEqual(self.server.commands(), ["runStart", "runStart"])

    def test_the_names_match_the_cpp_side(self):
        self.assertEqual(ramguard.ATTACH_ENV, "RAMGUARD_RUN_ATTACH")


if __name__ == "__main__":
    unittest.main()
