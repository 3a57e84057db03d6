// ramguard's run page: the list of runs, one run (live while active), a comparison.
// The project's own code, no library. Every string from a run reaches the page through
// textContent or setAttribute, never through HTML parsing, so job names, labels, phase names and
// failure texts stay text.
"use strict";
(function () {
  var SVG = "http://www.w3.org/2000/svg";
  var embedded = document.getElementById("rg-data");
  var base = document.body.getAttribute("data-base") || "";
  var timer = null;
  var lastRefreshMs = 2000;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    setAll(node, attrs);
    append(node, children);
    return node;
  }
  function svg(tag, attrs, children) {
    var node = document.createElementNS(SVG, tag);
    setAll(node, attrs);
    append(node, children);
    return node;
  }
  function setAll(node, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      if (attrs[k] !== undefined && attrs[k] !== null) node.setAttribute(k, String(attrs[k]));
    });
  }
  function append(node, children) {
    if (children === undefined || children === null) return;
    if (!Array.isArray(children)) children = [children];
    children.forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    });
  }

  function bytes(b) {
    if (b === null || b === undefined || !isFinite(b)) return "-";
    var a = Math.abs(b);
    if (a >= 1e9) return (b / 1e9).toFixed(2) + " GB";
    if (a >= 1e6) return (b / 1e6).toFixed(1) + " MB";
    if (a >= 1e3) return (b / 1e3).toFixed(1) + " kB";
    return Math.round(b) + " B";
  }
  function seconds(s) {
    if (!isFinite(s)) return "-";
    if (s < 1) return Math.round(s * 1000) + " ms";
    if (s < 120) return s.toFixed(2) + " s";
    if (s < 7200) return (s / 60).toFixed(1) + " min";
    return (s / 3600).toFixed(1) + " h";
  }
  function when(ms) {
    if (!ms) return "-";
    return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }
  function labelText(labels) {
    return Object.keys(labels || {}).sort().map(function (k) { return k + "=" + labels[k]; }).join(", ");
  }
  function verdictClass(v) {
    if (!v) return "";
    if (v.cleared) return "sev-cleared";
    if (v.passed) return "sev-pass";
    return "sev-" + v.severity;
  }
  function verdictBadge(v) {
    if (!v) return el("span", { "class": "badge sev-pass" }, "none");
    var result = v.cleared ? "cleared" : v.passed ? "pass" : v.severity;
    return el("span", { "class": "badge " + verdictClass(v), title: v.summary || "" }, v.kind + " " + result);
  }
  function card(key, value, note) {
    return el("div", { "class": "card" }, [el("div", { "class": "k" }, key), el("div", { "class": "v" }, value),
      note ? el("div", { "class": "n" }, note) : null]);
  }
  function table(headers, rows, numeric) {
    var head = el("tr", null, headers.map(function (h, i) {
      return el("th", numeric && numeric[i] ? { "class": "num" } : null, h);
    }));
    var body = rows.map(function (r) {
      var tr = el("tr", r.attrs || null);
      r.cells.forEach(function (c, i) {
        tr.appendChild(el("td", numeric && numeric[i] ? { "class": "num" } : null, c));
      });
      return tr;
    });
    return el("table", null, [el("thead", null, head), el("tbody", null, body)]);
  }
  function setStatus(text) {
    var s = document.getElementById("rg-live");
    if (s) s.textContent = text;
  }
  function show(nodes) {
    var main = document.getElementById("rg-main");
    while (main.firstChild) main.removeChild(main.firstChild);
    append(main, nodes);
  }
  function fail(message) {
    show(el("p", { "class": "error" }, message));
  }
  // On failure (the daemon restarting, the CLI stopped) a live view keeps asking: `retry`.
  function getJson(path, done, retry) {
    fetch(base + path, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) throw new Error(body && body.error ? body.error : "HTTP " + r.status);
        return body;
      });
    }).then(done, function (e) {
      setStatus("not updated: " + e.message);
      if (!document.getElementById("rg-view")) fail(e.message);
      if (retry) every(lastRefreshMs, retry);
    });
  }
  function every(ms, fn) {
    if (ms) lastRefreshMs = ms;
    if (timer) clearTimeout(timer);
    timer = setTimeout(fn, Math.max(500, ms || 2000));
  }

  // ---- the list of runs ----
  function renderList(data) {
    var runs = (data.runs || []).slice();
    var picked = {};
    var button = el("button", { type: "button", id: "rg-compare", disabled: "" }, "Compare selected");
    button.addEventListener("click", function () {
      var ids = Object.keys(picked).filter(function (k) { return picked[k]; });
      location.href = base + "compare?ids=" + ids.map(encodeURIComponent).join(",");
    });
    var rows = runs.map(function (r) {
      var box = el("input", { type: "checkbox", "aria-label": "compare " + r.run_id });
      box.addEventListener("change", function () {
        picked[r.run_id] = box.checked;
        var n = Object.keys(picked).filter(function (k) { return picked[k]; }).length;
        if (n >= 2) button.removeAttribute("disabled"); else button.setAttribute("disabled", "");
      });
      var link = el("a", { href: base + "run/" + encodeURIComponent(r.run_id) }, r.run_id);
      var trend = r.floors > 0 ? bytes(r.first_floor_bytes) + " \u2192 " + bytes(r.last_floor_bytes) : "-";
      var use = data.budget_bytes > 0 ? Math.round(100 * r.peak_bytes / data.budget_bytes) + " %" : "-";
      return { attrs: { "class": r.state === "active" ? "active run" : "run", "data-run": r.run_id },
        cells: [box, link, r.job, labelText(r.labels), r.state + (r.current_phase ? " (" + r.current_phase + ")" : ""),
          String(r.rounds), bytes(r.peak_bytes) + (r.peak_exact ? "" : " ~"), use, trend, verdictBadge(r.worst),
          when(r.started_unix_ms)] };
    });
    show(el("div", { id: "rg-view", "data-view": "list" }, [
      el("h1", null, "Runs on this node"),
      el("div", { "class": "sub" }, "Active runs first, then the most recent. Budget " + bytes(data.budget_bytes) +
        ". Peak is exact (from the kernel's high-water mark) unless marked ~."),
      el("h2", null, runs.length + " runs"),
      runs.length ? table(["", "run", "job", "labels", "state", "rounds", "peak", "of budget", "floor trend",
        "worst verdict", "started"], rows, [0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0]) : el("p", null, "No runs yet."),
      el("p", null, button)]));
  }
  function loadList() {
    getJson("api/runs", function (data) {
      renderList(data);
      setStatus("updated " + new Date().toLocaleTimeString());
      every(data.refresh_ms, loadList);
    }, loadList);
  }

  // ---- one run ----
  function phaseColor(name) {
    var fixed = { load: "#9fc5e8", aggregation: "#f9cb9c", synchronization: "#b6d7a8", save: "#d5a6bd" };
    if (fixed[name]) return fixed[name];
    var palette = ["#ffe599", "#a2c4c9", "#b4a7d6", "#ea9999", "#cccccc"];
    var h = 0;
    for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return palette[h % palette.length];
  }

  function chart(rep, view) {
    var run = rep.run;
    var W = 1000, H = 380, L = 78, R = 985, T = 26, B = 330;
    var t0 = run.started_unix_ms || (rep.samples[0] ? rep.samples[0].at_unix_ms : 0);
    var tEnd = run.ended_unix_ms || 0;
    rep.samples.forEach(function (s) { tEnd = Math.max(tEnd, s.at_unix_ms); });
    if (rep.last) tEnd = Math.max(tEnd, rep.last.at_unix_ms);
    rep.phases.forEach(function (p) { tEnd = Math.max(tEnd, t0 + 1000 * (p.begin_seconds + p.duration_seconds)); });
    var span = Math.max(1, tEnd - t0);
    var yMax = Math.max(rep.peak ? rep.peak.bytes : 0, 1);
    rep.samples.forEach(function (s) { yMax = Math.max(yMax, s.max_rss_bytes, s.rss_bytes); });
    var refs = [];
    if (view.budget_bytes) refs.push(["budget", view.budget_bytes, "#cc0000"]);
    if (rep.estimate) refs.push(["estimate", rep.estimate.bytes, "#e69138"]);
    if (view.release_limit_bytes) refs.push(["release limit", view.release_limit_bytes, "#38761d"]);
    var ownMax = yMax;
    refs.forEach(function (r) { if (r[1] <= ownMax * 1.3) yMax = Math.max(yMax, r[1]); });
    yMax *= 1.08;
    function x(ms) { return L + (R - L) * (ms - t0) / span; }
    function y(b) { return B - (B - T) * b / yMax; }
    var g = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "memory timeline", id: "rg-chart" });
    // phase bands, drawn first, with their exact peaks as ticks
    var bands = svg("g", { "class": "bands" });
    rep.phases.forEach(function (p) {
      var x0 = x(t0 + 1000 * p.begin_seconds);
      var dur = p.duration_seconds > 0 ? p.duration_seconds : (tEnd - t0) / 1000 - p.begin_seconds;
      var x1 = x(t0 + 1000 * (p.begin_seconds + dur));
      var band = svg("rect", { x: x0.toFixed(1), y: T, width: Math.max(0.8, x1 - x0).toFixed(1), height: B - T,
        fill: phaseColor(p.phase), opacity: 0.45, "class": "phase-band" });
      band.appendChild(svg("title", null, "round " + p.round + " " + p.phase + ": peak " + bytes(p.peak_bytes) +
        (p.peak_exact ? " (exact)" : "") + ", " + seconds(p.duration_seconds)));
      bands.appendChild(band);
      if (p.peak_bytes > 0) {
        bands.appendChild(svg("line", { x1: x0.toFixed(1), x2: Math.max(x0 + 2, x1).toFixed(1), y1: y(p.peak_bytes).toFixed(1),
          y2: y(p.peak_bytes).toFixed(1), stroke: "#7f3f00", "stroke-width": 2, "class": "phase-peak" }));
      }
    });
    g.appendChild(bands);
    // axes and grid
    for (var i = 0; i <= 4; i++) {
      var v = yMax * i / 4;
      g.appendChild(svg("line", { x1: L, x2: R, y1: y(v), y2: y(v), stroke: "#e3e6eb" }));
      g.appendChild(svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#5b6475" }, bytes(v)));
    }
    for (var j = 0; j <= 5; j++) {
      var ms = t0 + span * j / 5;
      g.appendChild(svg("text", { x: x(ms), y: B + 16, "text-anchor": "middle", "font-size": 11, fill: "#5b6475" },
        seconds((ms - t0) / 1000)));
    }
    // round ends: floors
    rep.boundaries.forEach(function (b) {
      var bx = x(b.reading.at_unix_ms);
      g.appendChild(svg("line", { x1: bx, x2: bx, y1: T, y2: B, stroke: "#8a8f99", "stroke-dasharray": "3,3" }));
      var dot = svg("circle", { cx: bx, cy: y(b.floor_bytes), r: 3.5, fill: "#1d2330", "class": "floor" });
      dot.appendChild(svg("title", null, "round " + b.round + " floor " + bytes(b.floor_bytes)));
      g.appendChild(dot);
    });
    // RSS: the min..max envelope of each bucket (peaks kept when downsampled), then the lines
    if (rep.samples.length) {
      var up = [], down = [], rss = [], anon = [];
      rep.samples.forEach(function (s) {
        var sx = x(s.at_unix_ms).toFixed(1);
        up.push(sx + "," + y(s.max_rss_bytes || s.rss_bytes).toFixed(1));
        down.unshift(sx + "," + y(s.min_rss_bytes || s.rss_bytes).toFixed(1));
        rss.push(sx + "," + y(s.rss_bytes).toFixed(1));
        anon.push(sx + "," + y(s.anon_bytes).toFixed(1));
      });
      g.appendChild(svg("polygon", { points: up.concat(down).join(" "), fill: "#3d85c6", opacity: 0.18 }));
      g.appendChild(svg("polyline", { points: rss.join(" "), fill: "none", stroke: "#3d85c6", "stroke-width": 1.8, "class": "rss" }));
      g.appendChild(svg("polyline", { points: anon.join(" "), fill: "none", stroke: "#674ea7", "stroke-width": 1.4,
        "stroke-dasharray": "5,2", "class": "counted" }));
    }
    refs.forEach(function (r) {
      if (r[1] <= yMax) {
        g.appendChild(svg("line", { x1: L, x2: R, y1: y(r[1]), y2: y(r[1]), stroke: r[2], "stroke-dasharray": "7,4", "class": "ref" }));
        g.appendChild(svg("text", { x: R - 4, y: y(r[1]) - 4, "text-anchor": "end", "font-size": 11, fill: r[2] }, r[0] + " " + bytes(r[1])));
      } else {
        g.appendChild(svg("text", { x: R - 4, y: T - 8 - 13 * refs.indexOf(r) + 13, "text-anchor": "end", "font-size": 11, fill: r[2] },
          "\u2191 " + r[0] + " " + bytes(r[1]) + " (above the chart)"));
      }
    });
    if (rep.peak && rep.peak.bytes) {
      g.appendChild(svg("text", { x: L + 4, y: T - 8, "font-size": 12, fill: "#7f3f00" },
        "peak " + bytes(rep.peak.bytes) + (rep.peak.exact ? " (exact)" : " (sampled)")));
    }
    // verdict markers, numbered like the list below
    rep.verdicts.forEach(function (v, k) {
      if (!v.at_unix_ms || v.passed) return;
      var vx = x(Math.min(v.at_unix_ms, tEnd));
      var m = svg("g", { "class": "verdict-marker" }, [
        svg("line", { x1: vx, x2: vx, y1: T, y2: B, stroke: v.severity === "critical" ? "#cc0000" : "#e69138", "stroke-width": 1.2 }),
        svg("text", { x: vx + 3, y: T + 12, "font-size": 11, fill: "#1d2330" }, String(k + 1))]);
      m.appendChild(svg("title", null, v.kind + ": " + v.summary));
      g.appendChild(m);
    });
    g.appendChild(svg("rect", { x: L, y: T, width: R - L, height: B - T, fill: "none", stroke: "#9aa1ad" }));
    g.appendChild(svg("text", { x: L, y: H - 12, "font-size": 11, fill: "#5b6475" },
      "time since the run started; " + rep.samples.length + " points" +
      (view.omitted && view.omitted.samples ? " (downsampled, min/max kept)" : "")));
    var names = {};
    rep.phases.forEach(function (p) { names[p.phase] = true; });
    var legend = el("div", { "class": "legend" }, [
      el("span", null, [el("i", { "class": "l-rss" }), "RSS"]),
      el("span", null, [el("i", { "class": "l-counted" }), "counted (anonymous)"]),
      el("span", null, [el("i", { "class": "l-peak" }), "exact phase peak"])].concat(
      Object.keys(names).slice(0, 12).map(function (n) {
        var i = el("i", { "class": "band" });
        i.style.background = phaseColor(n);
        return el("span", null, [i, n]);
      })));
    legend.querySelector(".l-rss").style.background = "#3d85c6";
    legend.querySelector(".l-counted").style.background = "#674ea7";
    legend.querySelector(".l-peak").style.background = "#7f3f00";
    return el("div", { "class": "chart" }, [g, legend]);
  }

  function figuresText(figs) {
    return Object.keys(figs || {}).map(function (k) {
      var v = figs[k];
      if (/_bytes$/.test(k)) return k + " " + bytes(v);
      if (/_seconds$/.test(k)) return k + " " + seconds(v);
      return k + " " + (Math.round(v * 1000) / 1000);
    }).join(" \u00b7 ");
  }

  // The client's census (who holds the memory): the newest one's groups with their holders,
  // the gap to counted memory, and each census's totals. Every string is a text node.
  function censusPanel(holders, model) {
    if (!holders.length) {
      return [el("div", { "class": "note" }, "Census of what holds the memory: not taken for this run " +
        "(run.round_end(census=True) in the Python client).")];
    }
    var last = holders[holders.length - 1];
    var copies = function (b) { return model ? (b / model).toFixed(2) : "-"; };
    var out = [el("h2", null, "What holds the memory (census " + (last.at_end ? "at the end" : "of round " + last.round) +
      (last.partial ? ", partial: stopped at its time budget" : "") + ")")];
    out.push(table(["holder", "kind", "bytes", "model copies", "held through"], last.groups.map(function (g) {
      return { attrs: { "class": "census-row" }, cells: [g.holder, g.kind, bytes(g.bytes), copies(g.bytes),
        g.reachable ? "a reachable path" : "only a reference cycle" + (g.cycle ? ": " + g.cycle : "")] };
    }), [0, 0, 1, 1, 0]));
    var census = last.resident_bytes !== null && last.resident_bytes !== undefined ? last.resident_bytes : last.host_bytes;
    out.push(el("p", { "class": "note", id: "rg-census-gap" }, "Counted " + bytes(last.counted_bytes) + " = census " +
      bytes(census) + " + kept free by the allocator " + bytes(last.allocator_free_bytes) + " + unexplained " +
      bytes(last.unexplained_bytes) + (last.born.length ? "; new since the previous census: " + last.born.join(", ") : "") +
      (last.died.length ? "; gone: " + last.died.join(", ") : "")));
    if (holders.length > 1) {
      out.push(table(["census", "host bytes", "model copies", "unexplained"], holders.map(function (h) {
        return { cells: [h.at_end ? "end" : "round " + h.round, bytes(h.host_bytes), copies(h.host_bytes), bytes(h.unexplained_bytes)] };
      }), [0, 1, 1, 1]));
    }
    return out;
  }

  function renderRun(data) {
    var rep = data.report, view = data.view || {}, run = rep.run;
    var deaths = rep.verdicts.filter(function (v) { return v.kind === "exited" || v.kind === "lost" || v.kind === "failed"; });
    var parts = [];
    parts.push(el("h1", null, run.job));
    parts.push(el("div", { "class": "sub" }, [run.run_id, " \u00b7 ", el("span", { id: "rg-state" }, run.state),
      run.current_phase ? " \u00b7 in " + run.current_phase : "", " \u00b7 PID " + run.pid + " \u00b7 " + run.scope +
      " scope \u00b7 started " + when(run.started_unix_ms) + (run.ended_unix_ms ? " \u00b7 ended " + when(run.ended_unix_ms) : ""),
      labelText(run.labels) ? " \u00b7 " + labelText(run.labels) : ""]));
    deaths.forEach(function (d) {
      parts.push(el("div", { "class": "death", id: "rg-death" }, [el("b", null, d.kind === "lost" ? "Run lost. " : "Coordinator died. "),
        d.summary, el("div", { "class": "figs" }, "round " + d.round + (d.phase ? ", phase " + d.phase : "") +
          " \u00b7 " + figuresText(d.figures))]));
    });
    var copies = run.model_bytes > 0;
    parts.push(el("div", { "class": "cards" }, [
      card("peak", bytes(rep.peak.bytes), rep.peak.exact ? "exact (high-water mark)" : "from samples"),
      card("budget", bytes(view.budget_bytes), view.budget_bytes ? Math.round(100 * rep.peak.bytes / view.budget_bytes) + " % used at peak" : ""),
      card("estimate", rep.estimate ? bytes(rep.estimate.bytes) : "-", rep.estimate ? "peak/estimate " + rep.estimate.peak_ratio.toFixed(2) : "no estimate"),
      card("release limit", view.release_limit_bytes ? bytes(view.release_limit_bytes) : "-", "after the run"),
      card("last reading", rep.last ? bytes(rep.last.rss_bytes) : "-", rep.last ? "RSS, anon " + bytes(rep.last.anon_bytes) + ", " + when(rep.last.at_unix_ms) : ""),
      card("rounds", String(run.rounds) + (run.declared_rounds ? " / " + run.declared_rounds : ""), run.hosts ? run.hosts + " hosts" : ""),
      card("floor growth", view.slope_bytes_per_round === null || view.slope_bytes_per_round === undefined ? "-" :
        (copies ? (view.slope_bytes_per_round / run.model_bytes).toFixed(2) + " copies/round" : bytes(view.slope_bytes_per_round) + "/round"),
        view.slope_bytes_per_round === null || view.slope_bytes_per_round === undefined ? "needs two round ends" :
          (view.projected_round ? "reaches the budget at round " + Math.ceil(view.projected_round) :
            view.slope_bytes_per_round > 0 ? "budget not reached in sight" : "flat or falling") +
          (copies ? " \u00b7 " + bytes(view.slope_bytes_per_round) + "/round" : ""))]));
    parts.push(chart(rep, view));
    parts.push(el("h2", null, "Verdicts (" + rep.verdicts.length + ")"));
    var vs = el("ol", { "class": "verdicts", id: "rg-verdicts" });
    rep.verdicts.forEach(function (v) {
      vs.appendChild(el("li", { "data-kind": v.kind }, [verdictBadge(v), " round " + v.round + (v.phase ? " \u00b7 " + v.phase : "") +
        " \u00b7 " + when(v.at_unix_ms) + " \u2014 ", el("span", { "class": "summary" }, v.summary),
        el("div", { "class": "figs" }, figuresText(v.figures))]));
    });
    if (!rep.verdicts.length) vs.appendChild(el("li", null, "none yet"));
    parts.push(vs);
    if (view.omitted && view.omitted.verdicts) parts.push(el("p", { "class": "note" }, view.omitted.verdicts + " older informational verdicts not listed"));
    parts.push(el("h2", null, "Round floors"));
    var prev = null;
    parts.push(rep.boundaries.length ? table(["round", "floor", "change", copies ? "model copies" : "", "RSS", "at"],
      rep.boundaries.map(function (b) {
        var change = prev === null ? "-" : bytes(b.floor_bytes - prev);
        var c = prev === null || !copies ? "" : ((b.floor_bytes - prev) / run.model_bytes).toFixed(2);
        prev = b.floor_bytes;
        return { cells: [String(b.round), bytes(b.floor_bytes), change, c, bytes(b.reading.rss_bytes), when(b.reading.at_unix_ms)] };
      }), [1, 1, 1, 1, 1, 0]) : el("p", { "class": "note" }, "No round has ended yet."));
    parts.push(el("h2", null, "Phases: plan and measured"));
    parts.push(rep.phases.length ? table(["round", "phase", "begin", "duration", "peak", "exact", "plan", "measured - plan"],
      rep.phases.map(function (p) {
        return { attrs: { "class": "phase-row" }, cells: [String(p.round), p.phase, seconds(p.begin_seconds),
          p.duration_seconds > 0 ? seconds(p.duration_seconds) : "open", bytes(p.peak_bytes), p.peak_exact ? "yes" : "no",
          p.plan_bytes ? bytes(p.plan_bytes) : "-", p.plan_bytes ? bytes(p.peak_bytes - p.plan_bytes) : "-"] };
      }), [1, 0, 1, 1, 1, 0, 1, 1]) : el("p", { "class": "note" }, "No phase marked yet."));
    if (view.omitted && view.omitted.phases) parts.push(el("p", { "class": "note" }, view.omitted.phases +
      " phases not listed: the page keeps each phase name's largest peaks and the newest phases"));
    if (view.earlier_phases) {
      parts.push(el("h2", null, "Earlier phases (" + view.earlier_phases + ", summarised by the daemon)"));
      parts.push(table(["phase", "count", "largest peak", "total time"], view.earlier_phase_totals.map(function (t) {
        return { attrs: { "class": "earlier-row" }, cells: [t.phase, String(t.count), bytes(t.max_peak_bytes), seconds(t.total_seconds)] };
      }), [0, 1, 1, 1]));
    }
    parts.push(el("h2", null, "Admission"));
    // Counted memory, as admission counts it: anonymous + shmem + swap.
    var baseline = rep.baseline ? rep.baseline.anon_bytes + rep.baseline.shmem_bytes + rep.baseline.swap_bytes : 0;
    parts.push(table(["term", "bytes"], [
      { cells: ["baseline (counted at start)", bytes(baseline)] },
      { cells: ["estimate", rep.estimate ? bytes(rep.estimate.bytes) : "-"] },
      { cells: ["reserved for this run", view.reservation_bytes ? bytes(view.reservation_bytes) : "-"] },
      { cells: ["baseline + estimate", rep.estimate ? bytes(baseline + rep.estimate.bytes) : "-"] },
      { cells: ["budget", bytes(view.budget_bytes)] }], [0, 1]));
    parts.push.apply(parts, censusPanel(rep.holders || [], run.model_bytes));
    show(el("div", { id: "rg-view", "data-view": "run", "data-state": run.state, "data-samples": rep.samples.length,
      "data-verdicts": rep.verdicts.length }, parts));
  }
  function loadRun(id) {
    getJson("api/run/" + encodeURIComponent(id), function (data) {
      renderRun(data);
      var active = data.report.run.state === "active";
      setStatus(active ? "live: updated " + new Date().toLocaleTimeString() : "run " + data.report.run.state + " (not refreshing)");
      if (active) every(data.view.refresh_ms, function () { loadRun(id); });
    }, function () { loadRun(id); });
  }

  // ---- comparison ----
  function renderCompare(data) {
    var rows = data.rows || [];
    var max = 1;
    rows.forEach(function (r) { max = Math.max(max, r.peak_bytes); });
    var bars = svg("svg", { viewBox: "0 0 1000 " + (24 * rows.length + 10), id: "rg-compare-chart" });
    rows.forEach(function (r, i) {
      var w = 600 * r.peak_bytes / max;
      var name = r.job + " " + (labelText(r.labels) || r.run_id);
      bars.appendChild(svg("text", { x: 4, y: 24 * i + 20, "font-size": 12 }, name.length > 38 ? name.slice(0, 37) + "\u2026" : name));
      bars.appendChild(svg("rect", { x: 260, y: 24 * i + 8, width: Math.max(1, w).toFixed(1), height: 15, fill: "#3d85c6" }));
      bars.appendChild(svg("text", { x: 266 + w, y: 24 * i + 20, "font-size": 12 }, bytes(r.peak_bytes)));
    });
    show(el("div", { id: "rg-view", "data-view": "compare" }, [
      el("h1", null, "Compare " + rows.length + " runs"),
      table(["run", "job", "labels", "peak RAM", "RSS between rounds", "RSS after completion", "worst verdict", "worst phase gap", "peak/estimate"],
        rows.map(function (r) {
          return { attrs: { "class": "compare-row" }, cells: [el("a", { href: base + "run/" + encodeURIComponent(r.run_id) }, r.run_id), r.job, labelText(r.labels),
            bytes(r.peak_bytes), r.first_floor_bytes || r.last_floor_bytes ? bytes(r.first_floor_bytes) + " \u2192 " + bytes(r.last_floor_bytes) : "-",
            r.after_completion_bytes ? bytes(r.after_completion_bytes) : "-", r.worst_verdict || "none",
            r.worst_gap_seconds ? seconds(r.worst_gap_seconds) : "-", r.estimate_ratio ? r.estimate_ratio.toFixed(2) : "-"] };
        }), [0, 0, 0, 1, 0, 1, 0, 1, 1]),
      el("h2", null, "Peak RAM"), el("div", { "class": "chart" }, bars)]));
  }

  function start() {
    if (embedded) {
      var data = JSON.parse(embedded.textContent);
      setStatus("saved " + when(data.saved_unix_ms) + " (offline copy)");
      renderRun(data);
      return;
    }
    var path = location.pathname;
    var root = base.replace(/^[a-z]+:\/\/[^/]+/, "");
    var rest = path.indexOf(root) === 0 ? path.slice(root.length) : "";
    if (rest.indexOf("run/") === 0) {
      loadRun(decodeURIComponent(rest.slice(4)));
    } else if (rest === "compare") {
      var ids = new URLSearchParams(location.search).get("ids") || "";
      getJson("api/compare?ids=" + ids.split(",").map(encodeURIComponent).join(","), function (d) {
        renderCompare(d);
        setStatus("compared " + new Date().toLocaleTimeString());
      });
    } else {
      loadList();
    }
  }
  start();
})();
