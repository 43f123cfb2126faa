// The flows page: a line chart of load per path and per telescope access link, fed by polling the flows
// endpoint (no reload), and the live table of active transfers.
"use strict";
(function () {
  const { esc, rate, getJSON, time } = window.SRCNet;
  const canvas = document.getElementById("flows-chart");
  if (!canvas) return;
  document.querySelectorAll("td[data-bps]").forEach((td) => { td.textContent = rate(Number(td.dataset.bps)); });
  const KEEP = 120; // points kept per series: 10 minutes at the default 5 s poll
  const palette = ["#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7d8c", "#57606a"];
  const chart = new Chart(canvas, {
    type: "line",
    data: { labels: [], datasets: [] },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: { y: { beginAtZero: true, title: { display: true, text: "Gbit/s" } } },
    },
  });
  canvas.chart = chart; // tests and the console read the series from here

  function series(label, dashed) {
    let ds = chart.data.datasets.find((d) => d.label === label);
    if (!ds) {
      const color = palette[chart.data.datasets.length % palette.length];
      ds = { label, data: new Array(chart.data.labels.length - 1).fill(null), borderColor: color,
        backgroundColor: color, borderDash: dashed ? [6, 3] : [], tension: 0.2, spanGaps: true };
      chart.data.datasets.push(ds);
    }
    return ds;
  }

  function activeRows(active) {
    const body = document.querySelector("#active-table tbody");
    body.innerHTML = active.length ? active.map((f) =>
      `<tr><td>${esc(f.product)}</td><td>${esc(f.source)}</td><td>${esc(f.destination)}</td>` +
      `<td>${esc(f.filesize)}</td><td>${esc(f.priority)}</td><td>${time(f.start_time)}</td></tr>`).join("")
      : `<tr><td colspan="6">No copy is running.</td></tr>`;
  }

  async function poll() {
    try {
      const snap = await getJSON(canvas.dataset.flowsUrl);
      chart.data.labels.push(time(snap.time).slice(11));
      const seen = new Set();
      for (const link of snap.access_links) {
        const ds = series("access " + link.name, true);
        ds.data.push(link.load_bps / 1e9);
        seen.add(ds);
      }
      for (const path of snap.paths) {
        const ds = series(path.name, false);
        ds.data.push(path.load_bps / 1e9);
        seen.add(ds);
      }
      // A path that stopped carrying anything drops to zero rather than vanishing.
      for (const ds of chart.data.datasets) if (!seen.has(ds)) ds.data.push(0);
      if (chart.data.labels.length > KEEP) {
        chart.data.labels.shift();
        chart.data.datasets.forEach((ds) => ds.data.shift());
      }
      chart.update();
      activeRows(snap.active);
      canvas.dataset.polls = String(Number(canvas.dataset.polls || 0) + 1);
      document.getElementById("flows-updated").textContent = "updated " + time(snap.time);
    } catch (err) {
      document.getElementById("flows-updated").textContent = "update failed: " + err.message;
    }
  }
  poll();
  setInterval(poll, Number(canvas.dataset.pollMs) || 5000);
})();
