// Uploads: one PUT for small files, multipart (8 MiB parts) for larger
// ones, each with a progress bar and Cancel; a failed part stops the
// upload, and Resume sends only the parts not yet stored.
'use strict';

const PART_SIZE = 8 * 1024 * 1024;
B3.uploads = { active: 0 };

// uploadPanel is the list of uploads. It outlives page renders (uploads
// go on while the user browses elsewhere); the object browser shows it
// under its toolbar.
function uploadPanel() {
  if (!B3.uploadPanel) {
    B3.uploadPanel = el('div', { id: 'uploads', class: 'card', style: 'display:none' },
      el('div', { class: 'row' }, el('strong', { text: 'Uploads', style: 'flex:1' }),
        el('button', { text: 'Clear finished', id: 'clear-uploads', onclick: clearFinishedUploads })));
  }
  if (!B3.uploadPanel.isConnected) {
    const drop = document.getElementById('drop'), main = document.getElementById('main');
    if (drop) drop.after(B3.uploadPanel); else if (main) main.prepend(B3.uploadPanel);
  }
  B3.uploadPanel.style.display = '';
  return B3.uploadPanel;
}

function clearFinishedUploads() {
  const p = B3.uploadPanel;
  if (!p) return;
  p.querySelectorAll('.upload.finished').forEach(n => n.remove());
  if (!p.querySelector('.upload')) p.style.display = 'none';
}

function uploadFiles(bucket, prefix, files) {
  for (const { file, path } of files) new UploadJob(bucket, prefix + path, file).start();
}

// xhrSend runs one request with upload progress; resolves to the XHR.
function xhrSend(job, method, url, body, headers) {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    job.xhr = x;
    x.open(method, url);
    x.setRequestHeader('X-CSRF-Token', B3.session.csrf);
    for (const [k, v] of Object.entries(headers || {})) x.setRequestHeader(k, v);
    x.upload.onprogress = e => job.progress(e.loaded);
    x.onload = () => {
      job.xhr = null;
      if (x.status >= 200 && x.status < 300) return resolve(x);
      let code = '';
      try { code = xtext(parseXML(x.responseText), 'Code'); } catch (e) { /* not XML */ }
      reject(new S3Error(x.status, code, x.responseText.slice(0, 200)));
    };
    x.onerror = () => { job.xhr = null; reject(new Error('network error')); };
    x.onabort = () => { job.xhr = null; reject(new Error('cancelled')); };
    x.send(body);
  });
}

class UploadJob {
  constructor(bucket, key, file) {
    Object.assign(this, { bucket, key, file, uploadId: '', etags: [], done: 0, state: 'waiting' });
    this.bar = el('div', { style: 'width:0%' });
    this.status = el('span', { class: 'muted' });
    this.resumeBtn = el('button', { text: 'Resume', class: 'resume', style: 'display:none', onclick: () => this.start() });
    this.cancelBtn = el('button', { text: 'Cancel', class: 'cancel-upload', onclick: () => this.cancel() });
    this.row = el('div', { class: 'upload row', 'data-key': key },
      el('span', { class: 'key', text: key, style: 'max-width:220px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap' }),
      el('div', { class: 'progress' }, this.bar), this.status, this.resumeBtn, this.cancelBtn);
    uploadPanel().append(this.row);
  }

  progress(loadedInRequest) {
    const total = this.file.size || 1;
    const pct = Math.min(100, 100 * (this.done + loadedInRequest) / total);
    this.bar.style.width = pct.toFixed(1) + '%';
    this.status.textContent = fmtBytes(this.done + loadedInRequest) + ' / ' + fmtBytes(this.file.size);
  }

  async start() {
    this.state = 'running';
    this.resumeBtn.style.display = 'none';
    B3.uploads.active++;
    try {
      const type = this.file.type || 'application/octet-stream';
      if (this.file.size <= PART_SIZE) {
        await xhrSend(this, 'PUT', s3url(this.bucket, this.key), this.file, { 'Content-Type': type });
      } else {
        if (!this.uploadId) {
          const x = await xhrSend(this, 'POST', s3url(this.bucket, this.key, 'uploads'), null, { 'Content-Type': type });
          this.uploadId = xtext(parseXML(x.responseText), 'UploadId');
        }
        const parts = Math.ceil(this.file.size / PART_SIZE);
        this.done = 0;
        for (let n = 1; n <= parts; n++) {
          const from = (n - 1) * PART_SIZE, to = Math.min(this.file.size, n * PART_SIZE);
          if (!this.etags[n]) {
            const x = await xhrSend(this, 'PUT', s3url(this.bucket, this.key, { partNumber: n, uploadId: this.uploadId }), this.file.slice(from, to));
            this.etags[n] = x.getResponseHeader('ETag');
          }
          this.done = to;
          this.progress(0);
        }
        const body = xmlDoc('CompleteMultipartUpload', this.etags.map((etag, n) => etag ? ['Part', [['PartNumber', n], ['ETag', etag]]] : null).filter(Boolean));
        await xhrSend(this, 'POST', s3url(this.bucket, this.key, { uploadId: this.uploadId }), body, { 'Content-Type': 'application/xml' });
      }
      this.done = this.file.size;
      this.progress(0);
      this.finish('done', 'ok');
    } catch (err) {
      if (this.state === 'cancelled') return;
      this.state = 'failed';
      this.status.textContent = 'failed: ' + err.message;
      this.status.className = 'error';
      this.resumeBtn.style.display = '';
    } finally {
      B3.uploads.active--;
      if (!B3.uploads.active) {
        if (route().page === 'b') render();
        // Finished rows go after a while; failed ones stay for Resume.
        setTimeout(() => { if (!B3.uploads.active) clearFinishedUploads(); }, 8000);
      }
    }
  }

  finish(text, cls) {
    this.state = text;
    this.status.textContent = text === 'done' ? 'done, ' + fmtBytes(this.file.size) : text;
    this.status.className = cls;
    this.cancelBtn.style.display = 'none';
    this.resumeBtn.style.display = 'none';
    this.row.classList.add('finished');
  }

  async cancel() {
    this.state = 'cancelled';
    if (this.xhr) this.xhr.abort();
    if (this.uploadId) {
      try { await s3('DELETE', this.bucket, this.key, { uploadId: this.uploadId }); } catch (err) { /* already gone */ }
    }
    this.finish('cancelled', 'muted');
  }
}
