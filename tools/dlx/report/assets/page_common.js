// SPDX-License-Identifier: Apache-2.0
// dlx report's page (this file first, then page_curves.js, page_table.js, page_hparams.js,
// page_story.js and page_trials.js, in one script element): draws the data model inlined by dlx
// (tools/dlx/report/report_model.hpp) with Chart.js (canvas 2D, no WebGL) and a little SVG. Every piece of text from the experiment (names,
// hyperparameter values, stop reasons) reaches the page as a text node or an attribute value set
// through the DOM, never as HTML. When done, it writes a summary of what it drew into
// #dlx-render-summary (charts and their marks, errors) for dlx's headless-browser test.
// This file: the data, the helpers every part uses (window.dlxReport) and the page's header.
window.dlxReport = (function () {
  'use strict';
  var data = JSON.parse(document.getElementById('dlx-data').textContent);
  var meta = data.meta, trials = data.trials, hparams = data.hparams;
  var summary = { errors: window.dlxErrors, charts: [], svgs: [], sections: 0, selftest: null };
  var charts = {};
  var selftest = /[?&]selftest\b/.test(window.location.search);
  Chart.defaults.animation = false;
  Chart.defaults.font.size = 11;

  // ---- helpers ----
  function el(tag, attributes) {
    var node = document.createElement(tag);
    if (attributes) Object.keys(attributes).forEach(function (key) { node.setAttribute(key, attributes[key]); });
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function svg(tag, attributes) {
    var node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    Object.keys(attributes || {}).forEach(function (key) { node.setAttribute(key, attributes[key]); });
    return node;
  }
  function text(id, value) { document.getElementById(id).textContent = value; }
  function num(value) {  // a model number: a number, null, or "inf", "-inf", "nan"
    if (value === null || value === undefined) return NaN;
    if (typeof value === 'number') return value;
    if (value === 'inf') return Infinity;
    if (value === '-inf') return -Infinity;
    return NaN;
  }
  function show(value) {
    if (value === null || value === undefined || value === '') return '\u2014';
    if (typeof value === 'string') return value;
    if (typeof value === 'boolean') return value ? 'true' : 'false';
    if (typeof value !== 'number') return JSON.stringify(value);
    if (Number.isInteger(value) && Math.abs(value) < 1e15) return String(value);
    var a = Math.abs(value);
    return a !== 0 && (a < 1e-3 || a >= 1e6) ? value.toExponential(3) : String(+value.toPrecision(5));
  }
  function duration(seconds) {
    if (seconds === null || seconds === undefined || !isFinite(seconds)) return '\u2014';
    seconds = Math.round(seconds);
    var h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
    return h ? h + 'h' + String(m).padStart(2, '0') + 'm' : m ? m + 'm' + String(s).padStart(2, '0') + 's' : s + 's';
  }
  function when(unix) { return unix ? new Date(unix * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC') : '\u2014'; }
  function color(index, alpha) { return 'hsla(' + ((index * 137.508) % 360).toFixed(1) + ',65%,45%,' + alpha + ')'; }
  var bestId = meta.best_trial;
  var byId = {};
  trials.forEach(function (t) { byId[t.id] = t; });
  var better = function (a, b) { return meta.smaller_is_better ? a < b : a > b; };
  function trialLink(id) { return el('a', { href: '#trial-' + id }, 'trial ' + id); }

  // A chart, remembered (to be replaced) and counted in the summary once drawn.
  function chart(id, config) {
    if (charts[id]) charts[id].destroy();
    config.options = config.options || {};
    config.options.responsive = true;
    config.options.maintainAspectRatio = false;
    charts[id] = new Chart(document.getElementById(id), config);
    return charts[id];
  }
  // What a chart drew: marks are the points drawn with a radius and the line segments between two
  // drawn points (a lone point of a line with radius 0 is invisible), and bars; `outside`, points
  // placed off the plot area (an axis whose range misses data); `painted`, the canvas pixels that
  // are not transparent (axes and labels included).
  function marksOf(canvasChart) {
    var marks = 0, points = 0, outside = 0, area = canvasChart.chartArea;
    canvasChart.data.datasets.forEach(function (d, i) {
      var meta = canvasChart.getDatasetMeta(i);
      if (meta.hidden) return;
      var elements = meta.data || [], line = meta.type === 'line' || d.showLine;
      for (var j = 0; j < elements.length; j++) {
        var e = elements[j];
        if (!e || e.skip) continue;
        points++;
        if (meta.type === 'bar') { marks++; continue; }
        if (e.x < area.left - 1 || e.x > area.right + 1 || e.y < area.top - 1 || e.y > area.bottom + 1) outside++;
        if (e.options && e.options.radius > 0) marks++;
        if (line && j > 0 && elements[j - 1] && !elements[j - 1].skip) marks++;
      }
    });
    var painted = 0, canvas = canvasChart.canvas;
    try {
      var pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      for (var i = 3; i < pixels.length; i += 16) if (pixels[i] > 0) painted++;
    } catch (e) { painted = -1; }
    return { id: canvas.id, datasets: canvasChart.data.datasets.length, points: points, marks: marks, outside: outside,
             painted: painted };
  }
  function axisType(log) { return log ? 'logarithmic' : 'linear'; }

  // ---- header ----
  document.title = 'dlx report: ' + meta.experiment;
  text('title', 'dlx report: ' + meta.experiment);
  var states = Object.keys(meta.states).map(function (s) { return meta.states[s] + ' ' + s; }).join(', ');
  text('subtitle', meta.directory + ' \u00b7 searcher ' + meta.searcher + ' (' + meta.sampler + ') \u00b7 metric ' +
       meta.metric + (meta.smaller_is_better ? ' (smaller is better)' : ' (larger is better)') + ' \u00b7 ' +
       trials.length + ' trials' + (states ? ': ' + states : '') +
       (meta.array ? ' \u00b7 ' + meta.array.tasks + ' array tasks, each running ' + meta.array.load +
        (meta.array.trials_per_gpu ? ' (' + meta.array.trials_per_gpu + ' per GPU)' : '') + ' (' + meta.array.cause + ')' : '') +
       (meta.gpu_sharing ? ' \u00b7 ' + meta.gpu_sharing : '') +
       (meta.code ? ' \u00b7 code ' + meta.code : '') +
       (meta.images && meta.images.length ? ' \u00b7 image ' + meta.images.join(', ') : '') +
       ' \u00b7 written ' + when(meta.generated_unix));
  if (meta.watch_seconds !== null && !meta.ended) {
    var watching = document.getElementById('watching');
    watching.hidden = false;
    watching.textContent = 'Watching: dlx rewrites this page every ' + meta.watch_seconds +
      ' s until the experiment has ended, and the page reloads itself.';
  }
  text('footer', 'Written by dlx report. Every number comes from the experiment directory: trials/<id>/trial.h5 ' +
       '(with its metrics logs), the journal and experiment.yaml. Warnings while reading: ' +
       (meta.warnings.length ? meta.warnings.join(' ') : 'none') + '.');
  return { data: data, meta: meta, trials: trials, hparams: hparams, summary: summary, charts: charts, selftest: selftest,
           el: el, svg: svg, text: text, num: num, show: show, duration: duration, when: when, color: color,
           bestId: bestId, byId: byId, better: better, trialLink: trialLink, chart: chart, marksOf: marksOf,
           axisType: axisType };
})();
