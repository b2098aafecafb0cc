// Preview and details of one object. Media play straight from the console's
// /s3/ path (so with the viewer's own rights); an HLS playlist plays with
// hls.js, which fetches its segments from b3 the same way.
'use strict';

const KINDS = {
  image: ['png', 'jpg', 'jpeg', 'gif', 'webp', 'bmp', 'svg', 'avif', 'ico'],
  video: ['mp4', 'm4v', 'webm', 'mov', 'ogv'],
  audio: ['mp3', 'wav', 'ogg', 'oga', 'm4a', 'flac', 'aac', 'opus'],
  hls: ['m3u8'],
  text: ['txt', 'md', 'json', 'csv', 'tsv', 'log', 'xml', 'yaml', 'yml', 'toml', 'ini', 'conf', 'js', 'css', 'html', 'htm', 'go', 'py', 'sh', 'srt', 'vtt', 'sql', 'c', 'h', 'rs', 'java'],
};
const TEXT_PREVIEW_BYTES = 256 * 1024;

function kindOf(key, contentType) {
  const ext = (key.split('.').pop() || '').toLowerCase();
  for (const [kind, exts] of Object.entries(KINDS)) if (exts.includes(ext)) return kind;
  const ct = (contentType || '').toLowerCase();
  if (ct.includes('mpegurl')) return 'hls';
  for (const kind of ['image', 'video', 'audio', 'text']) if (ct.startsWith(kind + '/')) return kind;
  if (ct.includes('json') || ct.includes('xml')) return 'text';
  return '';
}

async function preview(bucket, key, size, versionId) {
  const vq = versionId ? { versionId } : null;
  const url = s3url(bucket, key, vq);
  let kind = kindOf(key);
  if (!kind) {
    try { const { res } = await s3('HEAD', bucket, key, vq); kind = kindOf(key, res.headers.get('Content-Type')); } catch (err) { return toast(err.message, true); }
  }
  const content = el('div', { id: 'preview' });
  let hls = null;
  closeModals(); // one preview at a time: a second click replaces the first
  const m = modal(key, content, () => { if (hls) hls.destroy(); });
  const actions = el('div', { class: 'row' },
    el('a', { class: 'button', href: url, download: baseName(key), text: 'Download' }),
    el('button', { text: 'Details', onclick: () => { m.close(); details(bucket, key, versionId); } }));
  switch (kind) {
    case 'image':
      content.append(el('img', { id: 'preview-image', src: url, alt: key }));
      break;
    case 'video':
      content.append(el('video', { id: 'preview-video', src: url, controls: true, preload: 'metadata' }));
      break;
    case 'audio':
      content.append(el('audio', { id: 'preview-audio', src: url, controls: true, preload: 'metadata', style: 'width:100%' }));
      break;
    case 'hls': {
      const video = el('video', { id: 'preview-video', controls: true, muted: true });
      content.append(video);
      if (window.Hls && window.Hls.isSupported()) {
        hls = new window.Hls({ enableWorker: false, xhrSetup: x => { x.withCredentials = true; } });
        hls.on(window.Hls.Events.ERROR, (_, data) => { if (data.fatal) content.append(el('p', { class: 'error', text: 'HLS: ' + data.type + ' ' + data.details })); });
        hls.loadSource(location.origin + url);
        hls.attachMedia(video);
      } else if (video.canPlayType('application/vnd.apple.mpegurl')) {
        video.src = url;
      } else content.append(el('p', { class: 'error', text: 'This browser cannot play HLS.' }));
      break;
    }
    case 'text': {
      const pre = el('pre', { id: 'preview-text', text: 'loading…' });
      content.append(pre);
      try {
        const { res } = await s3('GET', bucket, key, vq, { headers: { Range: 'bytes=0-' + (TEXT_PREVIEW_BYTES - 1) } });
        pre.textContent = await res.text();
        if (size > TEXT_PREVIEW_BYTES) content.append(el('p', { class: 'muted', text: 'First ' + fmtBytes(TEXT_PREVIEW_BYTES) + ' of ' + fmtBytes(size) + '.' }));
      } catch (err) { pre.textContent = err.message; }
      break;
    }
    default:
      content.append(el('p', { class: 'muted', text: 'No preview for this type of object.' }));
  }
  content.append(actions);
}

// SYSTEM_HEADERS are the object headers S3 stores and a copy with
// REPLACE takes from the request: the details page shows and saves them
// all, so an edit of one keeps the others.
const SYSTEM_HEADERS = ['Content-Type', 'Cache-Control', 'Content-Disposition', 'Content-Encoding', 'Content-Language', 'Expires'];

// objectHeader is one of the object's headers in an answer of the console:
// the console answers with its own Cache-Control (no-store) and passes the
// object's on as X-B3-Object-Cache-Control.
function objectHeader(h, name) { return (name === 'Cache-Control' ? h.get('X-B3-Object-Cache-Control') : h.get(name)) || ''; }

// lockHeaders are the Object Lock settings of an object (from its HEAD)
// that a copy must be sent to keep them: the legal hold, and a retention
// that has not yet run out (a date in the past is refused, and protects
// nothing any more).
function lockHeaders(h) {
  const out = {};
  const mode = h.get('x-amz-object-lock-mode'), until = h.get('x-amz-object-lock-retain-until-date');
  if (mode && until && new Date(until) > new Date()) Object.assign(out, { 'x-amz-object-lock-mode': mode, 'x-amz-object-lock-retain-until-date': until });
  if (h.get('x-amz-object-lock-legal-hold')) out['x-amz-object-lock-legal-hold'] = h.get('x-amz-object-lock-legal-hold');
  return out;
}

const GRANT_HEADERS = { READ: 'x-amz-grant-read', READ_ACP: 'x-amz-grant-read-acp', WRITE_ACP: 'x-amz-grant-write-acp', FULL_CONTROL: 'x-amz-grant-full-control' };

// aclHeaders returns the x-amz-grant-* headers that give a copy the
// object's ACL, or none when the ACL is the default (the owner's full
// control, which a copy gets anyway, and the only ACL a bucket whose
// ownership is enforced allows).
async function aclHeaders(bucket, key) {
  const { doc } = await s3('GET', bucket, key, 'acl', { xml: true });
  const owner = xtext(doc.getElementsByTagName('Owner')[0] || doc, 'ID');
  const grants = xall(doc, 'Grant').map(g => {
    const grantee = g.getElementsByTagName('Grantee')[0];
    const uri = xtext(grantee, 'URI'), id = xtext(grantee, 'ID');
    return { who: uri ? 'uri="' + uri + '"' : 'id="' + id + '"', id, uri, perm: xtext(g, 'Permission') };
  });
  if (grants.every(g => !g.uri && g.id === owner && g.perm === 'FULL_CONTROL')) return {};
  const headers = {};
  for (const g of grants) {
    const name = GRANT_HEADERS[g.perm];
    if (name) headers[name] = headers[name] ? headers[name] + ', ' + g.who : g.who;
  }
  return headers;
}

// details shows an object's metadata (editable: a copy onto itself with
// REPLACE), its tags (editable) and makes presigned share links.
async function details(bucket, key, versionId) {
  const vq = versionId ? { versionId } : null;
  const box = el('div', { id: 'details' });
  closeModals();
  modal(key, box);
  let res;
  try { res = (await s3('HEAD', bucket, key, vq)).res; } catch (err) { box.append(el('p', { class: 'error', text: err.message })); return; }
  const h = res.headers;
  const kv = el('table', { class: 'kv', id: 'metadata' });
  const std = [['Size', fmtBytes(h.get('Content-Length')) + ' (' + h.get('Content-Length') + ' bytes)'],
    ['ETag', h.get('ETag')], ['Last modified', fmtDate(h.get('Last-Modified'))], ['Version', h.get('x-amz-version-id')],
    ...SYSTEM_HEADERS.map(name => [name, objectHeader(h, name)])];
  for (const [k, v] of std) if (v) kv.append(el('tr', { 'data-header': k }, el('td', { text: k }), el('td', { class: 'key', text: v })));
  const meta = [];
  h.forEach((v, k) => { if (k.startsWith('x-amz-meta-')) meta.push([k.slice(11), v]); });
  box.append(el('h2', { text: 'Object' }), kv);

  // System headers and user metadata, saved by CopyObject onto itself.
  const metaRows = el('tbody', { id: 'user-metadata' });
  const metaRow = (k, v) => {
    const name = el('input', { value: k || '', placeholder: 'name', class: 'mk', spellcheck: false });
    const value = el('input', { value: v || '', placeholder: 'value', class: 'mv' });
    const tr = el('tr', {}, el('td', {}, el('div', { class: 'field' }, hiddenLabel('Metadata name', name),
      el('span', { class: 'field-error', id: name.id + '-error' }))), el('td', {}, hiddenLabel('Metadata value', value)),
    el('td', { class: 'actions' }, el('button', { class: 'danger small', text: 'Remove', 'aria-label': 'Remove metadata ' + (k || 'row'), onclick: () => tr.remove() })));
    name.setAttribute('aria-describedby', name.id + '-error');
    name.addEventListener('input', () => setError(name, ''));
    metaRows.append(tr);
  };
  meta.forEach(([k, v]) => metaRow(k, v));
  const inputs = SYSTEM_HEADERS.map(name => el('input', { value: objectHeader(h, name), 'data-header': name, id: uid('hdr'), style: 'width:100%' }));
  const edited = () => {
    const sys = {}, user = {};
    SYSTEM_HEADERS.forEach((name, i) => { const v = inputs[i].value.trim(); if (v) sys[name] = v; });
    for (const tr of metaRows.children) {
      const k = tr.querySelector('.mk').value.trim().toLowerCase();
      if (k) user[k] = tr.querySelector('.mv').value;
    }
    return { sys, user };
  };
  const before = JSON.stringify(edited());
  const save = async () => {
    const bad = Array.from(metaRows.querySelectorAll('.mk')).find(i => i.value.trim() && !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(i.value.trim()));
    if (bad) { setError(bad, 'A name has letters, digits and - _ . only (it becomes the header x-amz-meta-NAME).'); return; }
    const now = edited();
    if (JSON.stringify(now) === before) { toast('No change to save'); return; }
    // The copy replaces every header, so all are sent; ACL, Object Lock
    // settings and tags (x-amz-tagging-directive COPY, the default) go
    // with it. If-Match: a change made meanwhile by someone else is not
    // overwritten with what this page read.
    const headers = Object.assign({ 'x-amz-copy-source': '/' + encodeURIComponent(bucket) + '/' + encodeKey(key), 'x-amz-metadata-directive': 'REPLACE',
      'x-amz-copy-source-if-match': h.get('ETag') }, now.sys, lockHeaders(h), await aclHeaders(bucket, key));
    for (const [k, v] of Object.entries(now.user)) headers['x-amz-meta-' + k] = v;
    await s3('PUT', bucket, key, null, { headers });
    toast('Metadata saved');
  };
  box.append(el('h2', { text: 'Metadata' }),
    el('table', { class: 'kv', id: 'system-headers' }, SYSTEM_HEADERS.map((name, i) => el('tr', {}, el('td', {}, el('label', { for: inputs[i].id, text: name })), el('td', {}, inputs[i])))),
    el('h3', { text: 'User metadata (x-amz-meta-*)' }),
    el('table', {}, metaRows),
    el('div', { class: 'row' }, el('button', { text: 'Add metadata', onclick: () => { metaRow(); metaRows.lastChild.querySelector('.mk').focus(); } }), versionId ? el('span', { class: 'muted', text: 'Metadata of older versions cannot change.' }) :
      el('button', { class: 'primary', id: 'save-metadata', text: 'Save metadata', onclick: () => save().catch(err => toast(err.message, true)) })));

  // Tags.
  const tagRows = el('tbody', { id: 'tags' });
  const tagRow = (k, v) => {
    const tr = el('tr', {}, el('td', {}, hiddenLabel('Tag key', el('input', { value: k || '', placeholder: 'key', class: 'tk' }))),
      el('td', {}, hiddenLabel('Tag value', el('input', { value: v || '', placeholder: 'value', class: 'tv' }))),
      el('td', { class: 'actions' }, el('button', { class: 'danger small', text: 'Remove', 'aria-label': 'Remove tag ' + (k || 'row'), onclick: () => tr.remove() })));
    tagRows.append(tr);
  };
  try {
    const { doc } = await s3('GET', bucket, key, Object.assign({ tagging: '' }, vq || {}), { xml: true });
    xall(doc, 'Tag').forEach(t => tagRow(xtext(t, 'Key'), xtext(t, 'Value')));
  } catch (err) { box.append(el('p', { class: 'error', text: 'tags: ' + err.message })); }
  box.append(el('h2', { text: 'Tags' }), el('table', {}, tagRows), el('div', { class: 'row' },
    el('button', { text: 'Add tag', id: 'add-tag', onclick: () => tagRow() }),
    el('button', { class: 'primary', id: 'save-tags', text: 'Save tags', onclick: async () => {
      const tags = Array.from(tagRows.children).map(tr => [tr.querySelector('.tk').value.trim(), tr.querySelector('.tv').value]).filter(t => t[0]);
      try {
        const q = Object.assign({ tagging: '' }, vq || {});
        if (!tags.length) await s3('DELETE', bucket, key, q);
        else await s3('PUT', bucket, key, q, { body: xmlDoc('Tagging', [['TagSet', tags.map(([k, v]) => ['Tag', [['Key', k], ['Value', v]]])]]), headers: { 'Content-Type': 'application/xml' } });
        toast('Tags saved');
      } catch (err) { toast(err.message, true); }
    } })));

  // Share links.
  const expiry = el('select', { id: 'share-expiry' }, [['3600', '1 hour'], ['86400', '1 day'], ['604800', '7 days']].map(([v, t]) => el('option', { value: v, text: t })));
  const link = el('input', { id: 'share-url', readOnly: true, style: 'width:100%', placeholder: 'presigned link' });
  box.append(el('h2', { text: 'Share' }), el('p', { class: 'muted', text: 'A presigned link opens the object on the S3 endpoint without credentials until it expires; it carries your rights.' }),
    el('div', { class: 'row' }, el('label', { for: 'share-expiry', text: 'Valid for' }), expiry, el('button', { id: 'share', text: 'Make link', onclick: async () => {
      try {
        const r = await api('POST', '/api/presign', { bucket, key, versionId: versionId || '', seconds: Number(expiry.value) });
        link.value = r.url;
        link.select();
        if (navigator.clipboard) navigator.clipboard.writeText(r.url).then(() => toast('Link copied; expires ' + fmtDate(r.expires)), () => {});
      } catch (err) { toast(err.message, true); }
    } })), field('Link', link, { hidden: true }));
}
