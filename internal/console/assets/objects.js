// The object browser: folders by prefix ("/" delimiter), pages of up to
// 1000 keys by continuation token (so a prefix of 10^6 keys is browsed a
// page at a time, never loaded whole), search by prefix, uploads by file
// input or drag and drop, multi-delete, and versions where enabled.
'use strict';

B3.paging = { at: '', tokens: [] }; // continuation tokens of the pages before this one

function objectsHash(bucket, prefix, extra) {
  const q = new URLSearchParams(Object.assign({ prefix: prefix || '' }, extra || {}));
  return '#/b/' + encodeURIComponent(bucket) + '?' + q.toString();
}

function baseName(key) { const k = key.endsWith('/') ? key.slice(0, -1) : key; return k.slice(k.lastIndexOf('/') + 1) || key; }

B3.pages.b = async function (main, r) {
  const bucket = r.arg;
  const prefix = r.query.get('prefix') || '';
  const search = r.query.get('q') || '';
  const versions = r.query.get('versions') === '1';
  const pageSize = r.query.get('size') || '200';
  const token = r.query.get('token') || '';
  const here = bucket + '\n' + prefix + '\n' + search + '\n' + versions + '\n' + pageSize;
  if (B3.paging.at !== here) B3.paging = { at: here, tokens: [] };

  // Breadcrumbs: Buckets / bucket / a / b /
  const crumbs = el('div', { class: 'crumbs row', id: 'crumbs' }, el('a', { href: '#/buckets', text: 'Buckets' }), '/',
    el('a', { href: objectsHash(bucket, ''), text: bucket }), '/');
  let acc = '';
  for (const part of prefix.split('/').filter(Boolean)) {
    acc += part + '/';
    crumbs.append(el('a', { href: objectsHash(bucket, acc), text: part }), '/');
  }
  const searchBox = el('input', { id: 'search', placeholder: 'search by prefix in this folder', value: search, size: 30 });
  const sizeSel = el('select', { id: 'page-size', onchange: () => go(objectsHash(bucket, prefix, { q: search, size: sizeSel.value, versions: versions ? '1' : '' })) },
    ['50', '200', '1000'].map(v => el('option', { value: v, text: v + ' per page', selected: v === pageSize })));
  const fileInput = el('input', { type: 'file', multiple: true, id: 'file-input', style: 'display:none', onchange: () => { uploadFiles(bucket, prefix, Array.from(fileInput.files).map(f => ({ file: f, path: f.name }))); fileInput.value = ''; } });
  const dirInput = el('input', { type: 'file', multiple: true, webkitdirectory: true, id: 'dir-input', style: 'display:none', onchange: () => { uploadFiles(bucket, prefix, Array.from(dirInput.files).map(f => ({ file: f, path: f.webkitRelativePath || f.name }))); dirInput.value = ''; } });
  const versionsBtn = el('button', { id: 'versions-toggle', style: 'display:none', text: versions ? 'Hide versions' : 'Show versions',
    onclick: () => go(objectsHash(bucket, prefix, { q: search, size: pageSize, versions: versions ? '' : '1' })) });
  const body = el('tbody');
  const selectAll = el('input', { type: 'checkbox', title: 'Select all', onchange: () => body.querySelectorAll('input.pick').forEach(c => { c.checked = selectAll.checked; }) });
  const pager = el('div', { class: 'row', id: 'pager' });
  const drop = el('div', { class: 'drop', id: 'drop', text: 'Drop files or folders here to upload them to ' + bucket + '/' + prefix });
  drop.addEventListener('dragover', e => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', async e => {
    e.preventDefault(); drop.classList.remove('over');
    uploadFiles(bucket, prefix, await droppedFiles(e.dataTransfer));
  });
  add(main, crumbs,
    el('div', { class: 'row' },
      el('form', { class: 'row', onsubmit: e => { e.preventDefault(); go(objectsHash(bucket, prefix, { q: searchBox.value, size: pageSize, versions: versions ? '1' : '' })); } },
        searchBox, el('button', { type: 'submit', text: 'Search' })),
      sizeSel, versionsBtn,
      el('span', { style: 'flex:1' }),
      el('button', { class: 'primary', id: 'upload-files', text: 'Upload files', onclick: () => fileInput.click() }),
      el('button', { text: 'Upload folder', onclick: () => dirInput.click() }),
      el('button', { class: 'danger', id: 'delete-selected', text: 'Delete selected', onclick: () => deleteSelected(bucket, body) }),
      el('a', { class: 'button', href: '#/settings/' + encodeURIComponent(bucket), text: 'Bucket settings' }),
      fileInput, dirInput),
    drop,
    B3.uploadPanel,
    el('table', { id: 'objects' }, el('thead', {}, el('tr', {}, el('th', {}, selectAll), el('th', { text: 'Name' }),
      versions ? el('th', { text: 'Version' }) : null,
      el('th', { class: 'num', text: 'Size' }), el('th', { text: 'Modified' }), el('th', { text: '' }))), body),
    pager);

  // Versions: offered only where the bucket has versioning.
  s3('GET', bucket, '', 'versioning', { xml: true }).then(({ doc }) => {
    if (xtext(doc, 'Status')) versionsBtn.style.display = '';
  }).catch(() => {});

  const q = { prefix: prefix + search, delimiter: '/', 'max-keys': pageSize };
  let doc;
  if (versions) {
    if (token) { const [k, v] = token.split('\n'); q['key-marker'] = k; q['version-id-marker'] = v; }
    try { doc = (await s3('GET', bucket, '', 'versions&' + new URLSearchParams(q), { xml: true })).doc; } catch (err) {
      if (err.code === 'NotImplemented') { body.append(el('tr', {}, el('td', { colSpan: 6, class: 'muted', text: 'This server does not list versions.' }))); return; }
      throw err;
    }
  } else {
    q['list-type'] = '2';
    if (token) q['continuation-token'] = token;
    doc = (await s3('GET', bucket, '', q, { xml: true })).doc;
  }
  const folders = xall(doc, 'CommonPrefixes').map(p => xtext(p, 'Prefix'));
  for (const f of folders) {
    body.append(el('tr', { class: 'folder' }, el('td', {}, el('input', { type: 'checkbox', class: 'pick', disabled: true })),
      el('td', { class: 'key' }, el('a', { href: objectsHash(bucket, f, { size: pageSize, versions: versions ? '1' : '' }), text: '📁 ' + baseName(f) + '/' })),
      versions ? el('td') : null, el('td'), el('td'), el('td')));
  }
  const entries = versions
    ? xall(doc, 'Version').concat(xall(doc, 'DeleteMarker')).map(v => ({ key: xtext(v, 'Key'), versionId: xtext(v, 'VersionId'), size: xtext(v, 'Size'), modified: xtext(v, 'LastModified'), latest: xtext(v, 'IsLatest') === 'true', marker: v.tagName === 'DeleteMarker' }))
    : xall(doc, 'Contents').map(c => ({ key: xtext(c, 'Key'), size: xtext(c, 'Size'), modified: xtext(c, 'LastModified') }));
  for (const o of entries) {
    if (o.key === prefix && !versions) continue; // the folder's own marker object
    const pick = el('input', { type: 'checkbox', class: 'pick' });
    pick.item = { key: o.key, versionId: o.versionId };
    const vq = o.versionId ? { versionId: o.versionId } : null;
    body.append(el('tr', { 'data-key': o.key },
      el('td', {}, pick),
      el('td', { class: 'key' }, el('button', { class: 'link object-name', text: o.key.slice(prefix.length), title: o.key, onclick: () => preview(bucket, o.key, Number(o.size), o.versionId) })),
      versions ? el('td', { class: 'muted', text: (o.marker ? 'delete marker ' : '') + o.versionId + (o.latest ? ' (latest)' : '') }) : null,
      el('td', { class: 'num', text: o.marker ? '' : fmtBytes(o.size) }),
      el('td', { text: fmtDate(o.modified) }),
      el('td', {}, o.marker ? null : el('div', { class: 'row' },
        el('a', { class: 'button download', href: s3url(bucket, o.key, vq), download: baseName(o.key), text: 'Download' }),
        el('button', { class: 'details', text: 'Details', onclick: () => details(bucket, o.key, o.versionId) }),
        el('button', { class: 'danger delete-object', text: 'Delete', onclick: async () => {
          if (!await confirmBox('Delete ' + o.key + '?', versions ? 'This version is removed for good.' : 'The object is deleted.', 'Delete')) return;
          try { await s3('DELETE', bucket, o.key, vq); toast('Deleted ' + o.key); render(); } catch (err) { toast(err.message, true); }
        } })))));
  }
  if (!folders.length && !entries.length) body.append(el('tr', {}, el('td', { colSpan: 6, class: 'muted', text: search ? 'No key starts with that.' : 'Empty.' })));

  // Paging: forward by the listing's token, back by the ones kept.
  const next = versions
    ? (xtext(doc, 'IsTruncated') === 'true' ? xtext(doc, 'NextKeyMarker') + '\n' + xtext(doc, 'NextVersionIdMarker') : '')
    : (xtext(doc, 'IsTruncated') === 'true' ? xtext(doc, 'NextContinuationToken') : '');
  const page = B3.paging.tokens.length + 1;
  pager.append(
    el('button', { text: '← Previous', disabled: !token, onclick: () => {
      const prev = B3.paging.tokens.pop() || '';
      go(objectsHash(bucket, prefix, { q: search, size: pageSize, versions: versions ? '1' : '', token: prev }));
    } }),
    el('span', { class: 'muted', text: 'Page ' + page + ' · ' + (folders.length + entries.length) + ' entries' }),
    el('button', { text: 'Next →', id: 'next-page', disabled: !next, onclick: () => {
      B3.paging.tokens.push(token);
      go(objectsHash(bucket, prefix, { q: search, size: pageSize, versions: versions ? '1' : '', token: next }));
    } }));
};

async function deleteSelected(bucket, body) {
  const items = Array.from(body.querySelectorAll('input.pick:checked')).map(c => c.item).filter(Boolean);
  if (!items.length) return toast('Select objects first');
  if (!await confirmBox('Delete ' + items.length + ' objects?', items.map(i => i.key).slice(0, 20).join('\n') + (items.length > 20 ? '\n…' : ''), 'Delete')) return;
  try {
    for (let i = 0; i < items.length; i += 1000) await deleteMany(bucket, items.slice(i, i + 1000));
    toast('Deleted ' + items.length + ' objects');
  } catch (err) { toast(err.message, true); }
  render();
}

// droppedFiles walks dropped folders (webkitGetAsEntry) into {file, path}.
async function droppedFiles(dt) {
  const out = [];
  const entries = Array.from(dt.items || []).map(i => i.webkitGetAsEntry && i.webkitGetAsEntry()).filter(Boolean);
  if (!entries.length) return Array.from(dt.files || []).map(f => ({ file: f, path: f.name }));
  const walk = async (entry, path) => {
    if (entry.isFile) {
      out.push({ file: await new Promise((res, rej) => entry.file(res, rej)), path: path + entry.name });
    } else if (entry.isDirectory) {
      const reader = entry.createReader();
      for (;;) {
        const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
        if (!batch.length) break;
        for (const e of batch) await walk(e, path + entry.name + '/');
      }
    }
  };
  for (const e of entries) await walk(e, '');
  return out;
}
