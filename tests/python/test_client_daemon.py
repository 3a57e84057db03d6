"""The Python client end to end: a coordinator with a copy of the package (ramguard/) admits a
Load, runs rounds with phase marks and ends the run against the REAL ramguardd, and the daemon's
report and metrics show exact phase peaks, boundary readings and the gc probe; memory held by a
reference cycle (the failure described in daemon/README.md) is named as such. Also the
RAMGUARD_SOCKET/RAMGUARD_RUN pickup under `ramguard exec`.

Run by ctest with the system python3. Environment (set by tests/python/CMakeLists.txt):
RAMGUARD_DAEMON (ramguardd), RAMGUARD_CLI (ramguard), RAMGUARD_CLIENT_PACKAGE (client/python/
ramguard, copied, never imported from where it lies) and RAMGUARD_TEST_TMPDIR.
"""

import importlib.util
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

MB = 1000 ** 2
MODEL = 40 * MB
# The kernel's RSS counters are per-CPU and read approximately: the high-water mark and this
# process's own statm reads differ by up to a few dozen pages.
TOLERANCE = 8 * MB

# The coordinator: a separate process that sits next to its copy of ramguard/, as a user's
# would. It allocates real memory (touched bytearrays) inside the phases and reports what it
# measured itself on stdout as one JSON line; with --cycles it builds, in rounds 2 and 3, a
# reference cycle holding two model copies (the original and the resulting state in a
# namespace that refers to itself), which only gc.collect() returns.
COORDINATOR = r'''
import dataclasses, gc, json, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ramguard

MODEL = int(sys.argv[2])

def touched(n):
    """n bytes that are resident: bytearray() alone maps zero pages lazily."""
    b = bytearray(n)
    b[::4096] = b"\x01" * len(range(0, n, 4096))
    return b

def counted_bytes():
    """What the daemon's peaks judge: anonymous + shmem + swap (page cache left out)."""
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value
    return sum(int(fields[k].split()[0]) * 1024 for k in ("RssAnon", "RssShmem", "VmSwap"))

def reference_cycle(copies):
    namespace = {"states": [touched(MODEL) for _ in range(copies)]}
    namespace["self"] = namespace
    return None  # the only reference left is the cycle itself

# Automatic collection would free the cycle at an unpredictable moment; the story is about
# memory that only an explicit (or late) cyclic collection returns.
gc.disable()
out = {"module": os.path.abspath(ramguard.__file__), "pid": os.getpid(), "phases": []}

def phase(run, name, work):
    with run.phase(name) as p:
        measured = work()
    out["phases"].append({"phase": name, "measured_peak": measured,
                          "reply_peak": p.peak_bytes,
                          "exact": p.end_reply.get("peak_exact", False)})

if sys.argv[1] == "story":
    client = ramguard.Client()  # RAMGUARD_SOCKET
    admission = client.admit("py-coord", model_bytes=MODEL, plan="fedavg", hosts=2)
    out["admission"] = vars(admission)
    out["allocator"] = ramguard.probes.allocator_name()
    if not admission:
        raise SystemExit("refused: " + admission.reason)
    run = client.start_run("py-coord", labels={"build": "python"}, admission=admission,
                           model_bytes=MODEL, declared_rounds=3, hosts=2)
    out["run_id"] = run.run_id
    out["exact_peaks"] = run.exact_peaks
    state = {}

    def load():
        state["global"] = touched(MODEL)
        staging = touched(MODEL)
        peak = counted_bytes()
        del staging
        return peak

    def aggregation():
        updates = [touched(MODEL) for _ in range(2)]
        result = touched(MODEL)
        peak = counted_bytes()
        state["global"] = result
        del updates, result
        return peak

    def synchronization():
        outbound = touched(MODEL)
        peak = counted_bytes()
        del outbound
        return peak

    with run:
        phase(run, "load", load)
        for rnd in (1, 2, 3):
            phase(run, "aggregation", aggregation)
            # Round 1: a cycle too small to matter (one tenth of a model); then two copies.
            if rnd == 1:
                namespace = {"state": touched(MODEL // 10)}
                namespace["self"] = namespace
                del namespace
            else:
                reference_cycle(2)
            phase(run, "synchronization", synchronization)
            out["rss_before_round_end_%d" % rnd] = ramguard.rss_bytes()
            run.round_end(gc_probe=True)
        print(json.dumps(out), flush=True)
        sys.stdin.readline()  # the test says when the last floor has settled
    print(json.dumps({"ended": dataclasses.asdict(run.end_reply)}), flush=True)

elif sys.argv[1] == "attached":
    run = ramguard.current_run()  # RAMGUARD_RUN on the daemon at RAMGUARD_SOCKET
    assert run is not None, "RAMGUARD_RUN is not set"
    out["run_id"] = run.run_id
    out["socket"] = run.client.socket_path
    with run:
        phase(run, "aggregation", lambda: (touched(2 * MODEL), counted_bytes())[1])
        run.round_end(gc_probe=True)
    # An attached run is not ended by its context manager: the starter (ramguard exec) ends it.
    out["state_after_with"] = run.client.status(run.run_id)["runs"][0]["state"]
    print(json.dumps(out), flush=True)

elif sys.argv[1] == "restart":
    # The default (non-strict) client while ramguardd is stopped and restarted mid-phase: the
    # test says on stdin when the daemon is down and when it is back; nothing may raise.
    import logging
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    # A mark waits up to 2 s, not 50 ms: the test counts outages, and a sanitized daemon on a
    # loaded machine can take longer than 50 ms for the resync and mark after the restart
    # (test_client_stall tests the bound itself). A stopped daemon still fails at once.
    client = ramguard.Client(mark_timeout_seconds=2.0)  # RAMGUARD_SOCKET
    run = client.start_run("py-restart", model_bytes=MODEL)
    out["run_id"] = run.run_id
    delivered = {}
    with run:
        with run.phase("load"):
            state = {"global": touched(MODEL)}
        with run.phase("aggregation") as agg:
            print(json.dumps(out), flush=True)  # the test stops the daemon now
            sys.stdin.readline()
            state["update"] = touched(MODEL)
        delivered["aggregation_end"] = agg.end_reply.delivered
        with run.phase("synchronization") as sync:  # entirely while the daemon is down
            del state["update"]
        delivered["synchronization_end"] = sync.end_reply.delivered
        delivered["round_1"] = run.round_end(gc_probe=True).delivered
        print(json.dumps({"down": delivered}), flush=True)
        sys.stdin.readline()  # the daemon is back
        time.sleep(float(sys.argv[3]))  # past the client's backoff
        for rnd in (2, 3):
            with run.phase("aggregation") as agg:
                state["update"] = touched(MODEL)
            delivered["aggregation_%d" % rnd] = agg.end_reply.delivered
            with run.phase("synchronization") as sync:
                del state["update"]
            delivered["synchronization_%d" % rnd] = sync.end_reply.delivered
            delivered["round_%d" % rnd] = run.round_end().delivered
    delivered["run_end"] = run.end_reply.delivered
    out["delivered"] = delivered
    print(json.dumps(out), flush=True)
'''


_copies = itertools.count()


def load_copied_module(package_dir):
    """The client package at package_dir imported under a name of its own (each call a new
    one), so that nothing else on sys.path, nor an earlier copy, is used."""
    name = "ramguard_copy%d" % next(_copies)
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(package_dir, "__init__.py"), submodule_search_locations=[package_dir])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its modules import each other relatively, through this name
    spec.loader.exec_module(module)
    return module


class Daemon:
    """ramguardd on a temp socket and state dir, metrics on port 0; stderr (logfmt) captured."""

    def __init__(self, workdir, config_yaml):
        self.dir = workdir
        self.socket = os.path.join(workdir, "ramguard.sock")
        if len(self.socket) >= 100:  # sun_path is 108 bytes
            self.socket = os.path.join(tempfile.mkdtemp(prefix="rg-py-"), "ramguard.sock")
        config = os.path.join(workdir, "ramguard.yaml")
        with open(config, "w") as f:
            f.write(config_yaml)
        self.argv = [os.environ["RAMGUARD_DAEMON"], "--config", config, "--socket", self.socket,
                     "--state-dir", os.path.join(workdir, "state"), "--metrics", "127.0.0.1:0"]
        self.start()

    def start(self):
        """Start (again, after stop(): the same socket, config and ledger)."""
        self.lines = []
        self.ready = threading.Event()
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(20):
            self.stop()
            raise RuntimeError("ramguardd did not become ready:\n" + "".join(self.lines))
        ready = next(l for l in self.lines if "event=daemon.ready" in l)
        self.metrics_port = int(re.search(r"metrics_port=(\d+)", ready).group(1))

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            if "event=daemon.ready" in line:
                self.ready.set()

    def scrape(self):
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read().decode()

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def metric(scrape, name_and_labels):
    for line in scrape.splitlines():
        if line.startswith(name_and_labels + " "):
            return float(line.split()[-1])
    return None


def eventually(predicate, timeout=10.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


class ClientAgainstTheRealDaemon(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        base = os.environ.get("RAMGUARD_TEST_TMPDIR") or None
        if base:
            os.makedirs(base, exist_ok=True)
        cls.workdir = tempfile.mkdtemp(prefix="rg-client-", dir=base)
        # The package stands alone: copied next to the coordinator and used from there.
        package = os.path.join(cls.workdir, "ramguard")
        shutil.copytree(os.environ["RAMGUARD_CLIENT_PACKAGE"], package)
        cls.module_path = os.path.join(package, "__init__.py")
        cls.coordinator = os.path.join(cls.workdir, "coordinator.py")
        with open(cls.coordinator, "w") as f:
            f.write(COORDINATOR)
        cls.daemon = Daemon(cls.workdir, "growth:\n  min_bytes: 32MB\n  settle: 300ms\n"
                                         "metrics: { job_names: plain }\n")
        cls.rg = load_copied_module(os.path.dirname(cls.module_path))
        cls.client = cls.rg.Client(cls.daemon.socket)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.daemon.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def coordinator_env(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "RAMGUARD_RUN", "RAMGUARD_SOCKET")}
        # Large blocks come from mmap and go back to the kernel when freed, so RSS follows the
        # coordinator's objects (glibc would otherwise raise its mmap threshold to 32 MiB).
        env.update(MALLOC_MMAP_THRESHOLD_="65536", PYTHONDONTWRITEBYTECODE="1", **extra)
        return env

    def report(self, run_id):
        return self.client.report(run_id)["run"]

    def test_coordinator_story_exact_peaks_boundaries_and_reference_cycles(self):
        proc = subprocess.Popen(
            [sys.executable, self.coordinator, "story", str(MODEL)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=self.coordinator_env(RAMGUARD_SOCKET=self.daemon.socket))
        try:
            line = proc.stdout.readline()
            if not line:  # the coordinator died before its report line; its stderr says why
                self.fail("coordinator failed:\n" + proc.communicate(timeout=30)[1])
            out = json.loads(line)
            run_id = out["run_id"]
            self.assertEqual(out["module"], self.module_path, "imported from the copy")
            self.assertTrue(out["exact_peaks"])

            # Admission from the plan: aggregation holds global + 2 host updates + result, and
            # under glibc (the client reports it) the half copy glibc malloc keeps.
            admission = out["admission"]
            self.assertTrue(admission["admitted"])
            retained = MODEL // 2 if out["allocator"] == "glibc" else 0
            self.assertEqual(admission["estimate_bytes"], 4 * MODEL + 160_000_000 + retained)
            self.assertEqual("; allocator: glibc malloc keeps" in admission["reason"],
                             out["allocator"] == "glibc", admission["reason"])
            self.assertEqual(admission["estimate_source"], "plan:fedavg")
            self.assertEqual(admission["budget_bytes"], 16_000_000_000)

            # Exact phase peaks: at least what Python measured at its own peak, and close to it.
            for p in out["phases"]:
                self.assertTrue(p["exact"], p)
                self.assertGreaterEqual(p["reply_peak"] + TOLERANCE / 4, p["measured_peak"], p)
                self.assertLess(p["reply_peak"], p["measured_peak"] + TOLERANCE, p)

            # The last floor settles 300 ms after the round end; then round 3 is classified.
            def classified():
                return [v for v in self.report(run_id).get("verdicts", [])
                        if v["kind"] == "growth_class"]
            self.assertTrue(eventually(lambda: any(v["round"] == 3 for v in classified()), 5),
                            self.report(run_id).get("verdicts"))
            status = self.client.status(run_id)["runs"][0]
            self.assertEqual(status["state"], "active")
            self.assertEqual(status["pid"], out["pid"], "the run guards the coordinator itself")
        finally:
            if proc.poll() is None:
                proc.stdin.write("end\n")
                proc.stdin.flush()
            rest, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, err)
        ended = json.loads(rest.strip().splitlines()[-1])["ended"]
        self.assertGreaterEqual(ended["peak_bytes"] + TOLERANCE / 4,
                                max(p["measured_peak"] for p in out["phases"]))
        self.assertGreaterEqual(ended["peak_bytes"], max(p["reply_peak"] for p in out["phases"]))

        run = self.report(run_id)
        self.assertEqual(run["state"], "ended")
        self.assertEqual(run["labels"], {"build": "python"})
        phases = [(p["phase"], p["round"]) for p in run["phases"]]
        self.assertEqual(phases, [("load", 1)] + [(name, r) for r in (1, 2, 3)
                                                   for name in ("aggregation", "synchronization")])
        for reported, measured in zip(run["phases"], out["phases"]):
            self.assertTrue(reported["peak_exact"])
            self.assertEqual(reported["peak_bytes"], measured["reply_peak"])

        # Boundary readings: taken at the mark, after the probe's gc.collect(); the probe's own
        # figures are kept with each boundary.
        boundaries = run["boundaries"]
        self.assertEqual([b["round"] for b in boundaries], [1, 2, 3])
        for b in boundaries:
            rnd = b["round"]
            gc_probe = b["gc"]
            before, after = gc_probe["rss_before_bytes"], gc_probe["rss_after_bytes"]
            self.assertAlmostEqual(before, out["rss_before_round_end_%d" % rnd], delta=TOLERANCE)
            self.assertAlmostEqual(b["reading"]["rss_bytes"], after, delta=TOLERANCE)
            self.assertLessEqual(b["floor_bytes"], b["reading"]["rss_bytes"])
            self.assertGreater(gc_probe["duration_seconds"], 0)
            if rnd == 1:
                self.assertLess(before - after, 32 * MB, gc_probe)
            else:  # two model copies held only by the cycle
                self.assertAlmostEqual(before - after, 2 * MODEL, delta=TOLERANCE)
                self.assertGreaterEqual(gc_probe["collected_objects"], 1)
        # Floors stay flat (the probe's collection freed the cycle before the mark): no leak.
        floors = [b["floor_bytes"] for b in boundaries]
        self.assertLess(max(floors) - min(floors), 32 * MB, floors)

        verdicts = run["verdicts"]
        self.assertFalse([v for v in verdicts if v["kind"] in ("leak", "growth_warning")],
                         verdicts)
        cycles = {v["round"]: v for v in verdicts if v["kind"] == "growth_class"}
        self.assertEqual(sorted(cycles), [2, 3], verdicts)
        for v in cycles.values():
            self.assertTrue(v["summary"].startswith("reference_cycles"), v)
            self.assertIn("reference cycles", v["summary"])
            self.assertAlmostEqual(v["figures"]["gc_freed_bytes"], 2 * MODEL, delta=TOLERANCE)
            self.assertAlmostEqual(v["figures"]["rss_growth_copies"], 2.0, delta=0.25)

        # Metrics: the per-job series carry the last phase peaks and the last boundary exactly.
        scrape = self.daemon.scrape()
        # Labels print sorted: kind, phase, ramguard_job, run_id, severity.
        job = 'ramguard_job="py-coord",run_id="%s"' % run_id
        last_agg = [p for p in run["phases"] if p["phase"] == "aggregation"][-1]
        self.assertEqual(metric(scrape, 'ramguard_phase_peak_bytes{phase="aggregation",%s}' % job),
                         last_agg["peak_bytes"])
        self.assertEqual(metric(scrape, "ramguard_boundary_round{%s}" % job), 3)
        self.assertEqual(metric(scrape, "ramguard_boundary_rss_bytes{%s}" % job),
                         boundaries[-1]["reading"]["rss_bytes"])
        self.assertEqual(metric(scrape, "ramguard_boundary_floor_bytes{%s}" % job),
                         boundaries[-1]["floor_bytes"])
        self.assertGreaterEqual(
            metric(scrape, 'ramguard_verdicts_total{kind="growth_class",%s,severity="info"}'
                   % job) or 0, 2, scrape)

    def test_connection_closed_by_the_idle_timeout_is_reopened(self):
        workdir = tempfile.mkdtemp(prefix="rg-idle-", dir=self.workdir)
        daemon = Daemon(workdir, "control:\n  idle_timeout: 200ms\n")
        try:
            client = self.rg.Client(daemon.socket)
            self.assertEqual(client.call("hello")["protocol_version"], 1)
            time.sleep(1.0)  # the daemon closes the idle connection meanwhile
            self.assertEqual(client.call("hello")["protocol_version"], 1)
            client.close()
        finally:
            daemon.stop()

    def restart_mid_phase(self, stop_signal):
        """A coordinator survives ramguardd being stopped (stop_signal) and restarted in the
        middle of a phase, and its run goes on with its phases closed in order."""
        workdir = tempfile.mkdtemp(prefix="rg-restart-", dir=self.workdir)
        daemon = Daemon(workdir, "growth:\n  min_bytes: 32MB\n")
        proc = subprocess.Popen(
            [sys.executable, self.coordinator, "restart", str(MODEL), "1.0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=self.coordinator_env(RAMGUARD_SOCKET=daemon.socket))
        try:
            line = proc.stdout.readline()
            if not line:
                self.fail("coordinator failed:\n" + proc.communicate(timeout=30)[1])
            run_id = json.loads(line)["run_id"]
            daemon.stop(stop_signal)  # in the middle of aggregation
            proc.stdin.write("down\n")
            proc.stdin.flush()
            down = json.loads(proc.stdout.readline())["down"]
            daemon.start()            # the same socket and ledger: the run is recovered
            self.assertTrue(any("recovery.resumed" in l and run_id in l for l in daemon.lines),
                            "".join(daemon.lines))
            proc.stdin.write("up\n")
            proc.stdin.flush()
            rest, err = proc.communicate(timeout=60)
            client = self.rg.Client(daemon.socket, strict=True)
            run = client.report(run_id)["run"]
            client.close()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            daemon.stop()
        self.assertEqual(proc.returncode, 0, err)
        self.assertNotIn("Traceback", err)
        # One warning for the outage, and the resync closing the phase left meanwhile (info).
        warnings = [l for l in err.splitlines() if l.startswith("WARNING")]
        self.assertEqual(len(warnings), 1, err)
        self.assertIn("training continues", warnings[0])
        self.assertRegex(err, r"INFO ramguard: run \S+: ending phase aggregation")
        out = json.loads(rest.strip().splitlines()[-1])
        self.assertEqual(down, {"aggregation_end": False, "synchronization_end": False,
                                "round_1": False})
        delivered = out["delivered"]
        self.assertTrue(all(delivered[k] for k in delivered if k not in down), delivered)
        self.assertEqual(run["state"], "ended")
        self.assertEqual(run["current_phase"], "")
        phases = [(p["phase"], p["round"]) for p in run["phases"]]
        # Round 1's synchronization and round end fell into the outage: its aggregation was
        # closed on reconnection, and the daemon, which never heard round 1 end, files round 2's
        # phases under round 1 until round 2's end (sent as round 2) puts its count right.
        self.assertEqual(phases, [("load", 1), ("aggregation", 1), ("aggregation", 1),
                                  ("synchronization", 1), ("aggregation", 3),
                                  ("synchronization", 3)])
        for p in run["phases"]:
            self.assertGreater(p["duration_seconds"], 0, p)  # every phase closed
        self.assertEqual([b["round"] for b in run["boundaries"]], [2, 3])

    def test_coordinator_survives_a_daemon_restart_mid_phase(self):
        self.restart_mid_phase(signal.SIGTERM)

    def test_coordinator_survives_a_daemon_killed_mid_phase(self):
        self.restart_mid_phase(signal.SIGKILL)

    def test_exception_in_the_run_ends_it_with_a_failed_verdict_naming_it(self):
        client = self.rg.Client(self.daemon.socket)
        with self.assertRaises(ValueError):
            with client.start_run("py-failed") as run:
                with run.phase("aggregation") as agg:
                    raise ValueError("shapes (3,) and (4,) differ")
        self.assertEqual(agg.exception, "ValueError: shapes (3,) and (4,) differ")
        [failed] = [v for v in run.end_reply.verdicts if v.kind == "failed"]
        self.assertEqual(failed.severity, "CRITICAL")
        self.assertIn("ValueError: shapes (3,) and (4,) differ", failed.summary)
        self.assertIn("after aggregation", failed.summary)
        report = self.report(run.run_id)
        self.assertEqual(report["state"], "ended")
        self.assertEqual([v["kind"] for v in report["verdicts"] if v["kind"] == "failed"],
                         ["failed"])
        self.assertGreater(report["phases"][0]["duration_seconds"], 0)  # the phase was ended
        client.close()

    def test_a_phase_name_the_plan_does_not_list_is_warned_not_refused(self):
        client = self.rg.Client(self.daemon.socket)
        admission = client.admit("py-typo", model_bytes="1MB", plan="fedavg", hosts=2)
        self.assertTrue(admission)
        with self.assertLogs("ramguard", level="WARNING") as logs:
            with client.start_run("py-typo", admission=admission) as run:
                typo = run.mark("begin", "trainig")
                run.mark("end", "trainig")
                again = run.mark("begin", "trainig")
                run.mark("end", "trainig")
                planned = run.mark("begin", "aggregation")
                run.mark("end", "aggregation")
        self.assertTrue(typo.delivered, "a warning, not a refusal")
        self.assertIn("phase 'trainig' is not in plan fedavg", typo.warning)
        self.assertIn("(its phases: load, aggregation", typo.warning)
        self.assertEqual(again.warning, "", "once per phase name and run")
        self.assertEqual(planned.warning, "")
        self.assertEqual(sum("not in plan fedavg" in line for line in logs.output), 1)
        self.assertEqual([p["phase"] for p in self.report(run.run_id)["phases"]],
                         ["trainig", "trainig", "aggregation"])
        client.close()

    def test_refused_admission_lists_every_term(self):
        admission = self.client.admit("py-refused", estimate_bytes="100GB")
        self.assertFalse(admission)
        self.assertEqual(admission.reservation_id, "")
        self.assertEqual(admission.estimate_bytes, 100_000_000_000)
        self.assertEqual(admission.budget_bytes, 16_000_000_000)
        self.assertGreater(admission.baseline_bytes, 0)
        self.assertEqual(admission.headroom_bytes,
                         admission.budget_bytes - admission.margin_bytes
                         - admission.baseline_bytes - admission.reserved_bytes
                         - admission.estimate_bytes)
        self.assertIn("100", admission.reason)

    def test_exec_hands_socket_and_run_to_a_python_coordinator(self):
        result = subprocess.run(
            [os.environ["RAMGUARD_CLI"], "--socket", self.daemon.socket, "exec", "--job",
             "py-exec", "--estimate", "500MB", "--label", "build=exec", "--",
             sys.executable, self.coordinator, "attached", str(MODEL)],
            capture_output=True, text=True, timeout=60, env=self.coordinator_env())
        self.assertEqual(result.returncode, 0, result.stderr)
        out = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(out["socket"], self.daemon.socket)
        self.assertEqual(out["module"], self.module_path)
        self.assertEqual(out["state_after_with"], "active")
        self.assertIn("ramguard: run %s on pid %d" % (out["run_id"], out["pid"]), result.stderr)

        run = self.report(out["run_id"])
        self.assertEqual(run["job"], "py-exec")
        self.assertEqual(run["labels"], {"build": "exec"})
        self.assertEqual(run["pid"], out["pid"], "exec runs the coordinator on the run's PID")
        self.assertNotEqual(run["state"], "active", "exec ends the run when the child exits")
        self.assertEqual(run["estimate_bytes"], 500 * MB)
        [agg] = run["phases"]
        self.assertEqual(agg["phase"], "aggregation")
        self.assertTrue(agg["peak_exact"])
        self.assertGreaterEqual(agg["peak_bytes"] + TOLERANCE / 4, out["phases"][0]["measured_peak"])
        self.assertEqual(len(run["boundaries"]), 1)
        self.assertIn("gc", run["boundaries"][0])


class StartRunAtTheRunBound(unittest.TestCase):
    """The daemon at control.max_runs answers RESOURCE_EXHAUSTED: a non-strict start_run warns
    and gives a Run whose marks are dropped; the training loop never sees an exception."""

    def setUp(self):
        base = os.environ.get("RAMGUARD_TEST_TMPDIR") or None
        if base:
            os.makedirs(base, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix="rg-bound-", dir=base)
        self.daemon = Daemon(self.workdir, "control: { max_runs: 1 }\n")
        self.rg = load_copied_module(os.environ["RAMGUARD_CLIENT_PACKAGE"])
        self.sleeper = subprocess.Popen(["sleep", "60"])

    def tearDown(self):
        self.sleeper.kill()
        self.sleeper.wait()
        self.daemon.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def test_a_non_strict_start_at_the_bound_warns_and_drops_marks(self):
        client = self.rg.Client(self.daemon.socket)
        first = client.start_run("holder")  # this process: the one run the bound allows
        self.assertTrue(first.run_id)
        with self.assertLogs("ramguard", level="WARNING") as logged:
            second = client.start_run("over", pid=self.sleeper.pid)
        self.assertIn("too many active runs", "\n".join(logged.output))
        self.assertEqual(second.run_id, "")
        self.assertFalse(second.mark("begin", "load").delivered)
        self.assertFalse(second.round_end().delivered)
        second.end()  # nothing to end, and nothing raised
        strict = self.rg.Client(self.daemon.socket, strict=True)
        with self.assertRaises(self.rg.ResourceExhaustedError):
            strict.start_run("over", pid=self.sleeper.pid)
        first.end()
        client.close()
        strict.close()


if __name__ == "__main__":
    unittest.main()
