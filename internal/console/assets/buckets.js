// Buckets: the list, create, delete (emptying after a confirmation), and
// each bucket's settings page.
'use strict';

async function listBuckets() {
  const { doc } = await s3('GET', '', '', null, { xml: true });
  return xall(doc, 'Bucket').map(b => ({ name: xtext(b, 'Name'), created: xtext(b, 'CreationDate') }));
}

B3.pages.buckets = async function (main) {
  const name = el('input', { id: 'new-bucket', placeholder: 'new-bucket-name', pattern: '[a-z0-9][a-z0-9.\\-]{1,61}[a-z0-9]' });
  const create = el('form', { class: 'row', onsubmit: async e => {
    e.preventDefault();
    try { await s3('PUT', name.value.trim()); toast('Bucket ' + name.value.trim() + ' created'); render(); } catch (err) { toast(err.message, true); }
  } }, name, el('button', { class: 'primary', type: 'submit', id: 'create-bucket', text: 'Create bucket' }));
  const body = el('tbody');
  main.append(el('h1', { text: 'Buckets' }), el('div', { class: 'card' }, create),
    el('table', { id: 'buckets' }, el('thead', {}, el('tr', {}, el('th', { text: 'Name' }), el('th', { text: 'Created' }), el('th', { text: '' }))), body));
  const buckets = await listBuckets();
  if (!buckets.length) body.append(el('tr', {}, el('td', { colSpan: 3, class: 'muted', text: 'No buckets yet.' })));
  for (const b of buckets) {
    body.append(el('tr', { 'data-bucket': b.name },
      el('td', {}, el('a', { href: '#/b/' + encodeURIComponent(b.name), text: b.name, class: 'bucket-link' })),
      el('td', { text: fmtDate(b.created) }),
      el('td', {}, el('div', { class: 'row' },
        el('a', { class: 'button', href: '#/settings/' + encodeURIComponent(b.name), text: 'Settings' }),
        el('button', { class: 'danger delete-bucket', text: 'Delete', onclick: () => deleteBucket(b.name) })))));
  }
};

// deleteBucket deletes an empty bucket at once; a bucket with objects (or
// unfinished uploads) only after the user confirms emptying it.
async function deleteBucket(bucket) {
  try {
    await s3('DELETE', bucket);
    toast('Bucket ' + bucket + ' deleted');
    return render();
  } catch (err) {
    if (err.code !== 'BucketNotEmpty') return toast(err.message, true);
  }
  if (!await confirmBox('Delete ' + bucket + '?', 'The bucket is not empty. Delete every object, version and unfinished upload in it, then the bucket?', 'Empty and delete')) return;
  try {
    await emptyBucket(bucket);
    await s3('DELETE', bucket);
    toast('Bucket ' + bucket + ' deleted');
  } catch (err) { toast(err.message, true); }
  render();
}

async function emptyBucket(bucket) {
  for (;;) {
    const { doc } = await s3('GET', bucket, '', { 'list-type': '2', 'max-keys': '1000' }, { xml: true });
    const keys = xall(doc, 'Contents').map(c => ({ key: xtext(c, 'Key') }));
    if (!keys.length) break;
    await deleteMany(bucket, keys);
  }
  try {
    for (;;) {
      const { doc } = await s3('GET', bucket, '', { versions: '', 'max-keys': '1000' }, { xml: true });
      const vs = xall(doc, 'Version').concat(xall(doc, 'DeleteMarker')).map(v => ({ key: xtext(v, 'Key'), versionId: xtext(v, 'VersionId') }));
      if (!vs.length) break;
      await deleteMany(bucket, vs);
    }
  } catch (err) { if (err.code !== 'NotImplemented') throw err; }
  const { doc } = await s3('GET', bucket, '', { uploads: '' }, { xml: true });
  for (const u of xall(doc, 'Upload')) await s3('DELETE', bucket, xtext(u, 'Key'), { uploadId: xtext(u, 'UploadId') });
}

// deleteMany deletes up to 1000 objects in one DeleteObjects.
async function deleteMany(bucket, items) {
  const body = xmlDoc('Delete', [['Quiet', 'true']].concat(items.map(i =>
    ['Object', [['Key', i.key]].concat(i.versionId ? [['VersionId', i.versionId]] : [])])));
  const { doc } = await s3('POST', bucket, '', 'delete', { body, xml: true, headers: { 'Content-Type': 'application/xml' } });
  const errs = xall(doc, 'Error');
  if (errs.length) throw new Error(errs.length + ' not deleted, first: ' + xtext(errs[0], 'Key') + ': ' + xtext(errs[0], 'Code'));
}
