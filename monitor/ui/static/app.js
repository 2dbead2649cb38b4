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
  // The charts. Each line is found by its System.Runtime EventCounter
  // (.NET Core 3.0 to .NET 8) or, failing that, by the System.Runtime
  // Meter's instruments (.NET 9+): one tag combination (tags), all of them
  // added up (sum), or CPU seconds per second as a share of the CPUs
  // (perCPU). The API gives rates per second of the time each value covers.
  const CHARTS = [
    { id: 'cpu', title: 'CPU usage', series: [
      { key: 'cpu-usage', label: 'CPU', from: [{ name: 'cpu-usage' }, { name: 'dotnet.process.cpu.time', sum: true, perCPU: true }] }] },
    { id: 'memory', title: 'Memory', series: [
      { key: 'working-set', label: 'working set', from: [{ name: 'working-set' }, { name: 'dotnet.process.memory.working_set' }] },
      { key: 'gc-heap-size', label: 'GC heap', from: [{ name: 'gc-heap-size' }, { name: 'dotnet.gc.last_collection.heap.size', sum: true }] }] },
    { id: 'alloc', title: 'Allocation rate', series: [
      { key: 'alloc-rate', label: 'allocated', from: [{ name: 'alloc-rate' }, { name: 'dotnet.gc.heap.total_allocated' }] }] },
    { id: 'gc', title: 'Garbage collections', series: [0, 1, 2].map((g) => (
      { key: 'gen-' + g + '-gc-count', label: 'gen ' + g,
        from: [{ name: 'gen-' + g + '-gc-count' }, { name: 'dotnet.gc.collections', tags: { 'gc.heap.generation': 'gen' + g } }] })) },
    { id: 'exceptions', title: 'Exceptions', series: [
      { key: 'exception-count', label: 'thrown', from: [{ name: 'exception-count' }, { name: 'dotnet.exceptions', sum: true }] }] },
    { id: 'threadpool', title: 'Thread pool', series: [
      { key: 'threadpool-queue-length', label: 'queue length', from: [{ name: 'threadpool-queue-length' }, { name: 'dotnet.thread_pool.queue.length' }] },
      { key: 'threadpool-thread-count', label: 'threads', from: [{ name: 'threadpool-thread-count' }, { name: 'dotnet.thread_pool.thread.count' }] }] },
  ];
  const HISTORY = 300;

  const state = {
    info: null,      // the last GET api/processes
    pid: 0,          // the process shown
    series: {},      // key -> {provider, name, tags, label, unit, rate, kind, points: [[ms, v]]}
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

  // fmt formats a value with its unit, in SI units as Prometheus does:
  // bytes with decimal prefixes (1 MB = 10^6 B, so a 250 MB/s maximum reads
  // "250 MB/s"), seconds as they are, others with a sensible number of
  // digits.
  function fmt(v, unit) {
    if (v === undefined || v === null || Number.isNaN(v)) return '–';
    unit = unit || '';
    const base = unit.replace(/\/s$/, '');
    const per = unit.endsWith('/s') ? '/s' : '';
    if (base === 'B') {
      const prefixes = ['', 'k', 'M', 'G', 'T', 'P'];
      let i = 0;
      while (Math.abs(v) >= 1000 && i < prefixes.length - 1) { v /= 1000; i++; }
      return num(v) + ' ' + prefixes[i] + 'B' + per;
    }
    if (base === '') return num(v) + (per ? per : '');
    return num(v) + ' ' + unit;
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
      c.series.forEach((def, i) => {
        const st = STYLES[i % STYLES.length];
        const li = el('li', { 'data-series': def.key });
        const sw = svg('svg', { viewBox: '0 0 26 10', 'aria-hidden': 'true' });
        sw.append(svg('line', { x1: 1, y1: 5, x2: 25, y2: 5, stroke: st.color, 'stroke-width': 2.5, 'stroke-dasharray': st.dash }));
        li.append(sw, el('span', {}, def.label), el('span', { class: 'value', 'data-series': def.key }, '–'));
        legend.append(li);
      });
      card.append(h, s, nodata, legend);
      box.append(card);
    }
  }

  // matches tells whether a series of the API is the one alt names:
  // a System.Runtime counter of that name, with those tags (none when
  // alt.tags is not given and alt.sum is not set).
  function matches(ser, alt) {
    if (ser.provider !== 'System.Runtime' || ser.name !== alt.name) return false;
    const tags = ser.tags || {};
    if (alt.sum) return true;
    const want = alt.tags || {};
    const keys = Object.keys(tags);
    return keys.length === Object.keys(want).length && keys.every((k) => tags[k] === want[k]);
  }

  // resolve finds a chart line's values: the first alternative with
  // values, its series added up by time when there are several (the
  // values of one collection share their time), as a percentage of the
  // CPUs for perCPU. It returns {unit, points} or null.
  function resolve(def) {
    for (const alt of def.from) {
      const found = Object.values(state.series).filter((ser) => matches(ser, alt) && ser.points.length > 0);
      if (found.length === 0) continue;
      let unit = found[0].unit;
      let points = found[0].points;
      if (found.length > 1) {
        const sums = new Map();
        for (const ser of found) for (const p of ser.points) sums.set(p[0], (sums.get(p[0]) || 0) + p[1]);
        points = [...sums.entries()].sort((a, b) => a[0] - b[0]);
      }
      if (alt.perCPU) {
        const cpus = Object.values(state.series).find((ser) => matches(ser, { name: 'dotnet.process.cpu.count' }) && ser.points.length > 0);
        const n = cpus ? cpus.points[cpus.points.length - 1][1] : 0;
        if (!(n > 0)) continue;
        points = points.map((p) => [p[0], 100 * p[1] / n]);
        unit = '%';
      }
      return { unit, points };
    }
    return null;
  }

  function drawCharts() {
    // The time axis covers the history kept, but at least a minute: a
    // process followed for a short while fills part of the chart.
    const end = state.now || Date.now();
    let first = end;
    for (const key in state.series) {
      const pts = state.series[key].points;
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
      const lines = c.series.map((def) => resolve(def));
      const present = lines.filter((l) => l);
      card.querySelector('.nodata').hidden = present.length > 0;
      let max = 0;
      let unit = '';
      for (const l of present) {
        unit = unit || l.unit;
        for (const p of l.points) if (p[0] >= start && p[1] > max) max = p[1];
      }
      max = niceMax(max);
      const left = 62, right = 6, top = 8, bottom = 18;
      const x = (t) => left + (width - left - right) * (t - start) / span;
      const y = (v) => top + (height - top - bottom) * (1 - v / max);
      for (const f of [0, 0.5, 1]) {
        const gy = y(max * f);
        s.append(svg('line', { class: 'grid', x1: left, x2: width - right, y1: gy, y2: gy }));
        const t = svg('text', { x: left - 4, y: gy + 4, 'text-anchor': 'end', class: 'tick' });
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
      c.series.forEach((def, i) => {
        const line = lines[i];
        const value = card.querySelector('.value[data-series="' + def.key + '"]');
        if (!line) {
          value.textContent = '–';
          return;
        }
        const st = STYLES[i % STYLES.length];
        // A gap of more than three windows (the session was reopened)
        // breaks the line. Each line keeps the values it draws
        // (data-points, [ms, value] pairs) for tools and tests.
        let run = [];
        let vals = [];
        const flush = () => {
          if (run.length > 0) {
            s.append(svg('polyline', { class: 'series', 'data-series': def.key, stroke: st.color, 'stroke-dasharray': st.dash,
              points: run.join(' '), 'data-points': JSON.stringify(vals) }));
          }
          run = [];
          vals = [];
        };
        let prev = 0;
        for (const p of line.points) {
          if (p[0] < start) continue;
          if (prev && p[0] - prev > 3 * Math.max(state.window, 1000)) flush();
          run.push(x(p[0]).toFixed(1) + ',' + y(p[1]).toFixed(1));
          vals.push(p);
          prev = p[0];
        }
        flush();
        const last = line.points[line.points.length - 1][1];
        value.textContent = fmt(last, line.unit);
        summary.push(def.label + ' ' + fmt(last, line.unit));
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

  function tagText(tags) {
    return Object.keys(tags || {}).sort().map((k) => k + '=' + tags[k]).join(', ');
  }

  function drawLatest() {
    const rows = $('latest-rows');
    rows.replaceChildren();
    for (const key of Object.keys(state.series).sort()) {
      const ser = state.series[key];
      const last = ser.points.length ? ser.points[ser.points.length - 1][1] : undefined;
      const tr = el('tr', { 'data-name': key });
      const name = (ser.provider && ser.provider !== 'System.Runtime' ? ser.provider + ' / ' : '') + (ser.name || key);
      tr.append(el('td', {}, ser.label || name), el('td', {}, name), el('td', {}, tagText(ser.tags)),
        el('td', { class: 'num value' }, fmt(last, ser.unit)));
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
      const after = state.after;
      const { body } = await api('GET', 'api/processes/' + pid + '/counters?after=' + after);
      if (pid !== state.pid) return;
      state.now = body.now;
      state.window = body.window || state.window;
      // The answer lists every series the monitor keeps (a provider whose
      // Meter publishes has its EventCounters dropped: so are they here),
      // with every value at or after the newest one the page had (its
      // collection may have had more to come): those replace what the
      // page has from that time on.
      for (const key in state.series) if (!(key in body.series)) delete state.series[key];
      for (const key in body.series) {
        const inc = body.series[key];
        const ser = state.series[key] || (state.series[key] = { points: [] });
        ser.provider = inc.provider; ser.name = inc.name; ser.tags = inc.tags || {};
        ser.label = inc.label; ser.unit = inc.unit; ser.rate = inc.rate; ser.kind = inc.kind;
        if (inc.points.length > 0) {
          while (ser.points.length > 0 && ser.points[ser.points.length - 1][0] >= after && after > 0) ser.points.pop();
          for (const p of inc.points) {
            ser.points.push(p);
            if (p[0] > state.after) state.after = p[0];
          }
        }
        if (ser.points.length > HISTORY) ser.points.splice(0, ser.points.length - HISTORY);
      }
      showError($('counters-error'), body.up || !body.error ? '' : 'the counters session is failing (it is retried): ' + body.error);
      drawCharts();
    } catch (e) {
      showError($('counters-error'), e.message);
    }
    state.countersTimer = setTimeout(pollCounters, Math.max(1000, Math.min(state.window, 2000)));
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
