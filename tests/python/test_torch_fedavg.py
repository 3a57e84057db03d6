"""A real PyTorch FedAvg coordinator (client/python/examples/torch_fedavg.py: torchvision's
vit_b_16, 0.35 GB of fp32 state) guarded by the REAL ramguardd, both builds, 3 rounds, 2 hosts.

The baseline build keeps each round's previous global state alive in a reference cycle (its
aggregation function's globals hold the state and the function): the daemon must warn about
growth by round 2, name reference cycles from the gc probe of the last round end, and fail the
release after the run. The final build must get none of that: no growth warning, no cycles,
release passed.

Run by ctest with Debian's /usr/bin/python3 (the only interpreter that imports Debian's torch).
Environment (tests/python/CMakeLists.txt): RAMGUARD_DAEMON, RAMGUARD_CLI, RAMGUARD_FEDAVG_EXAMPLE
(the script), RAMGUARD_TEST_TMPDIR.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from test_client_daemon import Daemon, load_copied_module

GB = 1000 ** 3
MB = 1000 ** 2
VIT_B_16_BYTES = 86_567_656 * 4  # torchvision vit_b_16: 86.6M fp32 parameters

# Thresholds in model copies, so they fit whatever model the run declares (the byte defaults
# are for a 2.5 GB one): the baseline's cycle keeps one more model copy (0.35 GB) per round, so
# a 0.6-copy step (0.21 GB) warns at once, while the final build's floors move by a few MB.
# After the run the baseline still holds two copies (0.69 GB) in its last cycle; the final
# build returns to its baseline within a few MB, so a 0.6-copy slack tells them apart. Short
# settle and grace keep the test quick.
DAEMON_CONFIG = """\
sampling:
  interval: 250ms
growth:
  min_model_copies: 0.6
  warmup_rounds: 1
  settle: 500ms
release:
  slack_model_copies: 0.6
  grace: 5s
"""

JEMALLOC_CANDIDATES = ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
                       "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
                       "/usr/lib/libjemalloc.so.2")


def find_jemalloc():
    for path in JEMALLOC_CANDIDATES:
        if os.path.exists(path):
            return path
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        out = ""
    for line in out.splitlines():
        if "libjemalloc.so.2" in line and "=>" in line:
            return line.split("=>")[-1].strip()
    return None


class TorchFedAvgAgainstTheRealDaemon(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Missing torch is a failure, not a skip: this test is the evidence that the guard
        # works on a real PyTorch coordinator.
        probe = subprocess.run([sys.executable, "-c", "import torch, torchvision"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            raise AssertionError(
                f"{sys.executable} cannot import torch and torchvision (install Debian's "
                f"python3-torch and python3-torchvision):\n{probe.stderr.strip()}")
        cls.jemalloc = find_jemalloc()
        if cls.jemalloc is None:
            raise AssertionError("libjemalloc.so.2 not found (install Debian's libjemalloc2): "
                                 "the coordinator runs with it preloaded, see coordinator_env")
        cls.example = os.environ["RAMGUARD_FEDAVG_EXAMPLE"]
        base = os.environ.get("RAMGUARD_TEST_TMPDIR") or None
        if base:
            os.makedirs(base, exist_ok=True)
        cls.workdir = tempfile.mkdtemp(prefix="rg-torch-", dir=base)
        cls.daemon = Daemon(cls.workdir, DAEMON_CONFIG)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def coordinator_env(self, allocator="jemalloc"):
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "RAMGUARD_RUN", "LD_PRELOAD", "MALLOC_CONF")}
        if allocator == "glibc":  # the default a user gets: no preload, glibc's own malloc
            env.update(RAMGUARD_SOCKET=self.daemon.socket, PYTHONDONTWRITEBYTECODE="1")
            return env
        # glibc malloc keeps freed memory in its arenas (and raises its mmap threshold after
        # the first large frees), so RSS would stay up in the final build too and read as
        # growth or a failed release: that is the allocator's doing, a separate issue. jemalloc
        # with decay 0 gives freed pages back at once, so RSS follows what the application
        # holds and each build is judged on its own objects.
        env.update(RAMGUARD_SOCKET=self.daemon.socket, PYTHONDONTWRITEBYTECODE="1",
                   LD_PRELOAD=self.jemalloc, MALLOC_CONF="dirty_decay_ms:0,muzzy_decay_ms:0")
        return env

    def run_build(self, build, model="vit_b_16", model_bytes=VIT_B_16_BYTES, extra=(),
                  allocator="jemalloc", rounds=3):
        checkpoints = os.path.join(self.workdir,
                                   f"checkpoints-{build}-{model}-{len(extra)}-{allocator}")
        argv = [sys.executable, self.example, "--build", build, "--rounds", str(rounds),
                "--hosts", "2",
                "--model", model, "--job", "torch-fedavg-test", "--checkpoint-dir", checkpoints,
                "--release-timeout-seconds", "30",
                # The test counts every phase: on a machine loaded by other tests a mark may
                # take past the client's 50 ms default and be dropped by design
                # (python_client_stall tests that bound), so it waits longer here.
                "--mark-timeout-seconds", "2",
                # Past the 500 ms settle window: each floor is the round's own, not the next
                # phase's (or, after the last round, the teardown's).
                "--pause-seconds", "0.75", *extra]
        started = time.monotonic()
        proc = subprocess.run(argv, capture_output=True, text=True,
                              env=self.coordinator_env(allocator), timeout=300)
        seconds = time.monotonic() - started
        sys.stderr.write(f"\n--- {build} build, {model} {' '.join(extra)} ({seconds:.1f} s) ---\n"
                         f"{proc.stdout}{proc.stderr}")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.strip().splitlines()
        summary = json.loads(lines[-1])
        self.assertEqual(summary["build"], build)
        self.assertEqual(summary["model_bytes"], model_bytes)
        # The checkpoint is a real torch.save of the whole state (tensors + pickle framing).
        saved = sorted(os.listdir(checkpoints))
        self.assertEqual(saved, [f"{model}-round{rounds}.pt"])
        size = os.path.getsize(os.path.join(checkpoints, saved[0]))
        self.assertGreater(size, model_bytes)
        self.assertLess(size, model_bytes + 1 * MB)
        return summary, lines[:-1]

    def check_common(self, build, summary, lines, allocator="jemalloc"):
        """What both builds share: admission before the hosts, every phase and round marked."""
        admission = summary["admission"]
        self.assertTrue(admission["admitted"], admission)
        self.assertEqual(admission["estimate_source"], "plan:fedavg")
        # The fedavg plan: aggregation holds global + 2 host updates + result, plus overhead;
        # a glibc coordinator (the client reports its allocator) adds the half copy glibc keeps.
        retained = VIT_B_16_BYTES // 2 if allocator == "glibc" else 0
        self.assertEqual(admission["estimate_bytes"],
                         4 * VIT_B_16_BYTES + 160_000_000 + retained)
        admitted_at = next(i for i, l in enumerate(lines) if "admission (" in l)
        claimed_at = next(i for i, l in enumerate(lines) if "claimed 2 hosts" in l)
        self.assertLess(admitted_at, claimed_at, "admission comes before claiming hosts")
        run = self.daemon_report(summary["run_id"])
        self.assertEqual(run["labels"], {"build": build, "model": "vit_b_16",
                                         "allocator": allocator})
        self.assertEqual(run["state"], "ended")
        # The first run's estimate (from the plan alone: no history) against the exact peak.
        # The final build holds what the plan says: with jemalloc the estimate bounds its peak
        # within 15% (measured 1.01). glibc keeps 0 to 1 model copy more (docs/admission.md),
        # which its allocator term covers by half a copy: held to [0.87, 1.15].
        # The baseline's cycles keep one more copy per round past round 1, so by round 3 it
        # passes the plan: that is its defect.
        self.assertTrue(run["peak_exact"], run)
        estimate, peak = admission["estimate_bytes"], run["peak_bytes"]
        if build == "final" and allocator == "jemalloc":
            self.assertGreaterEqual(estimate, peak, (estimate, peak))
            self.assertLessEqual(estimate, 1.15 * peak, (estimate, peak))
        elif build == "final":
            self.assertGreaterEqual(estimate, 0.87 * peak, (estimate, peak))
            self.assertLessEqual(estimate, 1.15 * peak, (estimate, peak))
        else:
            self.assertGreater(peak, estimate + VIT_B_16_BYTES, (estimate, peak))
        phases = [(p["phase"], p["round"]) for p in run["phases"]]
        self.assertEqual(phases, [("load", 1)] + [(name, r) for r in (1, 2, 3) for name in
                                                   ("aggregation", "synchronization", "save")])
        self.assertEqual([b["round"] for b in run["boundaries"]], [1, 2, 3])
        # The gc probe travels with the last round end only.
        self.assertEqual(["gc" in b for b in run["boundaries"]], [False, False, True])
        for p in summary["phases"]:
            if p["phase"] == "synchronization":  # torch.save into io.BytesIO: the whole state
                self.assertGreater(p["serialized_bytes"], VIT_B_16_BYTES)
        # Aggregation holds the global state, two host updates and the result: >= 4 copies.
        agg = [p for p in run["phases"] if p["phase"] == "aggregation"]
        for p in agg:
            self.assertGreater(p["peak_bytes"], run["baseline"]["rss_bytes"] + 3.5 * VIT_B_16_BYTES,
                               p)
        # Every verdict the daemon has is printed by the coordinator, one line each.
        for v in run.get("verdicts", []):
            self.assertTrue(any(re.match(rf"verdict \[\w+\] {v['kind']} \w+: ", l)
                                and v["summary"] in l
                                for l in lines), (v, lines))
        self.assertEqual(len(summary["verdicts"]), len(run.get("verdicts", [])))
        return run

    def compare(self, run_ids, fmt):
        """`ramguard compare RUN... --format FMT` against the test's daemon: its stdout."""
        out = subprocess.run([os.environ["RAMGUARD_CLI"], "--socket", self.daemon.socket,
                              "compare", *run_ids, "--format", fmt],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def report_text(self, run_id):
        """`ramguard report RUN` against the test's daemon: its stdout."""
        out = subprocess.run([os.environ["RAMGUARD_CLI"], "--socket", self.daemon.socket,
                              "report", run_id], capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def daemon_report(self, run_id):
        module = load_copied_module(
            os.path.join(os.path.dirname(os.path.abspath(self.example)), "..", "ramguard"))
        with module.Client(self.daemon.socket) as client:
            return client.report(run_id)["run"]

    def test_baseline_leaks_through_cycles_and_final_does_not(self):
        started = time.monotonic()
        results = {}
        for build in ("baseline", "final"):
            results[build] = self.run_build(build)
        sys.stderr.write(f"\nboth builds: {time.monotonic() - started:.1f} s\n")

        # -- baseline ---------------------------------------------------------------------
        summary, lines = results["baseline"]
        run = self.check_common("baseline", summary, lines)
        verdicts = run["verdicts"]
        floors = [b["floor_bytes"] for b in run["boundaries"]]
        # One more model copy per round held by the cycle: rounds 1 -> 2 rise ~0.35 GB.
        self.assertGreater(floors[1] - floors[0], 0.8 * VIT_B_16_BYTES, floors)
        growth = [v for v in verdicts if v["kind"] == "growth_warning" and not v.get("cleared")]
        self.assertTrue(growth, verdicts)
        self.assertLessEqual(min(v["round"] for v in growth), 2, growth)
        self.assertEqual(growth[0]["severity"], "WARNING")
        # The last round end's gc probe: gc.collect() returned the earlier rounds' states
        # (two copies: rounds 0 and 1), and the daemon names reference cycles.
        probe = run["boundaries"][2]["gc"]
        self.assertGreater(probe["rss_before_bytes"] - probe["rss_after_bytes"],
                           1.5 * VIT_B_16_BYTES, probe)
        self.assertGreaterEqual(probe["collected_objects"], 1)
        cycles = [v for v in verdicts if v["kind"] == "growth_class" and v["round"] == 3]
        self.assertEqual(len(cycles), 1, verdicts)
        self.assertTrue(cycles[0]["summary"].startswith("reference_cycles"), cycles)
        self.assertIn("memory held by reference cycles", cycles[0]["summary"])
        # The probe's own gc.collect() lowered round 3's floor by two copies: that is the guard's
        # doing, not recovery, so the growth warning stands (no "cleared ... growth stopped").
        self.assertFalse([v for v in verdicts if v.get("cleared")], verdicts)
        self.assertFalse([v for v in verdicts if v["kind"] == "plateau"], verdicts)
        # Release failed: the newest namespace (previous state and result) outlives the run.
        release = summary["release"]
        self.assertIsNotNone(release, "no release verdict")
        self.assertFalse(release.get("passed", False), release)
        self.assertIn(release["severity"], ("WARNING", "CRITICAL"), release)
        self.assertTrue(release["summary"].startswith("Release failed"), release)
        self.assertGreater(release["figures"]["held_bytes"], 1.5 * VIT_B_16_BYTES, release)
        # ... and it is the cycle: the coordinator's own gc.collect() afterwards returns it.
        after = summary["gc_after_run"]
        self.assertGreater(after["rss_before_bytes"] - after["rss_after_bytes"],
                           1.5 * VIT_B_16_BYTES, after)
        self.assertTrue(any("was held by reference cycles" in l for l in lines), lines)
        self.assertIn("growth_warning:warning", summary["verdict_kinds_by_round"]["2"])

        # The fix changes what is kept, not what is computed: the same seeds give the same
        # serialized states, round by round, in both builds.
        crcs = {b: [p["crc32"] for p in results[b][0]["phases"] if p["phase"] == "synchronization"]
                for b in results}
        self.assertEqual(crcs["baseline"], crcs["final"])
        self.assertEqual(len(set(crcs["final"])), 3, crcs)

        # -- final ------------------------------------------------------------------------
        summary, lines = results["final"]
        run = self.check_common("final", summary, lines)
        verdicts = run.get("verdicts", [])
        floors = [b["floor_bytes"] for b in run["boundaries"]]
        self.assertLess(max(floors) - min(floors), 100 * MB, floors)
        self.assertFalse([v for v in verdicts if v["kind"] in ("growth_warning", "leak",
                                                                "growth_class")], verdicts)
        self.assertFalse([v for v in verdicts if v["severity"] in ("WARNING", "CRITICAL")],
                         verdicts)
        probe = run["boundaries"][2]["gc"]
        self.assertLess(probe["rss_before_bytes"] - probe["rss_after_bytes"], 50 * MB, probe)
        release = summary["release"]
        self.assertIsNotNone(release, "no release verdict")
        self.assertTrue(release["passed"], release)
        self.assertTrue(release["summary"].startswith("Release passed"), release)
        after = summary["gc_after_run"]
        self.assertLess(after["rss_before_bytes"] - after["rss_after_bytes"], 50 * MB, after)
        # The report puts, per phase, the plan next to the live bytes the allocator reported at
        # the phase's end and the exact peak, and names the phase where they differ most.
        text = self.report_text(summary["run_id"])
        sys.stderr.write("\n" + text)
        self.assertIn("Plan against peaks, per phase over the run", text)
        rows = {l.split()[0]: l for l in text.splitlines()
                if l.startswith("  ") and l.split()[0] in ("load", "aggregation",
                                                           "synchronization", "save")
                and "(" in l}
        self.assertEqual(sorted(rows), ["aggregation", "load", "save", "synchronization"], text)
        # aggregation: planned 1.55 GB (4.46 copies), with jemalloc the live bytes are measured
        self.assertIn("1.55 GB (4.46)", rows["aggregation"])
        self.assertEqual(rows["aggregation"].count("("), 4, rows["aggregation"])  # no "-" cell
        self.assertIn("Largest gap: ", text)

        # -- side by side, as an operator would see them: `ramguard compare` ----------------
        ids = [results[b][0]["run_id"] for b in ("baseline", "final")]
        rows = {r["labels"]["build"]: r for r in json.loads(self.compare(ids, "json"))["rows"]}
        self.assertEqual(sorted(rows), ["baseline", "final"])
        # After completion the baseline still holds two copies more than the final build.
        self.assertGreater(rows["baseline"]["after_completion_bytes"],
                           rows["final"]["after_completion_bytes"] + 1.5 * VIT_B_16_BYTES, rows)
        # The kept states add to the peak: round 3's aggregation runs on top of two of them.
        self.assertGreater(rows["baseline"]["peak_bytes"],
                           rows["final"]["peak_bytes"] + 1.5 * VIT_B_16_BYTES, rows)

        # -- the final build under glibc's malloc, the default a user gets -----------------
        # glibc keeps the freed tensors' memory, so RSS floors climb by model copies while the
        # application holds the same. With the allocator facts the client sends at every round
        # end and at the end, that must not be called the application's growth or a leak.
        glibc, lines = self.run_build("final", allocator="glibc")
        run = self.check_common("final", glibc, lines, allocator="glibc")
        verdicts = run.get("verdicts", [])
        self.assertTrue(all("allocator" in b for b in run["boundaries"]), run["boundaries"])
        self.assertFalse([v for v in verdicts if v["kind"] == "leak"], verdicts)
        self.assertFalse([v for v in verdicts if v["kind"] == "growth_warning"
                          and not v.get("cleared")], verdicts)
        classes = [v for v in verdicts if v["kind"] == "growth_class"]
        for v in classes:
            self.assertTrue(v["summary"].startswith("allocator_retention"), v)
        release = glibc["release"]
        self.assertIsNotNone(release, "no release verdict")
        if not release["passed"]:  # what is left is glibc's, and the remedy is named
            self.assertTrue(release["summary"].startswith("Release kept by the allocator"),
                            release)
            self.assertIn("--allocator jemalloc", release["summary"])
        # `ramguard compare` puts the two allocators side by side (the allocator label).
        ids = [glibc["run_id"], results["final"][0]["run_id"]]
        rows = {r["labels"]["allocator"]: r for r in json.loads(self.compare(ids, "json"))["rows"]}
        self.assertEqual(sorted(rows), ["glibc", "jemalloc"])
        # Measured: glibc's floors end 3 model copies above jemalloc's (1.67 vs 0.61 GB).
        self.assertGreater(rows["glibc"]["last_floor_bytes"],
                           rows["jemalloc"]["last_floor_bytes"] + 0.25 * VIT_B_16_BYTES, rows)
        text = self.compare(ids, "text")
        sys.stderr.write("\n" + text)
        self.assertIn("allocator=glibc", text)

    def test_host_updates_made_by_worker_processes_are_the_same(self):
        """--workers: forked processes make the host updates and send them serialized; the
        coordinator must compute exactly what it computes alone (a 0.56 MB ViT: quick)."""
        tiny_bytes = 139_432 * 4
        alone, _ = self.run_build("final", "vit_tiny", tiny_bytes)
        pooled, lines = self.run_build("final", "vit_tiny", tiny_bytes, ("--workers", "2"))
        self.assertTrue(any("updates made by 2 worker processes" in l for l in lines), lines)
        crcs = [[p["crc32"] for p in s["phases"] if p["phase"] == "synchronization"]
                for s in (alone, pooled)]
        self.assertEqual(crcs[0], crcs[1])
        self.assertEqual(len(set(crcs[0])), 3, crcs)
        for summary in (alone, pooled):
            # Thresholds in model copies are tiny for a 0.56 MB model (the slack is 0.33 MB),
            # so the verdict may name a few MB; what matters is that little is left.
            release = summary["release"]
            self.assertIsNotNone(release, "no release verdict")
            self.assertLess(release["figures"].get("held_bytes", 0), 32 * MB, release)
            run = self.daemon_report(summary["run_id"])
            self.assertEqual(len(run["phases"]), 10, run["phases"])

    def test_a_tree_scope_run_holds_the_workers_memory(self):
        """--workers 2 makes the host updates in forked processes: a run with the tree scope
        measures them with the coordinator, one with the process scope does not. One round
        each: a round with workers faults ~3 GB in (each update is saved, piped and loaded),
        ~40 s on a VM that faults fresh memory in at 0.25 GB/s."""
        process, _ = self.run_build("final", extra=("--workers", "2"), rounds=1)
        tree, lines = self.run_build("final", extra=("--workers", "2", "--scope", "tree"),
                                     rounds=1)
        self.assertTrue(any("updates made by 2 worker processes" in l for l in lines), lines)
        self.assertEqual(self.daemon_report(tree["run_id"])["scope"], "tree")
        self.assertEqual(self.daemon_report(process["run_id"]).get("scope", "process"),
                         "process")
        # Each worker reads the whole forked state (its RSS counts those pages) and builds an
        # update: the tree's peak is at least a model copy above the coordinator's alone.
        self.assertGreater(tree["peak_bytes"], process["peak_bytes"] + VIT_B_16_BYTES,
                           (tree["peak_bytes"], process["peak_bytes"]))
        crcs = [[p["crc32"] for p in s["phases"] if p["phase"] == "synchronization"]
                for s in (process, tree)]
        self.assertEqual(crcs[0], crcs[1])


if __name__ == "__main__":
    unittest.main()
