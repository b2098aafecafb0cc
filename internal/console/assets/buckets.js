// Buckets: the list, create, delete (emptying after a confirmation), and
// each bucket's settings page.
'use strict';

async function listBuckets() {
  const { doc } = await s3('GET', '', '', null, { xml: true });
  return xall(doc, 'Bucket').map(b => ({ name: xtext(b, 'Name'), created: xtext(b, 'CreationDate') }));
}

// bucketNameProblem says what is wrong with a bucket name (S3's rules),
// or '' when nothing is.
function bucketNameProblem(name) {
  if (name.length < 3 || name.length > 63) return 'A bucket name has 3 to 63 characters.';
  if (!/^[a-z0-9.-]+$/.test(name)) return 'Use lowercase letters, digits, dots and hyphens only.';
  if (!/^[a-z0-9].*[a-z0-9]$/.test(name)) return 'Begin and end with a letter or a digit.';
  if (name.includes('..')) return 'Two dots may not follow each other.';
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return 'A bucket name may not look like an IP address.';
  return '';
}

B3.pages.buckets = async function (main) {
  let buckets = [];
  const name = el('input', { id: 'new-bucket', placeholder: 'e.g. camera-footage', autocomplete: 'off', spellcheck: false, size: 32 });
  const create = el('form', { class: 'fields', id: 'create-bucket-form', noValidate: true, onsubmit: async e => {
    e.preventDefault();
    const bucket = name.value.trim();
    const problem = bucketNameProblem(bucket);
    if (problem) return setError(name, problem);
    // In us-east-1 S3 answers 200 to creating a bucket one owns already.
    if (buckets.some(b => b.name === bucket)) return setError(name, 'You have a bucket of that name already.');
    try { await s3('PUT', bucket); toast('Bucket ' + bucket + ' created'); render(); } catch (err) { setError(name, err.message); }
  } }, field('Bucket name', name, { hint: '3–63 characters: lowercase letters, digits, dots and hyphens. Names are unique on this server.' }),
  el('div', { class: 'field', style: 'flex:none;padding-top:23px' }, el('button', { class: 'primary', type: 'submit', id: 'create-bucket', text: 'Create bucket' })));
  const body = el('tbody');
  main.append(pageHead('Buckets', { lead: 'The buckets you own. Open one to browse, upload and share its objects.' }),
    el('div', { class: 'card' }, el('h2', { text: 'Create a bucket' }), create),
    el('div', { class: 'table-wrap' }, el('table', { id: 'buckets' }, el('caption', { class: 'sr-only', text: 'Buckets' }),
      el('thead', {}, el('tr', {}, el('th', { text: 'Name' }), el('th', { text: 'Created' }), el('th', {}, el('span', { class: 'sr-only', text: 'Actions' })))), body)));
  buckets = await listBuckets();
  if (!buckets.length) body.append(el('tr', {}, el('td', { colSpan: 3, class: 'muted', text: 'No buckets yet: create one above.' })));
  for (const b of buckets) {
    body.append(el('tr', { 'data-bucket': b.name },
      el('td', { class: 'key' }, el('a', { href: '#/b/' + encodeURIComponent(b.name), class: 'bucket-link folder-link' }, icon('folder'), b.name)),
      el('td', { class: 'when', text: fmtDate(b.created) }),
      el('td', { class: 'actions' }, el('div', { class: 'row' },
        el('a', { class: 'button small', href: '#/settings/' + encodeURIComponent(b.name), text: 'Settings', 'aria-label': 'Settings of ' + b.name }),
        el('button', { class: 'danger small delete-bucket', text: 'Delete', 'aria-label': 'Delete ' + b.name, onclick: () => deleteBucket(b.name) })))));
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
