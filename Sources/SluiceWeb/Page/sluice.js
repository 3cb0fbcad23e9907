// The page of `sluice serve --http`: the graph drawn from /api/graph, commands and events over
// the WebSocket at /ws (the control socket's JSON requests, one a message). No dependencies.
"use strict";

const token = new URLSearchParams(location.search).get("token");
const withToken = (path) => token ? `${path}?token=${encodeURIComponent(token)}` : path;
const $ = (id) => document.getElementById(id);
const svgNS = "http://www.w3.org/2000/svg";

let socket = null;
let nextId = 1;
const waiting = new Map();      // request id → callback for its reply
const controls = new Map();     // "node/parameter" → {input, output, applied}
const spokenAt = new Map();     // first utterance of a speak → when it was sent (ms)
const utterances = new Map();   // utterance id → its list item
const linkFills = new Map();    // link name → its fill bar, capacity (s) and path

function send(request, onReply) {
  if (!socket || socket.readyState !== WebSocket.OPEN) return false;
  const id = nextId++;
  if (onReply) waiting.set(id, onReply);
  socket.send(JSON.stringify({ ...request, id }));
  return true;
}

function decibels(peak) {
  return peak > 0 ? `${(20 * Math.log10(peak)).toFixed(1)} dB` : "−∞ dB";
}

function logEvent(text, isError) {
  const list = $("events");
  const item = document.createElement("li");
  item.textContent = text;
  if (isError) item.className = "error";
  list.prepend(item);
  while (list.children.length > 200) list.lastChild.remove();
}

// MARK: The graph

function drawGraph(shape) {
  $("graph-name").textContent = shape.graph;
  document.title = `Sluice: ${shape.graph}`;
  const svg = $("graph");
  svg.replaceChildren();
  linkFills.clear();
  const index = new Map(shape.nodes.map((node, i) => [node.name, i]));
  // Columns by longest path from a source: nodes come in topological order.
  const column = shape.nodes.map(() => 0);
  for (const link of shape.links) {
    const from = index.get(link.from), to = index.get(link.to);
    column[to] = Math.max(column[to], column[from] + 1);
  }
  const rows = [];
  const place = shape.nodes.map((node, i) => {
    const row = rows[column[i]] = (rows[column[i]] ?? -1) + 1;
    return { x: 20 + column[i] * 190, y: 20 + row * 70 };
  });
  const width = 150, height = 46;
  const defs = document.createElementNS(svgNS, "defs");
  defs.innerHTML = '<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="currentColor"/></marker>';
  svg.append(defs);
  for (const link of shape.links) {
    const a = place[index.get(link.from)], b = place[index.get(link.to)];
    const path = document.createElementNS(svgNS, "path");
    const x1 = a.x + width, y1 = a.y + height / 2, x2 = b.x, y2 = b.y + height / 2;
    path.setAttribute("d", `M ${x1} ${y1} C ${x1 + 30} ${y1}, ${x2 - 30} ${y2}, ${x2} ${y2}`);
    path.setAttribute("class", `link ${link.whenFull}`);
    path.dataset.link = `${link.from}.${link.fromPort} -> ${link.to}.${link.toPort}`;
    const title = document.createElementNS(svgNS, "title");
    title.textContent = `${link.from}.${link.fromPort} → ${link.to}.${link.toPort}: ${link.format}` + (link.whenFull === "block" ? "" : ` (${link.whenFull})`);
    path.append(title);
    svg.append(path);
    if (link.capacity !== null) {
      // The link's buffer: a bar at the middle of the link, filled as the level events say.
      const bar = document.createElementNS(svgNS, "g");
      bar.setAttribute("class", "fill");
      bar.setAttribute("transform", `translate(${(x1 + x2) / 2 - 20} ${(y1 + y2) / 2 - 14})`);
      bar.innerHTML = '<rect class="room" width="40" height="6"></rect><rect class="held" width="0" height="6"></rect><title></title>';
      bar.lastChild.textContent = `${link.name}: holds up to ${(link.capacity * 1000).toFixed(0)} ms`;
      linkFills.set(link.name, { bar, capacity: link.capacity, title: bar.lastChild, path, held: undefined, width: undefined });
      bar.addEventListener("pointerenter", () => describeLinkFill(link.name));
      svg.append(bar);
    }
  }
  shape.nodes.forEach((node, i) => {
    const group = document.createElementNS(svgNS, "g");
    group.setAttribute("class", `node ${node.placement}`);
    group.setAttribute("transform", `translate(${place[i].x} ${place[i].y})`);
    group.dataset.node = node.name;
    group.innerHTML = `<rect width="${width}" height="${height}"></rect><text x="8" y="19"></text><text class="type" x="8" y="36"></text>`;
    group.children[1].textContent = node.name;
    group.children[2].textContent = `${node.type} · ${node.placement}`;
    const title = document.createElementNS(svgNS, "title");
    title.textContent = `${node.name} (${node.type}), ${node.placement}; out: ${node.formats.join(", ") || "none"}`;
    group.append(title);
    svg.append(group);
  });
  const columns = Math.max(...column, 0) + 1, most = Math.max(...rows, 0) + 1;
  svg.setAttribute("viewBox", `0 0 ${columns * 190 + 20} ${most * 70 + 20}`);
  svg.style.height = `${Math.min(most * 70 + 20, 420)}px`;
}

// MARK: Live parameters

function drawControls(shape) {
  const box = $("controls");
  box.replaceChildren();
  controls.clear();
  for (const node of shape.nodes) {
    for (const parameter of node.parameters) {
      const key = `${node.name}/${parameter.name}`;
      const row = document.createElement("div");
      row.className = "control";
      const label = document.createElement("label");
      label.textContent = `${node.name} ${parameter.name}` + (parameter.unit ? ` (${parameter.unit})` : "");
      const output = document.createElement("output");
      const applied = document.createElement("div");
      applied.className = "applied";
      let input;
      if (parameter.values && parameter.values.length > 0) {
        // A number that picks one of a set (an LV2 enumeration): its values by name.
        input = document.createElement("select");
        for (const named of parameter.values) {
          const option = document.createElement("option");
          option.value = named.value;
          option.textContent = named.label;
          input.append(option);
        }
        input.value = String(parameter.value ?? parameter.values[0].value);
        output.textContent = input.value;
        input.addEventListener("change", () => {
          output.textContent = input.value;
          setParameter(node.name, parameter.name, Number(input.value));
        });
      } else if (parameter.type === "boolean" || (parameter.type === "integer" && parameter.minimum === 0 && parameter.maximum === 1)) {
        // A switch: booleans, and integers 0…1 (an LV2 toggle, as x42's "enable").
        input = document.createElement("input");
        input.type = "checkbox";
        input.checked = parameter.value === true || parameter.value === 1;
        input.addEventListener("change", () => setParameter(node.name, parameter.name, input.checked ? 1 : 0));
        output.textContent = String(input.checked);
      } else if (parameter.type === "number" || parameter.type === "integer") {
        input = document.createElement("input");
        input.type = "range";
        input.min = parameter.minimum;
        input.max = parameter.maximum;
        const span = parameter.maximum - parameter.minimum;
        input.step = parameter.type === "integer" ? 1 : (span > 0 ? span / 1000 : "any");
        input.value = typeof parameter.value === "number" ? parameter.value : parameter.minimum;
        output.textContent = input.value;
        input.addEventListener("input", () => {
          output.textContent = input.value;
          setParameter(node.name, parameter.name, Number(input.value));
        });
      } else {
        continue; // strings, paths and named choices are set in the graph file (not live)
      }
      input.id = `control-${key}`;
      input.dataset.node = node.name;
      input.dataset.parameter = parameter.name;
      label.htmlFor = input.id;
      applied.dataset.applied = key;
      row.append(label, input, output, applied);
      box.append(row);
      controls.set(key, { input, output, applied });
    }
  }
  if (controls.size === 0) box.innerHTML = '<p class="empty">no live parameters</p>';
}

// While a slider moves, only the latest value waits: one request in flight per parameter.
const inFlight = new Map();
function setParameter(node, parameter, value) {
  const key = `${node}/${parameter}`;
  if (inFlight.has(key)) { inFlight.set(key, value); return; }
  inFlight.set(key, undefined);
  send({ command: "set", node, parameter, value }, (reply) => {
    showApplied(key, reply);
    const next = inFlight.get(key);
    inFlight.delete(key);
    if (next !== undefined) setParameter(node, parameter, next);
  });
}

function showApplied(key, fields) {
  const control = controls.get(key);
  if (!control) return;
  if (fields.ok === false) {
    control.applied.textContent = `refused: ${fields.error.message}`;
    control.applied.classList.add("error");
    return;
  }
  control.applied.classList.remove("error");
  if (fields.frame === undefined) { control.applied.textContent = `${fields.value}: waiting for the node to run`; return; }
  let text = `${fields.value} from frame ${fields.frame}`;
  if (fields["heard-frame"] !== undefined) text += `, heard at frame ${fields["heard-frame"]} (in ${fields["heard-in"]} s)`;
  control.applied.textContent = text;
  control.applied.dataset.frame = fields.frame;
}

// MARK: Speech

function speak(more) {
  const text = $("speak-text").value;
  if (!text && more) return;
  const sentAt = performance.now();
  send({ command: "speak", text, more }, (reply) => {
    if (!reply.ok) { $("speak-result").textContent = `refused: ${reply.error.message}`; return; }
    $("speak-result").textContent = `queued as utterance ${reply.first}` + (reply.count > 1 ? `…${reply.first + reply.count - 1}` : "") + (reply.pending ? ` (${reply.pending} characters wait for the rest of the sentence)` : "");
    if (reply.count > 0) spokenAt.set(reply.first, sentAt);
  });
  if (!more) $("speak-text").value = "";
}

function utteranceItem(id) {
  let item = utterances.get(id);
  if (!item) {
    item = document.createElement("li");
    item.dataset.utterance = id;
    item.innerHTML = '<span class="heard"></span> <span class="rest"></span> <small class="timing"></small>';
    $("utterances").append(item);
    utterances.set(id, item);
    while (utterances.size > 100) { const [first, old] = utterances.entries().next().value; old.remove(); utterances.delete(first); }
  }
  return item;
}

// MARK: Events

function onEvent(event) {
  switch (event.event) {
    case "level":
      setValue($("level-out"), Math.min(1, event.peak));
      setText($("level-out-db"), decibels(event.peak));
      setText($("status-position"), `${event.position.toFixed(2)} s`);
      if (event.buffered !== undefined) showBuffer(event.buffered, event.watermark);
      for (const [name, held] of Object.entries(event.links ?? {})) showLinkFill(name, held);
      return;
    case "meter": {
      let row = document.querySelector(`[data-meter="${CSS.escape(event.node)}"]`);
      if (!row) {
        row = document.createElement("div");
        row.className = "meter-row";
        row.dataset.meter = event.node;
        row.innerHTML = '<label></label><meter min="0" max="1" value="0"></meter><output></output>';
        row.firstChild.textContent = event.node;
        $("node-meters").append(row);
      }
      // Levels in dB, silence at the floor (−200): the loudest channel's peak, and its RMS.
      const peakDb = Math.max(...(event.channels ?? []).map((c) => c["peak-db"]));
      const rmsDb = Math.max(...(event.channels ?? []).map((c) => c["rms-db"]));
      setValue(row.children[1], peakDb > -120 ? Math.min(1, Math.pow(10, peakDb / 20)) : 0);
      setText(row.children[2], peakDb > -120 ? `${peakDb.toFixed(1)} dB peak, ${rmsDb.toFixed(1)} RMS` : "−∞ dB");
      return;
    }
    case "control-output":
      return;
    case "parameter":
      showApplied(`${event.node}/${event.parameter}`, { ok: true, ...event });
      break;
    case "utterance-started": {
      const item = utteranceItem(event.utterance);
      item.querySelector(".rest").textContent = event.text;
      const sentAt = spokenAt.get(event.utterance);
      if (sentAt !== undefined) {
        item.querySelector(".timing").textContent = `first audio after ${Math.round(performance.now() - sentAt)} ms`;
        spokenAt.delete(event.utterance);
      }
      break;
    }
    case "word": {
      const item = utteranceItem(event.utterance);
      item.querySelector(".heard").textContent = event.text;
      break;
    }
    case "utterance-ended": {
      const item = utteranceItem(event.utterance);
      item.querySelector(".heard").textContent = event.text;
      item.querySelector(".rest").textContent = "";
      break;
    }
    case "cancelled":
      // What was heard to the word: whole utterances, then the cut one's words, then the word
      // that was playing when it faded.
      $("speak-result").textContent = `cancelled; heard: “${[event.heard, event["partial-heard"]].filter((t) => t).join(" ")}”`
        + (event["partial-word"] ? `, cut in “${event["partial-word"]}”` : "");
      for (const item of utterances.values()) if (item.querySelector(".rest").textContent) item.classList.add("cut");
      break;
    case "reloaded":
      // The file was read again: the controls take the values now in force.
      fetch(withToken("/api/graph")).then((r) => r.json()).then((shape) => { drawGraph(shape); drawControls(shape); }).catch(() => {});
      break;
    case "underrun":
      $("status-underruns").textContent = event.underruns;
      break;
    case "xrun":
      $("status-xruns").textContent = event.xruns;
      break;
    case "provider-error":
      // The provider's stream has ended: what it made plays out, then the graph ends.
      $("speak-result").textContent = `${event.node} failed (${event.code}): ${event.message}`;
      $("speak-result").classList.add("error");
      logEvent(JSON.stringify(event), true);
      return;
    case "hello":
      break;
  }
  if (stateChanges.has(event.event)) refreshStatus();
  logEvent(JSON.stringify(event));
}

// Events after which the state shown (playing, buffering, paused, finished) may have changed.
const stateChanges = new Set(["utterance-started", "utterance-ended", "cancelled", "underrun", "paused", "resumed", "reloaded"]);

function refreshStatus() {
  if (socket?.readyState === WebSocket.OPEN) send({ command: "status" }, showStatus);
}

function showStatus(status) {
  if (!status.ok) return;
  setText($("status-state"), status.paused ? "paused" : status.state);
  setText($("status-position"), `${status.position.toFixed(2)} s`);
  setText($("status-underruns"), String(status.underruns));
  setText($("status-xruns"), String(status.xruns));
  if (status.capacitySeconds) bufferCapacity = status.capacitySeconds;
  showBuffer(status.bufferedSeconds ?? 0, status.watermarkSeconds);
}

// The sink's buffer against its watermark: below it the meter reads low (playback waits for
// the watermark after an underrun), above it full.
let bufferCapacity = 0;
function showBuffer(buffered, watermark) {
  const meter = $("buffered");
  const max = Math.max(bufferCapacity, buffered, 0.001);
  if (meter.max !== max) meter.max = max;
  setValue(meter, buffered);
  if (watermark !== undefined && meter.low !== watermark) { meter.low = watermark; meter.optimum = meter.max; }
  if (meter.dataset.watermark !== String(watermark ?? "")) meter.dataset.watermark = watermark ?? "";
  setText($("buffered-s"), `${buffered.toFixed(2)} s` + (watermark !== undefined ? `, starts at ${watermark.toFixed(2)}` : ""));
}

// A link's fill ten times a second: the bar is redrawn only when its width changes by half a
// pixel or more (redrawing the graph is most of what an open page costs its browser), and its
// tooltip says the latest figure when the pointer comes over it.
function showLinkFill(name, held) {
  const fill = linkFills.get(name);
  if (!fill) return;
  fill.held = held;
  const share = fill.capacity > 0 ? Math.min(1, held / fill.capacity) : 0;
  const width = (Math.round(80 * share) / 2).toFixed(1);
  if (width === fill.width) return;
  fill.width = width;
  fill.bar.children[1].setAttribute("width", width);
  fill.bar.dataset.held = held;
}

function describeLinkFill(name) {
  const fill = linkFills.get(name);
  fill.title.textContent = `${name}: ${((fill.held ?? 0) * 1000).toFixed(1)} ms of ${(fill.capacity * 1000).toFixed(0)} ms`;
}

// What changes ten times a second is written only when it differs from what is shown: an
// unchanged text or meter then costs the browser no layout and no paint.
function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

function setValue(meter, value) {
  if (Math.abs(meter.value - value) >= 0.002 * (meter.max - meter.min) || (value === 0) !== (meter.value === 0)) meter.value = value;
}

// MARK: Timeline

// The run's last minutes as the server draws them (/timeline.svg), every five seconds while
// the page is shown (a minute of the picture is about a centimetre: new detail shows slowly).
function refreshTimeline() {
  if (document.hidden) return;
  const next = new Image();
  next.onload = () => { $("timeline").src = next.src; };
  next.src = withToken("/timeline.svg") + (token ? "&" : "?") + `at=${Date.now()}`;
}

// MARK: Connection

function connect() {
  const url = new URL(withToken("/ws"), location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  socket = new WebSocket(url);
  socket.addEventListener("open", () => {
    $("connection").textContent = "connected";
    $("connection").className = "state open";
    watchLevels();
    send({ command: "status" }, showStatus);
  });
  socket.addEventListener("message", (message) => {
    let object;
    try { object = JSON.parse(message.data); } catch { return; }
    if (object.event !== undefined) { onEvent(object); return; }
    const callback = waiting.get(object.id);
    waiting.delete(object.id);
    if (callback) callback(object);
    else if (object.ok === false) logEvent(`${object.command ?? "request"} refused: ${object.error.message}`, true);
  });
  socket.addEventListener("close", () => {
    $("connection").textContent = "disconnected: the graph has ended or the server is gone";
    $("connection").className = "state closed";
    waiting.clear();
    setTimeout(() => fetch(withToken("/api/status")).then((r) => r.ok && location.reload()).catch(() => {}), 2000);
  });
}

// Levels (ten a second) while the page is shown; a hidden page asks for none, and costs the
// graph's process nothing for them.
function watchLevels() {
  send({ command: "watch", levels: !document.hidden });
}

async function start() {
  const response = await fetch(withToken("/api/graph"));
  if (!response.ok) { $("connection").textContent = await response.text(); $("connection").className = "state closed"; return; }
  const shape = await response.json();
  drawGraph(shape);
  drawControls(shape);
  connect();
  // The position and the buffer move with the level events, underruns and xruns come as
  // events, and what changes the state asks for status at once (onEvent): the rest every few
  // seconds. Each request is work for the graph's process.
  setInterval(refreshStatus, 5000);
  refreshTimeline();
  setInterval(refreshTimeline, 5000);
  document.addEventListener("visibilitychange", () => { watchLevels(); refreshTimeline(); });
  $("speak").addEventListener("click", () => speak(false));
  $("speak-piece").addEventListener("click", () => speak(true));
  $("speak-end").addEventListener("click", () => send({ command: "speak", text: "", more: false }));
  $("cancel").addEventListener("click", () => send({ command: "cancel" }, (reply) => { if (!reply.ok) $("speak-result").textContent = `refused: ${reply.error.message}`; }));
  $("pause").addEventListener("click", () => send({ command: "pause" }));
  $("resume").addEventListener("click", () => send({ command: "resume" }));
  document.body.dataset.ready = "true";
}

start();
