// SPDX-License-Identifier: Apache-2.0
// dlx report's page: the sortable, filterable trial table (page_common.js has the helpers).
(function (R) {
  'use strict';
  var data = R.data, meta = R.meta, trials = R.trials, hparams = R.hparams, summary = R.summary, charts = R.charts;
  var el = R.el, svg = R.svg, text = R.text, num = R.num, show = R.show, duration = R.duration, when = R.when;
  var color = R.color, bestId = R.bestId, byId = R.byId, trialLink = R.trialLink, chart = R.chart;
  var marksOf = R.marksOf, axisType = R.axisType;
  // ---- trial table ----
  var columns = [
    { title: 'trial', value: function (t) { return t.id; }, cell: function (t) { return trialLink(t.id); }, num: true },
    { title: 'state', value: function (t) { return t.shown_state || t.state; } },
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
  R.table = { rows: rows, sorted: sorted, stateSelect: stateSelect, filter: filter, filterTable: filterTable };
})(window.dlxReport);
