// Object versions in a versioned bucket: the versions of one key (a
// dialog from the object's row), and the actions on one version —
// download, restore (copy it over the key, so it becomes the current
// version again, and nothing is lost: the version that was current stays
// as a noncurrent one), delete for good, and remove a delete marker (which
// brings back the version under it). Every action is the S3 API's own
// call as the logged-in user.
'use strict';

// versionEntries reads a ListObjectVersions answer: versions and delete
// markers in the listing's order (by key, newest first).
function versionEntries(doc) {
  return Array.from(doc.documentElement.children).filter(n => n.tagName === 'Version' || n.tagName === 'DeleteMarker').map(v => ({
    key: xtext(v, 'Key'), versionId: xtext(v, 'VersionId'), size: xtext(v, 'Size'), modified: xtext(v, 'LastModified'),
    latest: xtext(v, 'IsLatest') === 'true', marker: v.tagName === 'DeleteMarker',
  }));
}

function versionBadges(v) {
  return [v.latest ? el('span', { class: 'badge ok', text: 'current' }) : null,
    v.marker ? el('span', { class: 'badge danger', text: 'delete marker' }) : null];
}

// versionActions are the buttons of one version or delete marker; after
// an action, done runs (default: render the page again).
function versionActions(bucket, v, done) {
  done = done || render;
  const vq = { versionId: v.versionId };
  const label = v.key + ' version ' + v.versionId;
  if (v.marker) {
    return el('div', { class: 'row' }, el('button', { class: 'small remove-marker', text: v.latest ? 'Undelete' : 'Remove marker',
      title: v.latest ? 'Remove this delete marker: the version under it becomes current again' : 'Remove this delete marker',
      'aria-label': (v.latest ? 'Undelete ' : 'Remove delete marker of ') + v.key, onclick: async () => {
        try { await s3('DELETE', bucket, v.key, vq); toast(v.latest ? 'Undeleted ' + v.key : 'Delete marker removed'); done(); } catch (err) { toast(err.message, true); }
      } }));
  }
  return el('div', { class: 'row' },
    el('a', { class: 'button small download', href: s3url(bucket, v.key, vq), download: baseName(v.key), text: 'Download', 'aria-label': 'Download ' + label }),
    v.latest ? null : el('button', { class: 'small restore', text: 'Restore', 'aria-label': 'Restore ' + label,
      title: 'Make a copy of this version the current object', onclick: async () => {
        try { await restoreVersion(bucket, v.key, v.versionId); toast('Restored ' + v.key + ' from version ' + v.versionId); done(); } catch (err) { toast(err.message, true); }
      } }),
    el('button', { class: 'small details', text: 'Details', 'aria-label': 'Details of ' + label, onclick: () => details(bucket, v.key, v.versionId) }),
    el('button', { class: 'danger small delete-version', text: 'Delete', 'aria-label': 'Delete ' + label, onclick: async () => {
      if (!await confirmBox('Delete this version of ' + v.key + '?', 'Version ' + v.versionId + ' is removed for good; the other versions stay.', 'Delete version')) return;
      try { await s3('DELETE', bucket, v.key, vq); toast('Deleted version ' + v.versionId); done(); } catch (err) { toast(err.message, true); }
    } }));
}

// restoreVersion copies version versionId of key over key (CopyObject
// with the version as source): its bytes, headers, metadata and tags
// become a new current version.
function restoreVersion(bucket, key, versionId) {
  return s3('PUT', bucket, key, null, { headers: {
    'x-amz-copy-source': '/' + encodeURIComponent(bucket) + '/' + encodeKey(key) + '?versionId=' + encodeURIComponent(versionId) } });
}

// B3.versionsShown bounds the versions the dialog lists: a key rewritten
// a million times is not loaded whole (Show versions pages through all).
B3.versionsShown = 1000;

// versionsOfKey lists the versions and delete markers of exactly key,
// newest first, a listing page at a time, up to B3.versionsShown; more
// says there are others after them.
async function versionsOfKey(bucket, key) {
  const list = [];
  let keyMarker = '', versionMarker = '';
  for (;;) {
    const q = { prefix: key, 'max-keys': '1000' };
    if (keyMarker) { q['key-marker'] = keyMarker; q['version-id-marker'] = versionMarker; }
    const { doc } = await s3('GET', bucket, '', 'versions&' + new URLSearchParams(q), { xml: true });
    const page = versionEntries(doc);
    list.push(...page.filter(v => v.key === key));
    // Keys after this one (key + more) sort after all of its versions.
    const done = xtext(doc, 'IsTruncated') !== 'true' || page.some(v => v.key > key);
    const most = B3.versionsShown;
    if (done || list.length >= most) return { list: list.slice(0, most), more: !done || list.length > most };
    keyMarker = xtext(doc, 'NextKeyMarker'); versionMarker = xtext(doc, 'NextVersionIdMarker');
  }
}

// versionsDialog shows the versions of key with their actions.
async function versionsDialog(bucket, key) {
  const box = el('div', { id: 'versions' });
  closeModals();
  const m = modal('Versions of ' + key, box);
  const fill = async () => {
    let list, more;
    try { ({ list, more } = await versionsOfKey(bucket, key)); } catch (err) { clear(box, el('p', { class: 'error', text: err.message })); return; }
    if (!m.box.isConnected) return;
    const body = el('tbody');
    for (const v of list) {
      body.append(el('tr', { 'data-version': v.versionId, class: v.marker ? 'marker' : null },
        el('td', { class: 'version' }, v.versionId), el('td', {}, versionBadges(v)),
        el('td', { class: 'num', text: v.marker ? '' : fmtBytes(v.size) }), el('td', { class: 'when', text: fmtDate(v.modified) }),
        el('td', { class: 'actions' }, versionActions(bucket, v, () => { fill(); if (route().page === 'b') refreshBehind(); }))));
    }
    if (!list.length) body.append(el('tr', {}, el('td', { colSpan: 5, class: 'muted', text: 'No versions: the key is gone.' })));
    const count = more ? 'The newest ' + list.length + ' versions (Show versions on the object page lists them all)' : list.length + (list.length === 1 ? ' version' : ' versions') + ', newest first';
    clear(box, el('p', { class: 'muted', text: count + '. Restore copies a version over the key; Delete removes that version for good.' }),
      el('div', { class: 'table-wrap' }, el('table', { id: 'versions-table' }, el('caption', { class: 'sr-only', text: 'Versions of ' + key }),
        el('thead', {}, el('tr', {}, el('th', { text: 'Version' }), el('th', { text: 'State' }), el('th', { class: 'num', text: 'Size' }),
          el('th', { text: 'Modified' }), el('th', {}, el('span', { class: 'sr-only', text: 'Actions' })))), body)));
  };
  box.append(el('p', { class: 'muted', text: 'loading…' }));
  await fill();
}

// refreshBehind renders the object page under an open dialog again
// without closing the dialog (render() closes dialogs on a new route).
function refreshBehind() {
  const main = document.getElementById('main');
  if (!main) return;
  const fresh = el('main', { id: 'main', tabIndex: -1 });
  B3.pages.b(fresh, route()).then(() => main.replaceWith(fresh)).catch(() => {});
}
