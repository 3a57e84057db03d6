#!/usr/bin/env python3
"""Checks the daemon's module layering and the clients' independence from the daemon.

The order is declared once, in daemon/CMakeLists.txt (RAMGUARD_DAEMON_MODULES, lowest first).
A module may include only its own headers and those of modules listed before it (and control
reaches procfs not at all, admission only through its service face: FACES below); files directly
in daemon/ (main.cpp) may include anything. Nothing under client/ may include a daemon header:
what the clients share with the daemon is the base (base/, included as "ramguard/base/..."),
and the base includes nothing but itself. A declared module without a directory is fine (not created yet); a
directory under daemon/ that is not declared is an error.

Usage: check_layers.py [--root DIR] [--warn-only] [--stamp FILE]
Exit status: 0 when clean (or --warn-only), 1 on violations, 2 on a malformed declaration.
"""
import argparse
import os
import re
import sys

SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
DECLARATION = re.compile(r"set\(\s*RAMGUARD_DAEMON_MODULES\s+([^)]*)\)")
BASE_PREFIX = "ramguard/base/"
# Narrower than the order: the transport (control) converts requests and calls; it reaches the
# machine and the admission decision only through admission's service face. Module -> the lower
# modules it may use only through the listed headers (none: not at all).
FACES = {
    "control": {
        "procfs": (),
        "fleet": (),
        "admission": ("admission.hpp", "desk.hpp", "sources.hpp"),
    },
}


def declared_modules(root):
    path = os.path.join(root, "daemon", "CMakeLists.txt")
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"#[^\n]*", "", f.read())
    match = DECLARATION.search(text)
    if not match:
        sys.exit(f"{path}: no set(RAMGUARD_DAEMON_MODULES ...) declaring the module order")
    modules = match.group(1).split()
    if len(set(modules)) != len(modules):
        sys.exit(f"{path}: RAMGUARD_DAEMON_MODULES names a module twice: {' '.join(modules)}")
    return modules


def sources(top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(dirpath, name)


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            match = INCLUDE.match(line)
            if match:
                yield number, match.group(1)


def daemon_module_of(root, including_file, include, modules):
    """The daemon module an include names, or None when it is not a daemon header."""
    daemon_dir = os.path.join(root, "daemon")
    # A path relative to the including file ("../runs/run.hpp", "run.hpp") ...
    local = os.path.normpath(os.path.join(os.path.dirname(including_file), include))
    if os.path.exists(local):
        rel = os.path.relpath(local, daemon_dir)
        if rel.startswith(".."):
            return None
        first = rel.split(os.sep)[0]
        return first if first in modules else None
    # ... or "<module>/<file>" from daemon/, or "daemon/<module>/<file>" from the root.
    parts = include.split("/")
    if parts[0] == "daemon" and len(parts) > 1:
        parts = parts[1:]
    if len(parts) > 1 and parts[0] in modules:
        return parts[0]
    return None


def check(root):
    modules = declared_modules(root)
    rank = {m: i for i, m in enumerate(modules)}
    problems = []
    checked = 0
    daemon_dir = os.path.join(root, "daemon")
    for entry in sorted(os.listdir(daemon_dir)):
        full = os.path.join(daemon_dir, entry)
        if os.path.isdir(full) and entry not in rank and any(sources(full)):
            problems.append(f"daemon/{entry}: a directory of sources that RAMGUARD_DAEMON_MODULES "
                            f"in daemon/CMakeLists.txt does not declare")
    for module in modules:
        top = os.path.join(daemon_dir, module)
        if not os.path.isdir(top):
            continue
        for path in sources(top):
            checked += 1
            for number, include in includes(path):
                target = daemon_module_of(root, path, include, rank)
                if target is not None and rank[target] > rank[module]:
                    problems.append(
                        f"{os.path.relpath(path, root)}:{number}: {module} includes "
                        f"\"{include}\", but {target} comes after {module} in "
                        f"RAMGUARD_DAEMON_MODULES")
                faces = FACES.get(module, {}).get(target)
                if faces is not None and os.path.basename(include) not in faces:
                    allowed = ", ".join(f"{target}/{f}" for f in faces)
                    rule = (f"{module} may use {target} only through {allowed}" if faces else
                            f"{module} may not use {target}")
                    problems.append(
                        f"{os.path.relpath(path, root)}:{number}: {module} includes "
                        f"\"{include}\"; {rule}")
    client_dir = os.path.join(root, "client")
    if os.path.isdir(client_dir):
        for path in sources(client_dir):
            checked += 1
            for number, include in includes(path):
                local = os.path.join(os.path.dirname(path), include)
                if not include.startswith("daemon/") and os.path.exists(local):
                    continue  # the client's own header of the same name
                target = daemon_module_of(root, path, include, rank)
                if target is not None:
                    problems.append(
                        f"{os.path.relpath(path, root)}:{number}: a client includes \"{include}\" "
                        f"from daemon/{target}; clients share only the base ({BASE_PREFIX}...)")
    base_dir = os.path.join(root, "base")
    if os.path.isdir(base_dir):
        for path in sources(base_dir):
            if os.sep + "tests" + os.sep in path:
                continue  # the base's tests may use the test tree's helpers
            checked += 1
            for number, include in includes(path):
                if not include.startswith(BASE_PREFIX):
                    problems.append(
                        f"{os.path.relpath(path, root)}:{number}: the base includes \"{include}\"; "
                        f"it is installed alone and includes only {BASE_PREFIX}...")
    return modules, checked, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    parser.add_argument("--warn-only", action="store_true",
                        help="print violations but exit 0 (RAMGUARD_LAYER_CHECK=OFF)")
    parser.add_argument("--stamp", help="file to touch when the check has run")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    modules, checked, problems = check(root)
    for p in problems:
        print(f"layer check: {p}", file=sys.stderr)
    order = " < ".join(modules)
    if problems:
        print(f"layer check: {len(problems)} violation(s) in {checked} files; order: {order}",
              file=sys.stderr)
    else:
        print(f"layer check: ok, {checked} files; order: {order}")
    if args.stamp and (not problems or args.warn_only):
        with open(args.stamp, "w", encoding="utf-8") as f:
            f.write(f"{len(problems)} violation(s)\n")
    return 0 if args.warn_only or not problems else 1


if __name__ == "__main__":
    sys.exit(main())
