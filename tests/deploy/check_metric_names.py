#!/usr/bin/env python3
"""Every ramguard_* name used by the dashboard and the alert rules must be one the exporter
really serves. Usage: check_metric_names.py SCRAPE_FILE FILE...  (prints what is missing)."""
import re
import sys

NAME = re.compile(r"\bramguard_[a-z0-9_]+")


def served_names(scrape_text):
    names = set()
    for line in scrape_text.splitlines():
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        served = served_names(f.read())
    if len([n for n in served if n.startswith("ramguard_")]) < 20:
        print(f"{argv[1]}: scrape has too few ramguard_ metrics: {sorted(served)}")
        return 1
    failed = False
    for path in argv[2:]:
        with open(path) as f:
            used = set(NAME.findall(f.read()))
        if not used:
            print(f"{path}: references no ramguard_ metric at all")
            failed = True
        for name in sorted(used - served):
            print(f"{path}: '{name}' is not served by the exporter")
            failed = True
        if used and not used - served:
            print(f"{path}: {len(used)} metric names, all served")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
