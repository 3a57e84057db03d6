#!/usr/bin/env python3
"""Every ramguard_* name used by the dashboard and the alert rules must be one the exporter
really serves, and every label a selector of a ramguard_ metric filters on must be one that
metric carries (or `instance`, added by the scrape): a rule filtering on a label the exporter
does not write (such as Prometheus's own `job` for a training job) never matches.
Usage: check_metric_names.py SCRAPE_FILE FILE...  (prints what is missing)."""
import re
import sys

NAME = re.compile(r"\bramguard_[a-z0-9_]+")
SELECTOR = re.compile(r"\b(ramguard_[a-z0-9_]+)\{([^}]*)\}")
MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
SCRAPE_LABELS = {"instance"}


def served(scrape_text):
    """Metric names and, per name, the label names its samples carry."""
    labels = {}
    for line in scrape_text.splitlines():
        if line.startswith("# TYPE "):
            labels.setdefault(line.split()[2], set())
        elif line and not line.startswith("#"):
            name = re.split(r"[{ ]", line, maxsplit=1)[0]
            found = labels.setdefault(name, set())
            if "{" in line:
                found.update(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', line.split("}")[0]))
    # A histogram's samples are name_bucket/_sum/_count; their labels count for the base name.
    for name in list(labels):
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and name[: -len(suffix)] in labels:
                labels[name[: -len(suffix)]].update(labels[name])
    return labels


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        labels = served(f.read())
    names = set(labels)
    label_names = set().union(*labels.values())
    if len([n for n in names if n.startswith("ramguard_")]) < 20:
        print(f"{argv[1]}: scrape has too few ramguard_ metrics: {sorted(names)}")
        return 1
    failed = False
    for path in argv[2:]:
        with open(path) as f:
            # JSON files escape the quotes of label values.
            text = f.read().replace('\\"', '"')
        used = set(NAME.findall(text)) - label_names
        if not used:
            print(f"{path}: references no ramguard_ metric at all")
            failed = True
        for name in sorted(used - names):
            print(f"{path}: '{name}' is not served by the exporter")
            failed = True
        bad_labels = set()
        for name, matchers in SELECTOR.findall(text):
            allowed = labels.get(name, set()) | SCRAPE_LABELS
            for label in MATCHER.findall(matchers):
                if label not in allowed:
                    bad_labels.add((name, label))
        for name, label in sorted(bad_labels):
            print(f"{path}: '{name}' is selected by label '{label}', which it does not carry")
            failed = True
        if used and not used - names and not bad_labels:
            print(f"{path}: {len(used)} metric names, all served, selectors on served labels")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
