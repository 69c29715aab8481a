// SPDX-License-Identifier: Apache-2.0
// dlx report's page: learning curves and the best value so far (page_common.js has the helpers).
(function (R) {
  'use strict';
  var data = R.data, meta = R.meta, trials = R.trials, hparams = R.hparams, summary = R.summary, charts = R.charts;
  var el = R.el, svg = R.svg, text = R.text, num = R.num, show = R.show, duration = R.duration, when = R.when;
  var color = R.color, bestId = R.bestId, byId = R.byId, trialLink = R.trialLink, chart = R.chart;
  var marksOf = R.marksOf, axisType = R.axisType;
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
})(window.dlxReport);
