// robusteval report: example browsers (filters, search, pagination) and the hover box of the table numbers.
// Items come from the JSON block inside each browser; text is only ever set with textContent, never parsed as
// HTML.
(function () {
  "use strict";

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // Mark offsets count code points (as Python indexes a str); JavaScript strings index UTF-16 units, in which
  // an emoji or any character beyond the BMP is two, so the text is split into code points before slicing.
  function textBlock(block) {
    var pre = el("pre", "text");
    var text = block.t || "", marks = block.m || [];
    if (!marks.length) {
      pre.appendChild(document.createTextNode(text));
      return pre;
    }
    var chars = Array.from(text), cursor = 0;
    function part(start, end) { return chars.slice(start, end).join(""); }
    for (var i = 0; i < marks.length; i++) {
      var m = marks[i];
      if (m[0] > cursor) pre.appendChild(document.createTextNode(part(cursor, m[0])));
      var mark = el("mark", m[2], part(m[0], m[1]));
      mark.title = m[3];
      pre.appendChild(mark);
      cursor = m[1];
    }
    if (cursor < chars.length) pre.appendChild(document.createTextNode(part(cursor)));
    return pre;
  }

  function renderBlock(block) {
    if (block.pair) {
      var pair = el("div", "pair");
      block.pair.forEach(function (side) {
        var col = el("div");
        col.appendChild(el("div", "label", side[0]));
        col.appendChild(textBlock(side[1]));
        pair.appendChild(col);
      });
      return pair;
    }
    if (block.text) {
      var wrap = el("div");
      if (block.label) wrap.appendChild(el("div", "label", block.label));
      wrap.appendChild(textBlock(block.text));
      return wrap;
    }
    if (block.rows) {
      var rows = el("div", "rows");
      block.rows.forEach(function (row) {
        rows.appendChild(el("div", "k", row[0]));
        rows.appendChild(el("div", "v", row[1]));
      });
      return rows;
    }
    if (block.more) {
      var details = el("details");
      details.appendChild(el("summary", null, block.more));
      (block.blocks || []).forEach(function (inner) { details.appendChild(renderBlock(inner)); });
      return details;
    }
    return el("div");
  }

  function renderItem(item) {
    var card = el("article", "item");
    var head = el("div", "item-head");
    head.appendChild(el("span", "item-title", item.title));
    (item.badges || []).forEach(function (b) { head.appendChild(el("span", "badge " + (b[1] || ""), b[0])); });
    card.appendChild(head);
    (item.blocks || []).forEach(function (block) { card.appendChild(renderBlock(block)); });
    return card;
  }

  // Large example sets are stored gzip-compressed and base64-encoded; the browser inflates them itself.
  function loadItems(source) {
    if (source.getAttribute("data-encoding") !== "gzip-base64") {
      return Promise.resolve(JSON.parse(source.textContent));
    }
    var binary = atob(source.textContent.trim()), bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }

  function setUp(root, items) {
    var size = parseInt(root.getAttribute("data-page-size"), 10) || 20;
    var list = root.querySelector(".items"), count = root.querySelector(".count");
    var pageText = root.querySelector(".page"), prev = root.querySelector(".prev"), next = root.querySelector(".next");
    var selects = Array.prototype.slice.call(root.querySelectorAll("select[data-key]"));
    var search = root.querySelector("input.search");
    var state = { page: 0, shown: items };

    function matches(item) {
      for (var i = 0; i < selects.length; i++) {
        var want = selects[i].value;
        if (want && (item.filters || {})[selects[i].getAttribute("data-key")] !== want) return false;
      }
      var query = search ? search.value.trim().toLowerCase() : "";
      return !query || (item.title + " " + (item.search || "")).toLowerCase().indexOf(query) >= 0;
    }

    function render() {
      var pages = Math.max(1, Math.ceil(state.shown.length / size));
      state.page = Math.min(state.page, pages - 1);
      list.textContent = "";
      var fragment = document.createDocumentFragment();
      state.shown.slice(state.page * size, (state.page + 1) * size).forEach(function (item) {
        fragment.appendChild(renderItem(item));
      });
      if (!state.shown.length) fragment.appendChild(el("p", "note", root.getAttribute("data-empty")));
      list.appendChild(fragment);
      count.textContent = state.shown.length + " of " + items.length + " shown";
      pageText.textContent = "page " + (state.page + 1) + " of " + pages;
      prev.disabled = state.page === 0;
      next.disabled = state.page >= pages - 1;
    }

    function refilter() {
      state.shown = items.filter(matches);
      state.page = 0;
      render();
    }

    selects.forEach(function (s) { s.addEventListener("change", refilter); });
    if (search) search.addEventListener("input", refilter);
    prev.addEventListener("click", function () { state.page -= 1; render(); });
    next.addEventListener("click", function () { state.page += 1; render(); });
    render();
  }

  // One hover box for the whole page, placed in the viewport beside the number: a box inside the table would be
  // clipped by the table's scrolling wrapper (on the last row, always).
  function setUpTips() {
    var tip = el("div", "tip");
    tip.setAttribute("role", "tooltip");
    tip.hidden = true;
    document.body.appendChild(tip);
    var current = null;

    function hide() { tip.hidden = true; current = null; }
    function place(target) {
      tip.style.top = "0px";  // measured where it has the whole viewport's width to fit in
      tip.style.left = "0px";
      var cell = target.getBoundingClientRect(), box = tip.getBoundingClientRect();
      var below = cell.bottom + 4, above = cell.top - box.height - 4;
      var top = below + box.height <= window.innerHeight || above < 0 ? below : above;
      var left = Math.max(4, Math.min(cell.left, window.innerWidth - box.width - 4));
      tip.style.top = top + "px";
      tip.style.left = left + "px";
    }
    function show(target) {
      if (target === current) return;
      current = target;
      tip.textContent = target.getAttribute("data-tip");
      tip.hidden = false;
      place(target);
    }
    function from(event) {
      var target = event.target && event.target.closest ? event.target.closest("[data-tip]") : null;
      if (target) show(target); else hide();
    }
    document.addEventListener("mouseover", from);
    document.addEventListener("focusin", from);
    document.addEventListener("focusout", hide);
    document.documentElement.addEventListener("mouseleave", hide);
    // The box follows its number when the page or a table scrolls (it is fixed to the window).
    window.addEventListener("scroll", function () { if (current) place(current); }, true);
  }

  function start() {
    setUpTips();
    Array.prototype.forEach.call(document.querySelectorAll(".browser"), function (root) {
      loadItems(root.querySelector("script.data")).then(function (items) {
        setUp(root, items);
        root.setAttribute("data-ready", "true");
      }, function (error) {
        root.querySelector(".items").textContent = "cannot read the examples: " + error;
        throw error;
      });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
