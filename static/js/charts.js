// Campaign charts (the dashboard and /campaigns), drawn with Vega-Lite through vega-embed
// (static/vendor/vega/). The figures come from JSON embedded in the page, the same JSON that
// report.json serves (<script type="application/json" id="dashboard-data"> or
// id="frontier-data"); nothing here computes a metric, it only lays the numbers out.
//
// The page's Content Security Policy allows no eval: Vega's default expression compiler builds
// functions with Function(), so every chart is embedded with `ast: true`, which makes
// vega-embed evaluate expressions with its bundled CSP-safe interpreter (vega-interpreter).
//
// Each container <div class="vega-chart" data-chart="KIND" [data-key="…"]> gets one chart:
// a title and subtitle, an accessible description (the SVG's aria-label), tooltips on every
// mark and the numbers as text on the chart; its data table follows it in the page.
(function () {
  "use strict";

  const FONT = "system-ui, sans-serif";
  const INK = "#1d2330";
  const MUTED = "#667085";
  const BAR = "#4f7be8";
  const GATE = "#e8804f";

  const pct = (v) => (v === null || v === undefined ? "undefined" : (100 * v).toFixed(1) + "%");
  const ms = (v) => (v === null || v === undefined ? "–" : Math.round(v) + " ms");
  const ciText = (ci) => (ci ? (100 * ci[0]).toFixed(1) + "–" + (100 * ci[1]).toFixed(1) + "%" : "–");

  function readJSON(id) {
    const el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  const CONFIG = {
    font: FONT,
    background: null,
    view: { stroke: null },
    axis: { labelFontSize: 12, titleFontSize: 12, labelColor: INK, titleColor: INK, titleFontWeight: "normal", gridColor: "#eef1f7" },
    title: { fontSize: 14, subtitleFontSize: 12, subtitleColor: MUTED, anchor: "start", offset: 8 },
    text: { fontSize: 12 },
    legend: { labelFontSize: 12, titleFontSize: 12 },
  };

  const EMBED_OPTIONS = {
    renderer: "svg",
    ast: true, // no Function(): the CSP-safe expression interpreter
    actions: { export: true, source: false, compiled: false, editor: false },
    config: CONFIG,
  };

  // Width in px of `text` at `size` px in the charts' font (for label placement).
  const measure = (function () {
    const ctx = document.createElement("canvas").getContext("2d");
    return function (text, size) {
      ctx.font = size + "px " + FONT;
      return ctx.measureText(text).width;
    };
  })();

  function base(title, subtitle, description, width, extra) {
    return Object.assign({
      $schema: "https://vega.github.io/schema/vega-lite/v6.json",
      title: { text: title, subtitle: subtitle },
      description: description,
      width: width,
      autosize: { type: "pad" },
    }, extra || {});
  }

  // ---------------------------------------------------------------- reliability (Pass@k)

  const METRICS = [
    ["Pass@1", "pass_at_1"], ["Pass@3", "pass_at_3"], ["Reliable@3", "reliable_at_3"],
    ["AFA", "afa"], ["Correction uptake", "correction_uptake"],
  ];

  function passkSpec(data, width) {
    const report = data.report;
    const level = Math.round(100 * report.confidence) + "% CI";
    const rows = METRICS.map(function ([name, key]) {
      const m = report[key];
      const defined = m.value !== null;
      return {
        metric: name, value: m.value, lo: m.ci ? m.ci[0] : null, hi: m.ci ? m.ci[1] : null,
        tasks: m.n_tasks, note: m.note || "",
        label: defined ? pct(m.value) + "  (" + level + " " + ciText(m.ci) + ")" : "undefined (see note below)",
        value_text: pct(m.value), ci_text: ciText(m.ci),
      };
    });
    const labelRoom = Math.max.apply(null, rows.map((r) => measure(r.label, 12))) + 16;
    const plotWidth = Math.max(160, width - labelRoom - 130);
    const y = { field: "metric", type: "nominal", sort: null, title: null, axis: { labelLimit: 130 } };
    const tooltip = [
      { field: "metric", title: "metric" }, { field: "value_text", title: "value" },
      { field: "ci_text", title: level }, { field: "tasks", title: "tasks" }, { field: "note", title: "note" },
    ];
    const described = rows.map((r) => r.metric + " " + (r.value === null ? "undefined" : pct(r.value) + ", " + level + " " + ciText([r.lo, r.hi]))).join("; ");
    return base("Pass@k and field accuracy", report.n_runs + " graded runs over " + report.n_tasks + " tasks; bars: value, whiskers: " + level,
      "Bar chart of campaign reliability metrics with confidence intervals: " + described + ".", plotWidth, {
        height: { step: 34 },
        data: { values: rows },
        encoding: { y: y },
        layer: [
          { mark: { type: "bar", color: BAR, size: 20, cornerRadiusEnd: 2 },
            encoding: { x: { field: "value", type: "quantitative", scale: { domain: [0, 1] }, axis: { format: ".0%", tickCount: 5, title: null, grid: true } }, tooltip: tooltip } },
          { mark: { type: "rule", color: INK, strokeWidth: 2 },
            encoding: { x: { field: "lo", type: "quantitative" }, x2: { field: "hi" }, tooltip: tooltip } },
          { mark: { type: "tick", color: INK, thickness: 2, size: 12, orient: "vertical" },
            encoding: { x: { field: "lo", type: "quantitative" }, tooltip: tooltip } },
          { mark: { type: "tick", color: INK, thickness: 2, size: 12, orient: "vertical" },
            encoding: { x: { field: "hi", type: "quantitative" }, tooltip: tooltip } },
          { name: "ci_labels", mark: { type: "text", align: "left", baseline: "middle", fontSize: 12, color: INK },
            encoding: { x: { value: plotWidth + 10 }, text: { field: "label" }, tooltip: tooltip } },
        ],
      });
  }

  // ---------------------------------------------------------------- gate decomposition

  function gatesSpec(data, width) {
    const report = data.report;
    const rows = Object.entries(report.gate_pass_rates).map(([gate, rate]) => ({
      gate: gate, rate: rate, label: pct(rate), runs: report.n_runs,
    }));
    const plotWidth = Math.max(160, width - 120);
    const tooltip = [{ field: "gate", title: "gate" }, { field: "label", title: "runs passing" }, { field: "runs", title: "graded runs" }];
    return base("Gate pass rates", "share of the " + report.n_runs + " graded runs that pass each gate",
      "Bar chart of gate pass rates: " + rows.map((r) => r.gate + " " + r.label).join("; ") + ".", plotWidth, {
        height: { step: 30 },
        data: { values: rows },
        encoding: { y: { field: "gate", type: "nominal", sort: null, title: null } },
        layer: [
          { mark: { type: "bar", color: GATE, size: 18, cornerRadiusEnd: 2 },
            encoding: { x: { field: "rate", type: "quantitative", scale: { domain: [0, 1] }, axis: { format: ".0%", tickCount: 5, title: null } }, tooltip: tooltip } },
          { name: "gate_labels", mark: { type: "text", align: "left", baseline: "middle", dx: 4, fontSize: 12, color: INK },
            encoding: { x: { field: "rate", type: "quantitative" }, text: { field: "label" }, tooltip: tooltip } },
        ],
      });
  }

  // ---------------------------------------------------------------- floor control

  function distributionSpec(data, width, opts) {
    const graded = data.runs.filter((r) => !r.infrastructure_failure);
    const rows = graded.filter((r) => r[opts.field] !== null).map((r) => ({ run: r.run_id, value: r[opts.field], shown: opts.fmt(r[opts.field]) }));
    const median = data[opts.median];
    const subtitle = "per run; " + rows.length + " of " + graded.length + " graded runs " + opts.which;
    const description = "Histogram of " + opts.what + " over " + rows.length + " runs" + (median === null ? "" : ", campaign median " + opts.fmt(median)) + ".";
    if (!rows.length) {
      return base(opts.title, subtitle, description, width, { height: 60, data: { values: [{ t: "no runs with a value" }] }, mark: { type: "text", color: MUTED }, encoding: { text: { field: "t" } } });
    }
    const layers = [
      { mark: { type: "bar", color: BAR, binSpacing: 1 },
        encoding: {
          x: { field: "value", type: "quantitative", bin: { maxbins: 16, nice: true }, title: opts.axis, axis: { format: opts.format, labelOverlap: true } },
          y: { aggregate: "count", type: "quantitative", title: "runs", axis: { tickMinStep: 1 } },
          tooltip: [{ field: "value", bin: { maxbins: 16, nice: true }, type: "quantitative", title: opts.axis, format: opts.format }, { aggregate: "count", type: "quantitative", title: "runs" }],
        } },
    ];
    if (median !== null) {
      const m = [{ value: median, label: "median " + opts.fmt(median) }];
      layers.push({ data: { values: m }, mark: { type: "rule", color: INK, strokeDash: [4, 3], strokeWidth: 2 },
        encoding: { x: { field: "value", type: "quantitative" }, tooltip: [{ field: "label", title: "campaign" }] } });
      layers.push({ data: { values: m }, name: "median_label", mark: { type: "text", align: "left", dx: 4, dy: -4, baseline: "bottom", color: INK, fontSize: 12 },
        encoding: { x: { field: "value", type: "quantitative" }, y: { value: 0 }, text: { field: "label" } } });
    }
    return base(opts.title, subtitle, description, Math.max(140, width - 60), { height: 150, data: { values: rows }, layer: layers });
  }

  const FLOOR = {
    stop: { field: "median_stop_latency_ms", median: "median_stop_latency_ms", title: "Stop latency", which: "yielded to a barge-in (at least once)",
      what: "per-run median stop latency after a barge-in (ms)", axis: "stop latency (ms, per-run median)", format: ",.0f", fmt: ms },
    overlap: { field: "overlap_ratio", median: "overlap_ratio", title: "Overlap", which: "with speech",
      what: "per-run overlap as a share of speech time", axis: "overlap (share of speech time)", format: ".1%", fmt: (v) => (100 * v).toFixed(2) + "%" },
  };

  // ---------------------------------------------------------------- per-taxonomy heatmaps

  function heatmapSpec(data, width, dim) {
    const labels = data.report.slices[dim] || {};
    const name = dim.replace(/_/g, " ");
    const rows = [];
    Object.entries(labels).forEach(function ([label, row]) {
      [["Pass@1", row.pass_at_1], ["AFA", row.afa]].forEach(function ([metric, m]) {
        rows.push({
          label: label, metric: metric, value: m.value, shown: pct(m.value), ci: ciText(m.ci),
          tasks: row.n_tasks, runs: row.n_runs,
          cell: (m.value === null ? "n/a" : (100 * m.value).toFixed(0) + "%") + " · n=" + row.n_tasks,
        });
      });
    });
    const labelRoom = Math.min(220, Math.max.apply(null, rows.map((r) => measure(r.label, 12)).concat([40])) + 14);
    const plotWidth = Math.max(140, Math.min(320, width - labelRoom - 10));
    const tooltip = [
      { field: "label", title: name }, { field: "metric", title: "metric" }, { field: "shown", title: "value" },
      { field: "ci", title: "CI" }, { field: "tasks", title: "tasks" }, { field: "runs", title: "runs" },
    ];
    const description = "Heatmap of Pass@1 and AFA by " + name + ": " + Object.entries(labels).map(([label, row]) =>
      label + " Pass@1 " + pct(row.pass_at_1.value) + ", AFA " + pct(row.afa.value) + ", n=" + row.n_tasks + " tasks").join("; ") + ".";
    return base("By " + name, "n = tasks in the slice", description, plotWidth, {
      height: { step: 24 },
      data: { values: rows },
      encoding: {
        x: { field: "metric", type: "nominal", sort: ["Pass@1", "AFA"], title: null, axis: { orient: "top", labelAngle: 0, domain: false, ticks: false } },
        y: { field: "label", type: "nominal", title: null, axis: { labelLimit: 210, domain: false, ticks: false } },
        tooltip: tooltip,
      },
      layer: [
        { mark: { type: "rect", stroke: "#fff", strokeWidth: 1, color: "#eef1f7" }, transform: [{ filter: "datum.value === null" }] },
        { mark: { type: "rect", stroke: "#fff", strokeWidth: 1 }, transform: [{ filter: "datum.value !== null" }],
          encoding: { color: { field: "value", type: "quantitative", scale: { domain: [0, 1], scheme: "blues" }, legend: null } } },
        { name: "cells", mark: { type: "text", fontSize: 12, baseline: "middle" },
          encoding: {
            text: { field: "cell" },
            color: { condition: { test: "datum.value !== null && datum.value > 0.6", value: "#fff" }, value: INK },
          } },
      ],
    });
  }

  // ---------------------------------------------------------------- frontier (/campaigns)

  // Label placement: each campaign's name goes beside its point, moved down or up in 15 px
  // steps (to the left when the right has no room) until its box meets no other label and no
  // point; a leader line joins a moved label to its point. Pixel positions are exact because
  // both scales have fixed, un-niced domains.
  function placeLabels(points, W, H) {
    const placed = [];
    const size = 12, h = 15, gap = 8;
    const hits = (b) => placed.some((o) => b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1) ||
      points.some((p) => p.px > b.x0 - 4 && p.px < b.x1 + 4 && p.py > b.y0 - 4 && p.py < b.y1 + 4);
    const order = points.slice().sort((a, b) => a.py - b.py || a.px - b.px);
    order.forEach(function (p) {
      const w = measure(p.campaign, size);
      let best = null;
      for (let k = 0; k < 40 && !best; k++) {
        const shift = (k % 2 ? -1 : 1) * Math.ceil(k / 2) * h; // 0, -15, +15, -30, …
        const cy = p.py + shift;
        for (const side of ["right", "left"]) {
          const x0 = side === "right" ? p.px + gap : p.px - gap - w;
          const b = { x0: x0, x1: x0 + w, y0: cy - h / 2, y1: cy + h / 2 };
          if (b.x0 < 0 || b.x1 > W + 120 || b.y0 < -10 || b.y1 > H + 10) continue;
          if (!hits(b)) { best = { b: b, side: side, cy: cy }; break; }
        }
      }
      if (!best) { // no free spot: stack under the lowest label
        const y = Math.max.apply(null, placed.map((o) => o.y1).concat([p.py])) + h / 2;
        best = { b: { x0: p.px + gap, x1: p.px + gap + w, y0: y - h / 2, y1: y + h / 2 }, side: "right", cy: y };
      }
      placed.push(best.b);
      p.lx = best.side === "right" ? best.b.x0 : best.b.x1;
      p.ly = best.cy;
      p.side = best.side;
      p.moved = Math.abs(best.cy - p.py) > 1;
      p.lx2 = best.side === "right" ? best.b.x0 - 2 : best.b.x1 + 2;
    });
  }

  function niceCeil(x) {
    if (!(x > 0)) return 1000;
    const step = Math.pow(10, Math.floor(Math.log10(x))) / 2;
    return Math.ceil(x / step) * step;
  }

  function frontierSpec(points, width) {
    const usable = points.filter((p) => p.pass_at_1.value !== null && p.median_response_latency_ms !== null);
    const W = Math.max(260, Math.min(760, width - 240)), H = 340;
    const level = usable.length ? Math.round(100 * usable[0].confidence) + "% CI" : "CI";
    const xmax = niceCeil(1.15 * Math.max.apply(null, usable.map((p) =>
      Math.max(p.median_response_latency_ms, p.response_latency_iqr_ms ? p.response_latency_iqr_ms[1] : 0)).concat([1])));
    const rows = usable.map((p) => ({
      campaign: p.campaign, agent: p.agent, runs: p.n_runs, tasks: p.n_tasks,
      pass: p.pass_at_1.value, lo: p.pass_at_1.ci ? p.pass_at_1.ci[0] : p.pass_at_1.value,
      hi: p.pass_at_1.ci ? p.pass_at_1.ci[1] : p.pass_at_1.value,
      lat: p.median_response_latency_ms,
      q1: p.response_latency_iqr_ms ? p.response_latency_iqr_ms[0] : p.median_response_latency_ms,
      q3: p.response_latency_iqr_ms ? p.response_latency_iqr_ms[1] : p.median_response_latency_ms,
      pass_text: pct(p.pass_at_1.value) + " (" + level + " " + ciText(p.pass_at_1.ci) + ")",
      lat_text: ms(p.median_response_latency_ms) + (p.response_latency_iqr_ms ? " (IQR " + Math.round(p.response_latency_iqr_ms[0]) + "–" + Math.round(p.response_latency_iqr_ms[1]) + " ms)" : ""),
      px: W * p.median_response_latency_ms / xmax, py: H * (1 - p.pass_at_1.value),
    }));
    placeLabels(rows, W, H);
    const x = { field: "lat", type: "quantitative", scale: { domain: [0, xmax], nice: false, zero: true }, axis: { title: "median response latency (ms); whiskers: interquartile range over runs", tickCount: 8, grid: true, format: ",.0f" } };
    const y = { field: "pass", type: "quantitative", scale: { domain: [0, 1], nice: false }, axis: { title: "Pass@1; whiskers: " + level, format: ".0%", tickCount: 5, grid: true } };
    const tooltip = [
      { field: "campaign", title: "campaign" }, { field: "agent", title: "agent" }, { field: "pass_text", title: "Pass@1" },
      { field: "lat_text", title: "median response latency" }, { field: "runs", title: "runs" }, { field: "tasks", title: "tasks" },
    ];
    const px = (f) => ({ field: f, type: "quantitative", scale: null });
    const description = "Scatter plot, one point per campaign, Pass@1 against median response latency, with error bars: " +
      rows.map((r) => r.campaign + ": Pass@1 " + r.pass_text + ", latency " + r.lat_text).join("; ") + ".";
    const skipped = points.filter((p) => usable.indexOf(p) < 0).map((p) => p.campaign);
    const subtitle = "up and to the left is better; " + rows.length + " campaign(s)" +
      (skipped.length ? "; not plotted (no Pass@1 or no latency): " + skipped.join(", ") : "");
    return base("Reliability–latency frontier", subtitle, description, W, {
      height: H,
      data: { values: rows },
      layer: [
        { name: "error_y", mark: { type: "rule", color: INK, strokeWidth: 1.5 }, encoding: { x: x, y: Object.assign({}, y, { field: "lo" }), y2: { field: "hi" }, tooltip: tooltip } },
        { mark: { type: "tick", color: INK, orient: "horizontal", size: 10, thickness: 1.5 }, encoding: { x: x, y: Object.assign({}, y, { field: "lo" }) } },
        { mark: { type: "tick", color: INK, orient: "horizontal", size: 10, thickness: 1.5 }, encoding: { x: x, y: Object.assign({}, y, { field: "hi" }) } },
        { name: "error_x", mark: { type: "rule", color: INK, strokeWidth: 1.5 }, encoding: { x: Object.assign({}, x, { field: "q1" }), x2: { field: "q3" }, y: y, tooltip: tooltip } },
        { mark: { type: "tick", color: INK, orient: "vertical", size: 10, thickness: 1.5 }, encoding: { x: Object.assign({}, x, { field: "q1" }), y: y } },
        { mark: { type: "tick", color: INK, orient: "vertical", size: 10, thickness: 1.5 }, encoding: { x: Object.assign({}, x, { field: "q3" }), y: y } },
        { name: "leaders", transform: [{ filter: "datum.moved" }], mark: { type: "rule", color: MUTED, strokeWidth: 1 },
          encoding: { x: px("px"), y: px("py"), x2: { field: "lx2" }, y2: { field: "ly" } } },
        { name: "points", mark: { type: "point", filled: true, size: 80, color: BAR, opacity: 1 }, encoding: { x: x, y: y, tooltip: tooltip } },
        { name: "labels_right", transform: [{ filter: "datum.side === 'right'" }], mark: { type: "text", align: "left", baseline: "middle", fontSize: 12, color: INK },
          encoding: { x: px("lx"), y: px("ly"), text: { field: "campaign" }, tooltip: tooltip } },
        { name: "labels_left", transform: [{ filter: "datum.side === 'left'" }], mark: { type: "text", align: "right", baseline: "middle", fontSize: 12, color: INK },
          encoding: { x: px("lx"), y: px("ly"), text: { field: "campaign" }, tooltip: tooltip } },
      ],
    });
  }

  // ---------------------------------------------------------------- drawing

  function specFor(el, width) {
    const kind = el.dataset.chart;
    if (kind === "frontier") return frontierSpec(readJSON("frontier-data") || [], width);
    const data = readJSON("dashboard-data");
    if (!data) throw new Error("no dashboard data in the page");
    if (kind === "passk") return passkSpec(data, width);
    if (kind === "gates") return gatesSpec(data, width);
    if (kind === "stop" || kind === "overlap") return distributionSpec(data, width, FLOOR[kind]);
    if (kind === "heatmap") return heatmapSpec(data, width, el.dataset.key);
    throw new Error("unknown chart " + kind);
  }

  const views = new Map();

  function draw(el) {
    const old = views.get(el);
    if (old) { old.finalize(); views.delete(el); }
    el.textContent = "";
    el.dataset.rendered = "pending";
    // vega-embed's action menu takes about 38 px on the right
    const width = Math.max(200, el.clientWidth - 40);
    let spec;
    try { spec = specFor(el, width); } catch (err) { return Promise.resolve(fail(el, err)); }
    return window.vegaEmbed(el, spec, EMBED_OPTIONS).then(function (result) {
      views.set(el, result.view);
      el.dataset.rendered = "ok";
    }).catch((err) => fail(el, err));
  }

  function fail(el, err) {
    el.dataset.rendered = "error";
    const p = document.createElement("p");
    p.className = "chart-error";
    p.textContent = "This chart could not be drawn (" + err + "); its data table follows.";
    el.textContent = "";
    el.appendChild(p);
    const next = el.parentElement && el.parentElement.querySelector("details.chart-data");
    if (next) next.open = true;
  }

  function drawAll() {
    const charts = Array.from(document.querySelectorAll(".vega-chart[data-chart]"));
    return Promise.all(charts.map(draw)).then(function () {
      window.chartsReady = true;
      document.dispatchEvent(new CustomEvent("charts:ready"));
    });
  }

  function start() {
    if (!document.querySelector(".vega-chart[data-chart]")) return;
    if (typeof window.vegaEmbed !== "function") {
      document.querySelectorAll(".vega-chart[data-chart]").forEach((el) => fail(el, "the chart library did not load"));
      window.chartsReady = true;
      return;
    }
    drawAll();
    let lastWidth = window.innerWidth, timer = null;
    window.addEventListener("resize", function () {
      if (window.innerWidth === lastWidth) return;
      lastWidth = window.innerWidth;
      clearTimeout(timer);
      timer = setTimeout(drawAll, 200);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
