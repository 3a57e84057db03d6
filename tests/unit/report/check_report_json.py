"""Validates report JSON files against client/report/report.schema.json (python3-jsonschema).

usage: check_report_json.py SCHEMA [--expect-invalid] FILE...
Exit 0 when every file is valid (or, with --expect-invalid, when every file is rejected)."""
import json
import sys

import jsonschema


def main(argv):
    schema_path, files = argv[1], argv[2:]
    expect_invalid = False
    if files and files[0] == "--expect-invalid":
        expect_invalid, files = True, files[1:]
    with open(schema_path) as f:
        schema = json.load(f)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)
    failed = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
        errors = list(validator.iter_errors(document))
        if expect_invalid and not errors:
            print(f"{path}: unexpectedly valid")
            failed += 1
        elif not expect_invalid and errors:
            for error in errors[:5]:
                print(f"{path}: {'/'.join(map(str, error.path))}: {error.message}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
