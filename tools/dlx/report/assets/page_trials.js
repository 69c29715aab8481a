// SPDX-License-Identifier: Apache-2.0
// dlx report's page: each trial's section, then the summary of what was drawn (for dlx's test) (page_common.js has the helpers).
(function (R) {
  'use strict';
  var data = R.data, meta = R.meta, trials = R.trials, hparams = R.hparams, summary = R.summary, charts = R.charts;
  var el = R.el, svg = R.svg, text = R.text, num = R.num, show = R.show, duration = R.duration, when = R.when;
  var color = R.color, bestId = R.bestId, byId = R.byId, trialLink = R.trialLink, chart = R.chart;
  var marksOf = R.marksOf, axisType = R.axisType;
  var table = R.table, selftest = R.selftest;
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
    details.appendChild(el('summary', null, 'Trial ' + t.id + ' \u2014 ' + (t.shown_state || t.state) + (t.searcher ? ' (' + t.searcher + ')' : '') +
                           ' \u2014 best ' + meta.metric + ' ' + show(t.best) + (t.id === bestId ? ' \u2014 the best trial' : '')));
    var list = el('dl', { class: 'fields' });
    Object.keys(t.hparams || {}).forEach(function (name) { field(list, name, show(t.hparams[name])); });
    field(list, 'last / best ' + meta.metric, show(t.last) + ' / ' + show(t.best));
    if (t.problem) field(list, 'cannot read trial.h5', t.problem);
    if (t.stop_reason) field(list, 'stop reason', t.stop_reason);
    if (t.detail) field(list, 'now', t.detail);
    if (t.last_error) field(list, 'last error', t.last_error);
    (t.hparam_warnings || []).forEach(function (w) { field(list, 'hyperparameter warning', w); });
    if (t.created) {
      field(list, 'slurm job', (t.slurm_job_id || '\u2014') + (t.task !== null && t.task !== undefined ?
                                ' (array task ' + t.task + ', with its other trials: ' + meta.array.load + ')' : ''));
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
    if (t.resources) {  // what its ranks used of their nodes (page_resources.js)
      var usage = el('canvas', { id: 'trial-resources-' + t.id });
      details.appendChild(el('div', { class: 'chart' }, usage));
      details.addEventListener('toggle', function () { if (details.open && !charts[usage.id]) R.drawResources(t, usage); });
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
    if (id.indexOf('trial-chart-') !== 0 && id.indexOf('trial-resources-') !== 0) summary.charts.push(marksOf(charts[id]));
  });
  if (selftest) {  // dlx's test: sort by the best metric, as a click on its title does
    document.getElementById('sort-best').click();
    summary.selftest = { sorted_by: 'best', ascending: table.sorted.ascending };
    // ... and filter: by state, then by text, counting the rows left shown; then all again.
    table.stateSelect.value = 'completed';
    table.stateSelect.dispatchEvent(new Event('change'));
    summary.selftest.completed_shown = table.rows.filter(function (row) { return !row.tr.hidden; }).length;
    table.stateSelect.value = '';
    table.filter.value = 'trial 1';
    table.filter.dispatchEvent(new Event('input'));
    summary.selftest.text_shown = table.rows.filter(function (row) { return !row.tr.hidden; }).map(function (row) { return row.trial.id; });
    table.filter.value = '';
    table.filterTable();
    // ... and open the first sampled trial's section, which draws its ranks' resources.
    var sampled = trials.filter(function (t) { return t.resources; })[0];
    if (sampled) {
      var section = document.getElementById('trial-' + sampled.id);
      section.open = true;
      section.dispatchEvent(new Event('toggle'));
      summary.selftest.resources_opened = sampled.id;
    }
  }
  if (window.dlxErrors.length) {
    var list = document.getElementById('page-errors');
    list.hidden = false;
    window.dlxErrors.forEach(function (e) { list.appendChild(el('li', null, 'page error: ' + e)); });
  }
  summary.trials = trials.length;
  document.getElementById('dlx-render-summary').textContent = JSON.stringify(summary);
})(window.dlxReport);
