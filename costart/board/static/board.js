// The board's live part: follow the watch stream with EventSource and re-read what an
// event touched (a group's row, or the group page's body), and the waiting groups when
// the stream says new expected starts were planned. No polling loop: a fetch runs only
// when an event arrived. After a dropped connection, a "close" frame or a
// failover, it reconnects from the last position it saw (?after=), backing off. When
// its own server stays gone and the server names peers (serve --peer), it asks them
// who leads and loads the same page there (ADR 0117).
"use strict";

(function () {
  const body = document.body;
  const page = body.dataset.page;
  if (!page) return; // the login page
  const live = document.getElementById("live");
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const types = (body.dataset.events || "").split(" ").filter(Boolean);
  let last = body.dataset.position || "0"; // the last log position seen
  let source = null;
  let backoff = 250;
  let timer = null;
  const peers = (body.dataset.peers || "").split(" ").filter(Boolean);
  let failures = 0; // stream errors since it last opened
  let searching = false;
  // The server sends a keepalive event after 15 s without an event: silence for longer
  // means it stopped answering without closing (hung, or cut off), which EventSource
  // never reports. Opening gets less time: a stopped server may accept and say nothing.
  const SILENT_MS = 35000;
  const OPENING_MS = 10000;
  let watchdog = null;

  function say(text, cls) {
    live.textContent = text;
    live.className = "live " + cls;
  }

  function streamUrl() {
    const q = new URLSearchParams({ after: last });
    if (page === "group") q.set("group", body.dataset.group);
    return "/board/watch?" + q.toString();
  }

  function heard(ms) {
    if (watchdog !== null) clearTimeout(watchdog);
    watchdog = setTimeout(lost, ms);
  }

  function lost() {
    // Reconnect ourselves from the last position seen: the browser's own retry does
    // not survive an answer that is not a stream (a restarting or standby server).
    if (watchdog !== null) clearTimeout(watchdog);
    watchdog = null;
    source.close();
    say("reconnecting", "live-off");
    if (timer === null) timer = setTimeout(connect, backoff);
    backoff = Math.min(backoff * 2, 5000);
    failures += 1;
    if (failures >= 2 && peers.length) findLeader();
  }

  function connect() {
    timer = null;
    source = new EventSource(streamUrl());
    heard(OPENING_MS);
    source.onopen = function () {
      backoff = 250;
      failures = 0;
      heard(SILENT_MS);
      say("live", "live-on");
    };
    source.onerror = lost;
    source.addEventListener("keepalive", function () { heard(SILENT_MS); });
    source.addEventListener("close", function (e) {
      if (watchdog !== null) clearTimeout(watchdog);
      watchdog = null;
      source.close();
      const said = JSON.parse(e.data);
      if (typeof said.resume_after === "number") last = String(said.resume_after);
      say("reconnecting", "live-off");
      if (timer === null) timer = setTimeout(connect, 0);
    });
    for (const type of types) source.addEventListener(type, onEvent);
    source.addEventListener("expected-starts", onEstimates);
  }

  // --- failover: the same page on the peer that leads now ---------------------------
  async function findLeader() {
    if (searching) return;
    searching = true;
    try {
      for (const peer of peers) {
        let leading = false;
        try {
          // No credentials: only a leader's answer is readable here (its CORS header
          // names this page's origin); a standby's 503 or a dead server is an error.
          const answer = await fetch(peer + "/board/leader", {
            mode: "cors", credentials: "omit", cache: "no-store",
          });
          leading = answer.ok && (await answer.json()).leading === true;
        } catch (_) { /* not this one */ }
        if (leading && failures > 0) return moveTo(peer);
      }
    } finally {
      searching = false;
    }
  }

  function moveTo(peer) {
    if (timer !== null) clearTimeout(timer);
    if (watchdog !== null) clearTimeout(watchdog);
    timer = -1; // no reconnect here: the page is leaving
    source.close();
    say("moving to " + peer, "live-off");
    const q = new URLSearchParams(location.search);
    q.set("seen", last); // the new page checks its server has at least this much
    location.assign(peer + location.pathname + "?" + q.toString());
  }

  function arrived() {
    // A page loaded by a move: say so, and fail loudly if this server's log is behind
    // the position the old page had seen (it was rendered at ``last``).
    const q = new URLSearchParams(location.search);
    const seen = q.get("seen");
    if (seen === null) return;
    q.delete("seen");
    const rest = q.toString();
    history.replaceState(null, "", location.pathname + (rest ? "?" + rest : ""));
    if (!/^[0-9]{1,19}$/.test(seen)) return;
    const note = document.createElement("p");
    note.id = "moved";
    if (BigInt(seen) > BigInt(last)) {
      note.className = "error";
      note.textContent = "This server's log ends at position " + last + ", before position " +
        seen + " that the page had already shown: events may be missing here.";
    } else {
      note.className = "moved";
      note.textContent = "Moved here: the server this page was on stopped answering " +
        "(it had shown the log up to position " + seen + ").";
    }
    document.querySelector("main").prepend(note);
  }

  function onEvent(e) {
    heard(SILENT_MS);
    if (e.lastEventId) last = e.lastEventId;
    const data = JSON.parse(e.data);
    if (page === "groups") {
      // A pend reason's new words wait behind a state change: a scheduling session can
      // restate the reasons of a thousand queued groups at once.
      if (data.group) wantRow(data.group, e.type !== "PendReasonChanged");
    } else {
      wantBody();
    }
  }

  // New expected starts were planned (a hint, not a log event: no id to resume from).
  // Only waiting groups have one, so only their rows (or a waiting group's page) are
  // read again, after the rows that changed state.
  function onEstimates() {
    heard(SILENT_MS);
    if (page === "groups") {
      document.querySelectorAll("#groups tr.group").forEach(function (row) {
        const s = row.dataset.state;
        if (s === "PENDING" || s === "RESERVING") wantRow(row.dataset.group, false);
      });
    } else {
      const state = document.getElementById("group-state");
      const s = state ? state.textContent : "";
      if (s === "PENDING" || s === "RESERVING") wantBody();
    }
  }

  // --- the groups table -----------------------------------------------------------
  const urgent = new Set(); // rows whose state or counts changed
  const pending = new Set(); // rows whose pend reason changed
  let reading = false;

  function wantRow(name, isUrgent) {
    (isUrgent ? urgent : pending).add(name);
    if (!reading) readRows();
  }

  function nextNames() {
    const names = Array.from(urgent.size ? urgent : pending).slice(0, 64);
    names.forEach((n) => { urgent.delete(n); pending.delete(n); });
    return names;
  }

  async function readRows() {
    reading = true;
    try {
      while (urgent.size || pending.size) {
        const names = nextNames();
        const q = new URLSearchParams(body.dataset.filter || "");
        names.forEach((n) => q.append("name", n));
        q.set("at", last); // the rows as of the last event seen, at least
        let answer = null;
        try {
          answer = await fetch("/board/rows?" + q.toString(), { credentials: "same-origin" });
        } catch (_) { /* the server is away: tried again below */ }
        if (answer && answer.status === 401) return location.assign("/");
        if (!answer || !answer.ok) {
          // Not lost: asked again after a pause (a restart or a failover under way).
          names.forEach((n) => urgent.add(n));
          await new Promise((done) => setTimeout(done, 500));
          continue;
        }
        placeRows(await answer.json());
      }
    } finally {
      reading = false;
    }
  }

  function placeRows(rows) {
    const table = document.getElementById("groups");
    for (const [name, html] of Object.entries(rows)) {
      const old = document.getElementById("group-" + name);
      if (html === null) {
        if (old) old.remove();
        continue;
      }
      const t = document.createElement("template");
      t.innerHTML = html;
      const row = t.content.firstElementChild;
      if (old) old.replaceWith(row);
      else table.appendChild(row);
    }
  }

  // --- a group's page -------------------------------------------------------------
  let bodyWanted = false;
  let bodyReading = false;

  function wantBody() {
    bodyWanted = true;
    if (!bodyReading) readBody();
  }

  async function readBody() {
    bodyReading = true;
    try {
      while (bodyWanted) {
        bodyWanted = false;
        const url = "/board/groups/" + encodeURIComponent(body.dataset.group) + "/body";
        let answer = null;
        try {
          answer = await fetch(url, { credentials: "same-origin" });
        } catch (_) { /* the server is away: tried again below */ }
        if (answer && answer.status === 401) return location.assign("/");
        if (answer && answer.ok) {
          document.getElementById("group-body").innerHTML = await answer.text();
        } else {
          bodyWanted = true;
          await new Promise((done) => setTimeout(done, 500));
        }
      }
    } finally {
      bodyReading = false;
    }
  }

  // --- writes: cancel and scale (the session's CSRF token, same-origin only) --------
  async function write(url, what) {
    const shown = document.getElementById("action-result");
    const answer = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf },
    });
    let text = answer.ok ? what + ": done" : what + " refused: HTTP " + answer.status;
    if (!answer.ok) {
      try {
        const said = await answer.json();
        const why = said.detail || said.error || said.title;
        if (why) text += ": " + why;
      } catch (_) { /* not JSON: the status says it */ }
    }
    if (shown) shown.textContent = text;
  }

  document.addEventListener("click", function (e) {
    const button = e.target.closest("#cancel");
    if (!button) return;
    if (button.dataset.armed !== "1") {
      button.dataset.armed = "1";
      button.textContent = "really cancel?";
      return;
    }
    const group = encodeURIComponent(button.dataset.group);
    write("/board/groups/" + group + "/cancel", "cancel");
  });

  document.addEventListener("submit", function (e) {
    const form = e.target.closest("form.scale");
    if (!form) return;
    e.preventDefault();
    const group = encodeURIComponent(body.dataset.group);
    const member = encodeURIComponent(form.dataset.member);
    const replicas = encodeURIComponent(form.elements.replicas.value);
    write(`/board/groups/${group}/members/${member}/scale?replicas=${replicas}`, "scale");
  });

  arrived();
  connect();
})();
