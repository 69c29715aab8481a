// SPDX-License-Identifier: Apache-2.0
// dlx report's page: what the trials used of their nodes (their system samples: CPU, memory, GPUs), the
// findings they support, and the chart of a trial's ranks that its section draws (page_trials.js).
(function (R) {
  'use strict';
  var data = R.data, trials = R.trials, summary = R.summary, charts = R.charts;
  var el = R.el, text = R.text, chart = R.chart, color = R.color, trialLink = R.trialLink;
  var MiB = 1048576;
  var found = data.resources || { trials: 0, findings: [] };
  var sampled = trials.filter(function (t) { return t.resources; });

  // ---- the experiment: findings, and each sampled trial's mean CPU and peak memory ----
  var findings = document.getElementById('resource-findings');
  found.findings.forEach(function (f) { findings.appendChild(el('li', null, trialLink(f.trial), ': ', f.text)); });
  if (!sampled.length) {
    text('resources-note', 'No trial has system samples: none has run yet, or resources.sample_period is 0.');
    document.getElementById('resources-holder').hidden = true;
  } else {
    var gpus = sampled.some(function (t) { return t.resources.gpu_mean !== undefined; });
    text('resources-note', sampled.length + ' trials sampled. CPU: percent of one core, the ranks of the latest run ' +
         'summed (100: one core busy); memory: the largest resident memory of any rank' +
         (gpus ? '; GPU: percent of the time a kernel ran, the mean of the ranks\' GPUs' : '') + '. ' +
         (found.findings.length ? '' : 'Nothing stands out.'));
    var bars = [{ label: 'CPU, mean (% of one core)', data: sampled.map(function (t) { return t.resources.cpu_mean; }),
                  yAxisID: 'cpu', backgroundColor: color(0, 0.7) },
                { label: 'memory, peak (MiB)', data: sampled.map(function (t) { return t.resources.mem_peak / MiB; }),
                  yAxisID: 'mem', backgroundColor: color(1, 0.7) }];
    if (gpus) {
      bars.push({ label: 'GPU, mean (%)', yAxisID: 'cpu', backgroundColor: color(2, 0.7),
                  data: sampled.map(function (t) { return t.resources.gpu_mean === undefined ? null : t.resources.gpu_mean; }) });
    }
    chart('resources-chart', {
      type: 'bar',
      data: { labels: sampled.map(function (t) { return 'trial ' + t.id; }), datasets: bars },
      options: { scales: { cpu: { type: 'linear', position: 'left', beginAtZero: true, title: { display: true, text: '% of one core' } },
                           mem: { type: 'linear', position: 'right', beginAtZero: true, grid: { drawOnChartArea: false },
                                  title: { display: true, text: 'MiB' } } } }
    });
  }

  // ---- one trial: each rank's CPU and memory against time since its first sample ----
  R.drawResources = function (t, canvas) {
    var start = Infinity;
    t.resources.ranks.forEach(function (r) { if (r.cpu.t.length) start = Math.min(start, r.cpu.t[0]); if (r.mem.t.length) start = Math.min(start, r.mem.t[0]); });
    var datasets = [];
    t.resources.ranks.forEach(function (r, k) {
      var name = 'rank ' + r.rank + ' on ' + r.node + (r.attempt ? ' (run ' + (r.attempt + 1) + ')' : '');
      datasets.push({ label: name + ': CPU %', yAxisID: 'cpu', parsing: false, pointRadius: 0, borderWidth: 1.5,
                      borderColor: color(2 * k, 0.9), data: r.cpu.t.map(function (s, i) { return { x: s - start, y: r.cpu.v[i] }; }) });
      datasets.push({ label: name + ': memory MiB', yAxisID: 'mem', parsing: false, pointRadius: 0, borderWidth: 1.5, borderDash: [4, 3],
                      borderColor: color(2 * k + 1, 0.9), data: r.mem.t.map(function (s, i) { return { x: s - start, y: r.mem.v[i] / MiB }; }) });
      if (r.gpu) {  // on the percent axis: 100 is a GPU always busy
        datasets.push({ label: name + ': GPU %', yAxisID: 'cpu', parsing: false, pointRadius: 0, borderWidth: 1.5, borderDash: [1, 2],
                        borderColor: color(2 * k, 0.5), data: r.gpu.t.map(function (s, i) { return { x: s - start, y: r.gpu.v[i] }; }) });
      }
    });
    chart(canvas.id, { type: 'line', data: { datasets: datasets },
                       options: { scales: { x: { type: 'linear', title: { display: true, text: 'seconds since the first sample' } },
                                            cpu: { type: 'linear', position: 'left', beginAtZero: true, title: { display: true, text: '% of one core; GPU %' } },
                                            mem: { type: 'linear', position: 'right', beginAtZero: true, grid: { drawOnChartArea: false },
                                                   title: { display: true, text: 'MiB' } } } } });
    summary.charts.push(R.marksOf(charts[canvas.id]));
  };
  summary.resources = { trials: sampled.length, findings: found.findings.length };
})(window.dlxReport);
