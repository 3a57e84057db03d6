"""ramguard.launcher: when a process joins a run its launcher started (RAMGUARD_RUN with
RAMGUARD_RUN_ATTACH, e.g. the Slurm plugin), and current_run() under `ramguard exec`. The
attach itself, against a fake daemon, is tests/slurm/test_launcher_attach.py."""

import os
import unittest
from unittest import mock

import ramguard
from ramguard import launcher


class LauncherRunTest(unittest.TestCase):
    def test_attach_only_for_this_process_with_the_flag(self):
        env = {"RAMGUARD_RUN": "r-step", "RAMGUARD_RUN_ATTACH": "slurm"}
        with mock.patch.dict(os.environ, env, clear=True):
            self.assertEqual(launcher._launcher_run(None), "r-step")
            self.assertEqual(launcher._launcher_run(0), "r-step")
            self.assertEqual(launcher._launcher_run(os.getpid()), "r-step")
            self.assertIsNone(launcher._launcher_run(os.getpid() + 100000))
        with mock.patch.dict(os.environ, {"RAMGUARD_RUN": "r-exec"}, clear=True):
            self.assertIsNone(launcher._launcher_run(None))  # exec: start_run starts its own
        with mock.patch.dict(os.environ, {"RAMGUARD_RUN_ATTACH": "slurm", "RAMGUARD_RUN": ""},
                             clear=True):
            self.assertIsNone(launcher._launcher_run(None))


class CurrentRunTest(unittest.TestCase):
    def test_the_exec_run_attached_not_owned_on_the_given_client(self):
        client = ramguard.Client(socket_path="/nonexistent/ramguard.sock")
        with mock.patch.dict(os.environ, {"RAMGUARD_RUN": "r-exec"}, clear=True):
            run = ramguard.current_run(client)
        self.assertEqual(run.run_id, "r-exec")
        self.assertFalse(run.owned)
        self.assertIs(run.client, client)

    def test_a_client_of_its_own_from_the_environment(self):
        env = {"RAMGUARD_RUN": "r-exec", "RAMGUARD_SOCKET": "/x/ramguard.sock"}
        with mock.patch.dict(os.environ, env, clear=True):
            run = ramguard.current_run()
        self.assertEqual(run.client.socket_path, "/x/ramguard.sock")

    def test_none_outside_a_run(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertIsNone(ramguard.current_run())


if __name__ == "__main__":
    unittest.main()
