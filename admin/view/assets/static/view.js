// Keeps a pulsarsim view page up to date: the server announces each new
// event sequence number (server-sent events), and the page fetches its own
// main part again, one fetch at a time, at most twice a second, and less
// often when a refresh is slow (a big topic), so the page never spends more
// than a fifth of its time refreshing. The button in the bar pauses and
// resumes the updates.
(function () {
  "use strict";
  var main = document.getElementById("main");
  var live = document.getElementById("live");
  if (!main || !live || !window.EventSource) return;
  var paused = false, busy = false, again = false, last = 0, seen = main.dataset.seq || "";
  var refreshes = 0, gap = 500;

  function show(state, text) {
    live.dataset.state = state;
    live.textContent = text;
  }

  function refresh() {
    if (paused) return;
    if (busy) { again = true; return; }
    var wait = gap - (Date.now() - last);
    if (wait > 0) { busy = true; setTimeout(function () { busy = false; refresh(); }, wait); return; }
    busy = true; again = false; last = Date.now();
    var t0 = performance.now();
    fetch(location.href, { headers: { "X-View-Part": "main" }, cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        main.innerHTML = html;
        refreshes++;
        main.dataset.refreshes = refreshes;
        var took = performance.now() - t0;
        main.dataset.refreshMs = took.toFixed(1);
        gap = Math.max(500, 5 * took);
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) refresh(); });
  }

  var es = new EventSource("events");
  es.onmessage = function (e) {
    if (!paused) show("on", "live · event " + e.data);
    main.dataset.seq = e.data;
    if (seen !== "" && e.data !== seen) refresh();
    seen = e.data;
  };
  es.onerror = function () { if (!paused) show("lost", "reconnecting"); };
  live.addEventListener("click", function () {
    paused = !paused;
    if (paused) show("paused", "paused");
    else { show("on", "live"); refresh(); }
  });
})();
