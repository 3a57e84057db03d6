"""Unit tests of the Python client (client/python/ramguard) against a fake server: a thread
listening on a Unix socket in a temp directory that answers each JSON line with a canned reply
and records requests."""

import gc
import json
import os
import socket
import tempfile
import threading
import time
import unittest
from unittest import mock

import ramguard


class FakeServer:
    """Answers each request line with handler(request) -> reply dict, or bytes sent verbatim
    (in chunks when a list), or None to close the connection."""

    def __init__(self, handler):
        self.handler = handler
        self.requests = []
        self.raw_lines = []
        self.connections = 0
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "ramguard.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn):
        buffer = b""
        with conn:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    self.raw_lines.append(line)
                    request = json.loads(line)
                    self.requests.append(request)
                    reply = self.handler(request)
                    if reply is None:
                        return
                    if isinstance(reply, list):
                        for piece in reply:
                            conn.sendall(piece)
                            time.sleep(0.01)
                    elif isinstance(reply, bytes):
                        conn.sendall(reply)
                    else:
                        conn.sendall((json.dumps(reply) + "\n").encode())

    def close(self):
        self.listener.close()
        self.dir.cleanup()

    def commands(self):
        """The command name of each request, e.g. ["runStart", "mark", "runEnd"]."""
        keys = {"version", "requestId", "token"}
        return [next(k for k in r if k not in keys) for r in self.requests]


def reply_to(request, **result):
    reply = {"version": 1, "requestId": request["requestId"], "serverVersion": "0.1.0"}
    reply.update(result)
    return reply


def daemon_like(request):
    """A plausible daemon: run start, marks, run end, admit, release, status, report."""
    if "runStart" in request:
        return reply_to(request, runStart={
            "runId": "r-1", "exactPeaks": True, "startTimeTicks": "123456",
            "baseline": {"atUnixMs": "1714560000000", "rssBytes": "600000000",
                         "anonBytes": "500000000", "complete": True}})
    if "mark" in request:
        mark = request["mark"]
        result = {"round": 1, "reading": {"rssBytes": "14100000000"}}
        if mark.get("kind") == "PHASE_END":
            result.update(phasePeakBytes="29400000000", phaseDurationSeconds=6.75,
                          peakExact=True)
        return reply_to(request, mark=result)
    if "runEnd" in request:
        return reply_to(request, runEnd={"peakBytes": "29400000000"})
    if "admit" in request:
        admit = request["admit"]
        estimate = int(admit.get("estimateBytes", "11100000000"))
        admitted = 600000000 + estimate <= 16000000000
        result = {"baselineBytes": "600000000", "estimateBytes": str(estimate),
                  "budgetBytes": "16000000000", "headroomBytes": str(15400000000 - estimate),
                  "estimateSource": "given", "reason": f"0.60 GB + {estimate / 1e9:.2f} GB",
                  "leaseSeconds": 60.0}
        if admitted:
            result.update(admitted=True, reservationId="res-7")
        return reply_to(request, admit=result)
    if "release" in request:
        return reply_to(request, release={"releasedBytes": "11100000000"})
    if "status" in request:
        return reply_to(request, status={"budgetBytes": "16000000000", "runs": [
            {"runId": "r-1", "labels": {"seed": "7", "build": "final"},
             "verdicts": [{"kind": "estimate_accuracy",
                           "figures": {"ratio": 0.86, "bad": "NaN"}}]}]})
    if "hello" in request:
        return reply_to(request, hello={"protocolVersion": 1, "budgetBytes": "16000000000",
                                        "peerPid": os.getpid()})
    return reply_to(request, error={"code": "UNKNOWN_COMMAND", "message": "unknown"})


class ServerTestCase(unittest.TestCase):
    handler = staticmethod(daemon_like)

    def setUp(self):
        self.server = FakeServer(self.handler)
        # No wait for the release verdict after an end (ReleaseWaitTest covers the wait).
        self.client = ramguard.Client(self.server.path, timeout=5, release_wait_seconds=0)

    def tearDown(self):
        self.client.close()
        self.server.close()


class FramingTest(ServerTestCase):
    def test_one_json_line_per_request_with_version_and_id(self):
        self.client.hello()
        self.client.status()
        self.assertEqual(len(self.server.raw_lines), 2)
        for line in self.server.raw_lines:
            self.assertNotIn(b"\n", line)
            json.loads(line)
        first, second = self.server.requests
        self.assertEqual(first["version"], 1)
        self.assertEqual(first["hello"]["client"], f"ramguard-python/{ramguard.__version__}")
        self.assertNotEqual(first["requestId"], second["requestId"])
        self.assertEqual(self.server.connections, 1)  # one connection reused

    def test_reply_in_pieces_is_reassembled(self):
        def chunked(request):
            line = (json.dumps(reply_to(request, hello={"budgetBytes": "16000000000"})) +
                    "\n").encode()
            return [line[:5], line[5:17], line[17:]]
        self.server.handler = chunked
        self.assertEqual(self.client.hello()["budget_bytes"], 16000000000)
        self.assertEqual(self.client.hello()["budget_bytes"], 16000000000)

    def test_reply_for_another_request_is_malformed(self):
        self.server.handler = lambda r: {"version": 1, "requestId": "999", "hello": {}}
        with self.assertRaises(ramguard.RamguardError) as caught:
            self.client.hello()
        self.assertEqual(caught.exception.code, "MALFORMED")

    def test_an_unparseable_requests_error_is_the_daemons_own_message(self):
        # The daemon cannot echo the id of a request it could not parse.
        self.server.handler = lambda r: {"version": 1, "requestId": "", "error": {
            "code": "MALFORMED", "message": "malformed request: Encountered non UTF-8"}}
        with self.assertRaises(ramguard.RamguardError) as caught:
            self.client.hello()
        self.assertEqual(caught.exception.code, "MALFORMED")
        self.assertIn("Encountered non UTF-8", str(caught.exception))

    def test_nan_and_infinity_are_refused_before_sending_naming_the_field(self):
        run = self.client.start_run("nan-job")
        for bad in (float("nan"), float("inf")):
            with self.assertRaises(ramguard.InvalidArgumentError) as caught:
                self.client.call("mark", {"run_id": run.run_id, "kind": "ROUND_END",
                                          "gc": {"duration_seconds": bad}})
            self.assertIn("mark.gc.durationSeconds is not a finite number",
                          str(caught.exception))
        self.assertFalse(any(b"NaN" in line or b"Infinity" in line
                             for line in self.server.raw_lines))

    def test_non_json_reply_is_malformed(self):
        self.server.handler = lambda r: b"this is not json\n"
        with self.assertRaises(ramguard.RamguardError) as caught:
            self.client.hello()
        self.assertEqual(caught.exception.code, "MALFORMED")

    def test_closed_connection_is_unavailable_and_next_call_reconnects(self):
        calls = []

        def close_first(request):
            calls.append(request)
            return None if len(calls) == 1 else daemon_like(request)
        self.server.handler = close_first
        with self.assertRaises(ramguard.RamguardError) as caught:
            self.client.hello()
        self.assertEqual(caught.exception.code, "UNAVAILABLE")
        self.assertEqual(self.client.hello()["protocol_version"], 1)
        self.assertEqual(self.server.connections, 2)

    def test_no_daemon_is_unavailable_naming_the_path(self):
        client = ramguard.Client(os.path.join(self.server.dir.name, "nobody.sock"))
        with self.assertRaises(ramguard.RamguardError) as caught:
            client.status()
        self.assertEqual(caught.exception.code, "UNAVAILABLE")
        self.assertIn("nobody.sock", caught.exception.message)


class ConversionTest(ServerTestCase):
    def test_int64_strings_become_ints_and_requests_send_strings(self):
        run = self.client.start_run("vit", labels={"build": "final", "seed": 7},
                                    model_bytes="2.5GB", declared_rounds=3, hosts=2)
        self.assertEqual(run.run_id, "r-1")
        self.assertEqual(run.baseline["rss_bytes"], 600000000)
        self.assertEqual(run.baseline["at_unix_ms"], 1714560000000)
        self.assertEqual(run.start_reply["start_time_ticks"], 123456)
        self.assertTrue(run.exact_peaks)
        body = self.server.requests[0]["runStart"]
        self.assertEqual(body["modelBytes"], "2500000000")
        self.assertEqual(body["declaredRounds"], 3)  # 32-bit ints stay numbers
        self.assertEqual(body["labels"], {"build": "final", "seed": "7"})
        self.assertNotIn("pid", body)  # unset fields are omitted: the daemon uses the caller

    def test_map_keys_and_values_are_kept_and_special_floats_convert(self):
        status = self.client.status()
        self.assertEqual(status["budget_bytes"], 16000000000)
        run = status["runs"][0]
        self.assertEqual(run["labels"], {"seed": "7", "build": "final"})  # not snake-cased
        figures = run["verdicts"][0]["figures"]
        self.assertEqual(figures["ratio"], 0.86)
        self.assertNotEqual(figures["bad"], figures["bad"])  # NaN

    def test_parse_size(self):
        self.assertEqual(ramguard.parse_size("16GB"), 16_000_000_000)
        self.assertEqual(ramguard.parse_size("16GiB"), 16 * 2**30)
        self.assertEqual(ramguard.parse_size("2.5GB"), 2_500_000_000)
        self.assertEqual(ramguard.parse_size(" 512 MiB "), 512 * 2**20)
        self.assertEqual(ramguard.parse_size("123"), 123)
        self.assertEqual(ramguard.parse_size(42), 42)
        for bad in ("16g", "16gb", "-1GB", "1.5", "", "GB", "16 GB extra", -3, True):
            with self.assertRaises(ValueError, msg=repr(bad)):
                ramguard.parse_size(bad)


class VerdictWordsTest(unittest.TestCase):
    def test_heading_uses_the_one_vocabulary_of_the_cli_and_the_log(self):
        def heading(**reply):
            return ramguard.Verdict.from_reply(reply).heading
        self.assertEqual(heading(kind="growth_warning", severity="WARNING"),
                         "[warning] growth_warning fail")
        self.assertEqual(heading(kind="growth_class", severity="INFO", passed=True),
                         "[info] growth_class pass")
        self.assertEqual(heading(kind="release", severity="INFO"), "[info] release allocator")
        self.assertEqual(heading(kind="release", severity="WARNING"), "[warning] release fail")
        self.assertEqual(heading(kind="leak", severity="WARNING", cleared=True),
                         "[warning] leak cleared")


class AdmissionTest(ServerTestCase):
    def test_refusal_is_an_answer_with_every_term(self):
        admission = self.client.admit("vit", estimate_bytes="20GB")
        self.assertFalse(admission.admitted)
        self.assertFalse(admission)
        self.assertEqual(admission.reservation_id, "")
        self.assertEqual(admission.baseline_bytes, 600000000)
        self.assertEqual(admission.estimate_bytes, 20000000000)
        self.assertEqual(admission.budget_bytes, 16000000000)
        self.assertEqual(admission.reserved_bytes, 0)
        self.assertEqual(admission.headroom_bytes, 15400000000 - 20000000000)
        self.assertIn("20.00 GB", admission.reason)
        self.assertEqual(self.server.requests[0]["admit"]["estimateBytes"], "20000000000")

    def test_admitted_reservation_is_claimed_by_the_run_and_model_is_described(self):
        admission = self.client.admit("vit", model_bytes=2_500_000_000, plan="fedavg", hosts=2,
                                      use_calibrated=True)
        self.assertTrue(admission)
        self.assertEqual(admission.reservation_id, "res-7")
        body = self.server.requests[0]["admit"]
        self.assertEqual(body["model"], {"modelBytes": "2500000000"})
        self.assertEqual(body["plan"], "fedavg")
        self.assertTrue(body["useCalibrated"])
        self.client.start_run("vit", admission=admission)
        self.assertEqual(self.server.requests[1]["runStart"]["reservationId"], "res-7")

    def test_admit_reports_this_processs_allocator_unless_told(self):
        # The daemon's plan estimate adds what glibc malloc keeps (docs/admission.md).
        from ramguard.probes import allocator_name
        self.client.admit("vit", model_bytes=2_500_000_000, plan="fedavg", hosts=2)
        self.assertIn(allocator_name(), ("glibc", "jemalloc"))
        self.assertEqual(self.server.requests[0]["admit"]["allocator"], allocator_name())
        self.client.admit("vit", model_bytes=2_500_000_000, plan="fedavg", allocator="jemalloc")
        self.assertEqual(self.server.requests[1]["admit"]["allocator"], "jemalloc")
        self.client.admit("vit", model_bytes=2_500_000_000, plan="fedavg", allocator="")
        self.assertNotIn("allocator", self.server.requests[2]["admit"])

    def test_parameter_count_model(self):
        self.client.admit("vit", parameter_count=632_000_000, bytes_per_parameter=4.0,
                          plan="fedavg")
        self.assertEqual(self.server.requests[0]["admit"]["model"],
                         {"parameterCount": "632000000", "bytesPerParameter": 4.0})

    def test_release_returns_bytes(self):
        self.assertEqual(self.client.release("res-7"), 11100000000)
        self.assertEqual(self.server.requests[0]["release"], {"reservationId": "res-7"})


class ErrorTest(ServerTestCase):
    def test_error_reply_raises_with_code_and_message_and_client_carries_on(self):
        def deny(request):
            if "runStart" in request:
                return reply_to(request, error={"code": "PERMISSION_DENIED",
                                                "message": "pid 1 belongs to uid 0"})
            return daemon_like(request)
        self.server.handler = deny
        with self.assertRaises(ramguard.RamguardError) as caught:
            self.client.start_run("vit", pid=1)
        self.assertEqual(caught.exception.code, "PERMISSION_DENIED")
        self.assertEqual(caught.exception.message, "pid 1 belongs to uid 0")
        self.assertIn("PERMISSION_DENIED", str(caught.exception))
        self.assertEqual(self.client.hello()["protocol_version"], 1)

    def test_invalid_mark_kind_and_allocator_field_are_rejected_locally(self):
        run = ramguard.Run(self.client, "r-1")
        with self.assertRaises(ValueError):
            run.mark("middle", "load")
        with self.assertRaises(ValueError):
            run.round_end(allocator={"allocated": 1})
        self.assertEqual(self.server.requests, [])


class ContextManagerTest(ServerTestCase):
    def test_run_and_phases_mark_in_order(self):
        with self.client.start_run("vit") as run:
            with run.phase("load") as load:
                pass
            with run.phase("aggregation", round=1):
                pass
            run.round_end(allocator={"allocated_bytes": 5_000_000_000})
        self.assertEqual(self.server.commands(),
                         ["runStart", "mark", "mark", "mark", "mark", "mark", "runEnd"])
        marks = [r["mark"] for r in self.server.requests if "mark" in r]
        self.assertEqual([(m["kind"], m.get("phase")) for m in marks],
                         [("PHASE_BEGIN", "load"), ("PHASE_END", "load"),
                          ("PHASE_BEGIN", "aggregation"), ("PHASE_END", "aggregation"),
                          ("ROUND_END", None)])
        self.assertEqual(marks[2]["round"], 1)
        self.assertEqual(marks[4]["allocator"], {"allocatedBytes": "5000000000"})
        self.assertEqual(load.peak_bytes, 29400000000)
        self.assertEqual(run.end_reply["peak_bytes"], 29400000000)
        end = self.server.requests[-1]["runEnd"]
        self.assertEqual(end["runId"], "r-1")
        # The end carries this process's allocator facts by default (glibc here: mallinfo2).
        self.assertEqual(end["allocator"]["allocator"], "glibc")
        self.assertLessEqual(int(end["allocator"]["allocatedBytes"]),
                             int(end["allocator"]["residentBytes"]))
        self.assertNotIn("trim", end)

    def test_exception_ends_phase_and_run_and_propagates(self):
        with self.assertRaises(KeyError):
            with self.client.start_run("vit") as run:
                with run.phase("aggregation"):
                    raise KeyError("host lost")
        self.assertEqual(self.server.commands(), ["runStart", "mark", "mark", "runEnd"])
        self.assertEqual(self.server.requests[2]["mark"]["kind"], "PHASE_END")
        self.assertIsNotNone(run.end_reply)

    def test_failing_end_mark_does_not_hide_the_original_exception(self):
        def refuse_end(request):
            if "mark" in request and request["mark"]["kind"] == "PHASE_END":
                return reply_to(request, error={"code": "FAILED_PRECONDITION", "message": "x"})
            return daemon_like(request)
        self.server.handler = refuse_end
        strict = ramguard.Client(self.server.path, timeout=5, strict=True)
        self.addCleanup(strict.close)
        run = ramguard.Run(strict, "r-1")
        with self.assertRaises(ZeroDivisionError):
            with run.phase("save"):
                1 / 0
        with self.assertRaises(ramguard.RamguardError):  # strict: without an exception it surfaces
            with run.phase("save"):
                pass

    def test_explicit_end_is_not_repeated(self):
        with self.client.start_run("vit") as run:
            run.end()
        self.assertEqual(self.server.commands(), ["runStart", "runEnd"])


class GcProbeTest(ServerTestCase):
    def test_probe_sends_rss_before_and_after_collect(self):
        size = 256 * 1024 * 1024
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            # Memory held only by a reference cycle: freed by gc.collect(), not by refcounting.
            a, b = {}, {}
            a["other"], b["other"] = b, a
            a["payload"] = bytearray(size)
            a["payload"][::4096] = b"x" * (size // 4096)  # touch every page
            del a, b
            ramguard.Run(self.client, "r-1").round_end(round=2, gc_probe=True)
        finally:
            if was_enabled:
                gc.enable()
        mark = self.server.requests[0]["mark"]
        self.assertEqual(mark["kind"], "ROUND_END")
        self.assertEqual(mark["round"], 2)
        probe = mark["gc"]
        before, after = int(probe["rssBeforeBytes"]), int(probe["rssAfterBytes"])
        self.assertIsInstance(probe["rssBeforeBytes"], str)  # 64-bit ints go as strings
        self.assertGreater(before - after, size * 3 // 4)
        self.assertGreaterEqual(int(probe["collectedObjects"]), 2)
        self.assertGreaterEqual(probe["durationSeconds"], 0.0)

    def test_without_probe_no_gc_fields(self):
        ramguard.Run(self.client, "r-1").round_end()
        self.assertNotIn("gc", self.server.requests[0]["mark"])

    def test_rss_bytes_reads_statm(self):
        with tempfile.NamedTemporaryFile("w", suffix="statm") as f:
            f.write("1000 250 10 1 0 100 0\n")
            f.flush()
            self.assertEqual(ramguard.rss_bytes(f.name), 250 * os.sysconf("SC_PAGE_SIZE"))
        self.assertGreater(ramguard.rss_bytes(), 0)


class AllocatorProbeTest(ServerTestCase):
    def test_glibc_stats_follow_a_live_allocation(self):
        before = ramguard.allocator_stats()
        self.assertEqual(before["allocator"], "glibc")  # this test runs under glibc malloc
        self.assertTrue(before["available"])
        blocks = [bytearray(64 * 1024) for _ in range(256)]  # 16 MiB through malloc
        during = ramguard.allocator_stats()
        self.assertGreaterEqual(during["allocated_bytes"] - before["allocated_bytes"],
                                15 * 1024 * 1024)
        self.assertLessEqual(during["allocated_bytes"], during["resident_bytes"])
        self.assertLessEqual(during["free_bytes"], during["resident_bytes"])
        self.assertLess(during["duration_seconds"], 0.05)
        del blocks

    def test_trim_probe_reads_rss_around_malloc_trim(self):
        stats = ramguard.allocator_stats(trim=True)
        trim = stats["trim"]
        self.assertEqual(trim["how"], "malloc_trim(0)")
        self.assertGreater(trim["rss_before_bytes"], 0)
        self.assertGreater(trim["rss_after_bytes"], 0)
        self.assertGreaterEqual(trim["duration_seconds"], 0.0)

    def test_missing_allocator_symbols_say_unavailable_and_never_raise(self):
        with mock.patch.object(ramguard.probes, "_process_symbols", return_value=object()):
            stats = ramguard.allocator_stats(trim=True)
            self.assertEqual(stats["allocator"], "unknown")
            self.assertFalse(stats["available"])
            self.assertIn("mallinfo2", stats["reason"])
            self.assertFalse(stats["trim"]["available"])
            ramguard.Run(self.client, "r-1").round_end()
        self.assertNotIn("allocator", self.server.requests[0]["mark"])  # nothing to send

    def test_round_end_sends_the_probe_by_default_and_not_when_told(self):
        run = ramguard.Run(self.client, "r-1")
        run.round_end()
        run.round_end(allocator=False)
        first, second = (r["mark"] for r in self.server.requests)
        facts = first["allocator"]
        self.assertEqual(set(facts), {"allocatedBytes", "activeBytes", "residentBytes",
                                      "retainedBytes"})
        self.assertLessEqual(int(facts["allocatedBytes"]), int(facts["residentBytes"]))
        self.assertNotIn("allocator", second)

    def test_a_daemon_that_refuses_the_facts_still_gets_the_end_and_its_failure(self):
        def older_daemon(request):
            if "runEnd" in request and "allocator" in request["runEnd"]:
                return reply_to(request, error={"code": "MALFORMED",
                                                "message": "no field named allocator"})
            return daemon_like(request)
        self.server.handler = older_daemon
        result = ramguard.Run(self.client, "r-1").end(failure="ValueError: bad shape")
        self.assertTrue(result.delivered)
        first, second = (r["runEnd"] for r in self.server.requests)
        self.assertIn("allocator", first)
        self.assertEqual(second, {"runId": "r-1", "failure": "ValueError: bad shape"})

    def test_end_sends_gc_allocator_and_trim_facts(self):
        ramguard.Run(self.client, "r-1").end(gc_probe=True, trim_probe=True)
        end = self.server.requests[0]["runEnd"]
        self.assertEqual(end["allocator"]["allocator"], "glibc")
        self.assertEqual(set(end["gc"]), {"rssBeforeBytes", "rssAfterBytes",
                                          "collectedObjects", "durationSeconds"})
        self.assertEqual(set(end["trim"]), {"rssBeforeBytes", "rssAfterBytes",
                                            "durationSeconds"})


GROWTH_R2 = {"kind": "growth_warning", "severity": "WARNING", "round": 2,
             "summary": "Floor rose in round 2", "atUnixMs": "1714560010000"}
RELEASE = {"kind": "release", "severity": "WARNING", "passed": False, "round": 3,
           "summary": "Release failed: 0.30 GB held", "atUnixMs": "1714560050000"}


class ReleaseWaitTest(unittest.TestCase):
    """Run.end() asks `report` until the release verdict is there (bounded by
    release_wait_seconds) and hands each verdict to on_verdict once, whichever reply had it."""

    def make(self, reports, wait):
        self.reports = list(reports)

        def handler(request):
            if "mark" in request and request["mark"].get("kind") == "ROUND_END":
                return reply_to(request, mark={"round": 2, "verdicts": [GROWTH_R2]})
            if "report" in request:
                verdicts = self.reports.pop(0) if len(self.reports) > 1 else self.reports[0]
                return reply_to(request, report={"run": {"runId": "r-1", "verdicts": verdicts}})
            return daemon_like(request)
        self.server = FakeServer(handler)
        self.addCleanup(self.server.close)
        self.seen = []
        self.client = ramguard.Client(self.server.path, timeout=5, on_verdict=self.seen.append,
                                      release_wait_seconds=wait)
        self.addCleanup(self.client.close)

    def test_the_release_verdict_and_late_ones_reach_on_verdict_once(self):
        self.make([[GROWTH_R2], [GROWTH_R2, RELEASE]], wait=10)
        started = time.monotonic()
        with self.client.start_run("job") as run:
            run.round_end()
        # Leaving the block does not wait (its locals are freed right after it, which is what
        # the release judges): the release reaches on_verdict from a background thread.
        self.assertLess(time.monotonic() - started, 0.5)
        deadline = time.monotonic() + 5
        while len(self.seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual([(v.kind, v.round) for v in self.seen],
                         [("growth_warning", 2), ("release", 3)])
        self.assertEqual(run.end_reply.release.summary, "Release failed: 0.30 GB held")
        self.assertEqual([v.kind for v in run.end_reply.verdicts], ["release"])
        self.assertEqual(self.server.commands()[-3:], ["runEnd", "report", "report"])

    def test_the_wait_is_bounded_and_says_where_the_release_will_be(self):
        self.make([[GROWTH_R2]], wait=0.5)
        run = self.client.start_run("job")
        run.round_end()
        started = time.monotonic()
        with self.assertLogs("ramguard", "INFO") as logs:
            result = run.end()
        self.assertLess(time.monotonic() - started, 3.0)
        self.assertIsNone(result.release)
        self.assertIn("ramguard report r-1", "\n".join(logs.output))
        self.assertEqual([v.kind for v in self.seen], ["growth_warning"])

    def test_end_takes_its_own_wait(self):
        self.make([[GROWTH_R2]], wait=30)
        run = self.client.start_run("job")
        started = time.monotonic()
        run.end(release_wait_seconds=0)
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertNotIn("report", self.server.commands())


class EnvironmentTest(ServerTestCase):
    def test_socket_and_run_from_environment(self):
        env = {"RAMGUARD_SOCKET": self.server.path, "RAMGUARD_RUN": "r-from-exec"}
        with mock.patch.dict(os.environ, env):
            self.assertEqual(ramguard.Client().socket_path, self.server.path)
            run = ramguard.current_run()
            self.assertEqual(run.run_id, "r-from-exec")
            with run:
                with run.phase("load"):
                    pass
        # The attached run is marked but not ended: whoever started it ends it.
        self.assertEqual(self.server.commands(), ["mark", "mark"])
        self.assertEqual(self.server.requests[0]["mark"]["runId"], "r-from-exec")
        run.client.close()

    def test_no_run_in_environment(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertIsNone(ramguard.current_run())

    def test_default_socket_paths(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            with mock.patch.object(os, "geteuid", return_value=0):
                self.assertEqual(ramguard.default_socket_path(), "/run/ramguard/ramguard.sock")
            with mock.patch.object(os, "geteuid", return_value=1000), \
                    mock.patch.object(os, "getuid", return_value=1000):
                self.assertEqual(ramguard.default_socket_path(), "/tmp/ramguard-1000.sock")
                os.environ["XDG_RUNTIME_DIR"] = "/run/user/1000"
                self.assertEqual(ramguard.default_socket_path(), "/run/user/1000/ramguard.sock")
                os.environ["RAMGUARD_SOCKET"] = "/x/y.sock"
                self.assertEqual(ramguard.default_socket_path(), "/x/y.sock")


class ThreadSafetyTest(ServerTestCase):
    def test_concurrent_calls_get_their_own_replies(self):
        errors = []

        def worker():
            try:
                for _ in range(20):
                    self.assertEqual(self.client.hello()["protocol_version"], 1)
            except Exception as e:  # noqa: BLE001 - collected and asserted below
                errors.append(e)
        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(self.server.requests), 80)


if __name__ == "__main__":
    unittest.main()
