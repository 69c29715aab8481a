// dlx report's page: draws the data model inlined by dlx (tools/dlx/report/report_model.hpp) with
// Chart.js (canvas 2D, no WebGL) and a little SVG. Every piece of text from the experiment (names,
// hyperparameter values, stop reasons) reaches the page as a text node or an attribute value set
// through the DOM, never as HTML. When done, it writes a summary of what it drew into
// #dlx-render-summary (charts and their marks, errors) for dlx's headless-browser test.
(function () {
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
       trials.length + ' trials' + (states ? ': ' + states : '') + ' \u00b7 written ' + when(meta.generated_unix));
  if (meta.watch_seconds !== null && !meta.ended) {
    var watching = document.getElementById('watching');
    watching.hidden = false;
    watching.textContent = 'Watching: dlx rewrites this page every ' + meta.watch_seconds +
      ' s until the experiment has ended, and the page reloads itself.';
  }
  text('footer', 'Written by dlx report. Every number comes from the experiment directory: trials/<id>/trial.h5 ' +
       '(with its metrics logs), the journal and experiment.yaml. Warnings while reading: ' +
       (meta.warnings.length ? meta.warnings.join(' ') : 'none') + '.');

  // ---- learning curves ----
  var curveKeys = [];
  trials.forEach(function (t) {
    t.curves.forEach(function (c) {
      var key = c.t + '/' + c.m;
      if (curveKeys.indexOf(key) < 0) curveKeys.push(key);
    });
  });
  var preferred = 'validation/' + meta.metric;
  curveKeys.sort(function (a, b) { return (b === preferred) - (a === preferred) || (a < b ? -1 : a > b ? 1 : 0); });
  var metricSelect = document.getElementById('curve-metric');
  curveKeys.forEach(function (key) { metricSelect.appendChild(el('option', { value: key }, key)); });
  function smooth(values, weight) {  // exponential moving average, restarted after each gap
    if (!weight) return values;
    var out = [], last = null;
    values.forEach(function (v) {
      if (v === null) { last = null; out.push(null); return; }
      last = last === null ? v : last * weight + v * (1 - weight);
      out.push(last);
    });
    return out;
  }
  function drawCurves() {
    var key = metricSelect.value, log = document.getElementById('curve-log').checked;
    var weight = +document.getElementById('curve-smoothing').value;
    text('curve-smoothing-value', String(weight));
    var datasets = [], bestDataset = null, infinite = 0;
    trials.forEach(function (t, index) {
      t.curves.forEach(function (c) {
        if (c.t + '/' + c.m !== key) return;
        infinite += c.inf;
        var values = smooth(c.v, weight);
        var points = c.s.map(function (s, i) {
          var v = values[i];
          return { x: s, y: v === null || (log && v <= 0) ? null : v };
        });
        var isBest = t.id === bestId;
        var ended = t.state === 'failed' || t.state === 'stopped' || t.status === 'stopped';
        var last = points.length - 1;
        var dataset = {
          label: 'trial ' + t.id, data: points, parsing: false, spanGaps: false,
          borderColor: isBest ? '#d62728' : color(index, trials.length > 50 ? 0.35 : 0.7),
          backgroundColor: isBest ? '#d62728' : color(index, 0.7),
          borderWidth: isBest ? 3 : 1.2,
          // Few points (a PBT round, an ASHA rung) are drawn as dots: a line needs two.
          pointRadius: function (ctx) { return ended && ctx.dataIndex === last ? 4 : points.length <= 30 ? 2.5 : 0; },
          pointStyle: 'crossRot', order: isBest ? 0 : 1
        };
        if (isBest) bestDataset = dataset; else datasets.push(dataset);
      });
    });
    if (bestDataset) datasets.push(bestDataset);
    chart('curves-chart', {
      type: 'line', data: { datasets: datasets },
      options: {
        normalized: true,  // each curve's steps are sorted and unique (as parsing: false assumes)
        scales: { x: { type: 'linear', title: { display: true, text: 'step' } },
                  y: { type: axisType(log), title: { display: true, text: key } } },
        plugins: { legend: { display: datasets.length <= 20 },
                   tooltip: { mode: 'nearest', intersect: false } }
      }
    });
    text('curves-note', (datasets.length ? datasets.length + ' trials with ' + key + '; ' : 'No trial has reported a metric yet. ') +
         'each curve keeps at most ' + meta.points_per_curve + ' points (the lowest and highest value of each ' +
         'stretch of steps, so spikes stay); a gap is where the trial was interrupted (a restart resumed ' +
         'from an earlier checkpoint, or the searcher paused it); \u00d7 marks where a trial stopped or failed. ' +
         (bestId !== null ? 'Thick red: the best trial (' + bestId + '). ' : '') +
         (infinite ? infinite + ' infinite values are not drawn. ' : '') +
         (log ? 'Log scale: values at or below 0 are not drawn. ' : '') +
         'Smoothing: exponential moving average with the weight shown, restarted at each gap.');
  }
  ['curve-metric', 'curve-log', 'curve-smoothing'].forEach(function (id) {
    document.getElementById(id).addEventListener('input', drawCurves);
  });
  drawCurves();

  // ---- best so far ----
  var start = Infinity;
  trials.forEach(function (t) { if (t.created) start = Math.min(start, t.created); });
  function bestChart(id, points, xTitle, toX) {
    chart(id, {
      type: 'line',
      data: { datasets: [{ label: 'best ' + meta.metric, data: points.map(function (p) { return { x: toX(p[0]), y: num(p[1]), trial: p[2] }; }),
                           parsing: false, stepped: 'after', borderColor: '#1d63c8', backgroundColor: '#1d63c8', pointRadius: 3 }] },
      options: {
        scales: { x: { type: 'linear', title: { display: true, text: xTitle } }, y: { title: { display: true, text: meta.metric } } },
        plugins: { legend: { display: false },
                   tooltip: { callbacks: { label: function (ctx) { return 'trial ' + ctx.raw.trial + ': ' + show(ctx.raw.y); } } } }
      }
    });
  }
  var byTime = data.best_so_far.by_time, byTrials = data.best_so_far.by_trials;
  var t0 = byTime.length ? Math.min(start, byTime[0][0]) : start;
  bestChart('best-time-chart', byTime, 'minutes since the first trial started', function (x) { return (x - t0) / 60; });
  bestChart('best-trials-chart', byTrials, 'trials finished', function (x) { return x; });
  text('best-note', 'The best validation ' + meta.metric + ' reported so far by any trial, at each improvement. ' +
       (byTime.length ? '' : 'No trial has reported it with a wall time yet. ') +
       'Trials finished: completed, failed or stopped by the searcher (or left paused, once the experiment has ended), ' +
       'in the order they ended, each counted with its best value' +
       (byTrials.length ? '.' : ' (none yet).'));

  // ---- trial table ----
  var columns = [
    { title: 'trial', value: function (t) { return t.id; }, cell: function (t) { return trialLink(t.id); }, num: true },
    { title: 'state', value: function (t) { return t.state; } },
    { title: 'searcher', value: function (t) { return t.searcher; } }
  ];
  hparams.forEach(function (h) {
    columns.push({ title: h.name, value: function (t) { var v = t.hparams[h.name]; return v === undefined ? null : v; }, num: h.type !== 'categorical' });
  });
  columns.push(
    { title: 'last ' + meta.metric, value: function (t) { return t.last; }, num: true },
    { title: 'best ' + meta.metric, value: function (t) { return t.best; }, num: true, id: 'best' },
    { title: 'restarts', value: function (t) { return t.restarts === undefined ? null : t.restarts; }, num: true },
    { title: 'failures', value: function (t) { return t.failures === undefined ? null : t.failures; }, num: true },
    { title: 'stop reason', value: function (t) { return t.stop_reason || t.problem; }, wrap: true },
    { title: 'nodes', value: function (t) { return t.nodes || null; } },
    { title: 'time used', value: function (t) { return t.time_used === undefined ? null : t.time_used; }, show: duration, num: true });
  var thead = document.querySelector('#trials thead'), tbody = document.querySelector('#trials tbody');
  var headRow = el('tr');
  columns.forEach(function (column, index) {
    var th = el('th', { 'data-column': String(index) }, column.title);
    if (column.id) th.id = 'sort-' + column.id;
    th.addEventListener('click', function () { sortTable(index); });
    headRow.appendChild(th);
  });
  thead.appendChild(headRow);
  var rows = trials.map(function (t) {
    var tr = el('tr', { 'data-trial': String(t.id) });
    if (t.id === bestId) tr.className = 'best';
    columns.forEach(function (column) {
      var value = column.value(t);
      var td = el('td', null, column.cell ? column.cell(t) : (column.show ? column.show(value) : show(value)));
      if (column.num) td.className = 'num';
      if (column.wrap) {  // one line, cut with an ellipsis; the whole text on hover
        td.className = 'wrap';
        if (value) td.setAttribute('title', String(value));
      }
      if (column.title === 'state') td.className = 'state-' + t.state;
      tr.appendChild(td);
    });
    tbody.appendChild(tr);
    return { trial: t, tr: tr, text: tr.textContent.toLowerCase() };
  });
  var sorted = { column: -1, ascending: true };
  function compare(a, b, numeric) {  // missing values last, whatever the direction
    var an = a === null || a === undefined || a === '', bn = b === null || b === undefined || b === '';
    if (an || bn) return an - bn;
    if (numeric) {
      var x = num(a), y = num(b);
      if (typeof a === 'number' || typeof a === 'string' && !Number.isNaN(x)) {
        if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) - Number.isNaN(y);
        return x < y ? -1 : x > y ? 1 : 0;
      }
    }
    a = show(a); b = show(b);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  function sortTable(index) {
    sorted.ascending = sorted.column === index ? !sorted.ascending : true;
    sorted.column = index;
    var column = columns[index], sign = sorted.ascending ? 1 : -1;
    rows.sort(function (a, b) {
      var va = column.value(a.trial), vb = column.value(b.trial);
      var missing = (va === null || va === '') - (vb === null || vb === '');
      return missing || sign * compare(va, vb, column.num) || a.trial.id - b.trial.id;
    });
    rows.forEach(function (row) { tbody.appendChild(row.tr); });
    Array.prototype.forEach.call(headRow.children, function (th, i) {
      th.className = i === index ? (sorted.ascending ? 'sorted-asc' : 'sorted-desc') : '';
    });
  }
  var stateSelect = document.getElementById('table-state'), filter = document.getElementById('table-filter');
  Object.keys(meta.states).forEach(function (s) { stateSelect.appendChild(el('option', { value: s }, s)); });
  function filterTable() {
    var words = filter.value.toLowerCase(), state = stateSelect.value, shown = 0;
    rows.forEach(function (row) {
      var visible = (!words || row.text.indexOf(words) >= 0) && (!state || row.trial.state === state);
      row.tr.hidden = !visible;
      shown += visible;
    });
    text('table-count', shown + ' of ' + rows.length + ' trials');
  }
  filter.addEventListener('input', filterTable);
  stateSelect.addEventListener('change', filterTable);
  filterTable();

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

  // ---- the searcher's story ----
  (function searcherStory() {
    var notes = [];
    if (data.asha) {
      document.getElementById('asha').hidden = false;
      var head = document.querySelector('#rungs thead'), body = document.querySelector('#rungs tbody');
      head.appendChild(el('tr', null, el('th', null, 'rung'), el('th', null, 'length'), el('th', null, 'results'),
                          el('th', null, 'went on to a higher rung'), el('th', null, 'stopped here')));
      data.asha.rungs.forEach(function (r) {
        body.appendChild(el('tr', null, el('td', { class: 'num' }, r.rung), el('td', { class: 'num' }, r.length),
                            el('td', { class: 'num' }, r.results), el('td', { class: 'num' }, r.went_on),
                            el('td', { class: 'num' }, r.stopped)));
      });
      var perTrial = {};
      data.asha.results.forEach(function (r) { (perTrial[r.trial] = perTrial[r.trial] || []).push(r); });
      var datasets = Object.keys(perTrial).map(function (id, index) {
        var results = perTrial[id], isBest = +id === bestId;
        return { label: 'trial ' + id, parsing: false,
                 data: results.map(function (r) { return { x: r.length, y: num(r.metric), action: r.action, rank: r.rank, peers: r.peers, rung: r.rung }; }),
                 borderColor: isBest ? '#d62728' : color(index, 0.6), backgroundColor: isBest ? '#d62728' : color(index, 0.8),
                 borderWidth: isBest ? 3 : 1, pointRadius: 3, showLine: true };
      });
      chart('asha-chart', {
        type: 'scatter', data: { datasets: datasets },
        options: { scales: { x: { type: 'logarithmic', title: { display: true, text: 'rung length (log)' } },
                             y: { title: { display: true, text: meta.metric } } },
                   plugins: { legend: { display: false },
                              tooltip: { callbacks: { label: function (ctx) {
                                return ctx.dataset.label + ' at rung ' + ctx.raw.rung + ': ' + show(ctx.raw.y) + ', rank ' + ctx.raw.rank +
                                  ' of ' + ctx.raw.peers + ' \u2192 ' + ctx.raw.action; } } } } }
      });
      text('asha-note', 'Each trial\u2019s result at each rung it reached, joined by a line: a trial that goes on to a ' +
           'longer rung was promoted (or continued); one that ends was stopped or is waiting. Ranks and decisions ' +
           'are the ones the searcher recorded in the journal.');
    }
    if (data.pbt) {
      document.getElementById('pbt').hidden = false;
      var population = data.pbt.population, links = data.pbt.links;
      var rounds = Math.max(1, data.pbt.rounds, Math.ceil(trials.length / population));
      var width = Math.max(400, 110 * rounds), height = 40 + 34 * population;
      var root = svg('svg', { viewBox: '0 0 ' + width + ' ' + height, id: 'lineage-svg', role: 'img',
                              style: 'max-width:' + width + 'px' });
      var at = function (id) { return { x: 50 + 110 * Math.floor(id / population), y: 25 + 34 * (id % population) }; };
      var edges = 0;
      links.forEach(function (link) {
        var a = at(link.parent), b = at(link.trial);
        var line = svg('line', { x1: a.x, y1: a.y, x2: b.x, y2: b.y, stroke: link.exploit ? '#e8710a' : '#9aa3b2',
                                 'stroke-width': link.exploit ? 2 : 1.2 });
        var title = svg('title');
        title.textContent = 'trial ' + link.trial + ' from trial ' + link.parent + ' at step ' + link.step + (link.reason ? ': ' + link.reason : '');
        line.appendChild(title);
        root.appendChild(line);
        edges++;
      });
      trials.forEach(function (t) {
        var p = at(t.id);
        var circle = svg('circle', { cx: p.x, cy: p.y, r: 11, fill: t.id === bestId ? '#d62728' : t.state === 'failed' ? '#b42318' : '#1d63c8' });
        var title = svg('title');
        title.textContent = 'trial ' + t.id + ' (' + t.state + ') ' + meta.metric + ' ' + show(t.best);
        circle.appendChild(title);
        root.appendChild(circle);
        var label = svg('text', { x: p.x, y: p.y + 4, 'text-anchor': 'middle', fill: '#fff', style: 'fill:#fff' });
        label.textContent = String(t.id);
        root.appendChild(label);
      });
      document.getElementById('lineage').appendChild(root);
      summary.svgs.push({ id: 'lineage-svg', paths: edges + trials.length });
      text('pbt-note', 'Columns are rounds, rows members (population ' + population + '). Orange: a member exploited ' +
           'another\u2019s checkpoint (started from it with explored hyperparameters); grey: it continued from its own. ' +
           'From each trial\u2019s started_from in trial.h5 and the work orders in the journal.');
      var head2 = document.querySelector('#exploits thead'), body2 = document.querySelector('#exploits tbody');
      head2.appendChild(el('tr', null, el('th', null, 'trial'), el('th', null, 'started from'), el('th', null, 'at step'), el('th', null, 'why')));
      links.filter(function (l) { return l.exploit; }).forEach(function (l) {
        body2.appendChild(el('tr', null, el('td', null, trialLink(l.trial)), el('td', null, trialLink(l.parent)),
                             el('td', { class: 'num' }, l.step), el('td', { class: 'wrap full' }, l.reason || '\u2014')));
      });
    }
    if (!data.asha && !data.pbt) {
      notes.push('The ' + meta.searcher + ' searcher ' + (meta.searcher === 'pbt' ? '' :
        meta.searcher === 'async_halving' || meta.searcher === 'adaptive_asha' ? 'has judged no result yet' :
        'trains every trial to its length: there are no rungs, promotions or lineage to show') + '.');
    }
    text('searcher-note', notes.join(' ') + ' `dlx replay` prints every decision with its reason.');
  })();

  // ---- attempts, restarts, time lost ----
  (function faults() {
    var colors = { completed: '#1a7f37', running: '#1d63c8', failed: '#b42318', notice: '#e8710a', crash: '#d62728',
                   unknown: '#7a8394', paused: '#b9c2d0', stopped: '#8e6bbf' };
    var words = { completed: 'completed', running: 'running (last update)', failed: 'failed', notice: 'checkpointed on a notice, requeued',
                  crash: 'crashed, restarted', unknown: 'ended unrecorded, restarted', paused: 'paused by the searcher',
                  stopped: 'stopped by the searcher' };
    var started = trials.filter(function (t) { return t.attempts.length; });
    var eventful = started.filter(function (t) { return t.attempts.length > 1 || t.state === 'failed'; });
    var shown = started.length <= 150 ? started : eventful.slice(0, 150);
    var origin = Infinity;
    started.forEach(function (t) { origin = Math.min(origin, t.attempts[0].start); });
    var labels = shown.map(function (t) { return 'trial ' + t.id; });
    var groups = {};
    shown.forEach(function (t) {
      t.attempts.forEach(function (a, k) {
        var how = colors[a.how] ? a.how : 'unknown';
        (groups[how] = groups[how] || []).push({ y: 'trial ' + t.id, x: [(a.start - origin) / 60, Math.max((a.end - origin) / 60, (a.start - origin) / 60 + 0.05)],
                                                 attempt: k + 1, reason: a.reason, nodes: a.nodes || '' });
      });
    });
    var datasets = Object.keys(groups).map(function (how) {
      return { label: words[how] || how, data: groups[how], backgroundColor: colors[how], borderSkipped: false, barPercentage: 0.8 };
    });
    if (shown.length) {
      document.getElementById('timeline-holder').style.height = Math.min(2400, 80 + 18 * shown.length) + 'px';
      chart('timeline-chart', {
        type: 'bar', data: { labels: labels, datasets: datasets },
        options: { indexAxis: 'y', parsing: { xAxisKey: 'x', yAxisKey: 'y' },
                   scales: { x: { type: 'linear', title: { display: true, text: 'minutes since the first trial started' } },
                             y: { type: 'category', stacked: true } },
                   plugins: { tooltip: { callbacks: { label: function (ctx) {
                     var r = ctx.raw; return 'attempt ' + r.attempt + ': ' + ctx.dataset.label + (r.nodes ? ' on ' + r.nodes : '') + (r.reason ? ' \u2014 ' + r.reason : ''); } } } } }
      });
    } else {
      document.getElementById('timeline-holder').hidden = true;
    }
    var lost = 0, notices = 0, crashes = 0;
    started.forEach(function (t) {
      lost += t.time_lost || 0;
      t.attempts.forEach(function (a) { notices += a.how === 'notice'; crashes += a.how === 'crash'; });
    });
    text('timeline-note', (started.length ? 'Each bar is one attempt of a trial (a run of its array task between restarts), ' +
         'colored by how it ended. ' + (shown.length < started.length ? 'Shown: the ' + shown.length + ' trials that restarted or failed (of ' + started.length + ' started). ' : '') +
         'In all: ' + notices + ' requeues after a notice (preemption, time limit, scontrol requeue), ' + crashes +
         ' crashes restarted, ' + (meta.states.failed || 0) + ' trials failed, ' + duration(lost) + ' lost (training redone after ' +
         'the checkpoint a restart resumed from, plus the time between attempts). ' : 'No trial has started yet. ') +
         'What is recorded: each trial\u2019s restarts (cause, reason, time, resumed step, steps and seconds lost, downtime) and the ' +
         'nodes of its latest attempt only; earlier attempts\u2019 nodes are not recorded.');
    var head = document.querySelector('#fault-table thead'), body = document.querySelector('#fault-table tbody');
    head.appendChild(el('tr', null, el('th', null, 'trial'), el('th', null, 'attempts'), el('th', null, 'requeues'), el('th', null, 'crashes'),
                        el('th', null, 'state'), el('th', null, 'time used'), el('th', null, 'time lost'), el('th', null, 'nodes (latest)'),
                        el('th', null, 'reasons')));
    eventful.forEach(function (t) {
      var reasons = t.attempts.filter(function (a) { return a.reason; }).map(function (a) { return a.reason; }).join('; ');
      body.appendChild(el('tr', null, el('td', null, trialLink(t.id)), el('td', { class: 'num' }, t.attempts.length),
                          el('td', { class: 'num' }, t.attempts.filter(function (a) { return a.how === 'notice'; }).length),
                          el('td', { class: 'num' }, t.attempts.filter(function (a) { return a.how === 'crash'; }).length),
                          el('td', { class: 'state-' + t.state }, t.state), el('td', { class: 'num' }, duration(t.time_used)),
                          el('td', { class: 'num' }, duration(t.time_lost)), el('td', null, t.nodes || '\u2014'),
                          el('td', { class: 'wrap full' }, reasons || '\u2014')));
    });
  })();

  // ---- each trial ----
  var sections = document.getElementById('trial-sections');
  function drawTrial(t, canvas) {
    var datasets = t.curves.map(function (c, k) {
      return { label: c.t + '/' + c.m, parsing: false, spanGaps: false, pointRadius: c.s.length <= 30 ? 2.5 : 0, borderWidth: 1.5,
               borderDash: c.t === 'training' ? [4, 3] : [], borderColor: color(k, 0.9), backgroundColor: color(k, 0.9),
               data: c.s.map(function (s, i) { return { x: s, y: c.v[i] }; }) };
    });
    chart(canvas.id, { type: 'line', data: { datasets: datasets },
                       options: { scales: { x: { type: 'linear', title: { display: true, text: 'step' } } } } });
    summary.charts.push(marksOf(charts[canvas.id]));
  }
  function field(list, name, value) { list.appendChild(el('dt', null, name)); list.appendChild(el('dd', null, value)); }
  trials.forEach(function (t) {
    var details = el('details', { id: 'trial-' + t.id, class: 'trial' });
    details.appendChild(el('summary', null, 'Trial ' + t.id + ' \u2014 ' + t.state + (t.searcher ? ' (' + t.searcher + ')' : '') +
                           ' \u2014 best ' + meta.metric + ' ' + show(t.best) + (t.id === bestId ? ' \u2014 the best trial' : '')));
    var list = el('dl', { class: 'fields' });
    Object.keys(t.hparams || {}).forEach(function (name) { field(list, name, show(t.hparams[name])); });
    field(list, 'last / best ' + meta.metric, show(t.last) + ' / ' + show(t.best));
    if (t.problem) field(list, 'cannot read trial.h5', t.problem);
    if (t.stop_reason) field(list, 'stop reason', t.stop_reason);
    if (t.created) {
      field(list, 'slurm job', t.slurm_job_id || '\u2014');
      field(list, 'nodes (latest attempt)', (t.nodes || '\u2014') + ' (' + t.world_size + ' ranks)');
      field(list, 'started, last update', when(t.created) + ', ' + when(t.updated));
      field(list, 'time used, lost', duration(t.time_used) + ', ' + duration(t.time_lost));
      field(list, 'restarts, failures', t.restarts + ', ' + t.failures);
    } else if (!t.problem) {
      field(list, 'trial.h5', 'none yet: the trial has not started');
    }
    if (t.started_from) {
      var from = el('dd', null, trialLink(t.started_from.trial), ' at step ' + t.started_from.step);
      list.appendChild(el('dt', null, 'started from'));
      list.appendChild(from);
    }
    t.attempts.forEach(function (a, k) {
      field(list, 'attempt ' + (k + 1), when(a.start) + ' \u2192 ' + when(a.end) + ': ' + a.how + (a.nodes ? ' on ' + a.nodes : '') +
            (a.resumed_step !== undefined ? ', resumed from step ' + a.resumed_step + ' (' + a.steps_lost + ' steps, ' +
             duration(a.seconds_lost) + ' redone, ' + duration(a.downtime) + ' down)' : '') + (a.reason ? ' \u2014 ' + a.reason : ''));
    });
    var infinite = t.curves.reduce(function (n, c) { return n + c.inf; }, 0);
    if (infinite) field(list, 'not drawn', infinite + ' infinite values');
    details.appendChild(list);
    if (t.curves.length) {
      var box = el('div', { class: 'chart' });
      var canvas = el('canvas', { id: 'trial-chart-' + t.id });
      box.appendChild(canvas);
      details.appendChild(box);
      details.addEventListener('toggle', function () { if (details.open && !charts[canvas.id]) drawTrial(t, canvas); });
    } else if (t.created) {
      details.appendChild(el('p', { class: 'note' }, 'No metrics reported yet.'));
    }
    sections.appendChild(details);
    summary.sections++;
  });
  // A link to a trial opens its section.
  function openFromHash() {
    var target = document.getElementById(decodeURIComponent(window.location.hash.slice(1)));
    if (target && target.tagName === 'DETAILS') { target.open = true; target.scrollIntoView(); }
  }
  window.addEventListener('hashchange', openFromHash);
  if (bestId !== null && byId[bestId] && byId[bestId].curves.length) {
    var bestSection = document.getElementById('trial-' + bestId);
    bestSection.open = true;
    drawTrial(byId[bestId], document.getElementById('trial-chart-' + bestId));
  }
  openFromHash();

  // ---- what was drawn ----
  Object.keys(charts).forEach(function (id) {
    if (id.indexOf('trial-chart-') !== 0) summary.charts.push(marksOf(charts[id]));
  });
  if (selftest) {  // dlx's test: sort by the best metric, as a click on its title does
    document.getElementById('sort-best').click();
    summary.selftest = { sorted_by: 'best', ascending: sorted.ascending };
    // ... and filter: by state, then by text, counting the rows left shown; then all again.
    stateSelect.value = 'completed';
    stateSelect.dispatchEvent(new Event('change'));
    summary.selftest.completed_shown = rows.filter(function (row) { return !row.tr.hidden; }).length;
    stateSelect.value = '';
    filter.value = 'trial 1';
    filter.dispatchEvent(new Event('input'));
    summary.selftest.text_shown = rows.filter(function (row) { return !row.tr.hidden; }).map(function (row) { return row.trial.id; });
    filter.value = '';
    filterTable();
  }
  if (window.dlxErrors.length) {
    var list = document.getElementById('page-errors');
    list.hidden = false;
    window.dlxErrors.forEach(function (e) { list.appendChild(el('li', null, 'page error: ' + e)); });
  }
  summary.trials = trials.length;
  document.getElementById('dlx-render-summary').textContent = JSON.stringify(summary);
})();
