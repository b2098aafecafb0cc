package s3api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/b3-storage/b3/internal/hls"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// Low-Latency HLS origin (docs/HLS.md): in a bucket with the setting on
// (meta.Bucket.LLHLS), a GET of a key ending in .m3u8 honours the
// delivery directives of package hls.
//
//	GET ?_HLS_msn=M[&_HLS_part=N]   held until the stored playlist
//	                                reaches (M, N); answered at once if it
//	                                has; 400 if too far ahead; 503 with
//	                                Retry-After after three target
//	                                durations
//	GET ?_HLS_skip=YES              a Playlist Delta Update
//	GET ?_HLS_skip=v2               one that also leaves out old date
//	                                ranges (hls.History, followed from
//	                                the writes this server made)
//
// Order: the request is authorized as any GET (the directives are query
// parameters like any other; presigned URLs are covered in s3auth), then
// registered as a waiter, then the playlist is read (so that a write
// between the read and the wait still wakes it), decided on, and held.
// Every read goes through judgedRange: a held request is authorized
// against the record it finally answers with. A write of the playlist
// (PUT, POST, copy, multipart completion) reads back what it stored and
// wakes the waiters that version reaches (playlistStored); nothing polls.
//
// With versionId, Range or partNumber the directives are ignored: those
// ask for stored bytes, not for the live playlist.

// maxPlaylistBytes bounds the playlist read into memory to decide on it;
// a larger object is served as stored, directives ignored.
const maxPlaylistBytes = 4 << 20

var (
	errPlaylistTooFar = apiErr("InvalidArgument", 400,
		"The requested _HLS_msn or _HLS_part is further ahead of the playlist than a client may ask")
	errPlaylistNotReached = apiErr("ServiceUnavailable", 503,
		"The playlist did not reach the requested _HLS_msn or _HLS_part within three target durations")
	errPlaylistTooLarge = errors.New("playlist too large to decide on")
)

// isPlaylistKey: the keys LL-HLS applies to.
func isPlaylistKey(key string) bool { return strings.HasSuffix(key, ".m3u8") }

// playlistName is the registry name of a playlist.
func playlistName(bucket, key string) string { return bucket + "/" + key }

// llhlsApplies reports whether a GET is answered by getPlaylist.
func llhlsApplies(rq *request, versionID string) bool {
	return rq.bucketRec != nil && rq.bucketRec.LLHLS && versionID == "" && isPlaylistKey(rq.key) &&
		hls.Present(rq.query) && rq.Header.Get("Range") == "" && !rq.query.Has("partNumber")
}

// getPlaylist answers a GET with delivery directives. handled is false
// when the object is too large to be a playlist b3 decides on: the
// caller serves it as stored.
func (s *Server) getPlaylist(rq *request) (handled bool, err error) {
	d, err := hls.ParseDirectives(rq.query)
	if err != nil {
		return true, errInvalidArgument.withMessage("%v", err)
	}
	name := playlistName(rq.bucket, rq.key)
	var deadline *time.Timer
	defer func() {
		if deadline != nil {
			deadline.Stop()
		}
	}()
	for {
		var w *hls.Waiter
		if d.Block {
			w = s.playlists.Wait(name, d.Target)
		}
		obj, data, err := s.readPlaylist(rq)
		if err != nil {
			if w != nil {
				w.Cancel()
			}
			if errors.Is(err, errPlaylistTooLarge) {
				return false, nil
			}
			return true, s.objectReadError(rq, obj, s.deleteMarkerError(rq, "", err))
		}
		p := hls.Parse(data)
		verdict := p.Decide(d)
		if verdict != hls.Hold {
			if w != nil {
				w.Cancel()
			}
			if verdict == hls.TooFar {
				return true, errPlaylistTooFar
			}
			return true, s.writePlaylist(rq, obj, data, p, d)
		}
		if deadline == nil {
			deadline = time.NewTimer(p.HoldLimit())
			s.playlistsHeld.Add(1)
		}
		if err := s.hold(rq, w.Woken(), deadline.C, p.TargetDuration, errPlaylistNotReached); err != nil {
			w.Cancel()
			return true, err
		}
	}
}

// hold waits until woken; at the deadline it answers timedOut with a
// Retry-After of retry; ReleaseHeld and the client's end end it too.
// Held, the request is no load the background work (vacuum, catch-up)
// should give way to.
func (s *Server) hold(rq *request, woken <-chan struct{}, deadline <-chan time.Time, retry time.Duration, timedOut error) error {
	resume := iolimit.Idle(rq.Context())
	select {
	case <-woken:
		resume()
		return nil
	case <-deadline:
		rq.w.Header().Set("Retry-After", strconv.FormatInt(wholeSeconds(retry), 10))
		return timedOut
	case <-s.released():
		return errHeldReleased
	case <-rq.Context().Done():
		return rq.Context().Err()
	}
}

var errHeldReleased = apiErr("SlowDown", 503,
	"This node no longer leads its replica group: the write this request waits for lands on the new leader; retry")

// released is closed by the next ReleaseHeld.
func (s *Server) released() <-chan struct{} {
	s.releaseMu.Lock()
	defer s.releaseMu.Unlock()
	return s.release
}

// ReleaseHeld answers every LL-HLS request held now (blocking playlist
// requests, GETs of hinted parts) with 503 SlowDown: on b3 node, this
// node stopped leading, so the writes they wait for will land elsewhere.
func (s *Server) ReleaseHeld() {
	s.releaseMu.Lock()
	defer s.releaseMu.Unlock()
	close(s.release)
	s.release = make(chan struct{})
}

// readPlaylist reads the current playlist whole, authorized as the GET
// it answers. Its conditional headers are evaluated on the version it
// answers with (writePlaylist), not on one it waits past.
func (s *Server) readPlaylist(rq *request) (*meta.Object, []byte, error) {
	customer, err := parseReadSSE(rq.Header)
	if err != nil {
		return nil, nil, err
	}
	obj, body, _, err := s.openPlain(customer, func(rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error) {
		return s.store.OpenObject(rq.Context(), rq.bucket, rq.key, s.judgedRange(rq, rng))
	}, wholePlaylist)
	if err != nil {
		return obj, nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	return obj, data, err
}

// wholePlaylist reads every byte of a playlist no larger than
// maxPlaylistBytes.
func wholePlaylist(o *meta.Object) (int64, int64, error) {
	if o.Size > maxPlaylistBytes {
		return 0, 0, errPlaylistTooLarge
	}
	return objstore.WholeObject(o)
}

// writePlaylist answers with the playlist, or its delta update. A held
// request's answer may be cached for one target duration (unless the
// uploader chose a Cache-Control): its URL names a position the playlist
// has passed, so a cached copy still answers it. A delta update is not
// the stored object: it carries no ETag or checksum of it.
func (s *Server) writePlaylist(rq *request, obj *meta.Object, data []byte, p *hls.Playlist, d hls.Directives) error {
	if err := readConditions(rq.Header).check(obj, true); err != nil {
		return s.objectReadError(rq, obj, err)
	}
	body, delta := data, false
	switch {
	case d.Skip == hls.SkipSegments || d.Skip == hls.SkipDateRanges && !p.CanSkipDateRanges:
		body, delta = p.Delta()
	case d.Skip == hls.SkipDateRanges:
		// Without a history that covers the Skip Boundary (this node
		// has not followed the playlist that long), the whole playlist.
		if old, removed, ok := s.dateRanges.DateRanges(playlistName(rq.bucket, rq.key), p.CanSkipUntil, s.cfg.Now()); ok {
			body, delta = p.DeltaDateRanges(old, removed)
		}
	}
	if !delta {
		body = data
	}
	if err := s.writeReadHeaders(rq, obj, byteRange{n: int64(len(body)), size: int64(len(body))}, false); err != nil {
		return err
	}
	h := rq.w.Header()
	if delta {
		h.Del("ETag")
		for k := range h {
			if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum-") {
				h.Del(k)
			}
		}
	}
	if d.Block && p.Media && !p.Ended && obj.CacheControl == "" {
		h.Set("Cache-Control", "max-age="+strconv.FormatInt(wholeSeconds(p.TargetDuration), 10))
	}
	rq.w.WriteHeader(http.StatusOK)
	_, err := io.Copy(rq.w, bytes.NewReader(body))
	return err
}

// LLHLSCounts are the Low-Latency HLS origin's counts (the metrics of
// admin.RegisterLLHLS).
type LLHLSCounts struct {
	HeldPlaylists      int    // playlist requests held now
	HeldPlaylistsTotal uint64 // playlist requests held, in all
	HeldParts          int    // GETs of preload-hinted parts held now
	HeldPartsTotal     uint64 // GETs of preload-hinted parts held, in all
	StreamedParts      uint64 // GETs answered from an upload in flight, in all
}

// LLHLSCounts counts the requests held and streamed now.
func (s *Server) LLHLSCounts() LLHLSCounts {
	return LLHLSCounts{HeldPlaylists: s.playlists.Held(), HeldPlaylistsTotal: s.playlistsHeld.Load(),
		HeldParts: s.parts.Held(), HeldPartsTotal: s.partsHeld.Load(), StreamedParts: s.partsStreamed.Load()}
}

// wholeSeconds rounds d up to whole seconds, at least one.
func wholeSeconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

// playlistStored follows a write of rq's key in an LL-HLS bucket, or one
// requests wait for: it reads back the current version (the write's or a
// later one, so the last write's read-back sees the last state), notes
// its date ranges (History) and preload hints (Parts), and wakes the
// requests it reaches. A write of a media key wakes the GETs held for it.
func (s *Server) playlistStored(rq *request) {
	name := playlistName(rq.bucket, rq.key)
	origin := rq.bucketRec != nil && rq.bucketRec.LLHLS
	if partsApply(rq) {
		s.parts.Stored(name)
		return
	}
	if !isPlaylistKey(rq.key) || !origin && !s.playlists.Waiting(name) {
		return
	}
	// An SSE-C playlist cannot be read back here (no key): its waiters
	// time out as for a playlist never written.
	obj, body, _, err := s.openPlain(sseSpec{}, func(rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error) {
		return s.store.OpenObject(uploadContext(rq), rq.bucket, rq.key, rng)
	}, wholePlaylist)
	if err != nil {
		s.log.Debug("playlist written, not read back", "bucket", rq.bucket, "key", rq.key, "err", err)
		return
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		s.log.Warn("playlist written, not read back", "bucket", rq.bucket, "key", rq.key, "size", obj.Size, "err", err)
		return
	}
	p := hls.Parse(data)
	if origin {
		s.dateRanges.Record(name, p, s.cfg.Now())
		s.parts.SetHints(name, hintedNames(rq.bucket, rq.key, p), p.HoldLimit(), s.cfg.Now())
	}
	s.playlists.Wake(name, p)
}

// Preload hints (docs/HLS.md): in an LL-HLS bucket, a GET of a key that
// does not exist but that the last write of a playlist names in its
// EXT-X-PRELOAD-HINT is held (hls.Parts) until an upload of it begins,
// then answered with the upload's body as it arrives, chunked, ending
// with the object; a failed upload cuts the answer (the connection is
// aborted: never a part presented as whole that is not). An upload whose
// body is not kept (too large) is waited for until it is stored, then
// the GET is answered from the store. Not written within three target
// durations: 503 with Retry-After, as a blocking playlist request.

var errPartNotWritten = apiErr("ServiceUnavailable", 503,
	"The part named by the playlist's preload hint was not written within three target durations")

// partsApply reports whether key is a media key of an LL-HLS bucket:
// its uploads are kept for the GETs that read them while in flight.
func partsApply(rq *request) bool {
	return rq.bucketRec != nil && rq.bucketRec.LLHLS && !isPlaylistKey(rq.key)
}

// llUpload follows a PutObject in an LL-HLS bucket; nil (another
// bucket) does nothing. A media key's body is kept for the GETs that read
// it while in flight (hls.Body). A playlist's body is kept (up to
// maxPlaylistBytes) so that its preload hints are known once it is whole
// and verified, before it is stored: a player that reads it at once and
// asks for the hinted part is held, never told 404 (playlistStored
// learns them again from what was stored).
type llUpload struct {
	s        *Server
	rq       *request
	part     *hls.Body
	playlist *bytes.Buffer
}

// beginUpload starts following the PutObject of rq's key, which will
// store obj.
func (s *Server) beginUpload(rq *request, obj *meta.Object) *llUpload {
	switch {
	case partsApply(rq):
		c := *obj // the store fills in obj as it writes
		c.Bucket, c.Key = rq.bucket, rq.key
		return &llUpload{part: s.parts.Begin(playlistName(rq.bucket, rq.key), rq.contentLength, &c)}
	case rq.bucketRec != nil && rq.bucketRec.LLHLS && isPlaylistKey(rq.key) && rq.contentLength <= maxPlaylistBytes:
		return &llUpload{s: s, rq: rq, playlist: &bytes.Buffer{}}
	}
	return nil
}

// tee is body, kept as it is read.
func (u *llUpload) tee(body io.Reader) io.Reader {
	switch {
	case u == nil:
		return body
	case u.part != nil:
		return io.TeeReader(body, u.part)
	}
	return io.TeeReader(body, u)
}

// Write keeps a playlist's bytes, up to maxPlaylistBytes.
func (u *llUpload) Write(p []byte) (int, error) {
	if u.playlist != nil && u.playlist.Len()+len(p) <= maxPlaylistBytes {
		u.playlist.Write(p)
	} else {
		u.playlist = nil // too large to be a playlist b3 decides on
	}
	return len(p), nil
}

// ready runs once the body is whole and verified, before it is stored:
// a playlist's preload hints are learnt.
func (u *llUpload) ready() {
	if u == nil || u.playlist == nil {
		return
	}
	p := hls.Parse(u.playlist.Bytes())
	u.s.parts.SetHints(playlistName(u.rq.bucket, u.rq.key), hintedNames(u.rq.bucket, u.rq.key, p), p.HoldLimit(), u.s.cfg.Now())
}

// errUploadAbandoned ends a body whose upload ended without saying how
// (a panic); after end it does nothing.
var errUploadAbandoned = errors.New("upload abandoned")

// end ends a media key's body once the upload is stored (err nil) or
// failed; only its first call counts.
func (u *llUpload) end(err error) {
	switch {
	case u == nil || u.part == nil:
	case err != nil:
		u.part.Abort()
	default:
		u.part.Finish()
	}
}

// getHintedPart answers a GET of a key not found (missing is that
// error) in an LL-HLS bucket: when a playlist's preload hint names it,
// the GET is held until its upload begins, then reads it (streamPart).
// stored is true when a write stored it meanwhile: the caller reads it
// as any GET.
func (s *Server) getHintedPart(rq *request, missing error) (stored bool, err error) {
	name := playlistName(rq.bucket, rq.key)
	start, end, streamable := liveRange(rq.Header.Get("Range"))
	// Conditions need the stored object's ETag and date: wait for it.
	streamable = streamable && !conditional(rq.Header)
	var deadline *time.Timer
	defer func() {
		if deadline != nil {
			deadline.Stop()
		}
	}()
	for {
		body, w, hint, hinted := s.parts.Wait(name, streamable)
		if body != nil {
			s.partsStreamed.Add(1)
			return false, s.streamPart(rq, body, start, end)
		}
		if _, err := s.store.HeadObject(rq.bucket, rq.key); err == nil || !missingObject(err) {
			w.Cancel()
			return err == nil, err
		}
		if !hinted {
			w.Cancel()
			return false, missing
		}
		if deadline == nil {
			deadline = time.NewTimer(hint.HoldLimit)
			s.partsHeld.Add(1)
		}
		if err := s.hold(rq, w.Woken(), deadline.C, hint.HoldLimit/3, errPartNotWritten); err != nil {
			w.Cancel()
			return false, err
		}
	}
}

// liveRange reads the Range of a GET that an upload in flight can
// answer: none (0, -1) or bytes=N- or bytes=N-M. Others (a suffix
// range, several ranges) need the object's size: streamable is false.
func liveRange(header string) (start, end int64, streamable bool) {
	if header == "" {
		return 0, -1, true
	}
	spec, ok := strings.CutPrefix(strings.TrimSpace(header), "bytes=")
	first, last, ok2 := strings.Cut(spec, "-")
	if !ok || !ok2 || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(strings.TrimSpace(first), 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	end = -1
	if last = strings.TrimSpace(last); last != "" {
		if end, err = strconv.ParseInt(last, 10, 64); err != nil || end < start {
			return 0, 0, false
		}
	}
	return start, end, true
}

// streamPart answers a GET with an upload's body as it arrives (from
// start to end, -1 for its end), chunked: no Content-Length, ETag or
// Last-Modified (the object does not exist yet). Authorized against the
// object the upload will store. The answer ends when the upload is
// stored; if it fails, the connection is aborted after what was sent.
func (s *Server) streamPart(rq *request, body *hls.Body, start, end int64) error {
	obj := body.Meta.(*meta.Object)
	if err := s.actOnJudged(rq, rq.bucketRec, requestAccess(rq), rq.key, obj); err != nil {
		return err
	}
	if body.Size >= 0 && start >= max(body.Size, 1) {
		rq.w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(body.Size, 10))
		return errInvalidRange
	}
	if err := s.writeReadHeaders(rq, obj, byteRange{}, false); err != nil {
		return err
	}
	h := rq.w.Header()
	for _, k := range []string{"Content-Length", "ETag", "Last-Modified"} {
		h.Del(k)
	}
	status := http.StatusOK
	if start > 0 || end >= 0 {
		// The total length is known only from a declared Content-Length.
		last, total := "*", "*"
		if body.Size >= 0 {
			total = strconv.FormatInt(body.Size, 10)
			if end < 0 || end >= body.Size {
				end = body.Size - 1
			}
		}
		if end >= 0 {
			last = strconv.FormatInt(end, 10)
		}
		h.Set("Content-Range", "bytes "+strconv.FormatInt(start, 10)+"-"+last+"/"+total)
		status = http.StatusPartialContent
	}
	rq.w.WriteHeader(status)
	flush := http.NewResponseController(rq.w)
	_ = flush.Flush()
	buf := make([]byte, 32<<10)
	for off := start; end < 0 || off <= end; {
		p := buf
		if end >= 0 {
			p = buf[:min(int64(len(buf)), end-off+1)]
		}
		n, err := body.ReadAt(rq.Context(), p, off)
		if n > 0 {
			if _, werr := rq.w.Write(p[:n]); werr != nil {
				return werr
			}
			_ = flush.Flush()
			off += int64(n)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return partReadError(err) // headers are out: writeError aborts the connection
		}
	}
	// A range ending before the body does: the answer still ends only
	// once the upload is stored.
	return partReadError(body.Wait(rq.Context()))
}

// errPartUploadFailed: the upload a GET was reading failed or its body
// was no longer kept. The headers are out by then: the connection is
// aborted (writeError), this is only what it is logged as (not a server
// fault).
var errPartUploadFailed = apiErr("SlowDown", 503, "The upload of the part being read failed; retry")

func partReadError(err error) error {
	if errors.Is(err, hls.ErrUploadFailed) || errors.Is(err, hls.ErrBodyTooLarge) {
		return errPartUploadFailed
	}
	return err
}

// hintedNames are the names of the parts p's preload hints name (none
// once it has ended or is no media playlist).
func hintedNames(bucket, key string, p *hls.Playlist) []string {
	if !p.Media || p.Ended {
		return nil
	}
	var names []string
	for _, h := range p.Hints {
		if k, ok := hls.ResolveKey(bucket, key, h.URI); ok && !isPlaylistKey(k) {
			names = append(names, playlistName(bucket, k))
		}
	}
	return names
}

// conditional reports whether a GET carries a conditional header.
func conditional(h http.Header) bool {
	for _, k := range []string{"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"} {
		if h.Get(k) != "" {
			return true
		}
	}
	return false
}
