#!/usr/bin/python3
"""Follow ramguardd's structured log (logfmt on stderr, redirected to a file) and print the
events a demo viewer cares about as they happen: admissions, run start and end, the settled
floor of each round boundary, verdicts, and any warning or error.

    follow_log.py LOG OFFSET_FILE

After each batch it writes how many bytes of LOG it has printed to OFFSET_FILE, so the demo
script can wait until the daemon's lines are out before it prints its own. It stops when LOG
is removed or on SIGTERM.
"""

import os
import re
import signal
import sys
import time

_PAIR = re.compile(r'([A-Za-z0-9_.]+)=("(?:[^"\\]|\\.)*"|\S*)')
TAG = "  ramguardd   | "


def parse(line):
    fields = {}
    for key, value in _PAIR.findall(line):
        if value.startswith('"'):
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        fields[key] = value
    return fields


def gb(text):
    try:
        return f"{int(text) / 1e9:.2f} GB"
    except ValueError:
        return text


def describe(f):
    event = f.get("event", "")
    if event == "admission":
        # The coordinator prints the terms of the sum; the daemon adds how it estimated.
        decision = "admitted" if f.get("admitted") == "true" else "REFUSED"
        reason = f.get("reason", "")
        how = reason.split("; estimate: ", 1)[1] if "; estimate: " in reason else reason
        return f"admission {decision} (job {f.get('job')}); estimate: {how}"
    if event == "run.start":
        return (f"run {f.get('run')} started on pid {f.get('pid')}: baseline "
                f"{gb(f.get('baseline_bytes', '0'))}, reservation "
                f"{gb(f.get('estimate_bytes', '0'))}, exact peaks {f.get('exact_peaks')}")
    if event == "run.boundary_settled":
        return (f"round {f.get('round')} boundary: settled floor {gb(f.get('floor_bytes', '0'))}"
                f" (at the mark {gb(f.get('rss_bytes', '0'))})")
    if event == "verdict":
        # The words of the CLI, the reports and the charts: [severity] kind result.
        if f.get("cleared") == "true":
            result = "cleared"
        elif f.get("passed") == "true":
            result = "pass"
        elif f.get("kind") == "release" and f.get("severity") == "info":
            result = "allocator"
        else:
            result = "fail"
        return f"verdict [{f.get('severity')}] {f.get('kind')} {result}: {f.get('summary')}"
    if event == "run.end":
        return (f"run {f.get('run')} {f.get('state')}: peak {gb(f.get('peak_bytes', '0'))}"
                f"{' (exact)' if f.get('peak_exact') == 'true' else ''}, reservation of "
                f"{gb(f.get('released_reservation_bytes', '0'))} released")
    if f.get("level") in ("warning", "error"):
        return " ".join(f"{k}={v}" for k, v in f.items() if k != "ts")
    return None


def main():
    log_path, offset_path = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    offset = 0
    pending = b""
    while True:
        try:
            with open(log_path, "rb") as log:
                log.seek(offset)
                chunk = log.read()
        except FileNotFoundError:
            return 0
        if chunk:
            offset += len(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                text = describe(parse(raw.decode(errors="replace")))
                if text:
                    print(TAG + text, flush=True)
            with open(offset_path + ".tmp", "w") as out:
                out.write(str(offset - len(pending)))
            os.replace(offset_path + ".tmp", offset_path)
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
