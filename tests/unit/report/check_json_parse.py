"""Parses a JSON file strictly and evaluates a condition on it (bound to `d`).

usage: check_json_parse.py FILE CONDITION"""
import json
import sys


def reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


with open(sys.argv[1], encoding="utf-8") as f:
    d = json.load(f, parse_constant=reject_constant)
ok = eval(sys.argv[2], {}, {"d": d})  # the condition comes from the test source
print("condition", "holds" if ok else "FAILED", ":", sys.argv[2])
sys.exit(0 if ok else 1)
