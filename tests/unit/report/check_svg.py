"""Checks that an SVG file is well-formed XML with an <svg> root and that every expected string
appears in its text or titles (after XML unescaping).

usage: check_svg.py FILE [EXPECTED...]   (EXPECTED may be given as @FILE, one per line)"""
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def main(argv):
    path, expected = argv[1], []
    for arg in argv[2:]:
        if arg.startswith("@"):
            with open(arg[1:], encoding="utf-8") as f:
                expected += [line.rstrip("\n") for line in f if line.strip()]
        else:
            expected.append(arg)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        print(f"{path}: not well-formed: {e}")
        return 1
    if root.tag != SVG + "svg":
        print(f"{path}: root is {root.tag}, expected svg")
        return 1
    texts = [t for element in root.iter() for t in element.itertext()]
    text = "\n".join(texts)
    missing = [e for e in expected if e not in text]
    for e in missing:
        print(f"{path}: missing {e!r}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
