// The network map: an offline world (world-atlas, TopoJSON) drawn with d3, sites at their coordinates,
// links as great-circle arcs coloured by load / capacity, and a details panel fed by the JSON endpoints.
"use strict";
(function () {
  const { esc, rate, percent, withId, getJSON, time } = window.SRCNet;
  const svgNode = document.getElementById("network-map");
  if (!svgNode) return;
  const cfg = svgNode.dataset;
  const isOperator = cfg.operator === "1";
  const width = 1000, height = 520;
  const svg = d3.select(svgNode).attr("viewBox", `0 0 ${width} ${height}`);
  const projection = d3.geoNaturalEarth1().fitSize([width, height], { type: "Sphere" });
  const geoPath = d3.geoPath(projection);
  const world = svg.append("g").attr("class", "world");
  const layers = {
    sphere: world.append("path").attr("class", "sphere").attr("d", geoPath({ type: "Sphere" })),
    land: world.append("g").attr("class", "land"),
    links: world.append("g").attr("class", "links"),
    sites: world.append("g").attr("class", "sites"),
  };
  // Wheel and drag zoom: Europe's ten SRCs sit within a few hundred kilometres of each other. Marks and
  // labels keep their size on screen (vector-effect for strokes, a counter-scale for the site groups).
  let scale = 1;
  svg.call(d3.zoom().scaleExtent([1, 12]).translateExtent([[0, 0], [width, height]]).on("zoom", (event) => {
    scale = event.transform.k;
    world.attr("transform", event.transform);
    layers.sites.selectAll("g.site").attr("transform", siteTransform);
  }));
  function siteTransform(d) { return `translate(${projection([d.longitude, d.latitude])}) scale(${1 / scale})`; }
  const details = document.getElementById("details");
  // Each click asks the server for its details; answers can come back out of order (a slow path history
  // after a quick site), so the panel shows only the answer to the latest click.
  let latestClick = 0;
  async function fetchForPanel(url) {
    const ticket = ++latestClick;
    const answer = await getJSON(url);
    return ticket === latestClick ? answer : null;
  }
  let net = null;
  let chart = null;
  // PoPs first so that a telescope or SRC sharing their coordinates is drawn (and clicked) on top.
  // A product's route (/topology/map/?product=<id>): the links and sites its copies' legs use, computed by
  // the server (operations/product_route.py) and kept highlighted across refreshes and clicks.
  const routeNode = document.getElementById("product-route");
  const route = routeNode ? JSON.parse(routeNode.textContent) : null;
  const routeLinks = new Set(route ? route.links : []), routeSites = new Set(route ? route.sites : []);
  const drawOrder = { pop: 0, distribution_centre: 1, src: 2, telescope: 3 };
  const radius = { pop: 3, distribution_centre: 5, src: 5, telescope: 7 };

  function drawWorld(world) {
    const countries = topojson.feature(world, world.objects.countries);
    layers.land.selectAll("path").data(countries.features).join("path").attr("d", geoPath);
  }

  function linkGeometry(link, sites) {
    const a = sites.get(link.a), b = sites.get(link.b);
    return { type: "LineString", coordinates: [[a.longitude, a.latitude], [b.longitude, b.latitude]] };
  }

  function drawNetwork() {
    const sites = new Map(net.sites.map((s) => [s.id, s]));
    layers.links.selectAll("path.link")
      .data(net.links, (d) => d.id)
      .join("path")
      .attr("d", (d) => geoPath(linkGeometry(d, sites)))
      .attr("id", (d) => "link-" + d.name)
      .attr("data-link-name", (d) => d.name)
      .attr("class", (d) => `link level-${d.level} kind-${d.kind}${d.is_up ? "" : " down"}${routeLinks.has(d.id) ? " route" : ""}`)
      .attr("stroke-width", (d) => Math.max(1.5, Math.log10(d.capacity_bps / 1e9 + 1) * 2.2))
      .on("click", (event, d) => showLink(d.id))
      .selectAll("title").data((d) => [d]).join("title")
      .text((d) => `${d.name}: ${rate(d.load_bps)} of ${rate(d.capacity_bps)} (${percent(d.utilisation)})`);
    const ordered = net.sites.slice().sort((a, b) => drawOrder[a.kind] - drawOrder[b.kind]);
    const groups = layers.sites.selectAll("g.site")
      .data(ordered, (d) => d.id)
      .join((enter) => {
        const g = enter.append("g");
        g.append("circle");
        g.append("text");
        return g;
      })
      .attr("class", (d) => `site kind-${d.kind}${routeSites.has(d.id) ? " route" : ""}`)
      .attr("id", (d) => "site-" + d.name)
      .attr("data-site-name", (d) => d.name)
      .attr("transform", siteTransform)
      .on("click", (event, d) => showSite(d.id));
    groups.select("circle").attr("r", (d) => radius[d.kind]);
    groups.select("text").attr("x", 7).attr("y", 3).text((d) => (d.kind === "pop" ? "" : d.name));
    document.getElementById("map-updated").textContent = "updated " + time(net.time);
  }

  function highlight(linkIds, siteIds) {
    const links = new Set(linkIds || []), sites = new Set(siteIds || []);
    layers.links.selectAll("path.link").classed("highlight", (d) => links.has(d.id));
    layers.sites.selectAll("g.site").classed("highlight", (d) => sites.has(d.id));
  }

  function table(headers, rows) {
    return `<table class="objects compact"><thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join("")}` +
      `</tr></thead><tbody>${rows.join("") || `<tr><td colspan="${headers.length}">none</td></tr>`}</tbody></table>`;
  }

  function facts(pairs) {
    return `<table class="objects facts">${pairs.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${v}</td></tr>`).join("")}</table>`;
  }

  function wireLinks() {
    details.querySelectorAll("[data-path-id]").forEach((el) =>
      el.addEventListener("click", (e) => { e.preventDefault(); showPath(el.dataset.pathId); }));
    details.querySelectorAll("[data-link-id]").forEach((el) =>
      el.addEventListener("click", (e) => { e.preventDefault(); showLink(el.dataset.linkId); }));
  }

  async function showSite(id) {
    const s = await fetchForPanel(withId(cfg.siteUrl, id));
    if (!s) return;
    highlight(s.links.map((l) => l.id), [s.id]);
    details.innerHTML = `<h2 class="site-title">${esc(s.name)}</h2><p>${esc(s.kind_display)}, ${esc(s.country)} ` +
      `(${s.latitude.toFixed(2)}, ${s.longitude.toFixed(2)})</p><p class="muted">${esc(s.description)}</p>` +
      (s.storage.length ? "<h3>Storage</h3>" + table(["Endpoint", "Role", "Elements"],
        s.storage.map((e) => `<tr><td>${esc(e.name)}</td><td>${esc(e.role)}</td><td>${e.elements.map(esc).join("<br>")}</td></tr>`)) : "") +
      "<h3>Links</h3>" + table(["Link", "To", "Capacity", "RTT", "Load"],
        s.links.map((l) => `<tr><td><a href="#" data-link-id="${l.id}">${esc(l.name)}</a></td><td>${esc(l.other)}</td>` +
          `<td>${rate(l.capacity_bps)}</td><td>${l.rtt_ms} ms</td><td>${rate(l.load_bps)}</td></tr>`)) +
      "<h3>Paths</h3>" + table(["Path", "RTT", "Bottleneck", "Load"],
        s.paths.map((p) => `<tr><td><a href="#" class="path-link" data-path-id="${p.id}">${esc(p.source)} → ${esc(p.destination)}</a></td>` +
          `<td>${p.rtt_ms.toFixed(1)} ms</td><td>${rate(p.capacity_bps)}</td><td>${rate(p.load_bps)}</td></tr>`));
    wireLinks();
  }

  async function showLink(id) {
    const l = await fetchForPanel(withId(cfg.linkUrl, id));
    if (!l) return;
    highlight([l.id], []);
    details.innerHTML = `<h2 class="link-title">Link ${esc(l.name)}</h2>` + facts([
      ["Ends", `${esc(l.a)} – ${esc(l.b)}`], ["Kind", esc(l.kind)], ["Owner", esc(l.owner)],
      ["Capacity", rate(l.capacity_bps)], ["RTT", `${l.rtt_ms} ms`], ["Loss", String(l.loss_rate)],
      ["Per-flow TCP ceiling (1 GiB window)", rate(l.per_flow_ceiling_bps)],
      ["Load", `${rate(l.load_bps)} (${percent(l.utilisation)})`], ["Up", l.is_up ? "yes" : "no"],
    ]) + "<h3>Paths through it</h3>" + table(["Path", "Load"], l.paths.map((p) =>
      `<tr><td><a href="#" class="path-link" data-path-id="${p.id}">${esc(p.source)} → ${esc(p.destination)}</a></td><td>${rate(p.load_bps)}</td></tr>`));
    wireLinks();
  }

  async function showPath(id) {
    const p = await fetchForPanel(withId(cfg.pathUrl, id));
    if (!p) return;
    const path = net.paths.find((x) => x.id === p.id);
    highlight(path ? path.links : [], path ? [path.source, path.destination] : []);
    const next = "?next=" + encodeURIComponent(window.location.pathname);
    const action = !isOperator ? "" : p.paused
      ? `<a class="button" id="resume-path" href="${withId(cfg.resumeUrl, p.id)}${next}">Resume this path</a>`
      : `<a class="button danger" id="pause-path" href="${withId(cfg.pauseUrl, p.id)}${next}">Pause this path</a>`;
    details.innerHTML = `<h2 class="path-title">${esc(p.source)} → ${esc(p.destination)}</h2>` + facts([
      ["Links", p.links.map(esc).join(" → ")], ["VRF", esc(p.vrf || "")], ["RTT", `${p.rtt_ms.toFixed(1)} ms`],
      ["Capacity (bottleneck)", rate(p.capacity_bps)],
      ["Per-flow TCP ceiling (1 GiB window)", `<span id="path-ceiling">${rate(p.per_flow_ceiling_bps)}</span>`],
      ["Load now", `${rate(p.load_bps)} (${percent(p.utilisation)})`],
      ["Active flows", String(p.active)], ["Queued files", String(p.queued)],
      ["Paused", p.paused ? "<strong>yes</strong>" : "no"],
    ]) + action +
      "<h3>Active flows</h3>" + table(["Product", "Destination", "Bytes", "Started"], p.flows.map((f) =>
        `<tr><td>${esc(f.product)}</td><td>${esc(f.destination)}</td><td>${esc(f.filesize)}</td><td>${time(f.start_time)}</td></tr>`)) +
      `<h3>Measured throughput (finished files)</h3>` +
      (p.history.length ? `<canvas id="path-history" height="160"></canvas>` : `<p class="muted">No finished transfer on this path yet.</p>`);
    if (chart) { chart.destroy(); chart = null; }
    if (p.history.length) {
      // Gbit/s on the long-haul paths, Mbit/s for the local network's small copies.
      const peak = Math.max(...p.history.map((h) => h.throughput_bps));
      const unit = peak >= 1e9 ? { name: "Gbit/s", scale: 1e9 } : { name: "Mbit/s", scale: 1e6 };
      chart = new Chart(document.getElementById("path-history"), {
        type: "line",
        data: {
          labels: p.history.map((h) => time(h.time).slice(11)),
          datasets: [{ label: `${unit.name} per file`, data: p.history.map((h) => h.throughput_bps / unit.scale), borderColor: "#1f6feb", tension: 0.2 }],
        },
        options: { animation: false, scales: { y: { beginAtZero: true, title: { display: true, text: unit.name } } } },
      });
    }
  }

  async function refresh() {
    try {
      const fresh = await getJSON(cfg.networkUrl + "?paths=0");
      net.links = fresh.links;
      net.time = fresh.time;
      drawNetwork();
    } catch (err) {
      document.getElementById("map-updated").textContent = "update failed: " + err.message;
    }
  }

  Promise.all([getJSON(cfg.worldUrl), getJSON(cfg.networkUrl)]).then(([world, network]) => {
    drawWorld(world);
    net = network;
    drawNetwork();
    svgNode.dataset.ready = "1";
    setInterval(refresh, Number(cfg.refreshMs) || 10000);
  });
})();
