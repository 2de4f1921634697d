// floe console: reads /console/api/ and renders it. Every name shown is
// user input, so text goes through textContent and attribute values
// through setAttribute only: never innerHTML.
"use strict";

(function () {
  const REFRESH_MS = 3000;
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = ["#2f6fde", "#d92d20", "#039855", "#dc6803", "#7a5af8", "#0e9384", "#c11574", "#475467"];

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }

  function num(n) { return Number(n).toLocaleString("en-US"); }

  function bytes(n) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let v = Number(n), i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (i === 0 ? String(v) : v.toFixed(1)) + " " + units[i];
  }

  function duration(ms) {
    if (ms <= 0) return "0";
    const s = ms / 1000;
    if (s < 60) return s.toFixed(1) + " s";
    if (s < 3600) return (s / 60).toFixed(1) + " min";
    if (s < 86400) return (s / 3600).toFixed(1) + " h";
    return (s / 86400).toFixed(1) + " d";
  }

  function table(headers, rows) {
    const head = el("tr");
    for (const h of headers) head.append(el("th", h.text ? { class: "text" } : {}, h.label));
    const t = el("table", {}, el("thead", {}, head));
    const body = el("tbody");
    for (const r of rows) body.append(r);
    t.append(body);
    return t;
  }

  // cell is a <td>; check names the figure for tests (data-check).
  function cell(value, attrs) { return el("td", attrs || {}, value); }

  async function get(path) {
    const resp = await fetch("/console/api/" + path, { cache: "no-store" });
    const body = await resp.json().catch(() => ({ error: resp.statusText }));
    if (!resp.ok) throw new Error(path + ": " + (body.error || resp.status));
    return body;
  }

  function renderTopics(data) {
    const root = document.getElementById("topics");
    const note = document.getElementById("topics-note");
    note.textContent = data.total > data.topics.length ? "Showing " + data.topics.length + " of " + data.total + " topics." : "";
    const out = [];
    if (data.topics.length === 0) out.push(el("p", { class: "empty" }, "No topics yet."));
    for (const t of data.topics) {
      const stored = t.storage ? bytes(t.storage.liveBytes) : "n/a";
      const h = el("h3", {}, t.name,
        el("span", { class: "badge" }, t.partitions.length + " partitions"),
        el("span", { class: "badge", "data-check": "topic-records", "data-topic": t.name }, num(t.records) + " records"),
        el("span", { class: "badge", "data-check": "topic-bytes", "data-topic": t.name, title: t.storage ? t.storage.liveBytes + " bytes readable, " + t.storage.deadBytes + " bytes awaiting deletion, " + t.storage.files + " files" : "storage figures unavailable" }, stored));
      const rows = t.partitions.map(p => el("tr", {},
        cell(p.partition),
        cell(num(p.logStartOffset), { "data-check": "log-start", "data-topic": t.name, "data-partition": p.partition }),
        cell(num(p.highWatermark), { "data-check": "hw", "data-topic": t.name, "data-partition": p.partition }),
        cell(num(p.highWatermark - p.logStartOffset))));
      out.push(h, table([{ label: "Partition", text: true }, { label: "Log start" }, { label: "High watermark" }, { label: "Records" }], rows));
    }
    root.replaceChildren(...out);
  }

  function renderGroups(data) {
    const root = document.getElementById("groups");
    const note = document.getElementById("groups-note");
    note.textContent = data.total > data.groups.length ? "Showing " + data.groups.length + " of " + data.total + " groups." : "";
    const out = [];
    if (data.groups.length === 0) out.push(el("p", { class: "empty" }, "No consumer groups yet."));
    for (const g of data.groups) {
      out.push(el("h3", {}, g.name,
        el("span", { class: "badge" }, g.state),
        el("span", { class: "badge", "data-check": "group-members", "data-group": g.name }, g.members.length + " members"),
        el("span", { class: "badge" + (g.lagRecords > 0 ? " lagging" : ""), "data-check": "group-lag", "data-group": g.name }, num(g.lagRecords) + " records behind")));
      if (g.members.length > 0) {
        out.push(table([{ label: "Member", text: true }, { label: "Epoch" }, { label: "Subscription", text: true }, { label: "Assigned", text: true }, { label: "Last heartbeat" }],
          g.members.map(m => el("tr", {},
            el("td", { class: "text", "data-check": "member", "data-group": g.name }, m.id),
            cell(m.epoch),
            el("td", { class: "text" }, m.subscription.join(", ")),
            el("td", { class: "text" }, m.assigned.join(", ")),
            cell(new Date(m.lastHeartbeatMs).toLocaleTimeString("en-GB"))))));
      }
      out.push(table([{ label: "Topic", text: true }, { label: "Partition" }, { label: "Committed" }, { label: "High watermark" }, { label: "Lag (records)" }, { label: "Lag (bytes)" }, { label: "Lag (time)" }, { label: "Owner", text: true }],
        g.partitions.map(p => el("tr", {},
          el("td", { class: "text" }, p.topic),
          cell(p.partition),
          cell(num(p.committed), { "data-check": "committed", "data-group": g.name, "data-topic": p.topic, "data-partition": p.partition }),
          cell(num(p.highWatermark)),
          cell(num(p.lagRecords), { "data-check": "lag", "data-group": g.name, "data-topic": p.topic, "data-partition": p.partition, class: p.lagRecords > 0 ? "lagging" : "" }),
          cell(bytes(p.lagBytes)),
          cell(duration(p.lagMs)),
          el("td", { class: "text" }, p.owner || "—")))));
    }
    root.replaceChildren(...out);
  }

  function renderLag(data) {
    const root = document.getElementById("lag-chart");
    const W = 900, H = 240, L = 60, R = 12, T = 12, B = 28;
    const chart = svg("svg", { viewBox: "0 0 " + W + " " + H, width: "100%", role: "img", "aria-label": "lag per group", "data-check": "lag-chart" });
    const now = Date.now();
    // The span shown: what the samples cover, at least a minute, at most
    // what the console keeps.
    let oldest = now, maxLag = 1;
    for (const s of data.groups) for (const p of s.points) { maxLag = Math.max(maxLag, p.lag); oldest = Math.min(oldest, p.t); }
    const span = Math.min(Math.max(now - oldest, 60000), Math.max(data.intervalMs * data.capacity, 60000));
    const x = t => L + (W - L - R) * (1 - Math.min(span, Math.max(0, now - t)) / span);
    const y = v => T + (H - T - B) * (1 - v / maxLag);
    chart.append(svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
    chart.append(svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
    for (const f of [0, 0.5, 1]) {
      const label = svg("text", { x: L - 6, y: y(maxLag * f) + 4, "text-anchor": "end" });
      label.textContent = num(Math.round(maxLag * f));
      chart.append(label);
    }
    const left = svg("text", { x: L, y: H - 8 }); left.textContent = "-" + duration(span);
    const right = svg("text", { x: W - R, y: H - 8, "text-anchor": "end" }); right.textContent = "now";
    chart.append(left, right);
    const legend = el("div", { class: "legend" });
    data.groups.forEach((s, i) => {
      const color = COLORS[i % COLORS.length];
      const line = svg("polyline", { fill: "none", stroke: color, "stroke-width": 2, "data-group": s.group,
        points: s.points.map(p => x(p.t).toFixed(1) + "," + y(p.lag).toFixed(1)).join(" ") });
      const title = svg("title");
      title.textContent = s.group;
      line.append(title);
      chart.append(line);
      // The last sample as a dot, so that a single sample shows too.
      if (s.points.length) {
        const p = s.points[s.points.length - 1];
        const dot = svg("circle", { cx: x(p.t).toFixed(1), cy: y(p.lag).toFixed(1), r: 4, fill: color, "data-group": s.group, "data-lag": p.lag });
        const t2 = svg("title");
        t2.textContent = s.group + ": " + num(p.lag);
        dot.append(t2);
        chart.append(dot);
      }
      const last = s.points.length ? s.points[s.points.length - 1].lag : 0;
      const swatch = el("i");
      swatch.style.background = color; // CSSOM, allowed by the CSP (a style attribute is not)
      legend.append(el("span", {}, swatch, s.group + " (" + num(last) + ")"));
    });
    const out = [chart, legend];
    if (data.groups.length === 0) out.push(el("p", { class: "empty" }, "No samples yet: the console samples lag every " + duration(data.intervalMs) + "."));
    root.replaceChildren(...out);
  }

  function renderIceberg(data) {
    const root = document.getElementById("iceberg");
    if (!data.available) {
      root.replaceChildren(el("p", { class: "empty", "data-check": "iceberg-pending" }, data.message));
      return;
    }
    if (data.tables.length === 0) {
      root.replaceChildren(el("p", { class: "empty" }, "No Iceberg tables yet."));
      return;
    }
    const maintained = t => t.maintainedTime && new Date(t.maintainedTime).getFullYear() > 1 ? new Date(t.maintainedTime).toLocaleString("en-GB") : "never";
    root.replaceChildren(table([{ label: "Topic", text: true }, { label: "Table", text: true }, { label: "Last snapshot", text: true }, { label: "Snapshot time" },
      { label: "Rows" }, { label: "Data files" }, { label: "Data bytes" }, { label: "Rejected rows" }, { label: "Last maintained" },
      { label: "Compaction lag (records)" }, { label: "Compaction lag (bytes)" }, { label: "Compaction lag (time)" }],
      data.tables.map(t => el("tr", { "data-table": t.namespace + "." + t.table },
        el("td", { class: "text" }, t.topic),
        el("td", { class: "text" }, t.namespace + "." + t.table),
        el("td", { class: "text" }, t.snapshotId ? String(t.snapshotId) : "—"),
        cell(t.snapshotId ? new Date(t.snapshotTime).toLocaleString("en-GB") : "—"),
        cell(num(t.rows)),
        cell(num(t.dataFiles)),
        cell(bytes(t.dataBytes)),
        cell(num(t.rejectedRows)),
        cell(maintained(t)),
        cell(num(t.compactionLagRecords)),
        cell(bytes(t.compactionLagBytes)),
        cell(t.compactionLagMs ? duration(t.compactionLagMs) : "—")))));
  }

  let rounds = 0;
  async function refresh() {
    const status = document.getElementById("status");
    const parts = [["topics", renderTopics], ["groups", renderGroups], ["lag", renderLag], ["iceberg", renderIceberg]];
    const results = await Promise.allSettled(parts.map(([p]) => get(p)));
    const errors = [];
    results.forEach((r, i) => {
      if (r.status === "fulfilled") parts[i][1](r.value);
      else errors.push(r.reason.message);
    });
    rounds++;
    status.className = "status" + (errors.length ? " error" : "");
    status.textContent = errors.length ? "error: " + errors.join("; ") : "updated " + new Date().toLocaleTimeString("en-GB");
    document.body.setAttribute("data-rounds", rounds);
    if (!errors.length) document.body.setAttribute("data-ready", "1");
  }

  refresh();
  setInterval(refresh, REFRESH_MS);
})();
