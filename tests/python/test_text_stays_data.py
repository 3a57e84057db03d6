"""Text stays data: control characters, ANSI escapes, newlines, markup and invalid UTF-8 in every
user-supplied field go through the REAL ramguardd and then through every output: the structured
log, /metrics (promtool check metrics), the CLI's table, and the report in text, markdown, CSV,
JSON and SVG. The daemon refuses what it must (a control character in a job name, a phase name
outside its alphabet, bytes that are not UTF-8) with an error naming the problem and keeps
serving; what it takes reaches no output as a raw control byte, a markdown table keeps one row
per run, CSV and JSON parse, and the SVG is well-formed XML.

Environment as for test_client_daemon (set by tests/python/CMakeLists.txt), plus promtool.
"""

import csv
import io
import json
import os
import shutil
import socket
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ElementTree

from test_client_daemon import Daemon, load_copied_module

ESC = "\x1b"
ANSI = ESC + "[31mRED" + ESC + "[0m"
CSI_C1 = "\u009b31m"                      # one-character CSI some terminals obey
MARKUP = "<script>alert(1)</script>|*b*_i_`c`]]>&amp;[x](javascript:y)"
HOSTILE = ANSI + "\nline2\r\tTab" + CSI_C1 + MARKUP + ",\"q\";=cmd"
# A job name may not hold control characters (refused, tested below); markup goes through.
JOB = "job" + MARKUP[:60]
LABELS = {"note": HOSTILE, "k" + ESC + "[1m|<b>": "v\n|x|", "build": "a,b\"c"}


def raw_controls(text):
    """The control characters (C0 but newline, DEL, C1) in text, as code points."""
    return sorted({hex(ord(c)) for c in text
                   if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F})


class TextStaysData(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        base = os.environ.get("RAMGUARD_TEST_TMPDIR") or None
        if base:
            os.makedirs(base, exist_ok=True)
        cls.workdir = tempfile.mkdtemp(prefix="rg-text-", dir=base)
        cls.daemon = Daemon(cls.workdir, "")
        cls.rg = load_copied_module(os.environ["RAMGUARD_CLIENT_PACKAGE"])
        cls.client = cls.rg.Client(cls.daemon.socket, strict=True)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.daemon.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def cli(self, *args):
        result = subprocess.run([os.environ["RAMGUARD_CLI"], "--socket", self.daemon.socket,
                                 *args], capture_output=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        out = result.stdout.decode("utf-8")  # strict: invalid UTF-8 fails here
        # CSV ends its records with CRLF (RFC 4180): the only control bytes it may hold.
        text = out.replace("\r\n", "\n") if "csv" in args else out
        self.assertEqual(raw_controls(text), [], f"ramguard {' '.join(args)}:\n{out!r}")
        return out

    def raw_request(self, payload):
        """One request line as raw bytes; returns the decoded reply."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.daemon.socket)
            s.sendall(payload + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        return json.loads(data)

    def hostile_run(self):
        """A run whose job, labels and failure carry what the daemon lets through."""
        run = self.client.start_run(JOB, labels=LABELS, declared_rounds=1)
        with run.phase("aggregation"):
            pass
        run.round_end()
        run.end(failure=MARKUP, allocator=False)
        return run.run_id

    def test_refusals_name_the_problem_and_the_daemon_keeps_serving(self):
        with self.assertRaises(self.rg.InvalidArgumentError) as refused:
            self.client.start_run("job" + ANSI)
        self.assertIn("control character", refused.exception.message)
        run = self.client.start_run("text-refusals")
        with self.assertRaises(self.rg.InvalidArgumentError) as refused:
            run.mark("begin", "ok")  # a valid name first: the client checks names itself
            self.client.call("mark", {"run_id": run.run_id, "kind": "PHASE_BEGIN",
                                      "phase": "ph" + ESC + "[2J<b>"})
        self.assertIn("phase name", refused.exception.message)
        for failure in ("boom" + ESC + "[2J", "boom" + CSI_C1):
            with self.assertRaises(self.rg.InvalidArgumentError) as refused:
                self.client.call("run_end", {"run_id": run.run_id, "failure": failure})
            self.assertIn("control character", refused.exception.message)
        with self.assertRaises(self.rg.InvalidArgumentError) as refused:
            self.client.start_run("job" + CSI_C1)
        self.assertIn("control character (\\u009b)", refused.exception.message)
        run.end()
        # Bytes that are not UTF-8, in a job, a label and a phase name: refused as malformed.
        for body in (b'"runStart":{"job":"a\xff\xfeb"}',
                     b'"runStart":{"job":"j","labels":{"k":"\xc3\x28"}}',
                     b'"mark":{"runId":"r-x","kind":"PHASE_BEGIN","phase":"\xed\xa0\x80"}'):
            reply = self.raw_request(b'{"version":1,"requestId":"7",' + body + b"}")
            self.assertEqual(reply["error"]["code"], "MALFORMED", reply)
            self.assertEqual(raw_controls(reply["error"]["message"]), [])
        self.assertEqual(self.client.hello().protocol_version, 1)  # still serving

    def test_every_output_keeps_hostile_text_as_data(self):
        run_id = self.hostile_run()
        self.client.hello()  # a hello with a hostile client name goes to the log too
        self.client.call("hello", {"client": "c" + ANSI + "\n" + MARKUP})

        # The structured log: one event per line, no raw control character.
        log = "".join(self.daemon.lines)
        self.assertEqual(raw_controls(log), [], log)
        self.assertTrue(all(l.startswith("ts=") or l.startswith("[") for l in
                            log.splitlines()), log)

        # /metrics: promtool accepts it, no raw control character.
        metrics = self.daemon.scrape()
        self.assertEqual(raw_controls(metrics), [])
        check = subprocess.run(["promtool", "check", "metrics"], input=metrics.encode(),
                               capture_output=True, timeout=60)
        self.assertNotIn(b"error", check.stderr.lower() + check.stdout.lower(),
                         check.stderr + check.stdout)

        # The CLI's tables and the text report.
        runs = self.cli("runs")
        self.assertEqual(len([l for l in runs.splitlines() if run_id in l]), 1, runs)
        self.cli("status", run_id)
        text = self.cli("report", run_id)
        self.assertIn("<script>", text)  # text stays text, escaped only where it must be

        # Markdown: one row per run, the markup inert.
        markdown = self.cli("compare", run_id, "--format", "markdown")
        rows = [l for l in markdown.splitlines() if l.startswith("|")]
        self.assertEqual(len(rows), 3, markdown)  # header, separator, the run
        self.assertNotIn("<script>", markdown)
        self.assertIn("&lt;script>", markdown)
        self.assertNotRegex(markdown, r"(?<!\\)\]\(javascript:")  # no link: "\]" is escaped
        self.assertIn("\\](javascript:", markdown)

        # CSV: parses, one record per run, the label's text kept.
        table = list(csv.reader(io.StringIO(self.cli("compare", run_id, "--format", "csv"))))
        self.assertEqual(len(table), 2, table)
        self.assertEqual(len(table[0]), len(table[1]))

        # JSON: parses, and gives back the job and labels as sent.
        for args in (("compare", run_id, "--format", "json"), ("--json", "report", run_id)):
            json.loads(self.cli(*args))
        report = json.loads(self.cli("--json", "report", run_id))
        self.assertIn(JOB, json.dumps(report, ensure_ascii=False))

        # SVG: well-formed XML, no element from the run's text.
        svg_path = os.path.join(self.workdir, "run.svg")
        self.cli("report", run_id, "--svg", svg_path)
        with open(svg_path, encoding="utf-8") as f:
            svg = f.read()
        self.assertEqual(raw_controls(svg), [])
        root = ElementTree.fromstring(svg)
        self.assertFalse([e for e in root.iter() if e.tag.endswith("script")])


if __name__ == "__main__":
    unittest.main()
