// SPDX-License-Identifier: Apache-2.0
// dlx report's page: the searcher's story (ASHA rungs, PBT lineage) and each trial's attempts (page_common.js has the helpers).
(function (R) {
  'use strict';
  var data = R.data, meta = R.meta, trials = R.trials, hparams = R.hparams, summary = R.summary, charts = R.charts;
  var el = R.el, svg = R.svg, text = R.text, num = R.num, show = R.show, duration = R.duration, when = R.when;
  var color = R.color, bestId = R.bestId, byId = R.byId, trialLink = R.trialLink, chart = R.chart;
  var marksOf = R.marksOf, axisType = R.axisType;
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
      // Each trial's member (row) and rounds (columns) from its work orders' tickets: a member
      // that goes on keeps its trial, drawn as one bar across its rounds; a replacement starts in
      // the round it was created for. A trial the journal does not place (no journal) falls back
      // to its id, which is right for round 0's trials 0 .. population - 1.
      var placed = {};
      (data.pbt.placements || []).forEach(function (p) { placed[p.trial] = p; });
      var placement = function (id) {
        return placed[id] || { member: id % population, first_round: Math.floor(id / population),
                               last_round: Math.floor(id / population) };
      };
      var lastRound = 0;
      trials.forEach(function (t) { lastRound = Math.max(lastRound, placement(t.id).last_round); });
      var rounds = Math.max(1, data.pbt.rounds, lastRound + 1);
      var width = Math.max(400, 110 * rounds), height = 40 + 34 * population;
      var root = svg('svg', { viewBox: '0 0 ' + width + ' ' + height, id: 'lineage-svg', role: 'img',
                              style: 'max-width:' + width + 'px' });
      var column = function (round) { return 50 + 110 * round; };
      var row = function (member) { return 25 + 34 * member; };
      var edges = 0;
      links.forEach(function (link) {
        if (link.parent === link.trial) return;  // it went on from its own checkpoint: its bar shows that
        // From the parent's checkpoint at the end of the round before the new trial's first.
        var child = placement(link.trial), parent = placement(link.parent);
        var a = { x: column(Math.max(0, child.first_round - 1)), y: row(parent.member) };
        var b = { x: column(child.first_round), y: row(child.member) };
        var line = svg('line', { x1: a.x, y1: a.y, x2: b.x, y2: b.y, stroke: link.exploit ? '#e8710a' : '#9aa3b2',
                                 'stroke-width': link.exploit ? 2 : 1.2 });
        var title = svg('title');
        title.textContent = 'trial ' + link.trial + ' from trial ' + link.parent + ' at step ' + link.step + (link.reason ? ': ' + link.reason : '');
        line.appendChild(title);
        root.appendChild(line);
        edges++;
      });
      trials.forEach(function (t) {
        var p = placement(t.id), x0 = column(p.first_round), x1 = column(p.last_round), y = row(p.member);
        var bar = svg('rect', { x: x0 - 11, y: y - 11, width: x1 - x0 + 22, height: 22, rx: 11,
                                fill: t.id === bestId ? '#d62728' : t.state === 'failed' ? '#b42318' : '#1d63c8',
                                'data-trial': t.id, 'data-member': p.member,
                                'data-first-round': p.first_round, 'data-last-round': p.last_round });
        var title = svg('title');
        title.textContent = 'trial ' + t.id + ' (' + t.state + ') ' + meta.metric + ' ' + show(t.best) + ', member ' +
          p.member + ', round' + (p.first_round === p.last_round ? ' ' + p.first_round : 's ' + p.first_round + '\u2013' + p.last_round);
        bar.appendChild(title);
        root.appendChild(bar);
        for (var r = p.first_round; r <= p.last_round; r++) {
          var label = svg('text', { x: column(r), y: y + 4, 'text-anchor': 'middle', fill: '#fff', style: 'fill:#fff' });
          label.textContent = String(t.id);
          root.appendChild(label);
        }
      });
      document.getElementById('lineage').appendChild(root);
      summary.svgs.push({ id: 'lineage-svg', paths: edges + trials.length });
      text('pbt-note', 'Columns are rounds, rows members (population ' + population + '). A bar is one trial: a member ' +
           'that goes on into the next round keeps its trial, so its bar spans those rounds. Orange: a new trial ' +
           'replaced a member, started from a better member\u2019s checkpoint with explored hyperparameters. ' +
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
    var colors = { completed: '#1a7f37', running: '#1d63c8', failed: '#b42318', notice: '#e8710a', preemption: '#f0a030',
                   time_limit: '#c77c02', requeue: '#a0522d', crash: '#d62728', unknown: '#7a8394', paused: '#b9c2d0',
                   stopped: '#8e6bbf' };
    var words = { completed: 'completed', running: 'running (last update)', failed: 'failed', notice: 'checkpointed on a notice, requeued',
                  preemption: 'preempted: checkpointed, requeued', time_limit: 'at its time limit: checkpointed, requeued',
                  requeue: 'requeued (scontrol requeue, scancel or a preemption): checkpointed',
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
    var requeued = { notice: 1, preemption: 1, time_limit: 1, requeue: 1 };
    var lost = 0, notices = 0, crashes = 0, causes = {};
    started.forEach(function (t) {
      lost += t.time_lost || 0;
      t.attempts.forEach(function (a) {
        if (requeued[a.how]) { notices += 1; causes[a.how] = (causes[a.how] || 0) + 1; }
        crashes += a.how === 'crash';
      });
    });
    var byCause = Object.keys(causes).sort().map(function (c) { return causes[c] + ' ' + c.replace('_', ' '); }).join(', ');
    text('timeline-note', (started.length ? 'Each bar is one attempt of a trial (a run of its array task between restarts), ' +
         'colored by how it ended. ' + (shown.length < started.length ? 'Shown: the ' + shown.length + ' trials that restarted or failed (of ' + started.length + ' started). ' : '') +
         'In all: ' + notices + ' requeues after a notice' + (byCause ? ' (' + byCause + ')' : '') + ', ' + crashes +
         ' crashes restarted, ' + (meta.states.failed || 0) + ' trials failed, ' + duration(lost) + ' lost (training redone after ' +
         'the checkpoint a restart resumed from, plus the time between attempts). ' : 'No trial has started yet. ') +
         'What is recorded: each trial\u2019s restarts (cause, reason, the nodes of the attempt that ended, time, resumed step, ' +
         'steps and seconds lost, downtime) and its latest attempt\u2019s nodes. A cause is what the attempt could tell: the time ' +
         'limit when the notice came within 3 minutes of it, a preemption for the plugin\u2019s signal, a requeue for a SIGTERM ' +
         '(scontrol requeue, scancel, or a preemption without preempt_send_user_signal); \u201cunknown\u201d when nothing was ' +
         'recorded (a node failure, the job killed outright); records before format 3 say \u201cnotice\u201d and keep no earlier nodes.');
    var head = document.querySelector('#fault-table thead'), body = document.querySelector('#fault-table tbody');
    head.appendChild(el('tr', null, el('th', null, 'trial'), el('th', null, 'attempts'), el('th', null, 'requeues'), el('th', null, 'crashes'),
                        el('th', null, 'state'), el('th', null, 'time used'), el('th', null, 'time lost'), el('th', null, 'nodes (latest)'),
                        el('th', null, 'reasons')));
    eventful.forEach(function (t) {
      var reasons = t.attempts.filter(function (a) { return a.reason; }).map(function (a) {
        return a.reason + (a.nodes && a.how !== t.state ? ' [' + a.nodes + ']' : '');
      }).join('; ');
      body.appendChild(el('tr', null, el('td', null, trialLink(t.id)), el('td', { class: 'num' }, t.attempts.length),
                          el('td', { class: 'num' }, t.attempts.filter(function (a) { return requeued[a.how]; }).length),
                          el('td', { class: 'num' }, t.attempts.filter(function (a) { return a.how === 'crash'; }).length),
                          el('td', { class: 'state-' + t.state }, t.state), el('td', { class: 'num' }, duration(t.time_used)),
                          el('td', { class: 'num' }, duration(t.time_lost)), el('td', null, t.nodes || '\u2014'),
                          el('td', { class: 'wrap full' }, reasons || '\u2014')));
    });
  })();
})(window.dlxReport);
