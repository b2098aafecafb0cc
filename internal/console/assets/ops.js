// Operations (admin users): charts from the server's own metrics, users
// and keys, vacuum, I/O limits, lifecycle passes; the cluster page on
// b3 node. Every call is the admin API's, run by the console in process.
'use strict';

// chart draws series ([{name, color, values}]) over times on a canvas.
function chart(canvas, times, series, fmt) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 400, h = canvas.clientHeight || 170;
  canvas.width = w * dpr; canvas.height = h * dpr;
  const g = canvas.getContext('2d');
  g.scale(dpr, dpr);
  g.clearRect(0, 0, w, h);
  const left = 64, bottom = 18, top = 6;
  let max = 0;
  for (const s of series) for (const v of s.values) if (v > max) max = v;
  if (max <= 0) max = 1;
  g.strokeStyle = '#e3e7ee'; g.fillStyle = '#667085'; g.font = '11px "Inter Variable", sans-serif';
  for (let i = 0; i <= 3; i++) {
    const y = top + (h - top - bottom) * i / 3;
    g.beginPath(); g.moveTo(left, y); g.lineTo(w, y); g.stroke();
    g.fillText(fmt(max * (3 - i) / 3), 2, y + 4);
  }
  if (times.length) {
    g.fillText(new Date(times[0]).toLocaleTimeString(), left, h - 4);
    const last = new Date(times[times.length - 1]).toLocaleTimeString();
    g.fillText(last, w - g.measureText(last).width - 2, h - 4);
  }
  const n = times.length;
  for (const s of series) {
    g.strokeStyle = s.color; g.lineWidth = 1.5; g.beginPath();
    let started = false;
    s.values.forEach((v, i) => {
      if (v < 0) { started = false; return; }
      const x = left + (w - left) * (n > 1 ? i / (n - 1) : 1);
      const y = top + (h - top - bottom) * (1 - v / max);
      if (started) g.lineTo(x, y); else { g.moveTo(x, y); started = true; }
    });
    g.stroke();
  }
}

function chartCard(title, id) {
  const canvas = el('canvas', { class: 'chart', id });
  const legend = el('div', { class: 'legend' });
  return { card: el('div', { class: 'card' }, el('h2', { text: title }), canvas, legend), canvas, legend };
}

const fmtRate = v => v >= 100 ? v.toFixed(0) : v.toFixed(v >= 10 ? 1 : 2);
const fmtMs = v => (v * 1000).toFixed(v < 0.01 ? 2 : 1) + ' ms';

B3.pages.ops = async function (main) {
  main.append(pageHead('Operations', { lead: 'This server: traffic and disk over the last hour, vacuum, lifecycle, disk I/O limits, users.' }));
  const charts = {
    req: chartCard('Requests per second', 'chart-requests'),
    bytes: chartCard('Bytes per second', 'chart-bytes'),
    lat: chartCard('Latency percentiles', 'chart-latency'),
    disk: chartCard('Disk: live and dead bytes', 'chart-disk'),
  };
  const statusCard = el('div', { class: 'card', id: 'vacuum' });
  const usersCard = el('div', { class: 'card', id: 'users' });
  const limitsCard = el('div', { class: 'card', id: 'limits' });
  main.append(el('div', { class: 'grid' }, Object.values(charts).map(c => c.card)), el('div', { class: 'grid' }, statusCard, limitsCard), el('div', { class: 'grid' }, usersCard));
  usersCard.classList.add('wide');
  const legend = (node, items) => clear(node, items.map(([name, color, value]) => el('span', {}, el('span', { class: 'swatch', style: 'background:' + color }),
    name + (value !== undefined ? ' ' + value : ''))));
  const drawCharts = async () => {
    const m = await api('GET', '/api/metrics');
    B3.metricPoints = m.time.length;
    const last = a => a.length ? a[a.length - 1] : 0;
    chart(charts.req.canvas, m.time, [{ color: '#2f6fed', values: m.requestsPerSecond }], fmtRate);
    legend(charts.req.legend, [['requests/s', '#2f6fed', fmtRate(last(m.requestsPerSecond))]]);
    chart(charts.bytes.canvas, m.time, [{ color: '#2e7d32', values: m.receivedBytesPerSecond }, { color: '#ef6c00', values: m.sentBytesPerSecond }], v => fmtBytes(v) + '/s');
    legend(charts.bytes.legend, [['in', '#2e7d32', fmtBytes(last(m.receivedBytesPerSecond)) + '/s'], ['out', '#ef6c00', fmtBytes(last(m.sentBytesPerSecond)) + '/s']]);
    chart(charts.lat.canvas, m.time, [{ color: '#2f6fed', values: m.latencySeconds.p50 }, { color: '#ef6c00', values: m.latencySeconds.p90 }, { color: '#c62828', values: m.latencySeconds.p99 }], fmtMs);
    legend(charts.lat.legend, [['p50', '#2f6fed'], ['p90', '#ef6c00'], ['p99', '#c62828']]);
    chart(charts.disk.canvas, m.time, [{ color: '#2e7d32', values: m.liveBytes }, { color: '#c62828', values: m.deadBytes }], fmtBytes);
    legend(charts.disk.legend, [['live', '#2e7d32', fmtBytes(last(m.liveBytes))], ['dead', '#c62828', fmtBytes(last(m.deadBytes))],
      ['free', '#667085', last(m.freeBytes) >= 0 ? fmtBytes(last(m.freeBytes)) : 'not measured']]);
    if (!m.time.length) charts.req.legend.append(el('span', { class: 'muted', text: ' (the first points appear after two samples, 5 s apart)' }));
  };
  const refresh = async () => { try { await drawCharts(); await vacuumCard(statusCard); } catch (err) { toast(err.message, true); } };
  await refresh();
  const timer = setInterval(refresh, 5000);
  B3.stopTimers = () => clearInterval(timer);
  await Promise.all([usersSection(usersCard), limitsSection(limitsCard)].map(p => p.catch(err => toast(err.message, true))));
};

async function vacuumCard(card) {
  const st = await api('GET', '/api/admin/stats');
  const v = st.vacuum || {};
  const lc = st.lifecycle || {};
  let size = 0, dead = 0;
  for (const s of st.segments || []) { size += s.Size || 0; dead += s.DeadBytes || 0; }
  const running = !!(v.Running || v.running);
  const when = t => (!t || t.startsWith('0001-')) ? 'never' : fmtDate(t);
  const rows = [['Vacuum', (running ? 'running' : 'idle') + (v.Auto ? ', automatic checks on' : ', automatic checks off') + (v.LastError ? ', last error: ' + v.LastError : '')],
    ['Vacuum so far', (v.SegmentsRemoved || 0) + ' segments removed, ' + fmtBytes(v.BytesReclaimed || 0) + ' reclaimed, ' + fmtBytes(v.BytesCopied || 0) + ' copied (last pass: ' + when(v.LastPass) + ')'],
    ['Segments', (st.segments || []).length + ' files, ' + fmtBytes(size) + ', of which dead ' + fmtBytes(dead)],
    ['Lifecycle passes', String(lc.Passes || 0) + ' (last: ' + when(lc.LastPass) + ')'],
    ['Lifecycle expired / aborted', (lc.Expired || 0) + ' objects / ' + (lc.Aborted || 0) + ' uploads'],
    ['Uptime', Math.round((st.uptime_ns || 0) / 1e9) + ' s']];
  // The status is drawn again every 5 s; the form is made once, so what
  // is typed there (and the focus) survives the refresh.
  if (!card.status) {
    const threshold = el('input', { type: 'number', min: 0, max: 1, step: 0.05, placeholder: 'default', id: 'vacuum-threshold', style: 'width:120px' });
    const interval = el('input', { placeholder: 'e.g. 5m', id: 'vacuum-interval', size: 8 });
    card.status = el('div');
    card.start = el('button', { text: 'Start vacuum', onclick: () => adminAct('POST', 'vacuum/start', threshold.value ? { threshold: Number(threshold.value) } : {}, 'Vacuum started', threshold) });
    clear(card, el('h2', { text: 'Vacuum and lifecycle' }), card.status,
      el('div', { class: 'fields' }, field('Dead share to rewrite', threshold, { hint: 'A segment is rewritten when at least this share (0–1) of it is dead; empty: the server\'s setting.' }),
        el('div', { class: 'field', style: 'flex:none;padding-top:23px' }, el('div', { class: 'row', style: 'margin:0' }, card.start,
          el('button', { text: 'Stop vacuum', onclick: () => adminAct('POST', 'vacuum/stop', undefined, 'Vacuum stopped') })))),
      el('div', { class: 'fields' }, field('Automatic vacuum every', interval, { hint: 'How often the server checks for segments worth rewriting: a duration such as 30m or 6h. Kept across restarts.' }),
        el('div', { class: 'field', style: 'flex:none;padding-top:23px' }, el('button', { text: 'Set interval', class: 'set-interval', onclick: () => adminAct('POST', 'vacuum/auto', { interval: interval.value }, 'Automatic vacuum set', interval) }))),
      el('div', { class: 'row' }, el('button', { id: 'lifecycle-run', text: 'Run a lifecycle pass now', onclick: () => adminAct('POST', 'lifecycle/run', undefined, 'Lifecycle pass done') })));
  }
  card.start.disabled = running;
  const raw = card.status.querySelector('details');
  clear(card.status, el('table', { class: 'kv' }, rows.map(([k, val]) => el('tr', {}, el('td', { text: k }), el('td', { class: 'key', text: val })))),
    el('details', { open: !!(raw && raw.open) }, el('summary', { text: 'Vacuum status (raw)' }), el('pre', { text: JSON.stringify(v, null, 2) })));
}

// adminAct runs one admin call and says how it went: an error next to
// control, where the call had one, else in a toast.
async function adminAct(method, path, body, done, control) {
  try { const r = await api(method, '/api/admin/' + path, body); toast(done + (r && typeof r === 'object' ? ': ' + JSON.stringify(r).slice(0, 160) : '')); return true; } catch (err) {
    if (control) setError(control, err.message); else toast(err.message, true);
    return false;
  }
}

// LIMIT_LABELS name the admin API's limits (iolimit.Limits) for people.
const LIMIT_LABELS = {
  ReadBytesPerSec: ['Disk reads, all', 'Every read from the data disk, requests and background work together.'],
  WriteBytesPerSec: ['Disk writes, all', 'Every write to the data disk, uploads and background work together.'],
  BackgroundReadBytesPerSec: ['Disk reads, background', 'Reads by vacuum and other background work, within the total above.'],
  BackgroundWriteBytesPerSec: ['Disk writes, background', 'Writes by vacuum and other background work, within the total above.'],
};

async function limitsSection(card) {
  const l = await api('GET', '/api/admin/limits');
  const fields = Object.keys(l);
  const inputs = {};
  for (const f of fields) inputs[f] = el('input', { type: 'number', min: 0, value: l[f], id: 'limit-' + f, style: 'width:100%' });
  clear(card, el('h2', { text: 'Disk I/O limits' }), el('p', { class: 'muted', text: 'In bytes per second; 0 is unlimited. They apply at once and are kept across restarts.' }),
    el('div', { class: 'fields' }, fields.map(f => field((LIMIT_LABELS[f] || [f])[0] + ' (bytes/s)', inputs[f], { hint: (LIMIT_LABELS[f] || [])[1] }))),
    el('button', { class: 'primary', id: 'limits-save', text: 'Save limits', onclick: async () => {
      const body = {};
      for (const f of fields) {
        const v = Number(inputs[f].value);
        if (!Number.isInteger(v) || v < 0) return setError(inputs[f], 'A whole number of bytes per second, 0 or more.');
        body[f] = v;
      }
      await adminAct('PUT', 'limits', body, 'Limits saved');
    } }));
}

async function usersSection(card) {
  const users = await api('GET', '/api/admin/users');
  const name = el('input', { placeholder: 'e.g. backup-job', id: 'new-user', autocomplete: 'off' });
  const shown = el('div');
  clear(card, el('h2', { text: 'Users and access keys' }),
    el('div', { class: 'table-wrap' }, el('table', {}, el('thead', {}, el('tr', {}, ['Name', 'Access key', 'Canonical id', ''].map(t => el('th', { text: t })))),
      el('tbody', {}, (users || []).map(u => el('tr', {}, el('td', { text: u.name }), el('td', { class: 'key', text: u.access_key }), el('td', { class: 'key muted', text: u.canonical_id || '' }),
        el('td', { class: 'actions' }, u.managed ? el('button', { class: 'danger small', text: 'Remove', 'aria-label': 'Remove ' + u.access_key, onclick: async () => {
          if (!await confirmBox('Remove ' + u.access_key + '?', 'Requests signed with this key are refused from now on. Buckets it owns stay.', 'Remove')) return;
          try { await api('DELETE', '/api/admin/users/' + encodeURIComponent(u.access_key)); toast('Removed'); usersSection(card); } catch (err) { toast(err.message, true); }
        } }) : el('span', { class: 'muted', text: 'fixed' }))))))),
    el('form', { class: 'fields', noValidate: true, onsubmit: async e => {
      e.preventDefault();
      if (!name.value.trim()) return setError(name, 'Give the user a name.');
      try {
        const u = await api('POST', '/api/admin/users', { name: name.value.trim() });
        await usersSection(card);
        card.append(el('div', { class: 'card' }, el('strong', { text: 'New key for ' + u.name + ' — the secret is shown this once:' }),
          el('pre', { text: 'access key: ' + u.access_key + '\nsecret key: ' + u.secret_key })));
      } catch (err) { setError(name, err.message); }
    } }, field('New user\'s name', name, { hint: 'A new access key and secret key are made for it.' }),
    el('div', { class: 'field', style: 'flex:none;padding-top:23px' }, el('button', { class: 'primary', type: 'submit', id: 'add-user', text: 'Add user' }))), shown);
}

// groupsCard shows the cluster map: its groups, what each owns and is to
// own, and the partitions moving between them.
function groupsCard(box, st) {
  if (!st.groups || !st.groups.length) {
    clear(box, el('p', { class: 'muted', text: 'No cluster map yet: the first group\'s leader makes it when it first leads.' }));
    return;
  }
  const moves = st.moves || [];
  const state = moves.length ? moves.length + ' partitions moving' : (st.balanced ? 'balanced' : 'moves pending');
  clear(box, el('p', { id: 'map-state', text: 'Cluster map epoch ' + st.map_epoch + ': ' + st.partitions + ' partitions over ' + st.groups.length +
      (st.groups.length === 1 ? ' group, ' : ' groups, ') + state + (st.rebalance_paused ? ' (rebalancing paused)' : '') + '.' }),
    el('div', { class: 'table-wrap' }, el('table', {}, el('thead', {}, el('tr', {}, ['Group', 'Partitions', 'Target', 'Leader', 'Members', 'Healthy', 'Note'].map((t, i) => el('th', { text: t, class: i >= 1 && i <= 2 || i === 4 || i === 5 ? 'num' : null })))),
      el('tbody', {}, st.groups.map(g => el('tr', { 'data-group': g.name }, el('td', { text: g.name }),
        el('td', { class: 'num', text: String(g.partitions) }), el('td', { class: 'num', text: String(g.target) }),
        el('td', { text: g.leader || '(none)' }), el('td', { class: 'num', text: String((g.members || []).length) }),
        el('td', { class: 'num', text: String((g.members || []).filter(m => m.healthy).length) }),
        el('td', { text: g.draining ? 'draining' : '' })))))),
    moves.length ? el('p', { id: 'moves', text: 'Moving: ' + moves.slice(0, 12).map(m => m.partition + ' ' + m.from + '→' + m.to).join(', ') + (moves.length > 12 ? ', …' : '') }) : null);
}

B3.pages.cluster = async function (main) {
  main.append(pageHead('Cluster', { lead: 'The groups of the cluster and this node\'s replica group, as this node sees them, refreshed every 3 s.' }));
  const groups = el('section', { class: 'card', id: 'groups', 'aria-label': 'Groups and partitions' });
  const box = el('section', { class: 'card', id: 'cluster', 'aria-label': 'Replica group' });
  main.append(groups, box);
  const refresh = async () => {
    try {
      const st = await api('GET', '/api/admin/cluster');
      groupsCard(groups, st);
      clear(box, el('p', { text: 'Replica group ' + (st.group || '') + ': leader ' + (st.leader || '(none)') + ', term ' + st.term + ', replication ' + st.replication + ' (as seen by ' + st.node + ')' }),
        el('div', { class: 'table-wrap' }, el('table', {}, el('thead', {}, el('tr', {}, ['Node', 'Address', 'Health', 'State', 'Applied', 'Lag (entries)', 'Lag (s)', 'Pushing', 'Last contact'].map((t, i) => el('th', { text: t, class: i >= 4 ? 'num' : null })))),
          el('tbody', {}, st.members.map(m => el('tr', { 'data-member': m.id }, el('td', { text: m.id }), el('td', { text: m.cluster_address }),
            el('td', { class: m.healthy ? 'ok' : 'error', text: m.healthy ? 'healthy' : (m.error || 'down') }), el('td', { text: m.state || '' }),
            el('td', { class: 'num', text: String(m.applied_index) }), el('td', { class: 'num', text: String(m.lag_entries) }),
            el('td', { class: 'num', text: m.lag_seconds.toFixed(1) }), el('td', { class: 'num', text: fmtBytes(m.pending_push_bytes) }),
            el('td', { class: 'num', text: m.last_contact_seconds ? m.last_contact_seconds.toFixed(1) + ' s' : '' })))))));
    } catch (err) { clear(box, el('p', { class: 'error', text: err.message })); }
  };
  await refresh();
  const timer = setInterval(refresh, 3000);
  B3.stopTimers = () => clearInterval(timer);
};
