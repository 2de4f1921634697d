// floe console: reads /console/api/ and renders it. Every name shown is
// user input, so text goes through textContent and attribute values
// through setAttribute only: never innerHTML.
//
// Routes (the URL's hash): none or a section's id, the overview (the
// page scrolls to the section once it has loaded); #topic/NAME and
// #group/NAME, one topic's or one group's page.
"use strict";

(function () {
  const REFRESH_MS = 3000;
  const PAGE = 25;           // topics or groups per page
  const PARTITIONS = 1000;   // partitions per page of a topic or group
  const CHART_GROUPS = 10;   // the groups furthest behind get a line
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = ["#2f6fde", "#d92d20", "#039855", "#dc6803", "#7a5af8", "#0e9384", "#c11574", "#475467"];
  // Lines that coincide stay visible: each has its own dash and width,
  // drawn widest first.
  const DASHES = ["", "8 4", "2 3", "12 3 2 3", "4 4", "1 5", "10 6", "6 2 2 2 2 2"];

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
  function count(n, one, many) { return num(n) + " " + (Number(n) === 1 ? one : many); }

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

  // iso is a time as ISO 8601 in UTC, to the second: 2026-12-01T09:44:27Z.
  function iso(t) {
    const d = new Date(t);
    if (isNaN(d.getTime()) || d.getUTCFullYear() <= 1970) return "—";
    return d.toISOString().replace(/\.\d{3}Z$/, "Z");
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

  // cell is a <td>; data-check names the figure for tests.
  function cell(value, attrs) { return el("td", attrs || {}, value); }

  function topicLink(name) { return el("a", { href: "#topic/" + encodeURIComponent(name), "data-topic-link": name }, name); }
  function groupLink(name) { return el("a", { href: "#group/" + encodeURIComponent(name), "data-group-link": name }, name); }

  async function get(path) {
    const resp = await fetch("/console/api/" + path, { cache: "no-store" });
    const body = await resp.json().catch(() => ({ error: resp.statusText }));
    if (!resp.ok) throw new Error(path.split("?")[0] + ": " + (body.error || resp.status) + (body.requestId ? " (request id " + body.requestId + ")" : ""));
    return body;
  }

  // Search and page of each list.
  const lists = {
    topics: { q: "", offset: 0 },
    groups: { q: "", offset: 0 },
  };
  function listQuery(name, limit) {
    const s = lists[name];
    return name + "?q=" + encodeURIComponent(s.q) + "&offset=" + s.offset + "&limit=" + limit;
  }

  function pager(name, data, count) {
    const root = document.getElementById(name + "-pager");
    const s = lists[name];
    const from = data.offset + 1, to = data.offset + count;
    const prev = el("button", { type: "button", "aria-label": "previous page" }, "‹ prev");
    const next = el("button", { type: "button", "aria-label": "next page" }, "next ›");
    if (data.offset === 0) prev.setAttribute("disabled", "");
    if (data.offset + data.limit >= data.total) next.setAttribute("disabled", "");
    prev.addEventListener("click", () => { s.offset = Math.max(0, s.offset - data.limit); schedule(); });
    next.addEventListener("click", () => { s.offset += data.limit; schedule(); });
    const shown = data.total === 0 ? "none" + (s.q ? " matching" : "") : num(from) + "–" + num(to) + " of " + num(data.total) + (s.q ? " matching" : "");
    root.replaceChildren(prev, el("span", { "data-check": name + "-shown" }, shown), next);
  }

  function settingsText(config) {
    const keys = Object.keys(config || {}).sort();
    return keys.length ? keys.map(k => k + "=" + config[k]).join(", ") : "defaults";
  }

  function renderSummary(s) {
    const root = document.getElementById("summary");
    const part = (label, value, check) => el("span", {}, label + " ", el("b", { "data-check": check }, value));
    const counted = s.topicsCounted < s.topics ? " (" + num(s.topicsCounted) + " of " + num(s.topics) + " topics counted so far)" : "";
    const worst = s.worstLag.records > 0
      ? el("span", {}, "worst lag ", el("b", { "data-check": "summary-worst-lag" }, count(s.worstLag.records, "record", "records")), " (", groupLink(s.worstLag.group), s.worstLag.ms ? ", " + duration(s.worstLag.ms) : "", ")")
      : part("worst lag", "none", "summary-worst-lag");
    root.replaceChildren(
      part("topics", num(s.topics), "summary-topics"),
      part("partitions", num(s.partitions), "summary-partitions"),
      part("records", num(s.records) + counted, "summary-records"),
      part("bytes", bytes(s.bytes), "summary-bytes"),
      part("groups", num(s.groups), "summary-groups"),
      worst,
      part("tables trailing", num(s.tablesTrailing) + " of " + num(s.tables), "summary-tables"));
  }

  function renderTopics(data) {
    pager("topics", data, data.topics.length);
    const root = document.getElementById("topics");
    if (data.topics.length === 0) {
      root.replaceChildren(el("p", { class: "empty" }, lists.topics.q ? "No topic matches." : "No topics yet."));
      return;
    }
    root.replaceChildren(table([{ label: "Topic", text: true }, { label: "Partitions" }, { label: "Records" }, { label: "Bytes" },
      { label: "Created" }, { label: "Iceberg trailing" }, { label: "Settings", text: true }],
      data.topics.map(t => el("tr", { "data-topic": t.name },
        el("td", { class: "text name" }, topicLink(t.name)),
        cell(num(t.partitionCount), { "data-check": "topic-partitions", "data-topic": t.name }),
        // Past a page's budget of partitions, figures are the last
        // background pass's (marked with a tooltip) or not known yet.
        cell(t.pending ? "…" : num(t.records), { "data-check": "topic-records", "data-topic": t.name,
          title: t.pending ? "not counted yet: open the topic" : t.sampledAtMs ? "as of " + iso(t.sampledAtMs) : "" }),
        cell(t.pending ? "…" : t.storage ? bytes(t.storage.liveBytes) : "n/a", { "data-check": "topic-bytes", "data-topic": t.name,
          title: t.storage ? t.storage.liveBytes + " bytes readable, " + t.storage.deadBytes + " bytes awaiting deletion, " + t.storage.files + " files" : "storage figures unavailable" }),
        cell(iso(t.createdAtMs)),
        cell(t.iceberg.enabled ? num(t.iceberg.trailingRecords) : "off"),
        el("td", { class: "text", "data-check": "topic-settings", "data-topic": t.name }, settingsText(t.config))))));
  }

  function renderGroups(data) {
    pager("groups", data, data.groups.length);
    const root = document.getElementById("groups");
    if (data.groups.length === 0) {
      root.replaceChildren(el("p", { class: "empty" }, lists.groups.q ? "No group matches." : "No consumer groups yet."));
      return;
    }
    root.replaceChildren(table([{ label: "Group", text: true }, { label: "State" }, { label: "Members" }, { label: "Partitions" },
      { label: "Lag (records)" }, { label: "Lag (bytes)" }, { label: "Lag (time)" }],
      data.groups.map(g => el("tr", { "data-group": g.name },
        el("td", { class: "text name" }, groupLink(g.name)),
        cell(g.state),
        cell(num(g.memberCount), { "data-check": "group-members", "data-group": g.name }),
        cell(num(g.partitionCount)),
        cell(num(g.lagRecords), { "data-check": "group-lag", "data-group": g.name, class: g.lagRecords > 0 ? "lagging" : "" }),
        cell(bytes(g.lagBytes)),
        cell(duration(g.maxLagMs))))));
  }

  function renderTopicPage(t) {
    const settings = Object.keys(t.config).sort();
    const out = [
      el("h2", { id: "topic-title" }, "Topic ", el("span", { "data-check": "page-topic" }, t.name)),
      el("p", {},
        el("span", { class: "badge" }, count(t.partitionCount, "partition", "partitions")),
        el("span", { class: "badge" }, count(t.records, "record", "records")),
        el("span", { class: "badge" }, t.storage ? bytes(t.storage.liveBytes) : "bytes n/a"),
        el("span", { class: "badge" }, "created " + iso(t.createdAtMs)),
        el("span", { class: "badge" }, t.iceberg.enabled ? "Iceberg: " + num(t.iceberg.trailingRecords) + " records trailing" : "Iceberg off")),
      el("h3", {}, "Settings"),
      settings.length === 0 ? el("p", { class: "empty" }, "No settings: the defaults apply.")
        : table([{ label: "Setting", text: true }, { label: "Value", text: true }],
          settings.map(k => el("tr", {}, el("td", { class: "text name" }, k), el("td", { class: "text", "data-check": "setting", "data-key": k }, t.config[k])))),
      el("h3", {}, "Partitions"),
      t.partitionCount > t.partitions.length ? el("p", { class: "note" }, "Showing partitions " + num(t.offset) + "–" + num(t.offset + t.partitions.length - 1) + " of " + num(t.partitionCount) + ".") : "",
      el("div", { class: "scroll" }, table([{ label: "Partition", text: true }, { label: "Log start" }, { label: "High watermark" }, { label: "Records" }],
        t.partitions.map(p => el("tr", {},
          cell(p.partition),
          cell(num(p.logStartOffset), { "data-check": "log-start", "data-topic": t.name, "data-partition": p.partition }),
          cell(num(p.highWatermark), { "data-check": "hw", "data-topic": t.name, "data-partition": p.partition }),
          cell(num(p.highWatermark - p.logStartOffset)))))),
    ];
    document.getElementById("detail-body").replaceChildren(...out);
  }

  function renderGroupPage(g) {
    const out = [
      el("h2", { id: "group-title" }, "Consumer group ", el("span", { "data-check": "page-group" }, g.name)),
      el("p", {},
        el("span", { class: "badge" }, g.state),
        el("span", { class: "badge", "data-check": "page-group-members" }, count(g.memberCount, "member", "members")),
        el("span", { class: "badge" + (g.lagRecords > 0 ? " lagging" : ""), "data-check": "page-group-lag" }, count(g.lagRecords, "record", "records") + " behind")),
      el("h3", {}, "Members"),
    ];
    out.push(g.members.length === 0 ? el("p", { class: "empty" }, "No members.") :
      el("div", { class: "scroll" }, table([{ label: "Member", text: true }, { label: "Epoch" }, { label: "Subscription", text: true }, { label: "Assigned", text: true }, { label: "Last heartbeat" }],
        g.members.map(m => el("tr", {},
          el("td", { class: "text name", "data-check": "member", "data-group": g.name }, m.id),
          cell(m.epoch),
          el("td", { class: "text" }, m.subscription.join(", ")),
          el("td", { class: "text" }, m.assigned.join(", ")),
          cell(iso(m.lastHeartbeatMs), { "data-check": "heartbeat" }))))));
    out.push(el("h3", {}, "Partitions"));
    if (g.partitionCount > g.partitions.length) out.push(el("p", { class: "note" }, "Showing " + num(g.partitions.length) + " of " + num(g.partitionCount) + " partitions."));
    out.push(el("div", { class: "scroll" }, table([{ label: "Topic", text: true }, { label: "Partition" }, { label: "Committed" }, { label: "High watermark" }, { label: "Lag (records)" }, { label: "Lag (bytes)" }, { label: "Lag (time)" }, { label: "Owner", text: true }],
      g.partitions.map(p => el("tr", {},
        el("td", { class: "text name" }, topicLink(p.topic)),
        cell(p.partition),
        cell(num(p.committed), { "data-check": "committed", "data-group": g.name, "data-topic": p.topic, "data-partition": p.partition }),
        cell(num(p.highWatermark)),
        cell(num(p.lagRecords), { "data-check": "lag", "data-group": g.name, "data-topic": p.topic, "data-partition": p.partition, class: p.lagRecords > 0 ? "lagging" : "" }),
        cell(bytes(p.lagBytes)),
        cell(duration(p.lagMs)),
        el("td", { class: "text" }, p.owner || "—"))))));
    document.getElementById("detail-body").replaceChildren(...out);
  }

  function renderLag(data) {
    const root = document.getElementById("lag-chart");
    const W = 900, H = 240, L = 60, R = 12, T = 12, B = 28;
    const chart = svg("svg", { viewBox: "0 0 " + W + " " + H, width: "100%", role: "img", "aria-label": "lag per group", "data-check": "lag-chart" });
    const last = s => s.points.length ? s.points[s.points.length - 1].lag : 0;
    // The groups furthest behind now, by name among equals.
    const shown = data.groups.slice().sort((a, b) => last(b) - last(a) || (a.group < b.group ? -1 : 1)).slice(0, CHART_GROUPS);
    const now = Date.now();
    let oldest = now, maxLag = 1;
    for (const s of shown) for (const p of s.points) { maxLag = Math.max(maxLag, p.lag); oldest = Math.min(oldest, p.t); }
    const span = Math.min(Math.max(now - oldest, 60000), Math.max(data.intervalMs * data.capacity, 60000));
    const x = t => L + (W - L - R) * (1 - Math.min(span, Math.max(0, now - t)) / span);
    const y = v => T + (H - T - B) * (1 - v / maxLag);
    chart.append(svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
    chart.append(svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
    for (const f of maxLag >= 2 ? [0, 0.5, 1] : [0, 1]) {
      const label = svg("text", { x: L - 6, y: y(maxLag * f) + 4, "text-anchor": "end" });
      label.textContent = num(Math.round(maxLag * f));
      chart.append(label);
    }
    const left = svg("text", { x: L, y: H - 8 }); left.textContent = "-" + duration(span);
    const right = svg("text", { x: W - R, y: H - 8, "text-anchor": "end" }); right.textContent = "now";
    chart.append(left, right);
    const legend = el("div", { class: "legend" });
    const style = i => ({ color: COLORS[i % COLORS.length], dash: DASHES[i % DASHES.length], width: Math.max(1.5, 2 + 0.5 * (shown.length - 1 - i)) });
    shown.forEach((s, i) => {
      const st = style(i);
      const line = svg("polyline", { fill: "none", stroke: st.color, "stroke-width": st.width, "stroke-dasharray": st.dash, "stroke-linejoin": "round",
        "data-group": s.group, points: s.points.map(p => x(p.t).toFixed(1) + "," + y(p.lag).toFixed(1)).join(" ") });
      const title = svg("title");
      title.textContent = s.group;
      line.append(title);
      chart.append(line);
    });
    // The last samples as markers of growing size, drawn after the lines
    // so that equal values still show each group's marker.
    shown.forEach((s, i) => {
      if (!s.points.length) return;
      const st = style(i);
      const p = s.points[s.points.length - 1];
      const dot = svg("circle", { cx: x(p.t).toFixed(1), cy: y(p.lag).toFixed(1), r: 3 + 1.5 * (shown.length - 1 - i), fill: "none", stroke: st.color, "stroke-width": 2, "data-group": s.group, "data-lag": p.lag });
      const t2 = svg("title");
      t2.textContent = s.group + ": " + num(p.lag);
      dot.append(t2);
      chart.append(dot);
      const swatch = svg("svg", { viewBox: "0 0 28 10" });
      swatch.append(svg("line", { x1: 0, y1: 5, x2: 28, y2: 5, stroke: st.color, "stroke-width": 3, "stroke-dasharray": st.dash }));
      legend.append(el("span", {}, swatch, groupLink(s.group), " (" + num(last(s)) + ")"));
    });
    const out = [chart, legend];
    if (data.groups.length > shown.length) out.push(el("p", { class: "note" }, "The " + shown.length + " groups furthest behind of " + num(data.groups.length) + " sampled."));
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
      root.replaceChildren(el("p", { class: "empty" }, "No Iceberg tables among the topics shown above."));
      return;
    }
    root.replaceChildren(el("p", { class: "note" }, "The tables of the topics shown above."), table([{ label: "Topic", text: true }, { label: "Table", text: true }, { label: "Last snapshot", text: true }, { label: "Snapshot time" },
      { label: "Rows" }, { label: "Data files" }, { label: "Data bytes" }, { label: "Rejected rows" }, { label: "Last maintained" },
      { label: "Lag (records)" }, { label: "Lag (bytes)" }, { label: "Lag (time)" }],
      data.tables.map(t => el("tr", { "data-table": t.namespace + "." + t.table },
        el("td", { class: "text name" }, topicLink(t.topic)),
        el("td", { class: "text name" }, t.namespace + "." + t.table),
        el("td", { class: "text" }, t.snapshotId ? String(t.snapshotId) : "—"),
        cell(t.snapshotId ? iso(t.snapshotTime) : "—"),
        cell(num(t.rows)),
        cell(num(t.dataFiles)),
        cell(bytes(t.dataBytes)),
        cell(num(t.rejectedRows)),
        cell(iso(t.maintainedTime)),
        cell(num(t.compactionLagRecords)),
        cell(bytes(t.compactionLagBytes)),
        cell(t.compactionLagMs ? duration(t.compactionLagMs) : "—")))));
  }

  // route is what the hash asks for: a topic, a group or the overview.
  function route() {
    const h = decodeURIComponent(location.hash.slice(1));
    if (h.startsWith("topic/")) return { kind: "topic", name: h.slice(6) };
    if (h.startsWith("group/")) return { kind: "group", name: h.slice(6) };
    return { kind: "overview", anchor: h };
  }

  let rounds = 0, scrolledTo = null;
  async function refresh() {
    const status = document.getElementById("status");
    const r = route();
    document.getElementById("overview").hidden = r.kind !== "overview";
    document.getElementById("detail").hidden = r.kind === "overview";
    const parts = [["summary", renderSummary]];
    if (r.kind === "topic") parts.push(["topic?name=" + encodeURIComponent(r.name) + "&limit=" + PARTITIONS, renderTopicPage]);
    else if (r.kind === "group") parts.push(["group?name=" + encodeURIComponent(r.name) + "&limit=" + PARTITIONS, renderGroupPage]);
    else {
      // The Iceberg section follows the topics' search and page.
      parts.push([listQuery("topics", PAGE), renderTopics], [listQuery("groups", PAGE), renderGroups], ["lag", renderLag],
        [listQuery("topics", PAGE).replace(/^topics/, "iceberg"), renderIceberg]);
    }
    const results = await Promise.allSettled(parts.map(([p]) => get(p)));
    const errors = [];
    results.forEach((res, i) => {
      if (res.status === "fulfilled") parts[i][1](res.value);
      else errors.push(res.reason.message);
    });
    rounds++;
    status.className = "status" + (errors.length ? " error" : "");
    status.textContent = errors.length ? "error: " + errors.join("; ") : "updated " + iso(Date.now());
    // An anchor works once the content it points into has loaded.
    const target = r.kind === "overview" ? r.anchor : r.kind + "-title";
    if (!errors.length && target && scrolledTo !== location.hash) {
      const e = document.getElementById(target);
      if (e) { e.scrollIntoView(); scrolledTo = location.hash; document.body.setAttribute("data-scrolled", target); }
    }
    document.body.setAttribute("data-rounds", rounds);
    document.body.setAttribute("data-route", r.kind);
    if (!errors.length) document.body.setAttribute("data-ready", "1");
  }

  let timer = null;
  function schedule() {
    clearTimeout(timer);
    refresh().finally(() => { timer = setTimeout(schedule, REFRESH_MS); });
  }
  for (const name of Object.keys(lists)) {
    let typing = null;
    document.getElementById(name + "-q").addEventListener("input", e => {
      clearTimeout(typing);
      typing = setTimeout(() => { lists[name].q = e.target.value.trim(); lists[name].offset = 0; schedule(); }, 200);
    });
  }
  window.addEventListener("hashchange", () => { scrolledTo = null; rounds = 0; document.body.removeAttribute("data-ready"); schedule(); });
  // Tests and links may open the page with a search: ?topics=q&groups=q.
  const params = new URLSearchParams(location.search);
  for (const name of Object.keys(lists)) {
    if (params.get(name)) { lists[name].q = params.get(name); document.getElementById(name + "-q").value = params.get(name); }
    if (params.get(name + "-offset")) lists[name].offset = Number(params.get(name + "-offset")) || 0;
  }
  schedule();
})();
