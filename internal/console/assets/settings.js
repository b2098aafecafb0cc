// A bucket's settings: usage, versioning, Object Lock, public access,
// lifecycle rules (a form), CORS rules (a form). Every change is the S3 API's own
// configuration call, so the owner-only rule is the S3 API's.
'use strict';

B3.pages.settings = async function (main, r) {
  const bucket = r.arg;
  main.append(pageHead('Settings of ' + bucket, {
    crumbs: el('nav', { class: 'crumbs row', 'aria-label': 'Bucket' }, el('a', { href: '#/buckets', text: 'Buckets' }), '/',
      el('a', { href: '#/b/' + encodeURIComponent(bucket), text: bucket }), '/', el('span', { text: 'Settings' })),
    lead: 'Each setting is the S3 API\'s own configuration of the bucket; what each one does is written beside it.' }));
  // Three small cards side by side, then the large ones at full width.
  const sections = [['usage', usageCard], ['versioning', versioningCard], ['object-lock', objectLockCard],
    ['access', accessCard], ['lifecycle', lifecycleCard], ['cors', corsCard]];
  const cards = sections.map(([name]) => el('section', { class: 'card', id: 'card-' + name }));
  main.append(el('div', { class: 'grid three' }, cards.slice(0, 3)), el('div', { class: 'stack' }, cards.slice(3)));
  await Promise.all(sections.map(async ([, f], i) => {
    try { await f(cards[i], bucket); } catch (err) { cards[i].append(el('p', { class: 'error', text: err.message })); }
  }));
  main.dataset.ready = 'settings'; // every card drawn (the browser test's cue)
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
  const left = el('div'), right = el('div');
  card.append(el('h2', { text: 'Public access' }), el('div', { class: 'grid' }, left, right));
  const pabNames = ['BlockPublicAcls', 'IgnorePublicAcls', 'BlockPublicPolicy', 'RestrictPublicBuckets'];
  let pab = {};
  try {
    const { doc } = await s3('GET', bucket, '', 'publicAccessBlock', { xml: true });
    for (const n of pabNames) pab[n] = xtext(doc, n) === 'true';
  } catch (err) { if (err.code !== 'NoSuchPublicAccessBlockConfiguration') throw err; }
  const pabText = {
    BlockPublicAcls: ['Block new public ACLs', 'Refuses a request that would set an ACL granting access to everyone (on the bucket or an object).'],
    IgnorePublicAcls: ['Ignore public ACLs', 'Public grants already in ACLs are not honoured: only the owner and named users get in.'],
    BlockPublicPolicy: ['Block public bucket policies', 'Refuses a bucket policy that would let anyone in.'],
    RestrictPublicBuckets: ['Restrict public buckets', 'While the policy is public, only the owner and this server\'s users get in; anonymous requests are refused.'],
  };
  const switches = pabNames.map(n => checkbox(pabText[n][0], { id: 'pab-' + n, checked: !!pab[n] }, pabText[n][1]));
  const boxes = switches.map(sw => sw.box);
  left.append(el('p', { class: 'muted', text: 'Block Public Access (all four on for a new bucket): with them on, no ACL or policy can make the bucket public.' }),
    el('div', { role: 'group', 'aria-label': 'Block Public Access' }, switches.map(sw => sw.node)),
    el('div', { class: 'row' }, el('button', { id: 'pab-save', text: 'Save Block Public Access', onclick: async () => {
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
  const text = el('textarea', { id: 'policy', class: 'code', rows: 12, spellcheck: false, value: policy });
  const publicRead = JSON.stringify({ Version: '2012-10-17', Statement: [{ Sid: 'PublicRead', Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::' + bucket + '/*' }] }, null, 2);
  right.append(el('h3', { text: 'Bucket policy', style: 'margin-top:0' }),
    field('Policy (JSON)', text, { hint: 'As on AWS: statements allowing or denying actions to principals. Empty: no policy. The template lets anyone read every object (Block Public Access must be off for it to be saved).' }),
    el('div', { class: 'row' },
      el('button', { id: 'policy-template', text: 'Public read template', onclick: () => { text.value = publicRead; } }),
      el('button', { id: 'policy-save', text: 'Save policy', onclick: async () => {
        try {
          if (text.value.trim() === '') await s3('DELETE', bucket, '', 'policy');
          else await s3('PUT', bucket, '', 'policy', { body: text.value, headers: { 'Content-Type': 'application/json' } });
          toast(text.value.trim() === '' ? 'Policy removed' : 'Policy saved');
        } catch (err) { setError(text, err.message); }
      } })));

  let enforced = false;
  try {
    const { doc } = await s3('GET', bucket, '', 'ownershipControls', { xml: true });
    enforced = xtext(doc, 'ObjectOwnership') === 'BucketOwnerEnforced';
  } catch (err) { if (err.code !== 'OwnershipControlsNotFoundError') throw err; }
  if (enforced) {
    left.append(el('h3', { text: 'Bucket ACL' }), el('p', { class: 'muted', text: 'ACLs are disabled (object ownership: BucketOwnerEnforced); access is the policy\'s alone.' }));
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
  const sel = el('select', { id: 'acl' }, [['private', 'private: the owner only'], ['public-read', 'public-read: anyone may list the bucket'],
    ['public-read-write', 'public-read-write: anyone may list and write']].map(([v, t]) => el('option', { value: v, text: t, selected: v === acl })));
  left.append(el('h3', { text: 'Bucket ACL' }),
    el('div', { class: 'fields' }, field('Canned ACL', sel, { hint: 'Who may list the bucket, and write to it, besides its owner. Objects keep their own ACLs.' }),
      el('div', { class: 'field', style: 'flex:none;padding-top:23px' }, el('button', { id: 'acl-save', text: 'Save ACL', onclick: async () => {
        try { await s3('PUT', bucket, '', 'acl', { headers: { 'x-amz-acl': sel.value } }); toast('ACL: ' + sel.value); } catch (err) { setError(sel, err.message); }
      } }))));
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
  const badge = status === 'Enabled' ? el('span', { class: 'badge ok', text: 'on' }) : status === 'Suspended' ? el('span', { class: 'badge warn', text: 'suspended' }) : el('span', { class: 'badge', text: 'off' });
  card.firstChild.append(badge);
  card.append(el('p', { id: 'versioning-status', text: 'Status: ' + (status || 'never enabled') }),
    el('p', { class: 'muted', text: 'On: every overwrite and delete keeps the earlier version, which the object page lists, restores and deletes (Versions). ' +
      'Suspended: new writes replace the current version; versions kept so far stay. A bucket that had versioning on can be suspended, not turned off.' }),
    el('div', { class: 'row' }, el('button', { id: 'versioning-enable', text: 'Enable versioning', disabled: status === 'Enabled', onclick: () => set('Enabled') }),
      el('button', { id: 'versioning-suspend', text: 'Suspend versioning', disabled: status !== 'Enabled', onclick: () => set('Suspended') })));
}

// objectLockCard shows whether Object Lock is on, turns it on (a bucket
// with versioning on; it cannot be turned off again), and edits the
// default retention new objects get.
async function objectLockCard(card, bucket) {
  card.append(el('h2', { text: 'Object Lock' }));
  let conf = null;
  try {
    conf = (await s3('GET', bucket, '', 'object-lock', { xml: true })).doc;
  } catch (err) {
    if (err.code === 'NotImplemented') { card.append(el('p', { class: 'muted', text: 'This server does not support Object Lock.' })); return; }
    if (err.code !== 'ObjectLockConfigurationNotFoundError') throw err;
  }
  const explain = 'A locked version cannot be deleted or overwritten until its retention ends (Governance: users allowed to bypass it may; ' +
    'Compliance: no one may), or while it has a legal hold.';
  if (!conf) {
    card.firstChild.append(el('span', { class: 'badge', text: 'off' }));
    const { doc } = await s3('GET', bucket, '', 'versioning', { xml: true });
    const versioned = xtext(doc, 'Status') === 'Enabled';
    card.append(el('p', { class: 'muted', text: explain }),
      el('p', { class: 'muted', text: versioned ? 'Turning it on cannot be undone.' : 'It can be turned on while versioning is on; turning it on cannot be undone.' }),
      el('div', { class: 'row' }, el('button', { id: 'object-lock-enable', text: 'Turn on Object Lock', disabled: !versioned, onclick: async () => {
        if (!await confirmBox('Turn on Object Lock for ' + bucket + '?', 'Object Lock cannot be turned off again. Versions stay deletable until a retention or legal hold is put on them.', 'Turn on')) return;
        try {
          await s3('PUT', bucket, '', 'object-lock', { body: xmlDoc('ObjectLockConfiguration', [['ObjectLockEnabled', 'Enabled']]), headers: { 'Content-Type': 'application/xml' } });
          toast('Object Lock on'); render();
        } catch (err) { toast(err.message, true); }
      } })));
    return;
  }
  card.firstChild.append(el('span', { class: 'badge ok', text: 'on' }));
  const mode = el('select', { id: 'lock-mode' }, [['', 'None: objects are not locked unless a request asks'], ['GOVERNANCE', 'Governance'], ['COMPLIANCE', 'Compliance']]
    .map(([v, t]) => el('option', { value: v, text: t, selected: v === xtext(conf, 'Mode') })));
  const years = xtext(conf, 'Years');
  const days = el('input', { id: 'lock-days', type: 'number', min: 1, value: years ? String(Number(years) * 365) : xtext(conf, 'Days'), style: 'width:100%' });
  card.append(el('p', { class: 'muted', text: explain }),
    el('div', { class: 'fields' }, field('Default retention', mode, { hint: 'What a new object gets when its upload asks for no lock.' }),
      field('Days', days, { hint: 'How long the default retention lasts.' })),
    el('div', { class: 'row' }, el('button', { id: 'lock-save', text: 'Save default retention', onclick: async () => {
      clearErrors(card);
      const n = Number(days.value);
      if (mode.value && !(Number.isInteger(n) && n >= 1)) return setError(days, 'A whole number of days, 1 or more.');
      const rule = mode.value ? [['Rule', [['DefaultRetention', [['Mode', mode.value], ['Days', n]]]]]] : [];
      try {
        await s3('PUT', bucket, '', 'object-lock', { body: xmlDoc('ObjectLockConfiguration', [['ObjectLockEnabled', 'Enabled']].concat(rule)), headers: { 'Content-Type': 'application/xml' } });
        toast('Default retention saved');
      } catch (err) { setError(days, err.message); }
    } })));
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
  card.append(el('p', { class: 'muted', text: 'Rules the server applies in a pass every hour (and on "Run a lifecycle pass now" in Operations): ' +
    'objects under the prefix are deleted the given number of days after they were written, and uploads never completed are aborted. Empty: that part of the rule is off.' }));
  const list = el('tbody', { id: 'lifecycle-rules' });
  const row = rule => {
    const n = list.children.length + 1;
    const inputs = {
      enabled: el('input', { type: 'checkbox', checked: rule.enabled !== false, class: 'lc-enabled' }),
      id: el('input', { value: rule.id || '', placeholder: 'rule-' + n, class: 'lc-id', style: 'width:100%' }),
      prefix: el('input', { value: rule.prefix || '', placeholder: 'all keys', class: 'lc-prefix', style: 'width:100%' }),
      days: el('input', { type: 'number', min: 1, value: rule.days || '', class: 'lc-days', style: 'width:110px' }),
      abortDays: el('input', { type: 'number', min: 1, value: rule.abortDays || '', class: 'lc-abort', style: 'width:110px' }),
    };
    const other = rule.other;
    const cell = (label, input) => el('td', {}, field(label + ' (rule ' + n + ')', input, { hidden: true }));
    const tr = el('tr', {}, cell('On', inputs.enabled), cell('Name', inputs.id), cell('Key prefix', inputs.prefix),
      cell('Delete objects after days', inputs.days), cell('Abort unfinished uploads after days', inputs.abortDays),
      el('td', { class: 'actions' }, rule.other ? el('span', { class: 'badge warn', text: 'has filters the form does not show; saving drops them' }) : null,
        el('button', { class: 'danger small', text: 'Remove', 'aria-label': 'Remove rule ' + n, onclick: () => tr.remove() })));
    tr.inputs = inputs;
    tr.other = other;
    list.append(tr);
  };
  rules.forEach(row);
  const formError = el('p', { class: 'form-error', role: 'alert' });
  const save = async () => {
    formError.textContent = '';
    clearErrors(list);
    const rs = Array.from(list.children).map(tr => tr.inputs);
    for (const tr of list.children) {
      const i = tr.inputs;
      for (const d of [i.days, i.abortDays]) {
        if (d.value && !(Number.isInteger(Number(d.value)) && Number(d.value) >= 1)) return setError(d, 'A whole number of days, 1 or more.');
      }
      if (!i.days.value && !i.abortDays.value && !tr.other) return setError(i.days, 'Give days to delete after, or to abort uploads after.');
    }
    try {
      if (!rs.length) { await s3('DELETE', bucket, '', 'lifecycle'); toast('Lifecycle rules removed'); return; }
      const body = xmlDoc('LifecycleConfiguration', rs.map((i, n) => ['Rule', [
        ['ID', i.id.value || 'rule-' + (n + 1)], ['Filter', [['Prefix', i.prefix.value]]], ['Status', i.enabled.checked ? 'Enabled' : 'Disabled']]
        .concat(i.days.value ? [['Expiration', [['Days', i.days.value]]]] : [])
        .concat(i.abortDays.value ? [['AbortIncompleteMultipartUpload', [['DaysAfterInitiation', i.abortDays.value]]]] : [])]));
      await s3('PUT', bucket, '', 'lifecycle', { body, headers: { 'Content-Type': 'application/xml' } });
      toast('Lifecycle rules saved');
    } catch (err) { formError.textContent = err.message; }
  };
  card.append(el('div', { class: 'table-wrap' }, el('table', { id: 'lifecycle' }, el('thead', {}, el('tr', {},
    ['On', 'Name', 'Key prefix', 'Delete objects after (days)', 'Abort unfinished uploads after (days)', ''].map(h => el('th', { text: h })))), list)),
  formError,
  el('div', { class: 'row' }, el('button', { id: 'lifecycle-add', text: 'Add rule', onclick: () => { row({ enabled: true }); list.lastChild.inputs.prefix.focus(); } }),
    el('button', { class: 'primary', id: 'lifecycle-save', text: 'Save rules', onclick: save })));
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
  const list = el('div', { id: 'cors-rules' });
  const methods = ['GET', 'PUT', 'POST', 'DELETE', 'HEAD'];
  const row = rule => {
    const n = list.children.length + 1;
    const i = {
      origins: el('input', { value: rule.origins || '', placeholder: 'https://example.com', class: 'cors-origins' }),
      methods: methods.map(m => el('input', { type: 'checkbox', checked: (rule.methods || ['GET']).includes(m), value: m, id: uid('m') })),
      headers: el('input', { value: rule.headers || '', placeholder: 'e.g. Content-Type, x-amz-*' }),
      expose: el('input', { value: rule.expose || '', placeholder: 'e.g. ETag' }),
      maxAge: el('input', { type: 'number', min: 0, value: rule.maxAge || '', placeholder: 'seconds' }),
    };
    const methodsId = uid('methods');
    const box = el('fieldset', { class: 'card cors-rule' }, el('legend', { text: 'Rule ' + n }),
      el('div', { class: 'fields' },
        field('Allowed origins', i.origins, { hint: 'Comma-separated; * for any site.' }),
        el('div', { class: 'field', role: 'group', 'aria-labelledby': methodsId }, el('span', { id: methodsId, style: 'font-weight:600;font-size:13px', text: 'Allowed methods' }),
          el('div', { class: 'row', style: 'margin:4px 0' }, i.methods.map(c => el('span', { class: 'row', style: 'margin:0;gap:4px' }, c, el('label', { for: c.id, text: c.value }))))),
        field('Allowed request headers', i.headers, { hint: 'Headers a page may send; * for any.' }),
        field('Exposed response headers', i.expose, { hint: 'Headers a page may read.' }),
        field('Cache preflight for (s)', i.maxAge, { hint: 'Max-Age of the browser\'s preflight.' })),
      el('button', { class: 'danger small', text: 'Remove rule', 'aria-label': 'Remove CORS rule ' + n, onclick: () => box.remove() }));
    box.inputs = i;
    list.append(box);
  };
  rules.forEach(row);
  const split = s => s.split(',').map(x => x.trim()).filter(Boolean);
  const formError = el('p', { class: 'form-error', role: 'alert' });
  const save = async () => {
    formError.textContent = '';
    clearErrors(list);
    const rs = Array.from(list.children).map(b => b.inputs);
    for (const i of rs) {
      if (!split(i.origins.value).length) return setError(i.origins, 'Give at least one origin, such as https://example.com or *.');
      if (!i.methods.some(c => c.checked)) { formError.textContent = 'Each rule allows at least one method.'; i.methods[0].focus(); return; }
    }
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
    } catch (err) { formError.textContent = err.message; }
  };
  card.append(list, formError, el('div', { class: 'row' }, el('button', { id: 'cors-add', text: 'Add rule', onclick: () => { row({}); list.lastChild.inputs.origins.focus(); } }),
    el('button', { class: 'primary', id: 'cors-save', text: 'Save CORS', onclick: save })));
}
