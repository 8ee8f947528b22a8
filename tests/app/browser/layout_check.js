// Appended to a copy of a report by html_browser_test.sh: checks the layout in the browser and
// writes the findings as JSON into <pre id=layout-check> (read back with --dump-dom).
(function () {
  var out = {problems: []};
  function bad(msg) { out.problems.push(msg); }
  var doc = document.documentElement;
  if (doc.scrollWidth > window.innerWidth + 1) bad('page wider than the window: ' + doc.scrollWidth + ' > ' + window.innerWidth);
  // Stage chart: every label inside the picture (none cut at the left or right).
  var chart = document.getElementById('stage-chart');
  out.chart_rows = 0;
  if (chart) {
    var vb = chart.viewBox.baseVal;
    chart.querySelectorAll('text.label').forEach(function (t) {
      out.chart_rows++;
      var b = t.getBBox();
      if (b.x < 0 || b.x + b.width > vb.width) bad('stage chart label cut: ' + t.textContent);
      if (/aten::|Backward0/.test(t.textContent)) bad('an op in the stage chart: ' + t.textContent);
    });
  }
  var legend = document.querySelectorAll('.legend span');
  out.legend = legend.length;
  legend.forEach(function (s) { if (/aten::|Backward0/.test(s.textContent)) bad('an op in the legend: ' + s.textContent); });
  // Stage table: ops folded; a phase's button shows at most N + 1 of them.
  out.hidden_ops = document.querySelectorAll('#stage-table tr.op[hidden]').length;
  var tog = document.querySelector('#stage-table button.tog');
  out.toggles = document.querySelectorAll('#stage-table button.tog').length;
  if (tog) {
    tog.click();
    var shown = tog.closest('tbody').querySelectorAll('tr.op:not([hidden])').length;
    out.opened = shown;
    if (shown === 0 || shown > 11) bad('a phase opened to ' + shown + ' op rows');
  }
  // Icicle: nodes inside the box; a click on a phase zooms to it and shows its ops.
  var ice = document.getElementById('icicle');
  function inside() {
    var box = ice.getBoundingClientRect();
    ice.querySelectorAll('.node').forEach(function (n) {
      var r = n.getBoundingClientRect();
      if (r.left < box.left - 1 || r.right > box.right + 1) bad('icicle node outside: ' + n.textContent);
    });
  }
  if (ice) {
    out.icicle_nodes = ice.querySelectorAll('.node').length;
    inside();
    var phase = Array.from(ice.querySelectorAll('.node.k-phase')).sort(function (a, b) {
      return b.getBoundingClientRect().width - a.getBoundingClientRect().width;
    })[0];
    if (phase) {
      var name = phase.title.split(':')[0];
      phase.click();
      out.zoomed = name;
      out.zoomed_ops = ice.querySelectorAll('.node.k-op, .node.k-other').length;
      out.crumbs = document.querySelector('#icicle-info .crumbs').textContent;
      inside();
      if (out.crumbs.indexOf(name) < 0) bad('zoom did not reach ' + name);
      ice.querySelector('.node.k-phase').click();  // back out
      out.back = ice.querySelectorAll('.node.k-phase').length;
    }
  }
  var pre = document.createElement('pre');
  pre.id = 'layout-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
