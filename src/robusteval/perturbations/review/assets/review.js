"use strict";
(function () {
  var data = JSON.parse(document.getElementById("review-data").textContent);
  var items = data.items;
  var names = data.labels.map(function (l) { return l.name; });
  var labels = {};
  var current = 0;
  var main = document.getElementById("items");
  var progress = document.getElementById("progress");

  function load() {
    try {
      var stored = JSON.parse(window.localStorage.getItem(data.storage_key) || "{}");
      if (stored && typeof stored === "object") { labels = stored; }
    } catch (e) { labels = {}; }
  }
  function save() {
    try { window.localStorage.setItem(data.storage_key, JSON.stringify(labels)); } catch (e) { /* private mode */ }
  }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }
  function pane(item, side) {
    var box = el("div", "pane " + side);
    box.appendChild(el("h3", "", side === "original" ? "original" : "perturbed"));
    var body = el("div", "text");
    item.diff.forEach(function (run) {
      var op = run[0], part = side === "original" ? run[1] : run[2];
      if (!part) { return; }
      if (op === "equal") { body.appendChild(document.createTextNode(part)); }
      else { body.appendChild(el("mark", side === "original" ? "del" : "ins", part)); }
    });
    box.appendChild(body);
    return box;
  }
  function render() {
    items.forEach(function (item, i) {
      var card = el("article", "item");
      card.id = "item-" + i;
      card.tabIndex = -1;
      card.dataset.key = item.key;
      card.appendChild(el("h2", "", "#" + (i + 1) + " · " + item.method + " · example " + item.example_id +
                                   " · " + item.field));
      var panes = el("div", "panes");
      panes.appendChild(pane(item, "original"));
      panes.appendChild(pane(item, "perturbed"));
      card.appendChild(panes);
      var choices = el("div", "choices");
      data.labels.forEach(function (label, j) {
        var button = el("button", "", (j + 1) + " " + label.title);
        button.type = "button";
        button.title = label.help;
        button.dataset.label = label.name;
        button.addEventListener("click", function () { current = i; setLabel(label.name); });
        choices.appendChild(button);
      });
      card.appendChild(choices);
      card.addEventListener("click", function () { current = i; show(false); });
      main.appendChild(card);
    });
  }
  function labelledCount() {
    return items.filter(function (item) { return names.indexOf(labels[item.key]) >= 0; }).length;
  }
  function paint() {
    items.forEach(function (item, i) {
      var card = document.getElementById("item-" + i);
      var label = labels[item.key];
      if (names.indexOf(label) >= 0) { card.dataset.label = label; } else { delete card.dataset.label; }
      card.classList.toggle("current", i === current);
      Array.prototype.forEach.call(card.querySelectorAll("button"), function (b) {
        b.setAttribute("aria-pressed", String(b.dataset.label === label));
      });
    });
    progress.textContent = labelledCount() + " / " + items.length + " labelled";
    document.body.dataset.labelled = String(labelledCount());
  }
  function show(scroll) {
    paint();
    var card = document.getElementById("item-" + current);
    if (card && scroll) { card.scrollIntoView({block: "center"}); card.focus({preventScroll: true}); }
  }
  function move(step) {
    if (!items.length) { return; }
    current = Math.max(0, Math.min(items.length - 1, current + step));
    show(true);
  }
  function setLabel(name) {
    if (!items.length) { return; }
    var key = items[current].key;
    if (name === null) { delete labels[key]; } else { labels[key] = name; }
    save();
    if (name !== null && current < items.length - 1) { current += 1; }
    show(true);
  }
  function exportLines() {
    return items.filter(function (item) { return names.indexOf(labels[item.key]) >= 0; }).map(function (item) {
      return JSON.stringify({key: item.key, method: item.method, label: labels[item.key], original: item.original,
                             perturbed: item.perturbed, example_id: item.example_id, field: item.field,
                             sample: data.sample});
    }).join("\n") + "\n";
  }
  function download() {
    var blob = new Blob([exportLines()], {type: "application/x-ndjson"});
    var link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = "review-" + data.sample + ".labels.jsonl";
    document.body.appendChild(link);
    link.click();
    document.body.removeChild(link);
    window.setTimeout(function () { URL.revokeObjectURL(link.href); }, 10000);
  }
  document.getElementById("export").addEventListener("click", download);
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var key = event.key;
    var index = ["1", "2", "3"].indexOf(key);
    if (index >= 0 && index < names.length) { setLabel(names[index]); }
    else if (key === "0" || key === "Backspace" || key === "Delete") { setLabel(null); }
    else if (key === "j" || key === "ArrowDown" || key === "ArrowRight") { move(1); }
    else if (key === "k" || key === "ArrowUp" || key === "ArrowLeft") { move(-1); }
    else if (key === "e") { download(); }
    else { return; }
    event.preventDefault();
  });
  load();
  render();
  var first = items.findIndex(function (item) { return names.indexOf(labels[item.key]) < 0; });
  current = first >= 0 ? first : 0;
  show(false);
  document.body.dataset.ready = "true";
})();
