// clrdiag monitor dashboard: the process list, live charts of the counters
// the monitor's own collector keeps (polled, no session per viewer), and
// the actions. Plain DOM and SVG; every text from a process goes through
// textContent.
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const csrf = (document.querySelector('meta[name="clrdiag-csrf"]') || {}).content || '';
  const SVG = 'http://www.w3.org/2000/svg';
  // Okabe-Ito colours with dash patterns, so series differ without colour.
  const STYLES = [
    { color: '#0072b2', dash: '' },
    { color: '#e69f00', dash: '7 4' },
    { color: '#009e73', dash: '2 3' },
    { color: '#cc79a7', dash: '10 3 2 3' },
  ];
  // The charts: System.Runtime counters by name (.NET Core 3.0 to .NET 8).
  const CHARTS = [
    { id: 'cpu', title: 'CPU usage', series: [['cpu-usage', 'CPU']] },
    { id: 'memory', title: 'Memory', series: [['working-set', 'working set'], ['gc-heap-size', 'GC heap']] },
    { id: 'alloc', title: 'Allocation rate', series: [['alloc-rate', 'allocated']] },
    { id: 'gc', title: 'Garbage collections', series: [['gen-0-gc-count', 'gen 0'], ['gen-1-gc-count', 'gen 1'], ['gen-2-gc-count', 'gen 2']] },
    { id: 'exceptions', title: 'Exceptions', series: [['exception-count', 'thrown']] },
    { id: 'threadpool', title: 'Thread pool', series: [['threadpool-queue-length', 'queue length'], ['threadpool-thread-count', 'threads']] },
  ];
  const HISTORY = 300;

  const state = {
    info: null,      // the last GET api/processes
    pid: 0,          // the process shown
    series: {},      // name -> {label, unit, rate, points: [[ms, v]]}
    after: 0,        // newest point received (Unix ms)
    now: 0,          // the server's clock at the last poll
    window: 2000,
    countersTimer: 0,
    jobTimer: 0,
  };

  // api calls the dashboard's API; it throws an Error with the server's
  // message. A lost session goes back to the sign-in form.
  async function api(method, path) {
    const headers = { 'Accept': 'application/json' };
    if (method !== 'GET') headers['X-Clrdiag-CSRF'] = csrf;
    let resp;
    try {
      resp = await fetch(path, { method, headers, credentials: 'same-origin' });
    } catch (e) {
      throw new Error('the monitor does not answer (' + e.message + ')');
    }
    if (resp.status === 401) {
      window.location.assign('login');
      throw new Error('signed out');
    }
    const type = resp.headers.get('Content-Type') || '';
    const body = type.includes('json') ? await resp.json() : await resp.text();
    if (!resp.ok) {
      const msg = (body && body.error) || (typeof body === 'string' && body) || resp.statusText;
      throw new Error(msg + ' (HTTP ' + resp.status + ')');
    }
    return { body, headers: resp.headers };
  }

  function showError(el, msg) {
    el.textContent = msg ? 'Error: ' + msg : '';
    el.hidden = !msg;
  }

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    return e;
  }

  // fmt formats a value with its unit: bytes as KB/MB/GB, others with a
  // sensible number of digits.
  function fmt(v, unit) {
    if (v === undefined || v === null || Number.isNaN(v)) return '–';
    unit = unit || '';
    if (unit === 'B' || unit === 'B/s') {
      const units = ['B', 'KB', 'MB', 'GB', 'TB'];
      let i = 0;
      while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
      return num(v) + ' ' + units[i] + (unit === 'B/s' ? '/s' : '');
    }
    return num(v) + (unit ? ' ' + unit : '');
  }

  function num(v) {
    const a = Math.abs(v);
    if (a === 0) return '0';
    if (Number.isInteger(v)) return String(v);
    if (a >= 100) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1);
    return v.toFixed(2);
  }

  // --- the process list ----------------------------------------------------

  async function loadProcesses() {
    let info;
    try {
      info = (await api('GET', 'api/processes')).body;
    } catch (e) {
      showError($('processes-error'), e.message);
      return;
    }
    state.info = info;
    state.window = info.window || 2000;
    showError($('processes-error'), info.error || '');
    const rows = $('process-rows');
    rows.replaceChildren();
    for (const p of info.processes) {
      const tr = el('tr', { 'data-pid': String(p.pid) });
      if (p.pid === state.pid) tr.setAttribute('aria-current', 'true');
      tr.append(el('td', { class: 'num', 'data-label': 'PID' }, String(p.pid)), el('td', { 'data-label': 'Name' }, p.name || ''),
        el('td', { class: 'cmd', 'data-label': 'Command line' }, p.commandLine || ''));
      const rt = el('td', { 'data-label': 'Runtime' }, p.runtime || (p.runtimeError ? 'unknown' : '…'));
      if (p.runtimeError) rt.title = p.runtimeError;
      tr.append(rt);
      const c = el('td', { 'data-label': 'Counters' }, { up: 'collecting', starting: 'starting', failing: 'failing', off: 'off (--no-metrics)' }[p.counters] || p.counters);
      if (p.counters === 'failing') {
        c.className = 'state-failing';
        c.title = p.countersError || '';
      }
      tr.append(c);
      const open = el('button', { type: 'button' }, p.pid === state.pid ? 'Shown' : 'Show');
      open.addEventListener('click', () => { window.location.hash = 'pid=' + p.pid; });
      const cell = el('td', { class: 'open' });
      cell.append(open);
      tr.append(cell);
      rows.append(tr);
    }
    $('no-processes').hidden = info.processes.length > 0;
    $('dump-hint').hidden = info.dumps;
    $('dump-button').disabled = !info.dumps;
    $('profile-seconds').max = String(info.maxDuration || 600);
    const sel = $('profile-sample');
    if (info.measures && sel.options.length !== info.measures.length) {
      const keep = sel.value;
      sel.replaceChildren();
      for (const m of info.measures) {
        const o = el('option', { value: m.name, title: m.help }, m.name);
        sel.append(o);
      }
      if (info.measures.some((m) => m.name === keep)) sel.value = keep;
      sampleHint();
    }
    $('status').textContent = info.processes.length + ' process' + (info.processes.length === 1 ? '' : 'es') +
      (info.metrics ? ' · counters every ' + (state.window / 1000) + ' s' : ' · counters off (--no-metrics)');
    const shown = info.processes.find((p) => p.pid === state.pid);
    if (shown) {
      $('detail-title').textContent = (shown.name || 'Process') + ' (pid ' + shown.pid + ')' + (shown.runtime ? ' · .NET ' + shown.runtime : '');
      $('detail-command').textContent = shown.commandLine || '';
    } else if (state.pid) {
      $('detail-title').textContent = 'Process ' + state.pid + ' (not found: it may have exited)';
    }
  }

  // --- charts ------------------------------------------------------------------

  function buildCharts() {
    const box = $('charts');
    box.replaceChildren();
    for (const c of CHARTS) {
      const card = el('figure', { class: 'chart', 'data-chart': c.id });
      card.style.margin = '0';
      const h = el('h3', { id: 'chart-title-' + c.id }, c.title);
      const s = svg('svg', { role: 'img', 'aria-labelledby': 'chart-title-' + c.id });
      const nodata = el('p', { class: 'nodata' }, 'Waiting for values…');
      const legend = el('ul', { class: 'legend' });
      c.series.forEach(([name, label], i) => {
        const st = STYLES[i % STYLES.length];
        const li = el('li', { 'data-series': name });
        const sw = svg('svg', { viewBox: '0 0 26 10', 'aria-hidden': 'true' });
        sw.append(svg('line', { x1: 1, y1: 5, x2: 25, y2: 5, stroke: st.color, 'stroke-width': 2.5, 'stroke-dasharray': st.dash }));
        li.append(sw, el('span', {}, label), el('span', { class: 'value', 'data-series': name }, '–'));
        legend.append(li);
      });
      card.append(h, s, nodata, legend);
      box.append(card);
    }
  }

  function drawCharts() {
    // The time axis covers the history kept, but at least a minute: a
    // process followed for a short while fills part of the chart.
    const end = state.now || Date.now();
    let first = end;
    for (const name in state.series) {
      const pts = state.series[name].points;
      if (pts.length > 0 && pts[0][0] < first) first = pts[0][0];
    }
    const span = Math.min(HISTORY * state.window, Math.max(60000, Math.ceil((end - first) / 60000) * 60000));
    const start = end - span;
    for (const c of CHARTS) {
      const card = document.querySelector('.chart[data-chart="' + c.id + '"]');
      if (!card) continue;
      const s = card.querySelector('svg[role="img"]');
      const width = Math.max(s.clientWidth, 200);
      const height = 130;
      s.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
      s.replaceChildren();
      const present = c.series.filter(([name]) => state.series[name] && state.series[name].points.length > 0);
      card.querySelector('.nodata').hidden = present.length > 0;
      let max = 0;
      let unit = '';
      for (const [name] of present) {
        const ser = state.series[name];
        unit = unit || ser.unit;
        for (const p of ser.points) if (p[0] >= start && p[1] > max) max = p[1];
      }
      max = niceMax(max);
      const left = 58, right = 6, top = 8, bottom = 18;
      const x = (t) => left + (width - left - right) * (t - start) / span;
      const y = (v) => top + (height - top - bottom) * (1 - v / max);
      for (const f of [0, 0.5, 1]) {
        const gy = y(max * f);
        s.append(svg('line', { class: 'grid', x1: left, x2: width - right, y1: gy, y2: gy }));
        const t = svg('text', { x: left - 4, y: gy + 4, 'text-anchor': 'end' });
        t.textContent = fmt(max * f, unit);
        s.append(t);
      }
      const t0 = svg('text', { x: left, y: height - 4 });
      t0.textContent = ago(span);
      const tm = svg('text', { x: (left + width - right) / 2, y: height - 4, 'text-anchor': 'middle' });
      tm.textContent = ago(span / 2);
      const t1 = svg('text', { x: width - right, y: height - 4, 'text-anchor': 'end' });
      t1.textContent = 'now';
      s.append(t0, tm, t1);
      const summary = [];
      c.series.forEach(([name, label], i) => {
        const ser = state.series[name];
        const value = card.querySelector('.value[data-series="' + name + '"]');
        if (!ser || ser.points.length === 0) {
          value.textContent = '–';
          return;
        }
        const st = STYLES[i % STYLES.length];
        // A gap of more than three windows (the session was reopened)
        // breaks the line.
        let run = [];
        const flush = () => {
          if (run.length > 0) {
            s.append(svg('polyline', { class: 'series', 'data-series': name, stroke: st.color, 'stroke-dasharray': st.dash, points: run.join(' ') }));
          }
          run = [];
        };
        let prev = 0;
        for (const p of ser.points) {
          if (p[0] < start) continue;
          if (prev && p[0] - prev > 3 * state.window) flush();
          run.push(x(p[0]).toFixed(1) + ',' + y(p[1]).toFixed(1));
          prev = p[0];
        }
        flush();
        const last = ser.points[ser.points.length - 1][1];
        value.textContent = fmt(last, ser.unit);
        summary.push(label + ' ' + fmt(last, ser.unit));
      });
      s.setAttribute('aria-label', c.title + (summary.length ? ': ' + summary.join(', ') : ': no values yet'));
    }
    drawLatest();
  }

  // ago labels a point of the time axis: "−30 s", "−2.5 min".
  function ago(ms) {
    return ms < 60000 ? '−' + Math.round(ms / 1000) + ' s' : '−' + (Math.round(ms / 6000) / 10) + ' min';
  }

  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }

  function drawLatest() {
    const rows = $('latest-rows');
    rows.replaceChildren();
    for (const name of Object.keys(state.series).sort()) {
      const ser = state.series[name];
      const last = ser.points.length ? ser.points[ser.points.length - 1][1] : undefined;
      const tr = el('tr', { 'data-name': name });
      tr.append(el('td', {}, ser.label || name), el('td', {}, name), el('td', { class: 'num value' }, fmt(last, ser.unit)));
      rows.append(tr);
    }
  }

  async function pollCounters() {
    clearTimeout(state.countersTimer);
    const pid = state.pid;
    if (!pid || !state.info || !state.info.metrics) {
      if (state.info && !state.info.metrics) showError($('counters-error'), 'the monitor runs with --no-metrics: no counters are collected');
      return;
    }
    try {
      const { body } = await api('GET', 'api/processes/' + pid + '/counters?after=' + state.after);
      if (pid !== state.pid) return;
      state.now = body.now;
      state.window = body.window || state.window;
      for (const name in body.series) {
        const inc = body.series[name];
        const ser = state.series[name] || (state.series[name] = { points: [] });
        ser.label = inc.label; ser.unit = inc.unit; ser.rate = inc.rate;
        for (const p of inc.points) {
          ser.points.push(p);
          if (p[0] > state.after) state.after = p[0];
        }
        if (ser.points.length > HISTORY) ser.points.splice(0, ser.points.length - HISTORY);
      }
      showError($('counters-error'), body.up || !body.error ? '' : 'the counters session is failing (it is retried): ' + body.error);
      drawCharts();
    } catch (e) {
      showError($('counters-error'), e.message);
    }
    state.countersTimer = setTimeout(pollCounters, Math.max(1000, state.window));
  }

  // --- showing a process --------------------------------------------------------

  function select(pid) {
    if (pid === state.pid) return;
    state.pid = pid;
    state.series = {};
    state.after = 0;
    clearTimeout(state.jobTimer);
    $('detail').hidden = !pid;
    $('result').hidden = true;
    $('result-frame').removeAttribute('src');
    showError($('action-error'), '');
    $('action-status').textContent = '';
    $('detail-title').textContent = 'Process ' + pid;
    $('detail-command').textContent = '';
    buildCharts();
    loadProcesses().then(pollCounters);
  }

  function fromHash() {
    const m = /pid=(\d+)/.exec(window.location.hash);
    select(m ? Number(m[1]) : 0);
  }

  // --- actions ---------------------------------------------------------------------

  function busy(on) {
    for (const id of ['profile-button', 'stacks-button', 'gcdump-button']) $(id).disabled = on;
    $('dump-button').disabled = on || !(state.info && state.info.dumps);
  }

  function showResult(title, summary, text, url) {
    $('result').hidden = false;
    $('result-title').textContent = title;
    $('result-summary').textContent = summary || '';
    $('result-text').hidden = !text;
    $('result-text').textContent = text || '';
    $('result-links').hidden = !url;
    $('result-frame').hidden = !url;
    if (url) {
      $('result-open').href = url;
      $('result-frame').src = url;
    } else {
      $('result-frame').removeAttribute('src');
    }
  }

  async function startJob(path, what) {
    const pid = state.pid;
    showError($('action-error'), '');
    busy(true);
    let job;
    try {
      job = (await api('POST', path)).body;
    } catch (e) {
      busy(false);
      $('action-status').textContent = '';
      showError($('action-error'), what + ' of process ' + pid + ' failed: ' + e.message);
      return;
    }
    const poll = async () => {
      if (pid !== state.pid) return;
      try {
        job = (await api('GET', 'api/jobs/' + job.id)).body;
      } catch (e) {
        busy(false);
        showError($('action-error'), e.message);
        return;
      }
      if (job.state === 'running') {
        let msg = what + ' of process ' + pid + '…';
        if (job.until) {
          const left = Math.ceil((Date.parse(job.until) - Date.now()) / 1000);
          msg += left > 0 ? ' ' + left + ' s left' : ' collecting the method names (rundown)';
        }
        $('action-status').textContent = msg;
        state.jobTimer = setTimeout(poll, 1000);
        return;
      }
      busy(false);
      if (job.state === 'failed') {
        $('action-status').textContent = '';
        showError($('action-error'), what + ' of process ' + pid + ' failed: ' + job.error);
        return;
      }
      $('action-status').textContent = what + ' of process ' + pid + ' done.';
      showResult(what + ' of process ' + pid, job.summary, job.report, job.url);
    };
    poll();
  }

  // sampleHint says what the chosen measure weighs.
  function sampleHint() {
    const m = ((state.info && state.info.measures) || []).find((x) => x.name === $('profile-sample').value);
    $('profile-hint').textContent = m ? m.name + ': ' + m.help : '';
  }
  $('profile-sample').addEventListener('change', sampleHint);

  $('profile-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const secs = Number($('profile-seconds').value) || 5;
    const sample = $('profile-sample').value || 'wall';
    const what = { wall: 'CPU profile', cpu: 'CPU profile (managed)', alloc: 'Allocation profile', contention: 'Lock contention profile', exceptions: 'Exception profile' }[sample] || sample + ' profile';
    startJob('api/processes/' + state.pid + '/profile?duration=' + secs + 's&sample=' + encodeURIComponent(sample), what);
  });

  $('gcdump-button').addEventListener('click', () => {
    startJob('api/processes/' + state.pid + '/gcdump', 'Heap snapshot');
  });

  $('stacks-button').addEventListener('click', async () => {
    const pid = state.pid;
    showError($('action-error'), '');
    busy(true);
    $('action-status').textContent = 'Taking the stacks of process ' + pid + '…';
    try {
      const { body, headers } = await api('GET', 'api/processes/' + pid + '/stacks');
      const warning = headers.get('X-Clrdiag-Warning');
      $('action-status').textContent = 'Stacks of process ' + pid + ' taken.';
      showResult('Stacks of process ' + pid, warning ? 'Warning: ' + warning : '', body, '');
    } catch (e) {
      $('action-status').textContent = '';
      showError($('action-error'), 'Stacks of process ' + pid + ' failed: ' + e.message);
    }
    busy(false);
  });

  $('dump-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const pid = state.pid;
    const type = $('dump-type').value;
    showError($('action-error'), '');
    busy(true);
    $('action-status').textContent = 'Writing a ' + type + ' dump of process ' + pid + '…';
    try {
      const { body } = await api('POST', 'api/processes/' + pid + '/dump?type=' + encodeURIComponent(type));
      $('action-status').textContent = 'Dump of process ' + pid + ' written: ' + body.path;
    } catch (e) {
      $('action-status').textContent = '';
      showError($('action-error'), 'Dump of process ' + pid + ' failed: ' + e.message);
    }
    busy(false);
  });

  window.addEventListener('hashchange', fromHash);
  window.addEventListener('resize', () => { if (state.pid) drawCharts(); });
  loadProcesses().then(fromHash);
  setInterval(loadProcesses, 5000);
})();
