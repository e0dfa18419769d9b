// checkrein audit view: the newest page follows the log (polls for rows newer than the last seq
// shown) and the header's verify status stays current. Rows arrive as HTML rendered and escaped by
// the server, the same renderer as the page; this script never builds markup from log values.
"use strict";
(function () {
  const policy = window.trustedTypes
    ? window.trustedTypes.createPolicy("checkrein-ui", { createHTML: (s) => s })
    : { createHTML: (s) => s };
  const KEEP_ROWS = 500;
  const POLL_MS = 1500;
  // A poll that has not answered by then is given up (the next one asks again); without it one
  // request the network or the server never answers would stop the list from following the log.
  // Each one given up doubles the wait (up to POLL_TIMEOUT_MAX_MS), so a server that needs longer
  // (a large log without its index) is not sent a new request every few seconds.
  const POLL_TIMEOUT_MS = 10000;
  const POLL_TIMEOUT_MAX_MS = 160000;

  function setHTML(el, html) { el.innerHTML = policy.createHTML(html); }

  function updateVerify(html) {
    const el = document.getElementById("verify-status");
    if (el && typeof html === "string") setHTML(el, html);
  }

  function follow(tbody) {
    const src = tbody.dataset.liveSrc;
    let last = Number(tbody.dataset.lastSeq);
    let paused = false;
    let busy = false;
    let timeoutMs = POLL_TIMEOUT_MS;
    const live = document.getElementById("live");
    const total = document.getElementById("total");
    const button = document.getElementById("pause");
    // A poll's outcome does not relabel a paused list (the button says "resume").
    const state = (s, text) => { if (live && !paused) { live.dataset.state = s; live.textContent = text; } };
    if (button) {
      button.hidden = false;
      button.addEventListener("click", () => {
        paused = !paused;
        button.textContent = paused ? "resume" : "pause";
        if (live) { live.dataset.state = paused ? "paused" : "on"; live.textContent = paused ? "paused" : "live"; }
      });
    }
    async function poll() {
      if (paused || busy || document.visibilityState === "hidden") return;
      busy = true;
      // An AbortController and a timer: `AbortSignal.timeout` is missing from older browsers.
      const giveUp = new AbortController();
      const timer = setTimeout(() => giveUp.abort(), timeoutMs);
      try {
        const sep = src.includes("?") ? "&" : "?";
        const r = await fetch(src + sep + "after=" + encodeURIComponent(last),
          { credentials: "same-origin", headers: { Accept: "application/json" }, cache: "no-store",
            signal: giveUp.signal });
        const data = await r.json();
        timeoutMs = POLL_TIMEOUT_MS;
        if (!r.ok) { state("error", data.waiting ? "waiting for the log" : "error: " + (data.error || r.status)); return; }
        state("on", "live");
        updateVerify(data.verify);
        if (total && total.dataset.exact === "1" && data.added > 0) {
          const n = Number(total.textContent.replace(/,/g, "")) + data.added;
          total.textContent = n.toLocaleString("en-US") + (data.more ? "+" : "");
          if (data.more) total.dataset.exact = "0";
        }
        if (data.added > 0) {
          const empty = document.querySelector("p.empty");
          if (empty) empty.remove();
          const tpl = document.createElement("template");
          tpl.innerHTML = policy.createHTML(data.rows);
          for (const tr of tpl.content.querySelectorAll("tr")) tr.classList.add("new");
          tbody.prepend(tpl.content);
          while (tbody.rows.length > KEEP_ROWS) tbody.deleteRow(tbody.rows.length - 1);
          setTimeout(() => { for (const tr of tbody.querySelectorAll("tr.new")) tr.classList.remove("new"); }, 2500);
          if (data.more) state("on", "live (more arrived than shown: reload for all)");
        }
        last = Math.max(last, Number(data.last_seq));
        tbody.dataset.lastSeq = String(last);
      } catch (e) {
        if (giveUp.signal.aborted) timeoutMs = Math.min(2 * timeoutMs, POLL_TIMEOUT_MAX_MS);
        state("error", "disconnected, retrying");
      } finally {
        clearTimeout(timer);
        busy = false;
      }
    }
    setInterval(poll, POLL_MS);
    document.addEventListener("visibilitychange", poll);
  }

  function verifyOnly(el) {
    const src = el.dataset.src;
    async function poll() {
      if (document.visibilityState === "hidden") return;
      try {
        const r = await fetch(src, { credentials: "same-origin", cache: "no-store" });
        if (r.ok) updateVerify((await r.json()).html);
      } catch (e) { /* the next poll tries again */ }
    }
    setInterval(poll, 5000);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const tbody = document.querySelector("tbody[data-live-src]");
    if (tbody) follow(tbody);
    else {
      const vs = document.getElementById("verify-status");
      if (vs && vs.dataset.src) verifyOnly(vs);
    }
  });
})();
