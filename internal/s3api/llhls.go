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
		}
		// Held, the request is no load the background work (vacuum,
		// catch-up) should give way to.
		resume := iolimit.Idle(rq.Context())
		select {
		case <-w.Woken():
			resume()
		case <-deadline.C:
			w.Cancel()
			rq.w.Header().Set("Retry-After", strconv.FormatInt(wholeSeconds(p.TargetDuration), 10))
			return true, errPlaylistNotReached
		case <-rq.Context().Done():
			w.Cancel()
			return true, rq.Context().Err()
		}
	}
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

// HeldPlaylistRequests is the number of playlist requests held now.
func (s *Server) HeldPlaylistRequests() int { return s.playlists.Held() }

// wholeSeconds rounds d up to whole seconds, at least one.
func wholeSeconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

// playlistStored follows a write of rq's key in an LL-HLS bucket, or one
// requests wait for: it reads back the current version (the write's or a
// later one, so the last write's read-back sees the last state), notes
// its date ranges (History) and wakes the requests it reaches.
func (s *Server) playlistStored(rq *request) {
	name := playlistName(rq.bucket, rq.key)
	origin := rq.bucketRec != nil && rq.bucketRec.LLHLS
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
	}
	s.playlists.Wake(name, p)
}
