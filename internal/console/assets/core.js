// b3 console: shared helpers. Untrusted text (keys, metadata, names,
// server messages) only ever reaches the page as text nodes or property
// values, never as markup: el() has no way to set innerHTML.
'use strict';

const B3 = { session: null, pages: {}, modals: new Set() };

// el builds an element. props: class, text, on* handlers, attrs as
// properties or (for data-/aria-) attributes. Children: nodes or strings
// (strings become text nodes).
function el(tag, props, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'for') e.setAttribute(k, v);
    else e[k] = v;
  }
  return add(e, ...kids);
}

// add appends kids to node: nodes, or strings as text nodes; null,
// undefined and false are skipped (Node.append would show them as text).
function add(node, ...kids) {
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return node;
}

// uid returns an id no other element of the page has.
let uidCount = 0;
function uid(prefix) { return (prefix || 'id') + '-' + (++uidCount); }

// field is a labelled form control: <label> above it, a hint below,
// and the place for its error (setError), tied to the control by
// aria-describedby so a screen reader says both. opts: hint, class,
// hidden (the label is for screen readers only, where a table's head
// already says it).
function field(label, control, opts) {
  opts = opts || {};
  if (!control.id) control.id = uid('f');
  const err = el('span', { class: 'field-error', id: control.id + '-error', 'aria-live': 'polite' });
  const hint = opts.hint ? el('span', { class: 'hint', id: control.id + '-hint', text: opts.hint }) : null;
  control.setAttribute('aria-describedby', (hint ? hint.id + ' ' : '') + err.id);
  control.addEventListener('input', () => setError(control, ''));
  return el('div', { class: 'field' + (opts.class ? ' ' + opts.class : '') },
    el('label', { for: control.id, text: label, class: opts.hidden ? 'sr-only' : null }), control, hint, err);
}

// setError shows msg next to control (made by field), or clears it; a
// message moves the focus there so the keyboard user is where the fix is.
function setError(control, msg) {
  const err = document.getElementById(control.id + '-error');
  if (err) err.textContent = msg || '';
  if (msg) { control.setAttribute('aria-invalid', 'true'); control.focus(); } else control.removeAttribute('aria-invalid');
}

// clearErrors clears the errors of every field under node.
function clearErrors(node) { node.querySelectorAll('[aria-invalid]').forEach(c => setError(c, '')); }

// hiddenLabel gives control a <label> for screen readers only, where the
// table's head or the row already shows what it is; returns both.
function hiddenLabel(text, control) {
  if (!control.id) control.id = uid('f');
  return [el('label', { for: control.id, class: 'sr-only', text }), control];
}

// checkbox is a check box with its label after it (and a hint below).
function checkbox(label, props, hint) {
  const box = el('input', Object.assign({ type: 'checkbox', id: uid('c') }, props || {}));
  const hintNode = hint ? el('span', { class: 'hint', id: box.id + '-hint', text: hint }) : null;
  if (hintNode) box.setAttribute('aria-describedby', hintNode.id);
  return { box, node: el('div', { class: 'switch' }, box, el('label', { for: box.id, text: label }), hintNode) };
}

// icon draws one of the page's few icons as SVG (no emoji font needed).
const ICONS = {
  folder: 'M2 4.5A1.5 1.5 0 0 1 3.5 3h3l1.5 1.8h4.5A1.5 1.5 0 0 1 14 6.3v5.2a1.5 1.5 0 0 1-1.5 1.5h-9A1.5 1.5 0 0 1 2 11.5z',
  file: 'M4 2h5l3 3v8.5a.5.5 0 0 1-.5.5h-7a.5.5 0 0 1-.5-.5v-11A.5.5 0 0 1 4 2zM9 2v3h3',
  logo: 'M3 2h6.5a3 3 0 0 1 1.9 5.3A3.2 3.2 0 0 1 10 14H3zM5.5 4.3v2.5h3.6a1.25 1.25 0 0 0 0-2.5zM5.5 9v2.7h4.1a1.35 1.35 0 0 0 0-2.7z',
};
function icon(name, cls) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('class', cls || 'icon');
  svg.setAttribute('aria-hidden', 'true');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', ICONS[name]);
  if (name === 'logo') path.setAttribute('fill', '#6d9bff');
  else { path.setAttribute('fill', name === 'folder' ? '#f2c14e' : 'none'); path.setAttribute('stroke', name === 'folder' ? '#c9971f' : '#7a8699'); path.setAttribute('stroke-width', '1'); }
  svg.append(path);
  return svg;
}

function clear(node, ...kids) { node.replaceChildren(...kids.flat().filter(k => k !== null && k !== undefined && k !== false)); return node; }

function fmtBytes(n) {
  if (n === undefined || n === null || isNaN(n)) return '';
  n = Number(n);
  if (n < 0) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  const digits = i === 0 ? (Number.isInteger(n) || n >= 10 ? 0 : 2) : (n < 10 ? 2 : 1);
  return n.toFixed(digits) + ' ' + u[i];
}

function fmtDate(s) { if (!s) return ''; const d = new Date(s); return isNaN(d) ? s : d.toLocaleString(); }

function toast(msg, bad) {
  let box = document.getElementById('toasts');
  if (!box) { box = el('div', { id: 'toasts' }); document.body.append(box); }
  const t = el('div', { class: 'toast' + (bad ? ' bad' : ''), text: msg, role: 'status' });
  box.append(t);
  setTimeout(() => t.remove(), bad ? 7000 : 3500);
}

// modal shows a dialog; close() removes it. onClose runs on close. A
// dialog belongs to the page it was opened on: render() closes every open
// one (closeModals) when the route changes. For the keyboard: focus moves
// into the dialog, Tab stays in it, Escape closes it, and focus goes back
// to what had it before.
function modal(title, content, onClose) {
  const back = el('div', { class: 'modal-back' });
  const opener = document.activeElement;
  const close = () => {
    if (!B3.modals.delete(close)) return;
    back.remove(); document.removeEventListener('keydown', keys);
    if (onClose) onClose();
    if (!B3.modals.size) { const o = sameControl(opener); if (o) o.focus(); }
  };
  B3.modals.add(close);
  const titleId = uid('dialog-title');
  const box = el('div', { class: 'modal', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': titleId },
    el('div', { class: 'modal-head' }, el('h1', { id: titleId, text: title }),
      el('button', { text: 'Close', class: 'close', onclick: close })),
    content);
  const keys = e => {
    if (e.key === 'Escape') { e.preventDefault(); close(); return; }
    if (e.key !== 'Tab') return;
    const focusable = Array.from(box.querySelectorAll('a[href], button, input, select, textarea, video[controls], audio[controls]'))
      .filter(n => !n.disabled && n.offsetParent !== null);
    if (!focusable.length) return;
    const first = focusable[0], last = focusable[focusable.length - 1];
    if (!box.contains(document.activeElement)) { e.preventDefault(); first.focus(); }
    else if (e.shiftKey && document.activeElement === first) { e.preventDefault(); last.focus(); }
    else if (!e.shiftKey && document.activeElement === last) { e.preventDefault(); first.focus(); }
  };
  back.append(box);
  back.addEventListener('click', e => { if (e.target === back) close(); });
  document.addEventListener('keydown', keys);
  document.body.append(back);
  box.querySelector('button.close').focus();
  return { close, box };
}

// sameControl finds node in the page, or, when a render replaced it, the
// control drawn in its place (same tag, class and accessible name).
function sameControl(node) {
  if (!node || !node.getAttribute) return null;
  if (node.isConnected) return node;
  const name = node.getAttribute('aria-label');
  if (!name) return null;
  return Array.from(document.getElementsByTagName(node.tagName)).find(n => n.className === node.className && n.getAttribute('aria-label') === name) || null;
}

// closeModals closes every open dialog.
function closeModals() { for (const close of Array.from(B3.modals)) close(); }

// confirmBox asks in the page (not window.confirm) and resolves to true
// on "yes".
function confirmBox(title, message, yes) {
  return new Promise(resolve => {
    let answered = false;
    const m = modal(title, el('div', {},
      el('p', { text: message, style: 'white-space:pre-line;word-break:break-all' }),
      el('div', { class: 'row' },
        el('button', { class: 'danger confirm-yes', text: yes || 'Yes', onclick: () => { answered = true; m.close(); resolve(true); } }),
        el('button', { text: 'Cancel', onclick: () => m.close() }))),
      () => { if (!answered) resolve(false); });
  });
}

// api calls the console's JSON API.
async function api(method, path, body) {
  const headers = { 'Accept': 'application/json' };
  if (B3.session) headers['X-CSRF-Token'] = B3.session.csrf;
  const opts = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) { headers['Content-Type'] = 'application/json'; opts.body = JSON.stringify(body); }
  const res = await fetch(path, opts);
  if (res.status === 401 && path !== '/api/login' && path !== '/api/session') { B3.session = null; render(); }
  const ct = res.headers.get('Content-Type') || '';
  const data = ct.includes('json') ? await res.json() : await res.text();
  if (!res.ok) throw new Error((data && data.error) || ('HTTP ' + res.status));
  return data;
}

// encodeKey percent-encodes a key for a URL path, keeping '/'.
function encodeKey(key) { return key.split('/').map(encodeURIComponent).join('/'); }

// s3url is the console path of an S3 request as the logged-in user.
function s3url(bucket, key, query) {
  let u = '/s3/' + (bucket ? encodeURIComponent(bucket) : '');
  if (key !== undefined && key !== null && key !== '') u += '/' + encodeKey(key);
  if (query) u += '?' + (typeof query === 'string' ? query : new URLSearchParams(query).toString());
  return u;
}

class S3Error extends Error {
  constructor(status, code, message) { super(code ? code + ': ' + (message || '') : 'HTTP ' + status); this.status = status; this.code = code; }
}

function parseXML(text) { return new DOMParser().parseFromString(text, 'application/xml'); }
function xtext(node, name) { const n = node.getElementsByTagName(name)[0]; return n ? n.textContent : ''; }
function xall(node, name) { return Array.from(node.getElementsByTagName(name)); }

// s3 runs one S3 request; it resolves to {res, doc} (doc: parsed XML
// body when asked with xml: true) or throws S3Error.
async function s3(method, bucket, key, query, opts) {
  opts = opts || {};
  const headers = Object.assign({}, opts.headers || {});
  if (method !== 'GET' && method !== 'HEAD') headers['X-CSRF-Token'] = B3.session.csrf;
  const res = await fetch(s3url(bucket, key, query), { method, headers, body: opts.body, credentials: 'same-origin' });
  if (res.status === 401) { B3.session = null; render(); throw new S3Error(401, 'NotLoggedIn', 'log in again'); }
  if (!res.ok) {
    let code = '', message = '';
    if (method !== 'HEAD') {
      const t = await res.text();
      try { const d = parseXML(t); code = xtext(d, 'Code'); message = xtext(d, 'Message'); } catch (e) { /* not XML */ }
      if (!code) { try { message = JSON.parse(t).error; } catch (e) { message = t.slice(0, 200); } }
    } else code = res.headers.get('x-amz-error-code') || '';
    throw new S3Error(res.status, code, message);
  }
  const out = { res };
  if (opts.xml) out.doc = parseXML(await res.text());
  return out;
}

// xmlDoc builds an XML document from [name, children|text] trees; the
// serializer escapes every value.
function xmlDoc(root, children) {
  const doc = document.implementation.createDocument('http://s3.amazonaws.com/doc/2006-03-01/', root, null);
  const add = (parent, list) => {
    for (const [name, v] of list) {
      const n = doc.createElementNS('http://s3.amazonaws.com/doc/2006-03-01/', name);
      if (Array.isArray(v)) add(n, v); else n.textContent = String(v);
      parent.append(n);
    }
  };
  add(doc.documentElement, children);
  return new XMLSerializer().serializeToString(doc);
}

// Routing: #/buckets, #/b/<bucket>?prefix=..., #/settings/<bucket>, #/ops, #/cluster.
function route() {
  const h = location.hash.replace(/^#/, '') || '/buckets';
  const [path, qs] = h.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { page: parts[0] || 'buckets', arg: parts[1] || '', query: new URLSearchParams(qs || '') };
}

function go(hash) { if (location.hash === hash) render(); else location.hash = hash; }

function navLink(label, hash, active) { return el('a', { href: hash, text: label, class: active ? 'active' : '', 'aria-current': active ? 'page' : null }); }

// pageHead is a page's title row: crumbs above, a lead line below the
// title, actions on the right.
function pageHead(title, opts) {
  opts = opts || {};
  return el('div', {},
    opts.crumbs || null,
    el('div', { class: 'page-head' }, el('div', { style: 'flex:1;min-width:0' }, el('h1', { text: title, style: 'word-break:break-all' }),
      opts.lead ? el('p', { class: 'lead', text: opts.lead }) : null), opts.actions || null));
}

async function render() {
  const app = document.getElementById('app');
  if (!B3.session) {
    try { B3.session = await api('GET', '/api/session'); } catch (e) { B3.session = null; }
  }
  if (!B3.session) { clear(app, B3.pages.login()); return; }
  const r = route();
  const main = el('main', { id: 'main', tabIndex: -1 });
  const nav = el('nav', { 'aria-label': 'Sections' }, navLink('Buckets', '#/buckets', r.page !== 'ops' && r.page !== 'cluster'),
    B3.session.admin ? navLink('Operations', '#/ops', r.page === 'ops') : null,
    B3.session.admin && B3.session.cluster ? navLink('Cluster', '#/cluster', r.page === 'cluster') : null);
  clear(app,
    el('a', { class: 'skip', href: '#main', text: 'Skip to the page', onclick: e => { e.preventDefault(); main.focus(); } }),
    el('header', { class: 'top' }, el('span', { class: 'brand' }, icon('logo', 'logo'), 'b3 console'), nav,
      el('span', { class: 'who' }, 'Signed in as ', el('strong', { text: B3.session.accessKey }), B3.session.admin ? ' (admin)' : ''),
      el('button', { text: 'Log out', id: 'logout', onclick: async () => { try { await api('POST', '/api/logout'); } catch (e) { /* gone already */ } B3.session = null; render(); } })),
    main);
  if (B3.stopTimers) { B3.stopTimers(); B3.stopTimers = null; }
  closeModals();
  const page = B3.pages[r.page] || B3.pages.buckets;
  try { await page(main, r); } catch (e) { main.append(el('p', { class: 'error', text: String(e.message || e) })); }
}

B3.pages.login = function () {
  const key = el('input', { id: 'accessKey', autocomplete: 'username', required: true, spellcheck: false });
  const secret = el('input', { id: 'secretKey', type: 'password', autocomplete: 'current-password', required: true });
  const msg = el('p', { class: 'form-error', id: 'login-error', role: 'alert' });
  const form = el('form', { class: 'card login', noValidate: true, 'aria-labelledby': 'login-title', onsubmit: async e => {
    e.preventDefault();
    msg.textContent = '';
    clearErrors(form);
    if (!key.value.trim()) return setError(key, 'Enter your access key.');
    if (!secret.value) return setError(secret, 'Enter your secret key.');
    try {
      const res = await fetch('/api/login', { method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'X-B3-Console': '1' },
        body: JSON.stringify({ accessKey: key.value.trim(), secretKey: secret.value }) });
      const data = await res.json();
      if (!res.ok) throw new Error(data.error || 'login failed');
      B3.session = data;
      render();
    } catch (err) { msg.textContent = err.message; secret.focus(); }
  } },
  el('div', { class: 'brand' }, icon('logo', 'logo'), el('h1', { id: 'login-title', text: 'b3 console' })),
  el('p', { class: 'muted', style: 'margin-bottom:16px' }, 'Log in with an access key and its secret key: the root user\'s, or one made with ', el('code', { text: 'b3 admin users add' }), '.'),
  field('Access key', key), field('Secret key', secret),
  el('button', { class: 'primary', type: 'submit', id: 'login', text: 'Log in' }), msg);
  return form;
};

window.addEventListener('hashchange', render);
document.addEventListener('DOMContentLoaded', render);
