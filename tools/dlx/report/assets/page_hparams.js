// SPDX-License-Identifier: Apache-2.0
// dlx report's page: parallel coordinates, the metric against each hyperparameter, importance (page_common.js has the helpers).
(function (R) {
  'use strict';
  var data = R.data, meta = R.meta, trials = R.trials, hparams = R.hparams, summary = R.summary, charts = R.charts;
  var el = R.el, svg = R.svg, text = R.text, num = R.num, show = R.show, duration = R.duration, when = R.when;
  var color = R.color, bestId = R.bestId, byId = R.byId, trialLink = R.trialLink, chart = R.chart;
  var marksOf = R.marksOf, axisType = R.axisType;
  // ---- hyperparameters: parallel coordinates, scatters, importance ----
  var scored = trials.filter(function (t) { return typeof t.best === 'number'; });
  function axisOf(name, values, log) {
    var numeric = values.every(function (v) { return v === null || typeof v === 'number'; });
    if (numeric) {
      var finite = values.filter(function (v) { return v !== null && isFinite(v) && (!log || v > 0); });
      var lo = Math.min.apply(null, finite), hi = Math.max.apply(null, finite);
      var f = log ? Math.log : function (v) { return v; };
      return { name: name, numeric: true, lo: lo, hi: hi, log: log,
               at: function (v) { if (v === null || !isFinite(v) || (log && v <= 0)) return null; return hi === lo ? 0.5 : (f(v) - f(lo)) / (f(hi) - f(lo)); } };
    }
    var distinct = [];
    values.forEach(function (v) { var s = show(v); if (v !== null && distinct.indexOf(s) < 0) distinct.push(s); });
    distinct.sort();
    return { name: name, numeric: false, categories: distinct,
             at: function (v) { if (v === null) return null; var i = distinct.indexOf(show(v)); return distinct.length === 1 ? 0.5 : i / (distinct.length - 1); } };
  }
  function hparamValues(h) { return scored.map(function (t) { var v = t.hparams[h.name]; return v === undefined ? null : v; }); }
  (function parallel() {
    var holder = document.getElementById('parallel');
    if (!scored.length || !hparams.length) {
      text('parallel-note', scored.length ? 'No searched hyperparameters.' : 'No trial has a value of ' + meta.metric + ' yet.');
      return;
    }
    var axes = hparams.map(function (h) { return axisOf(h.name, hparamValues(h), h.type === 'log'); });
    axes.push(axisOf('best ' + meta.metric, scored.map(function (t) { return t.best; }), false));
    var width = 1100, height = 360, top = 30, bottom = 40, left = 60, right = 60;
    var step = axes.length > 1 ? (width - left - right) / (axes.length - 1) : 0;
    var root = svg('svg', { viewBox: '0 0 ' + width + ' ' + height, id: 'parallel-svg', role: 'img' });
    var metricAxis = axes[axes.length - 1];
    var order = scored.slice().sort(function (a, b) { return (a.id === bestId) - (b.id === bestId); });
    var lines = 0;
    order.forEach(function (t) {
      var d = '', pen = 'M';
      axes.forEach(function (axis, i) {
        var v = i === axes.length - 1 ? t.best : t.hparams[axis.name];
        var p = axis.at(v === undefined ? null : v);
        if (p === null) { pen = 'M'; return; }
        d += pen + (left + i * step).toFixed(1) + ',' + (top + (1 - p) * (height - top - bottom)).toFixed(1) + ' ';
        pen = 'L';
      });
      var quality = metricAxis.at(t.best);
      if (meta.smaller_is_better && quality !== null) quality = 1 - quality;
      var path = svg('path', { d: d, fill: 'none', 'stroke-width': t.id === bestId ? 3 : 1.2,
                               stroke: t.id === bestId ? '#d62728' : 'hsla(' + (quality === null ? 0 : 220 - 180 * quality) + ',70%,45%,0.55)' });
      var title = svg('title');
      title.textContent = 'trial ' + t.id + ': ' + meta.metric + ' ' + show(t.best);
      path.appendChild(title);
      root.appendChild(path);
      lines++;
    });
    axes.forEach(function (axis, i) {
      var x = left + i * step;
      root.appendChild(svg('line', { x1: x, x2: x, y1: top, y2: height - bottom, stroke: '#3a4459' }));
      var label = svg('text', { x: x, y: height - 12, 'text-anchor': 'middle' });
      label.textContent = axis.name + (axis.log ? ' (log)' : '');
      root.appendChild(label);
      var ticks = axis.numeric ? [[axis.lo, 0], [axis.hi, 1]] : axis.categories.map(function (c, k) { return [c, axis.categories.length === 1 ? 0.5 : k / (axis.categories.length - 1)]; });
      ticks.forEach(function (tick) {
        var tickText = svg('text', { x: x + 4, y: top + (1 - tick[1]) * (height - top - bottom) + 4 });
        tickText.textContent = show(tick[0]);
        root.appendChild(tickText);
      });
    });
    holder.appendChild(root);
    summary.svgs.push({ id: 'parallel-svg', paths: lines });
    text('parallel-note', lines + ' trials with a value of ' + meta.metric + ', one line each, colored from the best (blue) ' +
         'to the worst (red); thick red: the best trial. Strings are placed in alphabetical order; log-scaled ' +
         'hyperparameters on a log axis.');
  })();

  hparams.forEach(function (h, index) {
    var holder = el('div', null, el('h3', null, meta.metric + ' against ' + h.name));
    var box = el('div', { class: 'chart' });
    var canvas = el('canvas', { id: 'scatter-' + index });
    box.appendChild(canvas);
    holder.appendChild(box);
    document.getElementById('scatters').appendChild(holder);
    var values = hparamValues(h), axis = axisOf(h.name, values, h.type === 'log');
    var points = [], best = [];
    scored.forEach(function (t, k) {
      var v = values[k];
      if (v === null || !isFinite(num(t.best))) return;
      var x = axis.numeric ? v : axis.categories.indexOf(show(v));
      (t.id === bestId ? best : points).push({ x: x, y: t.best, trial: t.id });
    });
    // With parsing off, Chart.js takes the data as sorted by x (it reads the range off the ends).
    points.sort(function (a, b) { return a.x - b.x; });
    var xScale = axis.numeric ? { type: axisType(h.type === 'log') } :
      { type: 'linear', min: -0.5, max: axis.categories.length - 0.5,
        afterBuildTicks: function (scale) { scale.ticks = axis.categories.map(function (c, i) { return { value: i }; }); },
        ticks: { autoSkip: false, callback: function (v) { return axis.categories[v]; } } };
    xScale.title = { display: true, text: h.name };
    chart(canvas.id, {
      type: 'scatter',
      data: { datasets: [{ label: 'trials', data: points, parsing: false, backgroundColor: 'rgba(29,99,200,0.55)', pointRadius: 3 },
                         { label: 'best trial', data: best, parsing: false, backgroundColor: '#d62728', pointRadius: 6 }] },
      options: { scales: { x: xScale, y: { title: { display: true, text: 'best ' + meta.metric } } },
                 plugins: { legend: { display: false },
                            tooltip: { callbacks: { label: function (ctx) { return 'trial ' + ctx.raw.trial + ': ' + show(ctx.raw.y); } } } } }
    });
  });
  if (!hparams.length) document.getElementById('scatters').appendChild(el('p', { class: 'note' }, 'No searched hyperparameters.'));

  (function importance() {
    var imp = data.importance;
    var scores = imp.scores;
    if (scores.length) {
      document.getElementById('importance-holder').style.height = Math.max(120, 40 + 28 * scores.length) + 'px';
      chart('importance-chart', {
        type: 'bar',
        data: { labels: scores.map(function (s) { return s.name; }),
                datasets: [{ label: 'importance', data: scores.map(function (s) { return s.score; }), backgroundColor: '#1d63c8' }] },
        options: { indexAxis: 'y', scales: { x: { min: 0, max: 1, title: { display: true, text: 'share of the results\u2019 variance explained (\u03b5\u00b2)' } } },
                   plugins: { legend: { display: false } } }
      });
    } else {
      document.getElementById('importance-holder').hidden = true;
    }
    text('importance-note', (scores.length ? '' : 'Not shown: it needs at least ' + meta.min_trials_importance +
         ' trials with a result and a hyperparameter that varies (' + imp.trials + ' compared). ') +
         'Compared: ' + imp.basis + '. How: ' + imp.method);
  })();
})(window.dlxReport);
