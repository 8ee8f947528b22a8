// Sortable tables: a click on a header sorts by that column. A table whose rows come in groups
// (a phase and its ops, one <tbody> each) sorts the groups by their first row.
document.querySelectorAll('table.sortable th').forEach(function (th) {
  th.addEventListener('click', function () {
    var t = th.closest('table'), asc = th.dataset.asc !== '1', i = th.cellIndex;
    th.dataset.asc = asc ? '1' : '0';
    var key = function (row) { var c = row.cells[i]; return c ? (c.dataset.v || c.textContent) : ''; };
    var cmp = function (x, y) {
      var a = key(x), c = key(y), na = parseFloat(a), nc = parseFloat(c);
      var r = (!isNaN(na) && !isNaN(nc)) ? na - nc : a.localeCompare(c);
      return asc ? r : -r;
    };
    if (t.tBodies.length > 1) {
      Array.from(t.tBodies).sort(function (x, y) { return cmp(x.rows[0], y.rows[0]); })
        .forEach(function (b) { t.appendChild(b); });
    } else {
      var b = t.tBodies[0];
      Array.from(b.rows).sort(cmp).forEach(function (r) { b.appendChild(r); });
    }
  });
});

// A phase's ops: the button in its row shows or hides them.
document.querySelectorAll('button.tog').forEach(function (btn) {
  btn.addEventListener('click', function (ev) {
    ev.stopPropagation();
    var open = btn.getAttribute('aria-expanded') !== 'true';
    btn.setAttribute('aria-expanded', open ? 'true' : 'false');
    btn.textContent = (open ? '\u25be ' : '\u25b8 ') + btn.dataset.label;
    btn.closest('tbody').querySelectorAll('tr.op').forEach(function (r) { r.hidden = !open; });
  });
});

// The hierarchy as an icicle: iteration, phases, ops; a phase's traced lines in a band below.
// Widths are time per iteration. A click on a node zooms to it; on the top node, back out.
(function () {
  var el = document.getElementById('icicle'), data = document.getElementById('icicle-data');
  if (!el || !data) return;
  var root = JSON.parse(data.textContent), info = document.getElementById('icicle-info');
  var ROW = 28;
  (function link(n, p) { n.parent = p; (n.children || []).forEach(function (c) { link(c, n); }); })(root, null);
  function ms(ns) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(2) + ' s';
    if (ns >= 1e6) return (ns / 1e6).toFixed(ns >= 1e8 ? 0 : ns >= 1e7 ? 1 : 2) + ' ms';
    if (ns >= 1e3) return (ns / 1e3).toFixed(ns >= 1e5 ? 0 : 1) + ' us';
    return Math.round(ns) + ' ns';
  }
  function box(n, x, w, top, label) {
    var b = document.createElement('div');
    b.className = 'node k-' + n.k;
    b.style.left = (100 * x) + '%';
    b.style.width = 'calc(' + (100 * w) + '% - 2px)';
    if (w * el.clientWidth < 16) b.style.padding = '0';
    b.style.top = top + 'px';
    b.style.background = n.c;
    b.title = n.t;
    b.textContent = label;
    b.setAttribute('role', 'button');
    b.tabIndex = 0;
    el.appendChild(b);
    return b;
  }
  var current = root;
  function find(n, name) {  // the node named `name` under n, depth first
    if (n.n === name) return n;
    var kids = n.children || [];
    for (var i = 0; i < kids.length; i++) { var f = find(kids[i], name); if (f) return f; }
    return null;
  }
  function zoom(r) {  // a click: the address names the view, so a link reopens it
    try {
      history.replaceState(null, '', r === root ? location.pathname + location.search : '#icicle=' + encodeURIComponent(r.n));
    } catch (e) { /* file:// pages may refuse; the view still changes */ }
    render(r);
  }
  function render(r) {
    current = r;
    el.textContent = '';
    var depth = 0;
    (function place(n, x, w, d) {
      depth = Math.max(depth, d);
      if (w * el.clientWidth >= 3 || d === 0) {
        var b = box(n, x, w, d * ROW, w * el.clientWidth > 60 ? n.n + '  ' + ms(n.v) : (w * el.clientWidth > 24 ? n.n : ''));
        b.onclick = function () { zoom(n === r ? (r.parent || r) : n); };
        b.onkeydown = function (e) { if (e.key === 'Enter') b.onclick(); };
      }
      var kids = n.children || [], sum = 0, cx = x;
      kids.forEach(function (c) { sum += c.v; });
      var scale = n.v > 0 ? Math.min(1, n.v / Math.max(sum, 1)) / n.v : 0;
      kids.forEach(function (c) { var cw = w * c.v * scale; place(c, cx, cw, d + 1); cx += cw; });
    })(r, 0, 1, 0);
    var h = (depth + 1) * ROW;
    if (r.lines && r.lines.length) {
      var band = document.createElement('div');
      band.className = 'band';
      band.style.top = (h + 2) + 'px';
      band.textContent = 'traced lines in ' + r.n + ':';
      el.appendChild(band);
      h += 20;
      var x = 0;
      r.lines.forEach(function (l) {
        var w = r.v > 0 ? Math.min(l.v / r.v, 1 - x) : 0;
        if (w * el.clientWidth >= 3) {
          var b = box(l, x, w, h, w * el.clientWidth > 60 ? l.n : '');
          b.onclick = function () { var t = document.getElementById('lines'); if (t) t.scrollIntoView(); };
        }
        x += w;
      });
      h += ROW;
    }
    el.style.height = h + 'px';
    if (info) {
      var path = [], n = r;
      while (n) { path.unshift(n); n = n.parent; }
      info.textContent = '';
      var crumbs = document.createElement('div');
      crumbs.className = 'crumbs';
      path.forEach(function (p, i) {
        if (i) crumbs.appendChild(document.createTextNode(' \u203a '));
        var a = document.createElement('a');
        a.textContent = p.n;
        a.onclick = function () { zoom(p); };
        crumbs.appendChild(a);
      });
      info.appendChild(crumbs);
      var d = document.createElement('div');
      d.className = 'muted';
      d.textContent = r.t;
      info.appendChild(d);
    }
  }
  // #icicle=forward opens the page zoomed to that phase (a link to a view).
  function fromHash() {
    var want = '';
    try { want = decodeURIComponent((location.hash.match(/icicle=([^&]+)/) || [])[1] || ''); } catch (e) { want = ''; }
    return (want && find(root, want)) || root;
  }
  render(fromHash());
  window.addEventListener('hashchange', function () { render(fromHash()); });
  var last = el.clientWidth;
  window.addEventListener('resize', function () { if (el.clientWidth !== last) { last = el.clientWidth; render(current); } });
})();
