"""Checks an SVG chart as a reader would see it, then renders it to PNG:

  - no two text labels overlap (boxes estimated at 0.6 em per character, as generous as the
    renderer's placement; rotated axis titles are left out);
  - the y axis: ticks evenly spaced, labelled with their value, its top within 2x of PEAK;
  - the x axis: every tick's label is its value (run ticks) or its distance from the run's end
    ("+N s"), steps of 1, 2, 2.5 or 5 x 10^k, positions linear in time within each part;
  - every EXPECTED string is in the picture's text (not only in <title> tooltips);
  - rsvg-convert renders it to PNG (the file is written next to the SVG).

usage: check_svg_layout.py FILE PEAK_BYTES [--off-scale NAME]... [--line NAME]... [EXPECTED...]"""
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def fail(problems, message):
    problems.append(message)


def is_nice(step):
    magnitude = 10 ** math.floor(math.log10(step))
    return any(abs(step - m * magnitude) < 1e-6 * step for m in (1, 2, 2.5, 5, 10))


def text_boxes(root):
    """Boxes of the text elements drawn in the picture, by the estimate the chart places with."""
    boxes = []
    parents = {child: parent for parent in root.iter() for child in parent}
    for t in root.iter(NS + "text"):
        if "transform" in t.attrib:
            continue
        node, hidden = t, False
        while node in parents:
            node = parents[node]
            if node.tag == NS + "title":
                hidden = True
        if hidden:
            continue
        content = "".join(t.itertext())
        size = float(t.get("font-size", "12"))
        width = 0.6 * size * len(content)
        x, y = float(t.get("x")), float(t.get("y"))
        anchor = t.get("text-anchor", "start")
        x0 = x if anchor == "start" else x - width / 2 if anchor == "middle" else x - width
        boxes.append((x0, y - 0.8 * size, x0 + width, y + 0.25 * size, content))
    return boxes


def check_overlaps(root, problems):
    boxes = text_boxes(root)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5:
                fail(problems, f"labels overlap: {a[4]!r} and {b[4]!r}")


def value_of(label):
    m = re.fullmatch(r"(\+?)(-?[0-9.]+) (s|min|GB|MB|GiB|MiB)", label)
    if not m:
        return None
    return m.group(1) == "+", float(m.group(2)), m.group(2), m.group(3)


def check_linear(points, what, problems):
    """points: (value, position) pairs; evenly spaced values must sit at evenly spaced places."""
    if len(points) < 3:
        return
    (v0, p0), (v1, p1) = points[0], points[-1]
    for v, p in points:
        expected = p0 + (p1 - p0) * (v - v0) / (v1 - v0)
        if abs(expected - p) > 1.0:
            fail(problems, f"{what} tick {v} at {p:.1f}, expected {expected:.1f}")


def check_axis(ticks, what, problems):
    values = [t[0] for t in ticks]
    steps = {round(b - a, 9) for a, b in zip(values, values[1:])}
    if len(steps) > 1:
        fail(problems, f"{what} ticks are not evenly spaced: {values}")
    for step in steps:
        if step <= 0 or not is_nice(step):
            fail(problems, f"{what} tick step {step} is not 1, 2, 2.5 or 5 x 10^k")
        for value, _, text in ticks:
            # "7.5" for a 2.5 step, "5" not "5.0": the label shows the digits the step has.
            decimals = len(text.split(".")[1]) if "." in text else 0
            if abs(float(text) - value) > 1e-9 * max(1, abs(value)) or decimals > 3:
                fail(problems, f"{what} tick label {text} for value {value}")
    check_linear([(v, p) for v, p, _ in ticks], what, problems)


def main(argv):
    path, peak = argv[1], float(argv[2])
    off_scale, lines, expected = [], [], []
    args = iter(argv[3:])
    for arg in args:
        if arg == "--off-scale":
            off_scale.append(next(args))
        elif arg == "--line":
            lines.append(next(args))
        else:
            expected.append(arg)
    problems = []
    root = ET.parse(path).getroot()
    check_overlaps(root, problems)

    # y axis
    units = {"GB": 1e9, "MB": 1e6, "GiB": 2 ** 30, "MiB": 2 ** 20}
    y_ticks = []
    for g in root.iter(NS + "g"):
        if g.get("class") == "ytick":
            line, text = g.find(NS + "line"), g.find(NS + "text")
            if text is None:
                continue
            parsed = value_of(text.text)
            if parsed is None:
                fail(problems, f"y tick label {text.text!r}")
                continue
            _, value, raw, unit = parsed
            y_ticks.append((value * units[unit], float(line.get("y1")), raw))
            if abs(value - float(g.get("data-value"))) > 1e-6:
                fail(problems, f"y tick {g.get('data-value')} labelled {text.text}")
    if not y_ticks:
        fail(problems, "no y ticks")
    else:
        top = max(v for v, _, _ in y_ticks)
        if not (peak <= top * 1.0001 and top <= 2 * peak):
            fail(problems, f"y axis runs to {top:.4g} bytes for a peak of {peak:.4g}")
        check_linear([(v, p) for v, p, _ in y_ticks], "y", problems)

    # x axis: run ticks and release ticks separately
    run_ticks, release_ticks = [], []
    for g in root.iter(NS + "g"):
        if g.get("class") == "xtick":
            line, text = g.find(NS + "line"), g.find(NS + "text")
            parsed = value_of(text.text)
            if parsed is None:
                fail(problems, f"x tick label {text.text!r}")
                continue
            relative, value, raw, unit = parsed
            scale = 60 if unit == "min" else 1
            x = float(line.get("x1"))
            if abs(float(text.get("x")) - x) > 0.01:
                fail(problems, f"x tick label {text.text} is not at its tick")
            if relative:
                release_ticks.append((value, x, raw))
            else:
                run_ticks.append((value, x, raw))
                if abs(value * scale - float(g.get("data-seconds"))) > 1e-6:
                    fail(problems, f"x tick at {g.get('data-seconds')} s labelled {text.text}")
    if len(run_ticks) < 2:
        fail(problems, f"too few x ticks: {run_ticks}")
    check_axis(run_ticks, "x", problems)
    check_axis(release_ticks, "release x", problems)
    check_axis([(float(raw), p, raw) for _, p, raw in y_ticks], "y", problems)

    references = {g.get("data-name"): g for g in root.iter(NS + "g")
                  if (g.get("class") or "").startswith("reference")}
    for name in off_scale:
        g = references.get(name)
        if g is None or "off-scale" not in g.get("class") or g.find(NS + "text") is None:
            fail(problems, f"{name}: not named at the edge as off the scale")
    for name in lines:
        g = references.get(name)
        if g is None or g.find(NS + "line") is None:
            fail(problems, f"{name}: no line drawn")

    shown = "\n".join("".join(t.itertext()) for t in root.iter(NS + "text"))
    for e in expected:
        if e not in shown:
            fail(problems, f"not in the picture's text: {e!r}")

    png = re.sub(r"\.svg$", "", path) + ".png"
    done = subprocess.run(["rsvg-convert", "-o", png, path], capture_output=True, text=True)
    if done.returncode != 0:
        fail(problems, f"rsvg-convert failed ({done.returncode}): {done.stderr}")
    else:
        with open(png, "rb") as f:
            head = f.read(24)
        if head[:8] != b"\x89PNG\r\n\x1a\n" or int.from_bytes(head[16:20], "big") != 1000:
            fail(problems, f"{png}: not a 1000 px wide PNG")
        print(f"{png}: rendered")

    for p in problems:
        print(f"{path}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
