// Helpers shared by the portal's scripts (no framework: each page is server-rendered, these add live parts).
"use strict";
window.SRCNet = (function () {
  // Escape text before it goes into innerHTML: site names and reasons come from the database.
  function esc(value) {
    return String(value === null || value === undefined ? "" : value).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }
  function rate(bps) {
    if (bps === null || bps === undefined) return "";
    const units = [["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]];
    for (const [unit, scale] of units) {
      if (bps >= scale) return (bps / scale).toFixed(bps / scale >= 100 ? 0 : 1) + " " + unit + "bit/s";
    }
    return Math.round(bps) + " bit/s";
  }
  function percent(x) { return (100 * (x || 0)).toFixed(1) + " %"; }
  // URLs are rendered by Django with a 0 placeholder id, so the scripts never hard-code routes.
  function withId(template, id) { return template.replace(/\/0\/(?!.*\/0\/)/, "/" + id + "/"); }
  async function getJSON(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(url + ": HTTP " + response.status);
    return response.json();
  }
  function time(iso) { return iso ? iso.replace("T", " ").slice(0, 19) : ""; }
  return { esc, rate, percent, withId, getJSON, time };
})();
