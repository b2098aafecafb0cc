// A bucket's settings: usage, public access, versioning, lifecycle rules
// (a form), CORS rules (a form). Every change is the S3 API's own
// configuration call, so the owner-only rule is the S3 API's.
'use strict';

B3.pages.settings = async function (main, r) {
  const bucket = r.arg;
  main.append(el('div', { class: 'crumbs row' }, el('a', { href: '#/buckets', text: 'Buckets' }), '/',
    el('a', { href: '#/b/' + encodeURIComponent(bucket), text: bucket }), '/', 'Settings'),
  el('h1', { text: 'Settings of ' + bucket }));
  const sections = [usageCard, accessCard, versioningCard, lifecycleCard, corsCard];
  const cards = sections.map(() => el('div', { class: 'card' }));
  main.append(el('div', { class: 'grid' }, cards));
  await Promise.all(sections.map(async (f, i) => {
    try { await f(cards[i], bucket); } catch (err) { cards[i].append(el('p', { class: 'error', text: err.message })); }
  }));
};

async function usageCard(card, bucket) {
  card.append(el('h2', { text: 'Usage' }));
  const u = await api('GET', '/api/usage?bucket=' + encodeURIComponent(bucket));
  card.append(el('table', { class: 'kv', id: 'usage' },
    el('tr', {}, el('td', { text: 'Objects' }), el('td', { class: 'num', text: String(u.objects) })),
    el('tr', {}, el('td', { text: 'Bytes' }), el('td', { class: 'num', text: fmtBytes(u.bytes) + ' (' + u.bytes + ')' }))));
}

// accessCard shows who may reach the bucket without its owner's keys:
// Block Public Access (new buckets start with all four settings on), the
// bucket policy (with a template that makes every object readable), and
// the canned ACL where the bucket's ownership controls enable ACLs.
async function accessCard(card, bucket) {
  card.append(el('h2', { text: 'Public access' }));
  const pabNames = ['BlockPublicAcls', 'IgnorePublicAcls', 'BlockPublicPolicy', 'RestrictPublicBuckets'];
  let pab = {};
  try {
    const { doc } = await s3('GET', bucket, '', 'publicAccessBlock', { xml: true });
    for (const n of pabNames) pab[n] = xtext(doc, n) === 'true';
  } catch (err) { if (err.code !== 'NoSuchPublicAccessBlockConfiguration') throw err; }
  const boxes = pabNames.map(n => el('input', { type: 'checkbox', id: 'pab-' + n, checked: !!pab[n] }));
  card.append(el('p', { class: 'muted', text: 'Block Public Access: with these on, no ACL or policy can make the bucket public.' }),
    el('div', {}, pabNames.map((n, i) => el('label', { class: 'row' }, boxes[i], n))),
    el('div', { class: 'row' }, el('button', { id: 'pab-save', text: 'Save', onclick: async () => {
      try {
        if (boxes.every(b => !b.checked)) await s3('DELETE', bucket, '', 'publicAccessBlock');
        else await s3('PUT', bucket, '', 'publicAccessBlock', { body: xmlDoc('PublicAccessBlockConfiguration', pabNames.map((n, i) => [n, boxes[i].checked ? 'true' : 'false'])), headers: { 'Content-Type': 'application/xml' } });
        toast('Block Public Access saved');
      } catch (err) { toast(err.message, true); }
    } })));

  let policy = '';
  try {
    const { res } = await s3('GET', bucket, '', 'policy');
    policy = await res.text();
  } catch (err) { if (err.code !== 'NoSuchBucketPolicy') throw err; }
  const text = el('textarea', { id: 'policy', rows: 8, spellcheck: false, value: policy });
  const publicRead = JSON.stringify({ Version: '2012-10-17', Statement: [{ Sid: 'PublicRead', Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::' + bucket + '/*' }] }, null, 2);
  card.append(el('p', { class: 'muted', text: 'Bucket policy (JSON, as on AWS); empty: none.' }), text,
    el('div', { class: 'row' },
      el('button', { id: 'policy-template', text: 'Public read template', onclick: () => { text.value = publicRead; } }),
      el('button', { id: 'policy-save', text: 'Save policy', onclick: async () => {
        try {
          if (text.value.trim() === '') await s3('DELETE', bucket, '', 'policy');
          else await s3('PUT', bucket, '', 'policy', { body: text.value, headers: { 'Content-Type': 'application/json' } });
          toast(text.value.trim() === '' ? 'Policy removed' : 'Policy saved');
        } catch (err) { toast(err.message, true); }
      } })));

  let enforced = false;
  try {
    const { doc } = await s3('GET', bucket, '', 'ownershipControls', { xml: true });
    enforced = xtext(doc, 'ObjectOwnership') === 'BucketOwnerEnforced';
  } catch (err) { if (err.code !== 'OwnershipControlsNotFoundError') throw err; }
  if (enforced) {
    card.append(el('p', { class: 'muted', text: 'ACLs are disabled (object ownership: BucketOwnerEnforced); access is the policy\'s alone.' }));
    return;
  }
  const { doc } = await s3('GET', bucket, '', 'acl', { xml: true });
  let acl = 'private';
  for (const g of xall(doc, 'Grant')) {
    if (xtext(g, 'URI').endsWith('/global/AllUsers')) {
      const p = xtext(g, 'Permission');
      if (p === 'WRITE') acl = 'public-read-write'; else if (p === 'READ' && acl === 'private') acl = 'public-read';
    }
  }
  const sel = el('select', { id: 'acl' }, ['private', 'public-read', 'public-read-write'].map(v => el('option', { value: v, text: v, selected: v === acl })));
  card.append(el('p', { class: 'muted', text: 'Canned ACL: public-read lets anyone list the bucket; public-read-write also lets anyone write to it.' }),
    el('div', { class: 'row' }, sel, el('button', { text: 'Save ACL', onclick: async () => {
      try { await s3('PUT', bucket, '', 'acl', { headers: { 'x-amz-acl': sel.value } }); toast('ACL: ' + sel.value); } catch (err) { toast(err.message, true); }
    } })));
}

async function versioningCard(card, bucket) {
  card.append(el('h2', { text: 'Versioning' }));
  let status = '';
  try {
    const { doc } = await s3('GET', bucket, '', 'versioning', { xml: true });
    status = xtext(doc, 'Status');
  } catch (err) {
    if (err.code === 'NotImplemented') { card.append(el('p', { class: 'muted', text: 'This server does not support versioning.' })); return; }
    throw err;
  }
  const set = async s => {
    try {
      await s3('PUT', bucket, '', 'versioning', { body: xmlDoc('VersioningConfiguration', [['Status', s]]), headers: { 'Content-Type': 'application/xml' } });
      toast('Versioning ' + s.toLowerCase()); render();
    } catch (err) { toast(err.code === 'NotImplemented' ? 'This server does not support versioning.' : err.message, true); }
  };
  card.append(el('p', { id: 'versioning-status', text: 'Status: ' + (status || 'never enabled') }),
    el('div', { class: 'row' }, el('button', { text: 'Enable', disabled: status === 'Enabled', onclick: () => set('Enabled') }),
      el('button', { text: 'Suspend', disabled: status !== 'Enabled', onclick: () => set('Suspended') })));
}

// lifecycleCard edits the rules a form can express: a prefix, expiry
// after N days, aborting unfinished uploads after N days. A rule with
// more (tags, sizes, transitions) is shown and kept as it is.
async function lifecycleCard(card, bucket) {
  card.append(el('h2', { text: 'Lifecycle rules' }));
  let rules = [];
  try {
    const { doc } = await s3('GET', bucket, '', 'lifecycle', { xml: true });
    rules = xall(doc, 'Rule').map(r => ({
      id: xtext(r, 'ID'), enabled: xtext(r, 'Status') === 'Enabled', prefix: xtext(r, 'Prefix'),
      days: r.getElementsByTagName('Expiration')[0] ? xtext(r.getElementsByTagName('Expiration')[0], 'Days') : '',
      abortDays: xtext(r, 'DaysAfterInitiation'),
      other: r.getElementsByTagName('Tag').length + r.getElementsByTagName('Transition').length +
        r.getElementsByTagName('ObjectSizeGreaterThan').length + r.getElementsByTagName('ObjectSizeLessThan').length > 0,
    }));
  } catch (err) { if (err.code !== 'NoSuchLifecycleConfiguration') throw err; }
  const list = el('tbody');
  const row = rule => {
    const inputs = {
      id: el('input', { value: rule.id || '', size: 10, placeholder: 'id' }),
      prefix: el('input', { value: rule.prefix || '', size: 12, placeholder: 'all keys' }),
      days: el('input', { type: 'number', min: 1, value: rule.days || '', style: 'width:70px' }),
      abortDays: el('input', { type: 'number', min: 1, value: rule.abortDays || '', style: 'width:70px' }),
      enabled: el('input', { type: 'checkbox', checked: rule.enabled !== false }),
    };
    const tr = el('tr', {}, el('td', {}, inputs.enabled), el('td', {}, inputs.id), el('td', {}, inputs.prefix), el('td', {}, inputs.days),
      el('td', {}, inputs.abortDays), el('td', {}, rule.other ? el('span', { class: 'muted', text: 'has filters the form does not show; saving drops them' }) : null,
        el('button', { class: 'danger', text: '✕', title: 'Remove rule', onclick: () => tr.remove() })));
    tr.inputs = inputs;
    list.append(tr);
  };
  rules.forEach(row);
  const save = async () => {
    const rs = Array.from(list.children).map(tr => tr.inputs);
    try {
      if (!rs.length) { await s3('DELETE', bucket, '', 'lifecycle'); toast('Lifecycle rules removed'); return; }
      const body = xmlDoc('LifecycleConfiguration', rs.map((i, n) => ['Rule', [
        ['ID', i.id.value || 'rule-' + (n + 1)], ['Filter', [['Prefix', i.prefix.value]]], ['Status', i.enabled.checked ? 'Enabled' : 'Disabled']]
        .concat(i.days.value ? [['Expiration', [['Days', i.days.value]]]] : [])
        .concat(i.abortDays.value ? [['AbortIncompleteMultipartUpload', [['DaysAfterInitiation', i.abortDays.value]]]] : [])]));
      await s3('PUT', bucket, '', 'lifecycle', { body, headers: { 'Content-Type': 'application/xml' } });
      toast('Lifecycle rules saved');
    } catch (err) { toast(err.message, true); }
  };
  card.append(el('table', { id: 'lifecycle' }, el('thead', {}, el('tr', {}, ['On', 'ID', 'Prefix', 'Expire after days', 'Abort uploads after days', ''].map(h => el('th', { text: h })))), list),
    el('div', { class: 'row' }, el('button', { text: 'Add rule', onclick: () => row({ enabled: true }) }), el('button', { class: 'primary', text: 'Save rules', onclick: save })));
}

async function corsCard(card, bucket) {
  card.append(el('h2', { text: 'CORS' }), el('p', { class: 'muted', text: 'Which web origins may call the S3 API for this bucket from a browser.' }));
  let rules = [];
  try {
    const { doc } = await s3('GET', bucket, '', 'cors', { xml: true });
    rules = xall(doc, 'CORSRule').map(r => ({
      origins: xall(r, 'AllowedOrigin').map(n => n.textContent).join(', '),
      methods: xall(r, 'AllowedMethod').map(n => n.textContent),
      headers: xall(r, 'AllowedHeader').map(n => n.textContent).join(', '),
      expose: xall(r, 'ExposeHeader').map(n => n.textContent).join(', '),
      maxAge: xtext(r, 'MaxAgeSeconds'),
    }));
  } catch (err) { if (err.code !== 'NoSuchCORSConfiguration') throw err; }
  const list = el('div');
  const methods = ['GET', 'PUT', 'POST', 'DELETE', 'HEAD'];
  const row = rule => {
    const i = {
      origins: el('input', { value: rule.origins || '', placeholder: 'https://example.com, *', size: 28 }),
      methods: methods.map(m => el('input', { type: 'checkbox', checked: (rule.methods || ['GET']).includes(m), value: m })),
      headers: el('input', { value: rule.headers || '', placeholder: 'allowed headers', size: 16 }),
      expose: el('input', { value: rule.expose || '', placeholder: 'expose headers (ETag)', size: 16 }),
      maxAge: el('input', { type: 'number', min: 0, value: rule.maxAge || '', placeholder: 'max age s', style: 'width:90px' }),
    };
    const box = el('div', { class: 'row card' }, i.origins, i.methods.map(c => el('label', {}, c, c.value)), i.headers, i.expose, i.maxAge,
      el('button', { class: 'danger', text: '✕', onclick: () => box.remove() }));
    box.inputs = i;
    list.append(box);
  };
  rules.forEach(row);
  const split = s => s.split(',').map(x => x.trim()).filter(Boolean);
  const save = async () => {
    const rs = Array.from(list.children).map(b => b.inputs);
    try {
      if (!rs.length) { await s3('DELETE', bucket, '', 'cors'); toast('CORS rules removed'); return; }
      const body = xmlDoc('CORSConfiguration', rs.map(i => ['CORSRule',
        split(i.origins.value).map(o => ['AllowedOrigin', o])
          .concat(i.methods.filter(c => c.checked).map(c => ['AllowedMethod', c.value]))
          .concat(split(i.headers.value).map(h => ['AllowedHeader', h]))
          .concat(split(i.expose.value).map(h => ['ExposeHeader', h]))
          .concat(i.maxAge.value ? [['MaxAgeSeconds', i.maxAge.value]] : [])]));
      await s3('PUT', bucket, '', 'cors', { body, headers: { 'Content-Type': 'application/xml' } });
      toast('CORS rules saved');
    } catch (err) { toast(err.message, true); }
  };
  card.append(list, el('div', { class: 'row' }, el('button', { text: 'Add rule', onclick: () => row({}) }), el('button', { class: 'primary', text: 'Save CORS', onclick: save })));
}
