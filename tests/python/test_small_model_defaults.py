"""A newcomer's own coordinator on the daemon's EMBEDDED defaults (an empty configuration file):
a 200 MB model declared, three rounds, 100 MB kept per round (half a model copy: a leak).

Scenario L: the thresholds come from the embedded model-copy defaults (growth 0.2 copies =
40 MB/round, release slack 0.4 copies = 80 MB), so the growth warning is raised for round 2 and
the release fails while the 300 MB are held; the start reply names those thresholds; on_verdict
gets every verdict once, each naming the round it judges, the release one from the wait that follows the with block.
Scenario K: the same coordinator tearing down within the settle window after its last round
end (the run ends and the process frees and exits, or the process exits without ending the run)
keeps its growth warning: no "growth stopped", no cleared verdict, and the last floor is the one
before the teardown.

Run by ctest with the system python3. Environment (tests/python/CMakeLists.txt): RAMGUARD_DAEMON,
RAMGUARD_CLIENT_PACKAGE (copied next to the coordinator) and RAMGUARD_TEST_TMPDIR.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from test_client_daemon import Daemon

MB = 1000 ** 2
MODEL = 200 * MB
KEPT = 100 * MB

# The user's coordinator (21 lines), as the README's snippet guards it. argv: socket, mode
# ("hold": keep the leak through the release wait; "end": end the run right after the last
# round end, free and exit; "exit": exit right after the last round end, run not ended).
COORDINATOR = r'''
import json, os, sys, time
import ramguard
mode, seen = sys.argv[2], []
client = ramguard.Client(sys.argv[1], on_verdict=seen.append,
                         release_wait_seconds=45.0 if mode == "hold" else 0.0)
kept = []
with client.start_run("small-model", model_bytes=200_000_000, declared_rounds=3) as run:
    print(json.dumps({"thresholds": run.start_reply.thresholds}), flush=True)
    for r in (1, 2, 3):
        with run.phase("aggregation"):
            work = bytearray(b"\x01") * 200_000_000  # a model copy, touched
            kept.append(bytearray(b"\x02") * 100_000_000)  # half a copy kept: the leak
            del work
        run.round_end()
        if r == 3 and mode == "exit":
            os._exit(0)
        if r < 3 or mode == "hold":
            time.sleep(3.6)  # past the default 3 s settle window
end = run.end_reply
if mode == "hold":  # the with block does not wait: hold the leak until the release is judged
    deadline = time.monotonic() + 45
    while end.release is None and time.monotonic() < deadline:
        time.sleep(0.1)
kept.clear()
print(json.dumps({"seen": [[v.kind, v.round, v.cleared, v.passed, v.summary] for v in seen],
                  "release": end.release.summary if end.release else None}), flush=True)
'''


class SmallModelOnTheEmbeddedDefaults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        base = os.environ.get("RAMGUARD_TEST_TMPDIR") or None
        if base:
            os.makedirs(base, exist_ok=True)
        cls.workdir = tempfile.mkdtemp(prefix="rg-small-", dir=base)
        shutil.copytree(os.environ["RAMGUARD_CLIENT_PACKAGE"],
                        os.path.join(cls.workdir, "ramguard"))
        cls.script = os.path.join(cls.workdir, "coordinator.py")
        with open(cls.script, "w") as f:
            f.write(COORDINATOR)
        cls.daemon = Daemon(cls.workdir, "# the embedded defaults\n")

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def coordinate(self, mode):
        proc = subprocess.run([sys.executable, self.script, self.daemon.socket, mode],
                              capture_output=True, text=True, timeout=180, cwd=self.workdir)
        sys.stderr.write(f"\n--- {mode} ---\n{proc.stdout}{proc.stderr}")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return [json.loads(line) for line in proc.stdout.splitlines()]

    def report(self, job_run_index=-1):
        sys.path.insert(0, self.workdir)
        import ramguard  # the copy
        with ramguard.Client(self.daemon.socket) as client:
            runs = client.list_runs()
            run_id = sorted(runs, key=lambda r: r.get("started_unix_ms", 0))[job_run_index]
            return client.report(run_id["run_id"])["run"]

    def test_l_half_a_copy_per_round_warns_in_round_2_and_the_release_fails(self):
        first, last = self.coordinate("hold")
        # The start reply names the thresholds in model copies, resolved for 200 MB.
        self.assertIn("growth 40.0 MB/round (0.2 model copies/round)", first["thresholds"])
        self.assertIn("release slack 80.0 MB (0.4 model copies)", first["thresholds"])
        seen = last["seen"]
        growth = [v for v in seen if v[0] == "growth_warning"]
        self.assertTrue(growth, seen)
        self.assertEqual(growth[0][1], 2, growth)  # judged round 2, the first judged round
        self.assertFalse([v for v in seen if v[2]], seen)  # nothing cleared
        self.assertIn("above the 40.0 MB per-round threshold", growth[0][4])
        # The release verdict reached on_verdict from the wait after the with block (a thread),
        # failed: 300 MB held.
        releases = [v for v in seen if v[0] == "release"]
        self.assertEqual(len(releases), 1, seen)
        self.assertFalse(releases[0][3], releases)
        self.assertTrue(last["release"].startswith("Release failed"), last["release"])
        # Delivered once each, and exactly the daemon's verdicts.
        run = self.report()
        self.assertEqual(sorted((v["kind"], v.get("round", 0)) for v in run["verdicts"]),
                         sorted((v[0], v[1]) for v in seen))
        self.assertEqual(len({(v[0], v[1], v[4]) for v in seen}), len(seen), seen)

    def check_teardown_keeps_the_warning(self, mode):
        outputs = self.coordinate(mode)
        run = self.report()
        verdicts = run["verdicts"]
        growth = [v for v in verdicts if v["kind"] == "growth_warning"]
        self.assertTrue(growth and growth[0]["round"] == 2, verdicts)
        self.assertFalse([v for v in verdicts if v.get("cleared")], verdicts)
        self.assertFalse([v for v in verdicts if v["kind"] == "plateau"], verdicts)
        self.assertFalse([v for v in verdicts if "growth stopped" in v["summary"]], verdicts)
        # The last floor is the one before the teardown: the leak of three rounds is in it.
        floors = [b["floor_bytes"] for b in run["boundaries"]]
        self.assertEqual(len(floors), 3, run["boundaries"])
        self.assertGreater(floors[2], floors[0] + 1.6 * KEPT, floors)
        return outputs

    def test_k_ending_and_exiting_within_the_settle_window_is_no_recovery(self):
        outputs = self.check_teardown_keeps_the_warning("end")
        # The end reply carried round 2's warning to on_verdict (the wait is 0 here).
        self.assertTrue(any(v[0] == "growth_warning" and v[1] == 2 for v in outputs[-1]["seen"]),
                        outputs)

    def test_k_exiting_without_ending_within_the_settle_window_is_no_recovery(self):
        self.check_teardown_keeps_the_warning("exit")
        self.assertEqual(self.report()["state"], "exited")


if __name__ == "__main__":
    unittest.main()
