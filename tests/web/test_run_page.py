"""The run page in a real browser: Debian's chromium, headless, driven over the DevTools pipe,
against the REAL ramguardd, the REAL `ramguard ui` and real processes (tests/tools/memchild)
whose memory the daemon measures. Asserts on the rendered DOM and on screenshots:

- the list (active first) and a live run: the chart grows and a growth warning raised mid-run
  appears without a reload;
- an ended run, a killed run (SIGKILL in a phase: the death, its phase, the exact peak, the last
  reading), also after a daemon restart, a run the kernel's OOM killer ended (a v1 memory
  cgroup of 64 MiB) and a compare view;
- hostile job names, labels and failure texts stay text (no script runs, no element is made);
- the offline export (`ramguard report RUN --html`) opened in an empty network namespace;
- two users: `ramguard ui` run as nobody shows nobody's runs only; no token, no page;
- a run of 100,000 marks: the page's data is bounded, the largest phase peak is kept;
- a census: the run page names who holds the memory (a hostile holder name stays text).

Environment (tests/web/CMakeLists.txt): RAMGUARD_DAEMON, RAMGUARD_CLI, RAMGUARD_MEMCHILD,
RAMGUARD_CLIENT_PACKAGE, RAMGUARD_TEST_TMPDIR, optionally RAMGUARD_PAGE_SCREENSHOTS (a directory
that receives the screenshots). Needs chromium and root (a failure, not a skip, without them).
"""

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from test_client_daemon import Daemon, eventually, load_copied_module  # noqa: E402

MB = 1000 ** 2
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
NOBODY = 65534
# Markup that would run or build elements if any string reached the page as HTML.
XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>"\'&amp;'
# What every page load records before the page's own script runs (CDP's init script ignores
# the page's CSP): CSP violations and a marker that a reload would clear.
INIT = ("window.__xss = 0; window.__violations = [];"
        "document.addEventListener('securitypolicyviolation', function (e) {"
        " window.__violations.push(e.violatedDirective + ' ' + e.blockedURI); });")


class Browser:
    """chromium --headless=new with --remote-debugging-pipe: commands on fd 3, replies on fd 4,
    each message JSON ended by a NUL byte."""

    def __init__(self, workdir, prefix=()):
        self.profile = tempfile.mkdtemp(prefix="chromium-", dir=workdir)
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        argv = list(prefix) + [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                               "--disable-dev-shm-usage", "--no-first-run",
                               "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
                               "--hide-scrollbars", "about:blank"]
        self.proc = subprocess.Popen(argv, preexec_fn=fds, close_fds=False,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.session = None
        self.events = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")  # script errors arrive as events, named when a wait fails
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        self.call("Page.addScriptToEvaluateOnNewDocument", {"source": INIT})

    def call(self, method, params=None, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" not in self.buffer:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"chromium did not answer {method}")
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed its pipe")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def open(self, url):
        self.call("Page.navigate", {"url": url})

    def eval(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression, timeout=20):
        ok = eventually(lambda: self.eval("!!(" + expression + ")"), timeout=timeout, step=0.2)
        if not ok:
            errors = [e["params"]["exceptionDetails"] for e in self.events
                      if e.get("method") == "Runtime.exceptionThrown"]
            raise AssertionError(f"never true: {expression}\npage: " + str(self.eval(
                "document.body ? document.body.innerText.slice(0, 2000) : ''")) +
                f"\nscript errors: {errors}")

    def screenshot(self, path):
        data = base64.b64decode(self.call("Page.captureScreenshot",
                                          {"format": "png", "captureBeyondViewport": True})["data"])
        with open(path, "wb") as f:
            f.write(data)
        return data

    def small_screenshot(self, path, height):
        """The page's top `height` CSS pixels at 0.7 scale: the small PNGs kept in docs/."""
        data = base64.b64decode(self.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": 1280, "height": height, "scale": 0.7}})["data"])
        with open(path, "wb") as f:
            f.write(data)
        return data

    def close(self):
        try:
            os.close(self.to_chrome)
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)


def png_size(data):
    """(width, height) of a PNG, checking its signature."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


class MemChild:
    """tests/tools/memchild: allocates and frees real memory on command."""

    def __init__(self, user=None):
        kwargs = {"user": user, "group": user, "extra_groups": []} if user else {}
        self.proc = subprocess.Popen([os.environ["RAMGUARD_MEMCHILD"]], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, **kwargs)
        self.pid = self.proc.pid

    def do(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line.startswith("ok"), f"memchild {command}: {line!r}"
        return line

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()


class Ui:
    """`ramguard ui` on a free loopback port, as root or as another user."""

    def __init__(self, socket_path, user=None):
        kwargs = {"user": user, "group": user, "extra_groups": []} if user else {}
        self.proc = subprocess.Popen([os.environ["RAMGUARD_CLI"], "--socket", socket_path, "ui",
                                      "--refresh", "500ms"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, **kwargs)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http://127.0.0.1:"):
            self.proc.kill()
            raise RuntimeError("ramguard ui printed " + repr(line) + self.proc.stderr.read())
        self.url = line  # http://127.0.0.1:PORT/TOKEN/

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=30) as r:
            return r.status, dict(r.headers), r.read()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)
        errors = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        # SIGTERM ends the server cleanly: exit 0 (a sanitizer's report would make it fail).
        assert self.proc.returncode == 0, f"ramguard ui exited {self.proc.returncode}: {errors}"


class RunPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise RuntimeError("the run page test needs root (runuser, unshare -n)")
        base = os.environ.get("RAMGUARD_TEST_TMPDIR") or None
        if base:
            os.makedirs(base, exist_ok=True)
        cls.workdir = tempfile.mkdtemp(prefix="rg-page-", dir=base)
        os.chmod(cls.workdir, 0o755)  # nobody reaches the socket in it
        cls.shots = os.environ.get("RAMGUARD_PAGE_SCREENSHOTS") or os.path.join(cls.workdir, "shots")
        os.makedirs(cls.shots, exist_ok=True)
        cls.daemon = Daemon(cls.workdir, "sampling:\n  interval: 250ms\ncontrol:\n  socket_mode: \"0666\"\n"
                            "  max_requests_per_second: 100000\n"
                            "growth:\n  min_bytes: 16MB\n  settle: 200ms\n")
        cls.rg = load_copied_module(os.environ["RAMGUARD_CLIENT_PACKAGE"])
        cls.client = cls.rg.Client(cls.daemon.socket, strict=True)
        cls.children = []

    @classmethod
    def tearDownClass(cls):
        for child in cls.children:
            child.stop()
        cls.client.close()
        cls.daemon.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def child(self, user=None):
        c = MemChild(user)
        self.children.append(c)
        return c

    def browser(self, prefix=()):
        b = Browser(self.workdir, prefix)
        self.addCleanup(b.close)
        return b

    def ui(self, user=None):
        u = Ui(self.daemon.socket, user)
        self.addCleanup(u.stop)
        return u

    def assert_clean(self, b):
        self.assertEqual(b.eval("window.__xss"), 0)
        self.assertEqual(b.eval("window.__violations"), [])
        self.assertEqual(b.eval("document.querySelectorAll('img, iframe, object, embed').length"), 0)

    def rounds(self, run, mem, first, last, keep_bytes):
        for r in range(first, last + 1):
            with run.phase("aggregation", round_no=r):
                mem.do(f"alloc upd{r} {30 * MB}")
                mem.do("sleep 300")
                mem.do(f"free upd{r}")
            if keep_bytes:
                mem.do(f"alloc keep{r} {keep_bytes}")
            with run.phase("synchronization", round_no=r):
                mem.do("sleep 200")
            run.round_end(round_no=r)
            time.sleep(0.4)

    def test_live_run_grows_and_a_verdict_appears_without_reload(self):
        mem = self.child()
        run = self.client.start_run("live-fedavg", labels={"build": "baseline"}, pid=mem.pid,
                                    model_bytes=20 * MB, declared_rounds=5, hosts=2)
        with run.phase("load", round_no=0):
            mem.do(f"alloc model {20 * MB}")
        self.rounds(run, mem, 1, 1, 0)
        ui = self.ui()
        b = self.browser()
        b.open(ui.url)
        b.wait(f"document.querySelector('tr[data-run=\"{run.run_id}\"].active')")
        self.assertIn("live-fedavg", b.eval("document.body.innerText"))
        row = b.eval(f"document.querySelector('tr[data-run=\"{run.run_id}\"]').innerText")
        self.assertRegex(row, r"MB \u2192 [0-9.]+ MB")  # the floor trend, from a comparison
        b.screenshot(os.path.join(self.shots, "run-list.png"))

        b.open(ui.url + "run/" + run.run_id)
        b.wait("document.querySelector('#rg-view[data-state=active] #rg-chart polyline.rss')")
        b.eval("window.__sameDocument = 42")
        first_points = b.eval("document.querySelector('polyline.rss').points.numberOfItems")
        first = b.screenshot(os.path.join(self.shots, "live-1.png"))
        self.assertEqual(b.eval("document.querySelectorAll('#rg-verdicts li[data-kind^=growth]').length"), 0)

        self.rounds(run, mem, 2, 4, 40 * MB)  # 2 model copies kept per round: a growth warning
        b.wait("document.querySelector('#rg-verdicts li[data-kind^=growth]')", timeout=30)
        self.assertEqual(b.eval("window.__sameDocument"), 42, "the page was reloaded")
        b.wait(f"document.querySelector('polyline.rss').points.numberOfItems > {first_points}")
        second = b.screenshot(os.path.join(self.shots, "live-2.png"))
        b.small_screenshot(os.path.join(self.shots, "page-live.png"), 1150)
        self.assertNotEqual(first, second)
        self.assertEqual(png_size(first)[0], 1280)
        text = b.eval("document.body.innerText")
        self.assertRegex(text, r"copies/round")
        self.assertEqual(b.eval("document.querySelectorAll('tr.phase-row').length"), 9)
        self.assertGreaterEqual(b.eval("document.querySelectorAll('circle.floor').length"), 4)
        self.assert_clean(b)

        run.end(allocator=False)
        b.wait("document.querySelector('#rg-view[data-state=ended]')")
        self.assertIn("not refreshing", b.eval("document.getElementById('rg-live').textContent"))
        b.screenshot(os.path.join(self.shots, "run-ended.png"))
        b.small_screenshot(os.path.join(self.shots, "page-ended.png"), 800)
        mem.stop()

        # The comparison of this run with a second one.
        other = self.child()
        run2 = self.client.start_run("live-fedavg", labels={"build": "final"}, pid=other.pid,
                                     model_bytes=20 * MB, declared_rounds=2)
        self.rounds(run2, other, 1, 2, 0)
        run2.end(allocator=False)
        b.open(ui.url + "compare?ids=" + run.run_id + "," + run2.run_id)
        b.wait("document.querySelectorAll('tr.compare-row').length == 2")
        self.assertIn("build=final", b.eval("document.body.innerText"))
        self.assertEqual(b.eval("document.querySelectorAll('#rg-compare-chart rect').length"), 2)
        b.screenshot(os.path.join(self.shots, "compare.png"))
        self.assert_clean(b)

    def restart_daemon(self, stop_only=False, start_only=False):
        """The same socket, configuration and ledger; the client reconnects."""
        if not start_only:
            self.daemon.stop()
        if not stop_only:
            self.daemon.start()
            self.client.close()
            type(self).client = self.rg.Client(self.daemon.socket, strict=True)

    def killed_run_checks(self, b, url, run_id, peak):
        b.open(url + "run/" + run_id)
        b.wait("document.querySelector('#rg-death')")
        death = b.eval("document.getElementById('rg-death').innerText")
        self.assertIn("SIGKILL", death)
        self.assertIn("phase aggregation", death)
        text = b.eval("document.body.innerText")
        self.assertIn(f"{peak / 1e6:.1f} MB", text)  # the exact peak, as the report gives it
        self.assertEqual(b.eval("document.getElementById('rg-state').textContent"), "exited")

    def test_killed_run_is_complete_after_death_and_after_a_restart(self):
        mem = self.child()
        run = self.client.start_run("killed-coordinator", pid=mem.pid, model_bytes=20 * MB)
        self.rounds(run, mem, 1, 1, 0)
        # A live page rides out a daemon restart: it says it is not updated, then goes on.
        ui = self.ui()
        b = self.browser()
        b.open(ui.url + "run/" + run.run_id)
        b.wait("document.querySelector('#rg-view[data-state=active]')")
        self.restart_daemon(stop_only=True)
        b.wait("document.getElementById('rg-live').textContent.startsWith('not updated')")
        self.restart_daemon(start_only=True)
        b.wait("document.getElementById('rg-live').textContent.startsWith('live: updated')")
        run.mark("begin", "aggregation", round_no=2)
        mem.do(f"alloc big {90 * MB}")
        time.sleep(0.5)
        mem.proc.send_signal(signal.SIGKILL)
        mem.proc.wait()
        self.assertTrue(eventually(lambda: self.client.report(run.run_id)["run"]["state"] != "active",
                                   timeout=15))
        peak = int(self.client.report(run.run_id)["run"]["peak_bytes"])
        self.killed_run_checks(b, ui.url, run.run_id, peak)
        b.screenshot(os.path.join(self.shots, "killed.png"))
        self.restart_daemon()
        self.killed_run_checks(b, ui.url, run.run_id, peak)  # the same CLI server, a new daemon
        self.assert_clean(b)

    def test_oom_killed_run_shows_the_oom_kill(self):
        # A real OOM kill: memchild in a v1 memory cgroup of 64 MiB (as cgroup_oom_peak_test)
        # allocating past it inside a phase.
        cgroup = f"/sys/fs/cgroup/memory/ramguard-page-{os.getpid()}"
        os.mkdir(cgroup)
        self.addCleanup(lambda: eventually(lambda: self.rmdir(cgroup), timeout=5))
        with open(os.path.join(cgroup, "memory.limit_in_bytes"), "w") as f:
            f.write(str(64 << 20))
        mem = self.child()
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(mem.pid))
        run = self.client.start_run("oom-coordinator", pid=mem.pid, model_bytes=10 * MB)
        self.rounds(run, mem, 1, 1, 0)
        run.mark("begin", "aggregation", round_no=2)
        mem.proc.stdin.write(f"alloc big {200 * MB}\n")
        mem.proc.stdin.flush()
        mem.proc.wait(30)
        self.assertEqual(mem.proc.returncode, -signal.SIGKILL)
        self.assertTrue(eventually(lambda: self.client.report(run.run_id)["run"]["state"] != "active",
                                   timeout=15))
        ui = self.ui()
        b = self.browser()
        b.open(ui.url + "run/" + run.run_id)
        b.wait("document.querySelector('#rg-death')")
        death = b.eval("document.getElementById('rg-death').innerText")
        self.assertIn("OOM killer", death)
        self.assertIn("phase aggregation", death)
        b.screenshot(os.path.join(self.shots, "oom-killed.png"))
        self.assert_clean(b)

    @staticmethod
    def rmdir(path):
        try:
            os.rmdir(path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True

    def hostile_run(self):
        mem = self.child()
        run = self.client.start_run("job" + XSS, labels={"n<img src=x onerror=alert(1)>": XSS, "k": "</script>" + XSS},
                                    pid=mem.pid, model_bytes=10 * MB)
        with run.phase("aggregation", round_no=1):
            mem.do(f"alloc a {10 * MB}")
        run.round_end(round_no=1)
        run.end(failure="ValueError: " + XSS, allocator=False)
        mem.stop()
        return run.run_id

    def test_hostile_strings_stay_text_served_and_exported_offline(self):
        run_id = self.hostile_run()
        ui = self.ui()
        b = self.browser()
        b.open(ui.url)
        b.wait(f"document.querySelector('tr[data-run=\"{run_id}\"]')")
        self.assertIn("job" + XSS, b.eval("document.body.innerText"))
        self.assert_clean(b)
        b.open(ui.url + "run/" + run_id)
        b.wait("document.querySelector('#rg-view[data-view=run]')")
        text = b.eval("document.body.innerText")
        self.assertIn("job" + XSS, text)
        self.assertIn("ValueError: " + XSS, text)
        self.assertIn("k=</script>" + XSS, text)
        self.assert_clean(b)
        status, headers, body = ui.get("run/" + run_id)
        self.assertIn("script-src 'self'", headers["Content-Security-Policy"])
        self.assertNotIn(b"onerror", body)  # the shell holds no run data at all

        # The export: one file, opened with no network at all, is the same page.
        html = os.path.join(self.workdir, "hostile.html")
        subprocess.run([os.environ["RAMGUARD_CLI"], "--socket", self.daemon.socket, "report",
                        run_id, "--html", html], check=True, capture_output=True, timeout=60)
        with open(html, encoding="utf-8") as f:
            source = f.read()
        self.assertNotIn("<img", source)
        self.assertEqual(source.count("<script"), 2)  # the inert data and the page's own script
        self.assertIn("script-src 'sha256-", source)
        offline = self.browser(prefix=["unshare", "-n"])
        offline.open("file://" + html)
        offline.wait("document.querySelector('#rg-view[data-view=run]')")
        self.assertIn("ValueError: " + XSS, offline.eval("document.body.innerText"))
        self.assertIn("offline copy", offline.eval("document.getElementById('rg-live').textContent"))
        self.assertEqual(offline.eval("performance.getEntriesByType('resource').length"), 0)
        self.assertGreater(offline.eval("document.querySelectorAll('#rg-chart rect.phase-band').length"), 0)
        self.assert_clean(offline)

    def test_the_census_shows_who_holds_the_memory(self):
        # A census in roots mode of a state this test holds under a hostile key: the run page
        # names the holder (as text), its size and the gap to the kernel's figures.
        mem = self.child()
        run = self.client.start_run("census-page", pid=mem.pid, model_bytes=12 * MB)
        held = bytearray(12 * MB)
        run.census_roots(**{"state" + XSS: held})
        run.round_end(round_no=1, census="roots")
        run.end(allocator=False)
        mem.stop()
        ui = self.ui()
        b = self.browser()
        b.open(ui.url + "run/" + run.run_id)
        b.wait("document.querySelector('tr.census-row')")
        self.assertIn("What holds the memory", b.eval("document.body.innerText"))
        row = b.eval("document.querySelector('tr.census-row').innerText")
        self.assertIn("state" + XSS, row)
        self.assertIn("12.0 MB", row)
        self.assertIn("1.00", row)  # model copies
        self.assertIn("unexplained", b.eval("document.getElementById('rg-census-gap').textContent"))
        self.assert_clean(b)

    def test_each_user_sees_only_what_they_may_read(self):
        mine = self.child()
        root_run = self.client.start_run("root-only", pid=mine.pid)
        theirs = self.child(user=NOBODY)
        nobody_run = self.client.start_run("nobodys-job", pid=theirs.pid)  # owned by nobody
        as_nobody = self.ui(user=NOBODY)
        _, _, body = as_nobody.get("api/runs")
        listed = [r["run_id"] for r in json.loads(body)["runs"]]
        self.assertIn(nobody_run.run_id, listed)
        self.assertNotIn(root_run.run_id, listed)
        with self.assertRaises(urllib.error.HTTPError) as refused:
            as_nobody.get("api/run/" + root_run.run_id)
        self.assertIn(refused.exception.code, (403, 404))
        b = self.browser()
        b.open(as_nobody.url + "run/" + root_run.run_id)
        b.wait("document.querySelector('.error')")
        self.assertNotIn("root-only", b.eval("document.body.innerText"))
        b.open(as_nobody.url)
        b.wait(f"document.querySelector('tr[data-run=\"{nobody_run.run_id}\"]')")
        self.assertNotIn("root-only", b.eval("document.body.innerText"))
        as_root = self.ui()
        _, _, body = as_root.get("api/runs")
        listed = [r["run_id"] for r in json.loads(body)["runs"]]
        self.assertIn(root_run.run_id, listed)
        self.assertIn(nobody_run.run_id, listed)
        # Without the token (or with another) the server answers 404 and nothing else.
        port_url = re.match(r"(http://127\.0\.0\.1:\d+/)", as_root.url).group(1)
        for path in ("", "api/runs", "0" * 32 + "/api/runs", "app.js"):
            with self.assertRaises(urllib.error.HTTPError) as missing:
                urllib.request.urlopen(port_url + path, timeout=10)
            self.assertEqual(missing.exception.code, 404)
            self.assertEqual(missing.exception.read(), b"not found\n")
        root_run.end(allocator=False)
        nobody_run.end(allocator=False)

    def test_a_run_of_100000_marks_renders_bounded_with_its_peaks(self):
        mem = self.child()
        run = self.client.start_run("long-run", pid=mem.pid, model_bytes=10 * MB)
        marks = 0
        # 100,000 marks pipelined on one connection of the JSON-lines protocol (the Python
        # client waits for each reply; this is the same protocol, 50x faster).
        lines = []
        while marks < 99_990:  # the daemon's limit is 100,000 marks a run; 2 are the spike's
            for phase in ("aggregation", "synchronization"):
                for kind in ("PHASE_BEGIN", "PHASE_END"):
                    lines.append({"runId": run.run_id, "kind": kind, "phase": phase})
                    marks += 1
            lines.append({"runId": run.run_id, "kind": "ROUND_END"})
            marks += 1
        spike_at = len(lines) // 2
        self.send_pipelined(lines[:spike_at])
        with run.phase("aggregation"):  # the one phase with a 60 MB peak
            mem.do(f"spike {60 * MB} 300")
        self.send_pipelined(lines[spike_at:])
        full = self.client.report(run.run_id)["run"]
        # The daemon's report lists the newest 1,000 phases and sums up the others by name.
        self.assertLessEqual(len(full["phases"]), 1000)
        self.assertGreater(int(full["earlier_phases"]), 38_000)  # 39,998 phases in all
        largest = max([int(p.get("peak_bytes", 0)) for p in full["phases"]] +
                      [int(t["max_peak_bytes"]) for t in full["earlier_phase_totals"]])
        self.assertGreater(largest, 60 * MB)  # the spike, mid-run: among the earlier phases
        ui = self.ui()
        started = time.monotonic()
        _, _, body = ui.get("api/run/" + run.run_id)
        fetch_seconds = time.monotonic() - started
        page = json.loads(body)
        self.assertLess(len(body), 1_500_000, "the page's data is bounded")
        self.assertLessEqual(len(page["report"]["phases"]), 600)
        self.assertEqual(page["view"]["omitted"]["phases"], len(full["phases"]) - 600)
        self.assertLessEqual(len(page["report"]["samples"]), 1200)
        kept = max([p["peak_bytes"] for p in page["report"]["phases"]] +
                   [t["max_peak_bytes"] for t in page["view"]["earlier_phase_totals"]])
        self.assertEqual(kept, largest)
        b = self.browser()
        started = time.monotonic()
        b.open(ui.url + "run/" + run.run_id)
        b.wait("document.querySelector('#rg-view[data-view=run] #rg-chart')", timeout=30)
        render_seconds = time.monotonic() - started
        self.assertLess(render_seconds, 15)
        elements = b.eval("document.getElementsByTagName('*').length")
        self.assertLessEqual(elements, 20_000)
        text = b.eval("document.body.innerText")
        self.assertIn("phases not listed", text)
        self.assertIn(f"{largest / 1e6:.1f} MB", text)
        print(f"\n100,000 marks: page data {len(body)} bytes, fetched in {fetch_seconds:.2f} s, "
              f"rendered in {render_seconds:.2f} s, "
              f"{elements} elements", file=sys.stderr)
        run.end(allocator=False)
        mem.stop()

    def send_pipelined(self, requests):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(120)
            s.connect(self.daemon.socket)
            f = s.makefile("rwb")
            for i in range(0, len(requests), 500):
                batch = requests[i:i + 500]
                f.write(b"".join(json.dumps({"version": 1, "requestId": str(i + k), "mark": q})
                                 .encode() + b"\n" for k, q in enumerate(batch)))
                f.flush()
                for _ in batch:
                    reply = json.loads(f.readline())
                    self.assertNotIn("error", reply, reply)


if __name__ == "__main__":
    unittest.main()
