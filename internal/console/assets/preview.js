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

// details shows an object's metadata (editable: a copy onto itself with
// REPLACE), its tags (editable) and makes presigned share links.
async function details(bucket, key, versionId) {
  const vq = versionId ? { versionId } : null;
  const box = el('div', { id: 'details' });
  modal(key, box);
  let res;
  try { res = (await s3('HEAD', bucket, key, vq)).res; } catch (err) { box.append(el('p', { class: 'error', text: err.message })); return; }
  const h = res.headers;
  const kv = el('table', { class: 'kv', id: 'metadata' });
  const std = [['Size', fmtBytes(h.get('Content-Length')) + ' (' + h.get('Content-Length') + ' bytes)'], ['Content-Type', h.get('Content-Type')],
    ['ETag', h.get('ETag')], ['Last modified', fmtDate(h.get('Last-Modified'))], ['Version', h.get('x-amz-version-id')],
    ['Cache-Control', h.get('Cache-Control')], ['Content-Disposition', h.get('Content-Disposition')], ['Content-Encoding', h.get('Content-Encoding')]];
  for (const [k, v] of std) if (v) kv.append(el('tr', {}, el('td', { text: k }), el('td', { class: 'key', text: v })));
  const meta = [];
  h.forEach((v, k) => { if (k.startsWith('x-amz-meta-')) meta.push([k.slice(11), v]); });
  box.append(el('h2', { text: 'Object' }), kv);

  // User metadata and Content-Type, saved by CopyObject onto itself.
  const metaRows = el('tbody');
  const metaRow = (k, v) => {
    const tr = el('tr', {}, el('td', {}, el('input', { value: k || '', placeholder: 'name', class: 'mk' })), el('td', {}, el('input', { value: v || '', placeholder: 'value', class: 'mv', size: 40 })),
      el('td', {}, el('button', { class: 'danger', text: '✕', onclick: () => tr.remove() })));
    metaRows.append(tr);
  };
  meta.forEach(([k, v]) => metaRow(k, v));
  const ctype = el('input', { value: h.get('Content-Type') || '', size: 30 });
  box.append(el('h2', { text: 'Metadata' }), el('div', { class: 'row' }, 'Content-Type', ctype), el('table', {}, metaRows),
    el('div', { class: 'row' }, el('button', { text: 'Add', onclick: () => metaRow() }), versionId ? el('span', { class: 'muted', text: 'Metadata of older versions cannot change.' }) :
      el('button', { class: 'primary', text: 'Save metadata', onclick: async () => {
        const headers = { 'x-amz-copy-source': '/' + encodeURIComponent(bucket) + '/' + encodeKey(key), 'x-amz-metadata-directive': 'REPLACE', 'Content-Type': ctype.value };
        for (const tr of metaRows.children) {
          const k = tr.querySelector('.mk').value.trim(), v = tr.querySelector('.mv').value;
          if (k) headers['x-amz-meta-' + k.toLowerCase()] = v;
        }
        try { await s3('PUT', bucket, key, null, { headers }); toast('Metadata saved'); } catch (err) { toast(err.message, true); }
      } })));

  // Tags.
  const tagRows = el('tbody', { id: 'tags' });
  const tagRow = (k, v) => {
    const tr = el('tr', {}, el('td', {}, el('input', { value: k || '', placeholder: 'key', class: 'tk' })), el('td', {}, el('input', { value: v || '', placeholder: 'value', class: 'tv' })),
      el('td', {}, el('button', { class: 'danger', text: '✕', onclick: () => tr.remove() })));
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
    el('div', { class: 'row' }, expiry, el('button', { id: 'share', text: 'Make link', onclick: async () => {
      try {
        const r = await api('POST', '/api/presign', { bucket, key, versionId: versionId || '', seconds: Number(expiry.value) });
        link.value = r.url;
        link.select();
        if (navigator.clipboard) navigator.clipboard.writeText(r.url).then(() => toast('Link copied; expires ' + fmtDate(r.expires)), () => {});
      } catch (err) { toast(err.message, true); }
    } })), link);
}
