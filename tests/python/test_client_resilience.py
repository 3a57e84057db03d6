"""The Python client made for training code, against a stateful fake daemon that can be stopped
and restarted: the training loop's calls never raise while ramguardd is away (one warning),
calls back off, the run and its open phases are resynchronised after a restart, admission
refuses (or, opted in, admits) when nobody can be asked, an exception fails the phase and the
run with its type, verdicts arrive typed and through the callback, and strict=True raises."""

import json
import logging
import os
import socket
import tempfile
import threading
import unittest
from unittest import mock

import ramguard


def error(request, code, message):
    return {"version": 1, "requestId": request["requestId"],
            "error": {"code": code, "message": message}}


def reply(request, **result):
    return dict({"version": 1, "requestId": request["requestId"]}, **result)


class FakeDaemon:
    """Keeps runs, open phases and rounds as ramguardd does and refuses the marks it refuses
    (FAILED_PRECONDITION). stop() closes the socket and every connection; start() listens
    again with the state kept, as ramguardd recovers runs from its ledger."""

    def __init__(self, path):
        self.path = path
        self.runs = {}
        self.requests = []
        self.round_verdicts = {}  # round -> verdict dicts (wire form) of that round end
        self.end_verdicts = []
        self.listener = None
        self.conns = []
        self.lock = threading.Lock()

    def start(self):
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(8)
        threading.Thread(target=self._serve, args=(self.listener,), daemon=True).start()

    def stop(self):
        self.listener.close()
        os.unlink(self.path)
        for conn in self.conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        self.conns = []

    def _serve(self, listener):
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn):
        buffer = b""
        while True:
            try:
                chunk = conn.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                request = json.loads(line)
                with self.lock:
                    self.requests.append(request)
                    answer = self.handle(request)
                try:
                    conn.sendall((json.dumps(answer) + "\n").encode())
                except OSError:
                    return

    def handle(self, request):
        if "runStart" in request:
            run_id = f"r-{len(self.runs) + 1}"
            self.runs[run_id] = {"state": "active", "open": [], "rounds": 0, "phases": [],
                                 "failure": None}
            return reply(request, runStart={"runId": run_id, "exactPeaks": True})
        if "admit" in request:
            return reply(request, admit={"admitted": True, "reservationId": "res-1"})
        body = next(v for k, v in request.items() if k not in ("version", "requestId"))
        run = self.runs.get(body.get("runId"))
        if run is None:
            return error(request, "NOT_FOUND", f"no run {body.get('runId')}")
        if "status" in request:
            # As ramguardd writes them: an open phase's duration is 0.
            phases = [{"phase": p["phase"], "round": p["round"],
                       "durationSeconds": 0 if p["open"] else 1.0} for p in run["phases"]]
            return reply(request, status={"runs": [{"runId": body["runId"], "state": run["state"],
                                                    "round": run["rounds"], "phases": phases}]})
        if run["state"] != "active":
            return error(request, "FAILED_PRECONDITION", "the run has ended")
        if "runEnd" in request:
            run["state"] = "ended"
            run["failure"] = body.get("failure")
            for p in run["phases"]:
                p["open"] = False
            run["open"] = []
            verdicts = list(self.end_verdicts)
            if body.get("failure"):  # as ramguardd: a critical "failed" verdict naming it
                verdicts.insert(0, {"kind": "failed", "severity": "CRITICAL",
                                    "summary": "ended the run on a failure: " + body["failure"]})
            return reply(request, runEnd={"peakBytes": "1000", "verdicts": verdicts})
        kind, phase = body["kind"], body.get("phase")
        if kind == "PHASE_BEGIN":
            if phase in run["open"]:
                return error(request, "FAILED_PRECONDITION", f"phase '{phase}' is already open")
            run["open"].append(phase)
            run["phases"].append({"phase": phase, "round": run["rounds"] + 1, "open": True})
            return reply(request, mark={"round": run["rounds"] + 1})
        if kind == "PHASE_END":
            if phase not in run["open"]:
                return error(request, "FAILED_PRECONDITION",
                             f"phase '{phase}' ended without a begin")
            run["open"].remove(phase)
            for p in run["phases"]:
                if p["phase"] == phase and p["open"]:
                    p["open"] = False
            return reply(request, mark={"phasePeakBytes": "2000", "peakExact": True})
        number = body.get("round") or run["rounds"] + 1
        if number <= run["rounds"]:
            return error(request, "FAILED_PRECONDITION", f"round {number} already ended")
        run["rounds"] = number
        return reply(request, mark={"round": number,
                                    "verdicts": self.round_verdicts.get(number, [])})

    def marks(self, run_id):
        """(kind, phase or round) of each mark of the run, in order."""
        out = []
        for r in self.requests:
            m = r.get("mark")
            if m and m.get("runId") == run_id:
                out.append((m["kind"], m.get("phase") or m.get("round")))
        return out

    def closed_phases(self, run_id):
        return [p["phase"] for p in self.runs[run_id]["phases"] if not p["open"]]


class ResilienceTestCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.daemon = FakeDaemon(os.path.join(self.dir.name, "ramguard.sock"))
        self.daemon.start()
        self.addCleanup(lambda: self.daemon.listener.close())
        self.client = ramguard.Client(self.daemon.path, timeout=5)
        self.addCleanup(self.client.close)
        # No waiting out the backoff in tests: each call may try again at once unless a test
        # says otherwise.
        patcher = mock.patch.object(ramguard.client, "RETRY_FIRST_SECONDS", 0.0)
        patcher.start()
        self.addCleanup(patcher.stop)


class DaemonRestartTest(ResilienceTestCase):
    def test_phase_left_during_an_outage_is_ended_after_restart_and_later_phases_work(self):
        run = self.client.start_run("train")
        with self.assertLogs("ramguard", logging.INFO) as logs:
            with run.phase("aggregation"):
                self.daemon.stop()         # ramguardd restarts mid-phase ...
            self.daemon.start()            # ... and recovers the run with aggregation open
            with run.phase("synchronization"):
                pass
            with run.phase("aggregation"):  # the stuck phase used to refuse this for ever
                pass
            run.round_end()
            result = run.end()
        self.assertTrue(result.delivered)
        self.assertEqual(self.daemon.runs[run.run_id]["state"], "ended")
        self.assertEqual(self.daemon.closed_phases(run.run_id),
                         ["aggregation", "synchronization", "aggregation"])
        self.assertEqual(self.daemon.runs[run.run_id]["rounds"], 1)
        warnings = [r for r in logs.output if r.startswith("WARNING")]
        self.assertEqual(len(warnings), 1, logs.output)  # one warning for the outage
        self.assertIn("training continues", warnings[0])
        self.assertTrue(any(r.startswith("INFO") and "ending phase aggregation" in r
                            for r in logs.output), logs.output)

    def test_begin_unheard_is_sent_again_so_the_end_is_accepted(self):
        run = self.client.start_run("train")
        self.daemon.stop()
        with self.assertLogs("ramguard", logging.WARNING):
            with run.phase("save") as save:
                self.daemon.start()
        self.assertTrue(save.end_reply.delivered)
        self.assertEqual(save.peak_bytes, 2000)
        self.assertEqual(self.daemon.marks(run.run_id),
                         [("PHASE_BEGIN", "save"), ("PHASE_END", "save")])

    def test_stale_begin_held_by_the_daemon_is_ended_and_begun_afresh(self):
        run = self.client.start_run("train")
        self.daemon.runs[run.run_id]["open"].append("load")  # a begin from before an outage
        self.daemon.runs[run.run_id]["phases"].append({"phase": "load", "round": 1, "open": True})
        with self.assertLogs("ramguard", logging.WARNING):
            with run.phase("load") as load:
                pass
        self.assertTrue(load.begin_reply.delivered)
        self.assertTrue(load.end_reply.delivered)
        self.assertEqual(self.daemon.closed_phases(run.run_id), ["load", "load"])

    def test_round_ends_unheard_keep_the_numbering(self):
        run = self.client.start_run("train")
        run.round_end()
        self.daemon.stop()
        with self.assertLogs("ramguard", logging.WARNING):
            self.assertFalse(run.round_end().delivered)  # round 2 unheard
        self.daemon.start()
        self.assertEqual(run.round_end().round, 3)
        self.assertEqual(self.daemon.runs[run.run_id]["rounds"], 3)

    def test_no_daemon_at_all_never_raises_and_warns_once(self):
        self.daemon.stop()
        with self.assertLogs("ramguard", logging.WARNING) as logs:
            run = self.client.start_run("train")
            for _ in range(3):
                with run.phase("aggregation") as agg:
                    pass
                self.assertFalse(agg.end_reply.delivered)
                self.assertFalse(run.round_end(gc_probe=True).delivered)
            self.assertFalse(run.end().delivered)
        self.assertEqual(run.run_id, "")
        self.assertEqual(len(logs.output), 1, logs.output)
        self.assertIn("cannot start run of job train", logs.output[0])

    def test_run_started_when_the_daemon_comes_back_with_the_open_phase(self):
        self.daemon.stop()
        with self.assertLogs("ramguard", logging.INFO) as logs:
            run = self.client.start_run("train")
            with run.phase("aggregation"):
                self.daemon.start()
                run.round_end()
        run.end()
        self.assertEqual(run.run_id, "r-1")
        self.assertTrue(any("started late" in r for r in logs.output), logs.output)
        self.assertEqual(self.daemon.marks("r-1"), [("PHASE_BEGIN", "aggregation"),
                                                     ("ROUND_END", 1),
                                                     ("PHASE_END", "aggregation")])
        self.assertEqual(self.daemon.runs["r-1"]["state"], "ended")

    def test_calls_back_off_while_the_daemon_is_unreachable(self):
        run = self.client.start_run("train")
        self.daemon.stop()
        attempts = []
        real_connect = self.client._connect

        def counted(timeout):
            attempts.append(1)
            real_connect(timeout)
        with mock.patch.object(ramguard.client, "RETRY_FIRST_SECONDS", 30.0), \
                mock.patch.object(self.client, "_connect", counted), \
                self.assertLogs("ramguard", logging.WARNING):
            for _ in range(50):
                run.round_end()
        self.assertEqual(len(attempts), 1)  # the rest wait for the backoff

    def test_run_that_the_daemon_no_longer_has_is_dropped_with_a_warning(self):
        run = self.client.start_run("train")
        self.daemon.stop()
        self.daemon.runs.clear()  # a ledger lost with the restart
        self.daemon.start()
        with self.assertLogs("ramguard", logging.WARNING) as logs:
            with run.phase("aggregation"):
                pass
            with run.phase("aggregation"):
                pass
            self.assertFalse(run.end().delivered)
        self.assertTrue(any("further marks of this run are dropped" in r for r in logs.output),
                        logs.output)


class FailureTest(ResilienceTestCase):
    def test_exception_marks_the_phase_and_fails_the_run_with_its_type(self):
        with self.assertRaises(KeyError):
            with self.client.start_run("train") as run:
                with run.phase("aggregation") as agg:
                    raise KeyError("host lost")
        self.assertEqual(agg.exception, "KeyError: 'host lost'")
        self.assertTrue(agg.end_reply.delivered)
        self.assertEqual(self.daemon.runs[run.run_id]["failure"], "KeyError: 'host lost'")
        self.assertEqual([v.kind for v in run.end_reply.verdicts], ["failed"])

    def test_failure_is_one_line_within_the_daemon_s_bound(self):
        with self.assertRaises(ValueError):
            with self.client.start_run("train") as run:
                raise ValueError("shape mismatch:\n" + "é" * 400)
        failure = self.daemon.runs[run.run_id]["failure"]
        self.assertTrue(failure.startswith("ValueError: shape mismatch: éé"), failure)
        self.assertNotIn("\n", failure)
        self.assertLessEqual(len(failure.encode()), 200)

    def test_clean_sys_exit_is_a_normal_end(self):
        with self.assertRaises(SystemExit):
            with self.client.start_run("train") as run:
                raise SystemExit(0)
        self.assertEqual(self.daemon.runs[run.run_id]["state"], "ended")
        self.assertIsNone(self.daemon.runs[run.run_id]["failure"])

    def test_phase_names_are_checked_locally(self):
        run = self.client.start_run("train")
        with self.assertRaises(ValueError) as caught:
            run.phase("Aggregation")
        self.assertIn("'Aggregation'", str(caught.exception))


class VerdictTest(ResilienceTestCase):
    def test_round_and_run_end_verdicts_are_typed_and_reach_the_callback(self):
        heard = []
        client = ramguard.Client(self.daemon.path, on_verdict=heard.append)
        self.addCleanup(client.close)
        self.daemon.round_verdicts[2] = [{"kind": "growth_warning", "severity": "WARNING",
                                          "round": 2, "summary": "floor grew 45.0 MB",
                                          "figures": {"slope_bytes": 45e6}}]
        self.daemon.end_verdicts = [{"kind": "over_budget", "severity": "CRITICAL",
                                     "summary": "peak 17.0 GB over 16.0 GB"}]
        run = client.start_run("train")
        self.assertEqual(run.round_end().verdicts, [])
        second = run.round_end()
        [warning] = second.verdicts
        self.assertIsInstance(warning, ramguard.Verdict)
        self.assertEqual((warning.kind, warning.round, warning.figures["slope_bytes"]),
                         ("growth_warning", 2, 45e6))
        self.assertTrue(warning.alarming)
        end = run.end()
        self.assertEqual(end.peak_bytes, 1000)
        self.assertEqual([v.kind for v in end.verdicts], ["over_budget"])
        self.assertEqual([v.kind for v in heard], ["growth_warning", "over_budget"])

    def test_a_raising_callback_is_logged_not_raised(self):
        def broken(verdict):
            raise RuntimeError("pager down")
        client = ramguard.Client(self.daemon.path, on_verdict=broken)
        self.addCleanup(client.close)
        self.daemon.round_verdicts[1] = [{"kind": "leak", "severity": "CRITICAL"}]
        run = client.start_run("train")
        with self.assertLogs("ramguard", logging.ERROR) as logs:
            self.assertEqual(run.round_end().verdicts[0].kind, "leak")
        self.assertIn("on_verdict", logs.output[0])


class AdmissionAndStrictTest(ResilienceTestCase):
    def test_admission_refuses_when_unavailable_unless_the_caller_opts_in(self):
        self.assertTrue(self.client.admit("train", estimate_bytes="1GB").available)
        self.daemon.stop()
        with self.assertRaises(ramguard.UnavailableError):
            self.client.admit("train", estimate_bytes="1GB")
        with self.assertLogs("ramguard", logging.WARNING):
            admission = self.client.admit("train", estimate_bytes="1GB",
                                          admit_when_unavailable=True)
        self.assertTrue(admission)
        self.assertFalse(admission.available)
        self.assertIn("without a check", admission.reason)

    def test_strict_raises_the_code_s_subclass(self):
        strict = ramguard.Client(self.daemon.path, strict=True)
        self.addCleanup(strict.close)
        run = strict.start_run("train")
        with self.assertRaises(ramguard.FailedPreconditionError) as caught:
            run.mark("end", "load")
        self.assertIsInstance(caught.exception, ramguard.RamguardError)
        self.assertEqual(caught.exception.code, "FAILED_PRECONDITION")
        self.daemon.stop()
        with self.assertRaises(ramguard.UnavailableError):
            run.round_end()
        with self.assertRaises(ramguard.UnavailableError):
            strict.start_run("train")

    def test_error_codes_map_to_subclasses(self):
        with self.assertRaises(ramguard.NotFoundError) as caught:
            self.client.status("r-404")
        self.assertEqual(caught.exception.code, "NOT_FOUND")
        self.assertIn("r-404", caught.exception.message)


if __name__ == "__main__":
    unittest.main()
