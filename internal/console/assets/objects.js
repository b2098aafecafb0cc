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
  const hash = extra => objectsHash(bucket, prefix, Object.assign({ q: search, size: pageSize, versions: versions ? '1' : '' }, extra));

  // Breadcrumbs: Buckets / bucket / a / b /
  const crumbs = el('nav', { class: 'crumbs row', id: 'crumbs', 'aria-label': 'Folder' }, el('a', { href: '#/buckets', text: 'Buckets' }), '/',
    el('a', { href: objectsHash(bucket, ''), text: bucket }), '/');
  let acc = '';
  for (const part of prefix.split('/').filter(Boolean)) {
    acc += part + '/';
    crumbs.append(el('a', { href: objectsHash(bucket, acc), text: part }), '/');
  }
  const searchBox = el('input', { id: 'search', type: 'search', placeholder: 'Find by prefix in this folder', value: search, size: 32 });
  const sizeSel = el('select', { id: 'page-size', onchange: () => go(hash({ size: sizeSel.value, token: '' })) },
    ['50', '200', '1000'].map(v => el('option', { value: v, text: v + ' per page', selected: v === pageSize })));
  const fileInput = el('input', { type: 'file', multiple: true, id: 'file-input', class: 'sr-only', tabIndex: -1, onchange: () => { uploadFiles(bucket, prefix, Array.from(fileInput.files).map(f => ({ file: f, path: f.name }))); fileInput.value = ''; } });
  const dirInput = el('input', { type: 'file', multiple: true, webkitdirectory: true, id: 'dir-input', class: 'sr-only', tabIndex: -1, onchange: () => { uploadFiles(bucket, prefix, Array.from(dirInput.files).map(f => ({ file: f, path: f.webkitRelativePath || f.name }))); dirInput.value = ''; } });
  const versionsBtn = el('button', { id: 'versions-toggle', style: 'display:none', text: 'Show versions', 'aria-pressed': String(versions),
    onclick: () => go(hash({ versions: versions ? '' : '1', token: '' })) });
  const notice = el('div', { class: 'notice', id: 'versioning-notice', style: 'display:none' });
  const body = el('tbody');
  const selectAll = el('input', { type: 'checkbox', id: 'select-all', onchange: () => body.querySelectorAll('input.pick:not(:disabled)').forEach(c => { c.checked = selectAll.checked; }) });
  const pager = el('div', { class: 'row', id: 'pager' });
  const drop = el('div', { class: 'drop', id: 'drop', text: 'Drop files or folders here to upload them to ' + bucket + '/' + prefix });
  drop.addEventListener('dragover', e => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', async e => {
    e.preventDefault(); drop.classList.remove('over');
    uploadFiles(bucket, prefix, await droppedFiles(e.dataTransfer));
  });
  add(main,
    pageHead(prefix ? baseName(prefix) + '/' : bucket, { crumbs,
      lead: versions ? 'Every version of every key in this folder, delete markers included.' : null,
      actions: el('div', { class: 'row' },
        el('button', { class: 'primary', id: 'upload-files', text: 'Upload files', onclick: () => fileInput.click() }),
        el('button', { text: 'Upload folder', onclick: () => dirInput.click() }),
        el('button', { id: 'create-folder', text: 'Create folder', onclick: () => createFolder(bucket, prefix) }),
        el('a', { class: 'button', href: '#/settings/' + encodeURIComponent(bucket), text: 'Bucket settings' }),
        el('label', { for: 'file-input', class: 'sr-only', text: 'Files to upload' }), fileInput,
        el('label', { for: 'dir-input', class: 'sr-only', text: 'Folder to upload' }), dirInput) }),
    notice,
    el('div', { class: 'toolbar' },
      el('form', { role: 'search', onsubmit: e => { e.preventDefault(); go(hash({ q: searchBox.value, token: '' })); } },
        el('label', { for: 'search', class: 'sr-only', text: 'Find by prefix in this folder' }), searchBox, el('button', { type: 'submit', text: 'Search' })),
      el('label', { for: 'page-size', class: 'sr-only', text: 'Entries per page' }), sizeSel, versionsBtn,
      el('span', { class: 'spacer' }),
      el('button', { class: 'danger', id: 'delete-selected', text: 'Delete selected', onclick: () => deleteSelected(bucket, body, versions) })),
    drop,
    B3.uploadPanel,
    el('div', { class: 'table-wrap' }, el('table', { id: 'objects' }, el('caption', { class: 'sr-only', text: 'Objects in ' + bucket + '/' + prefix }),
      el('thead', {}, el('tr', {}, el('th', { class: 'pick' }, el('label', { for: 'select-all', class: 'sr-only', text: 'Select all' }), selectAll), el('th', { text: 'Name' }),
        versions ? el('th', { text: 'Version' }) : null,
        el('th', { class: 'num', text: 'Size' }), el('th', { text: 'Modified' }), el('th', {}, el('span', { class: 'sr-only', text: 'Actions' })))), body)),
    pager);

  // Versions: offered only where the bucket has versioning.
  const versioned = s3('GET', bucket, '', 'versioning', { xml: true }).then(({ doc }) => {
    const status = xtext(doc, 'Status');
    if (!status) return false;
    versionsBtn.style.display = '';
    notice.style.display = '';
    add(notice, el('strong', { text: 'Versioning is ' + (status === 'Enabled' ? 'on' : 'suspended') + '. ' }),
      status === 'Enabled' ? 'Every upload and delete keeps the object\'s earlier version: open Versions on an object to download, restore or delete one, or Show versions to see deleted keys.'
        : 'New uploads replace the current object; the versions kept so far stay until deleted.');
    return true;
  }).catch(() => false);

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
    body.append(el('tr', { class: 'folder', 'data-prefix': f }, el('td', { class: 'pick' }),
      el('td', { class: 'key' }, el('a', { class: 'folder-link', href: objectsHash(bucket, f, { size: pageSize, versions: versions ? '1' : '' }) }, icon('folder'), baseName(f) + '/')),
      versions ? el('td') : null, el('td'), el('td'), el('td')));
  }
  const entries = versions ? versionEntries(doc)
    : xall(doc, 'Contents').map(c => ({ key: xtext(c, 'Key'), size: xtext(c, 'Size'), modified: xtext(c, 'LastModified') }));
  const hasVersions = await versioned;
  for (const o of entries) {
    if (o.key === prefix && !versions) continue; // the folder's own marker object
    const pick = el('input', { type: 'checkbox', class: 'pick', id: uid('pick') });
    pick.item = { key: o.key, versionId: o.versionId };
    const name = o.key.slice(prefix.length);
    body.append(el('tr', { 'data-key': o.key, 'data-version': o.versionId || null, class: o.marker ? 'marker' : null },
      el('td', { class: 'pick' }, el('label', { for: pick.id, class: 'sr-only', text: 'Select ' + o.key + (o.versionId ? ' version ' + o.versionId : '') }), pick),
      el('td', { class: 'key' }, o.marker ? el('span', { class: 'object-name', text: name, title: o.key })
        : el('button', { class: 'link object-name', text: name, title: o.key, onclick: () => preview(bucket, o.key, Number(o.size), o.versionId) })),
      versions ? el('td', { class: 'version' }, versionBadges(o), ' ', o.versionId) : null,
      el('td', { class: 'num', text: o.marker ? '' : fmtBytes(o.size) }),
      el('td', { class: 'when', text: fmtDate(o.modified) }),
      el('td', { class: 'actions' }, versions ? versionActions(bucket, o) : el('div', { class: 'row' },
        el('a', { class: 'button small download', href: s3url(bucket, o.key), download: baseName(o.key), text: 'Download', 'aria-label': 'Download ' + o.key }),
        hasVersions ? el('button', { class: 'small versions', text: 'Versions', 'aria-label': 'Versions of ' + o.key, onclick: () => versionsDialog(bucket, o.key) }) : null,
        el('button', { class: 'small details', text: 'Details', 'aria-label': 'Details of ' + o.key, onclick: () => details(bucket, o.key) }),
        el('button', { class: 'danger small delete-object', text: 'Delete', 'aria-label': 'Delete ' + o.key, onclick: async () => {
          if (!await confirmBox('Delete ' + o.key + '?', hasVersions ? 'A delete marker hides the object; its versions stay and it can be restored.' : 'The object is deleted for good.', 'Delete')) return;
          try { await s3('DELETE', bucket, o.key); toast('Deleted ' + o.key); render(); } catch (err) { toast(err.message, true); }
        } })))));
  }
  if (!folders.length && !entries.length) body.append(el('tr', {}, el('td', { colSpan: 6, class: 'muted', text: search ? 'No key starts with that.' : 'Empty. Upload files with the buttons above or drop them here.' })));

  // Paging: forward by the listing's token, back by the ones kept.
  const next = versions
    ? (xtext(doc, 'IsTruncated') === 'true' ? xtext(doc, 'NextKeyMarker') + '\n' + xtext(doc, 'NextVersionIdMarker') : '')
    : (xtext(doc, 'IsTruncated') === 'true' ? xtext(doc, 'NextContinuationToken') : '');
  const page = B3.paging.tokens.length + 1;
  pager.append(
    el('span', { class: 'muted', text: 'Page ' + page + ' · ' + (folders.length + entries.length) + ' entries' }),
    el('button', { text: 'Previous page', id: 'prev-page', disabled: !token, onclick: () => {
      const prev = B3.paging.tokens.pop() || '';
      go(hash({ token: prev }));
    } }),
    el('button', { text: 'Next page', id: 'next-page', disabled: !next, onclick: () => {
      B3.paging.tokens.push(token);
      go(hash({ token: next }));
    } }));
};

// createFolder asks for a name and makes the folder prefix+NAME/ as S3
// consoles do: an empty object whose key ends in "/", so the folder is
// listed before anything is put in it.
function createFolder(bucket, prefix) {
  const name = el('input', { id: 'folder-name', autocomplete: 'off', spellcheck: false, size: 40 });
  const form = el('form', { noValidate: true, onsubmit: async e => {
    e.preventDefault();
    const folder = name.value.trim().replace(/\/+$/, '');
    if (!folder) return setError(name, 'Give the folder a name.');
    if (folder.startsWith('/') || folder.split('/').some(p => p === '' || p === '.' || p === '..')) return setError(name, 'A name may hold "/" between parts, not at the start, twice in a row, or as . or .. parts.');
    try {
      await s3('PUT', bucket, prefix + folder + '/', null, { body: '' });
      m.close();
      toast('Folder ' + folder + '/ created');
      go(objectsHash(bucket, prefix + folder + '/'));
    } catch (err) { setError(name, err.message); }
  } }, field('Folder name', name, { hint: 'Made in ' + bucket + '/' + prefix + ' as the empty object NAME/; "/" inside the name makes folders within folders.' }),
  el('div', { class: 'row' }, el('button', { class: 'primary', type: 'submit', id: 'create-folder-submit', text: 'Create folder' })));
  closeModals();
  const m = modal('Create a folder', form);
  name.focus();
}

async function deleteSelected(bucket, body, versions) {
  const items = Array.from(body.querySelectorAll('input.pick:checked')).map(c => c.item).filter(Boolean);
  if (!items.length) return toast('Select objects first');
  const what = versions ? ' versions?' : ' objects?';
  if (!await confirmBox('Delete ' + items.length + what, items.map(i => i.key + (i.versionId ? ' (' + i.versionId + ')' : '')).slice(0, 20).join('\n') + (items.length > 20 ? '\n…' : ''), 'Delete')) return;
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
