package s3api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/b3-storage/b3/internal/checksum"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/sse"
)

var (
	opPutObject    = operation{name: "PutObject", perm: permWrite, handle: (*Server).putObject}
	opGetObject    = operation{name: "GetObject", perm: permRead, handle: (*Server).getObject}
	opHeadObject   = operation{name: "HeadObject", perm: permRead, handle: (*Server).headObject}
	opDeleteObject = operation{name: "DeleteObject", perm: permWrite, handle: (*Server).deleteObject}
)

// admitUpload admits an upload body before any of it is read. A body of
// declared length (Content-Length, or x-amz-decoded-content-length for
// aws-chunked bodies) is refused above the maximum object size (400
// EntityTooLarge) or when the disk has no room for it (507
// InsufficientStorage), as S3 does. A body of unknown length (HTTP
// Transfer-Encoding: chunked, as live encoders send it; S3 itself answers
// 411) is admitted and bounded as it streams (boundedBody): the same
// limits then stop it at the first byte past them. The caller reads the
// returned body instead of rq.body and calls release when the request
// ends.
func (s *Server) admitUpload(rq *request) (body io.Reader, release func(), err error) {
	if rq.contentLength < 0 {
		space := &spaceLease{reserve: s.store.Reserve}
		return &boundedBody{src: rq.body, max: s.cfg.MaxObjectSize, tooLarge: errEntityTooLarge, space: space}, space.release, nil
	}
	if rq.contentLength > s.cfg.MaxObjectSize {
		return nil, nil, errEntityTooLarge
	}
	release, err = s.store.Reserve(rq.contentLength)
	return rq.body, release, err
}

// uploadContext is the context of an upload's store call: the request's,
// except that it is not canceled when the client's connection closes. A
// client that hangs up in the middle of its body still fails the upload —
// its next read reports the cut body, and nothing is stored —, while one
// that sent its whole body and closed the connection without waiting for
// the answer, as ffmpeg's HLS muxer does with every segment it PUTs, has
// its complete, verified object stored instead of discarded half way.
func uploadContext(rq *request) context.Context { return context.WithoutCancel(rq.Context()) }

// putObject stores the body in one pass: the s3auth body (signature,
// aws-chunked framing) feeds the checksum reader (MD5 for the ETag, the
// requested checksum, verification at EOF), which objstore streams into
// segment records. Nothing is committed unless the body ended verified.
//
// An upload without a checksum gets the default one (a FULL_OBJECT
// CRC64NVME), computed in the same pass, as S3 does.
func (s *Server) putObject(rq *request) error {
	sealed, err := s.newSealedObject(rq, rq.Header, rq.bucketRec, rq.key)
	if err != nil {
		return err
	}
	body, release, err := s.admitUpload(rq)
	if err != nil {
		return err
	}
	defer release()
	obj, err := s.objectFromHeaders(rq, true)
	if err != nil {
		return err
	}
	lock, err := s.lockOfWrite(rq, rq.Header)
	if err != nil {
		return err
	}
	lock.applyTo(obj)
	precondition, err := putPrecondition(rq.Header)
	if err != nil {
		return err
	}
	exp, err := checksum.ParseHeaders(rq.Header)
	if err != nil {
		return err
	}
	// Parts and playlists of an LL-HLS bucket are read while they arrive
	// (llhls.go); not an encrypted one's: its readers need its key.
	var live *llUpload
	if sealed == nil {
		live = s.beginUpload(rq, obj)
	}
	defer live.end(errUploadAbandoned) // a panic: readers fail, never see an end
	cr := checksum.NewReader(live.tee(body), exp, exp.Stored())
	stream, err := sealed.encrypt(&uploadBody{src: cr, want: rq.contentLength}, 0)
	if err != nil {
		return err
	}
	obj.SSE = sealed.record()
	stored, err := s.store.PutObject(uploadContext(rq), objstore.PutInput{
		Bucket: rq.bucket, Key: rq.key,
		Body:   stream,
		Object: obj,
		Finish: func(o *meta.Object) error {
			if !cr.Done() {
				return errIncompleteBody
			}
			o.ETag = sealed.etag(cr.ETag())
			if c := cr.Stored(); !c.IsZero() {
				o.ChecksumAlgorithm, o.Checksum, o.ChecksumType = c.Algorithm.String(), c.Base64(), checksum.FullObject.String()
			}
			live.ready()
			return nil
		},
		Precondition: precondition,
	})
	live.end(err)
	if err != nil {
		return err
	}
	s.playlistStored(rq)
	s.writeStoredHeaders(rq, stored)
	if sealed != nil {
		writeSSEHeaders(rq.w.Header(), sealed.rec, sealed.customerMD5)
	}
	return writeEmpty(rq, http.StatusOK)
}

// writeStoredHeaders answers a write that stored obj (PutObject, POST):
// its ETag, its checksum and its version.
func (s *Server) writeStoredHeaders(rq *request, obj *meta.Object) {
	h := rq.w.Header()
	h.Set("ETag", quoteETag(obj.ETag))
	writeChecksumHeaders(h, obj.ChecksumAlgorithm, obj.Checksum, obj.ChecksumType)
	s.writeNewVersionHeader(h, obj)
}

// objectFromHeaders builds the attributes of a new object from the PUT
// (or CreateMultipartUpload, CopyObject) request headers, and checks the
// caller may set the ACL and, if taggingApplies (the write stores the
// x-amz-tagging tags), the tags they ask for (authorizeACLAndTags).
func (s *Server) objectFromHeaders(rq *request, taggingApplies bool) (*meta.Object, error) {
	a, err := attrsFromHeader(rq.Header)
	if err != nil {
		return nil, err
	}
	tags, err := parseTagging(rq.Header.Get("x-amz-tagging"))
	if err != nil {
		return nil, err
	}
	if !validStorageClass(rq.Header.Get("x-amz-storage-class")) {
		return nil, errInvalidStorageClass
	}
	grants, owner, err := s.objectACL(rq.Header, rq.bucketRec, rq.accessKey)
	if err != nil {
		return nil, err
	}
	if err := s.authorizeACLAndTags(rq, aclHeadersGiven(rq.Header), taggingApplies && len(tags) > 0); err != nil {
		return nil, err
	}
	obj := &meta.Object{Tags: tags, Owner: owner, Grants: grants}
	a.toObject(obj)
	return obj, nil
}

// objectRange returns the RangeFunc of a GET or HEAD: it evaluates the
// conditional headers, then picks the bytes (Range, or ?partNumber=).
// The chosen range is left in *chosen (ok false: the whole object).
func objectRange(rq *request, chosen *byteRange, partial *bool) objstore.RangeFunc {
	return func(obj *meta.Object) (int64, int64, error) {
		if err := readConditions(rq.Header).check(obj, true); err != nil {
			return 0, 0, err
		}
		if pn := rq.query.Get("partNumber"); pn != "" {
			if rq.Header.Get("Range") != "" {
				return 0, 0, errRangeWithPartNumber
			}
			r, err := partRange(obj, pn)
			if err != nil {
				return 0, 0, err
			}
			*chosen, *partial = r, len(obj.Parts) > 0
			return r.off, r.n, nil
		}
		r, ok, err := parseRange(rq.Header.Get("Range"), obj.Size)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			r = byteRange{off: 0, n: obj.Size, size: obj.Size}
		}
		*chosen, *partial = r, ok
		return r.off, r.n, nil
	}
}

// partRange is the byte range of part n of a multipart object; a plain
// object is its own part 1.
func partRange(obj *meta.Object, value string) (byteRange, error) {
	n, err := strconv.Atoi(value)
	if err != nil || n < 1 || n > meta.MaxPartNumber {
		return byteRange{}, errInvalidPartNumber
	}
	if len(obj.Parts) == 0 {
		if n != 1 {
			return byteRange{}, errPartNumberPastEnd
		}
		return byteRange{off: 0, n: obj.Size, size: obj.Size}, nil
	}
	var off int64
	for _, p := range obj.Parts {
		if p.Number == n {
			return byteRange{off: off, n: p.Size, size: obj.Size}, nil
		}
		off += p.Size
	}
	return byteRange{}, errPartNumberPastEnd
}

// errPartNumberPastEnd is S3's answer to ?partNumber= beyond the last part.
var errPartNumberPastEnd = apiErr("InvalidPartNumber", 416, "The requested partnumber is not satisfiable")

// getObject streams the object (or the requested range) from the store
// to the client; it never holds more than the store's read buffer.
func (s *Server) getObject(rq *request) error {
	var chosen byteRange
	var partial bool
	versionID, err := versionParam(rq)
	if err != nil {
		return err
	}
	if llhlsApplies(rq, versionID) {
		if handled, err := s.getPlaylist(rq); handled {
			return err
		}
	}
	customer, err := parseReadSSE(rq.Header)
	if err != nil {
		return err
	}
	open := func(rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, error) {
		if versionID == "" {
			return s.store.OpenObject(rq.Context(), rq.bucket, rq.key, s.judgedRange(rq, rng))
		}
		return s.store.OpenVersion(rq.Context(), rq.bucket, rq.key, versionID, rng)
	}
	obj, body, so, err := s.openPlain(customer, open, objectRange(rq, &chosen, &partial))
	if err != nil && versionID == "" && partsApply(rq) && missingObject(err) && !rq.query.Has("partNumber") {
		// Perhaps a part a playlist's preload hint names (llhls.go).
		var stored bool
		if stored, err = s.getHintedPart(rq, err); stored {
			obj, body, so, err = s.openPlain(customer, open, objectRange(rq, &chosen, &partial))
		} else if err == nil {
			return nil
		}
	}
	if err != nil {
		return s.objectReadError(rq, obj, s.deleteMarkerError(rq, versionID, err))
	}
	defer body.Close()
	var stream io.Reader = body
	if obj.SSE != nil {
		// Decrypt the first package before the headers go out: ciphertext
		// that does not authenticate there is an error answer, not a 200
		// cut short (later packages can only cut the body).
		buffered := bufio.NewReaderSize(body, int(min(sse.ChunkSize, chosen.n+1)))
		if _, err := buffered.Peek(1); err != nil && err != io.EOF {
			return fmt.Errorf("read %s/%s: %w", rq.bucket, rq.key, err)
		}
		stream = buffered
	} else {
		// Likewise the first record is read, its CRC verified, before the
		// headers: a damaged one answers 500 InternalError naming the
		// object in the log, not a 200 cut short. bufio hands the rest to
		// the store's reader (WriteTo) without another copy.
		buffered := bufio.NewReaderSize(body, 16)
		if _, err := buffered.Peek(1); err != nil && err != io.EOF {
			return fmt.Errorf("read %s/%s: %w", rq.bucket, rq.key, err)
		}
		stream = buffered
	}
	if err := s.writeReadHeaders(rq, obj, chosen, partial); err != nil {
		return err
	}
	writeSSEHeaders(rq.w.Header(), obj.SSE, so.customerMD5)
	status := http.StatusOK
	if partial {
		status = http.StatusPartialContent
	}
	rq.w.WriteHeader(status)
	if _, err := io.Copy(rq.w, stream); err != nil {
		// Headers are out: the client will see a short body. writeError
		// aborts the connection so it cannot mistake it for the object.
		return err
	}
	return nil
}

func (s *Server) headObject(rq *request) error {
	var chosen byteRange
	var partial bool
	versionID, err := versionParam(rq)
	if err != nil {
		return err
	}
	var obj *meta.Object
	if versionID == "" {
		if obj, err = s.store.HeadObject(rq.bucket, rq.key); err == nil {
			err = s.actOnJudged(rq, rq.bucketRec, requestAccess(rq), rq.key, obj)
		}
	} else if obj, err = s.store.HeadVersion(rq.bucket, rq.key, versionID); err == nil && obj.DeleteMarker {
		err = objstore.ErrDeleteMarker
	}
	var so sealedObject
	if err == nil {
		var customer sseSpec
		if customer, err = parseReadSSE(rq.Header); err == nil {
			obj, so, err = s.headPlain(obj, customer)
		}
	}
	if err == nil {
		_, _, err = objectRange(rq, &chosen, &partial)(obj)
	}
	if err != nil {
		return s.objectReadError(rq, obj, s.deleteMarkerError(rq, versionID, err))
	}
	if err := s.writeReadHeaders(rq, obj, chosen, partial); err != nil {
		return err
	}
	writeSSEHeaders(rq.w.Header(), obj.SSE, so.customerMD5)
	if partial {
		rq.w.WriteHeader(http.StatusPartialContent)
	} else {
		rq.w.WriteHeader(http.StatusOK)
	}
	return nil
}

// objectReadError adds the headers S3 sends with a 304 or 416.
func (s *Server) objectReadError(rq *request, obj *meta.Object, err error) error {
	var ae *APIError
	if obj != nil && errors.As(err, &ae) {
		switch ae.Code {
		case errNotModified.Code:
			h := rq.w.Header()
			h.Set("ETag", quoteETag(obj.ETag))
			h.Set("Last-Modified", obj.Modified.UTC().Format(http.TimeFormat))
		case errInvalidRange.Code:
			rq.w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(obj.Size, 10))
		}
	}
	return err
}

func (s *Server) writeReadHeaders(rq *request, obj *meta.Object, r byteRange, partial bool) error {
	h := rq.w.Header()
	writeObjectHeaders(h, obj)
	writeExpiration(h, rq.bucketRec, obj)
	if s.cfg.MediaHeaders {
		writeMediaHeaders(h, obj)
	}
	s.writeVersionHeader(h, rq.bucketRec, obj)
	writeLockHeaders(h, obj)
	// Overrides are validated before any header a failure must not carry.
	if err := applyResponseOverrides(rq); err != nil {
		return err
	}
	h.Set("Content-Length", strconv.FormatInt(r.n, 10))
	if partial {
		h.Set("Content-Range", r.contentRange())
	}
	if rq.Header.Get(checksum.HeaderMode) == "ENABLED" && (!partial || rq.query.Has("partNumber")) {
		if rq.query.Has("partNumber") && len(obj.Parts) > 0 {
			writePartChecksum(h, obj, rq.query.Get("partNumber"))
		} else {
			writeChecksumHeaders(h, obj.ChecksumAlgorithm, obj.Checksum, obj.ChecksumType)
		}
	}
	return nil
}

func writePartChecksum(h http.Header, obj *meta.Object, number string) {
	n, _ := strconv.Atoi(number)
	for _, p := range obj.Parts {
		if p.Number == n {
			writeChecksumHeaders(h, obj.ChecksumAlgorithm, p.Checksum, "")
		}
	}
}

// deleteObject deletes the key (in a versioned bucket: adds a delete
// marker) or, with versionId, one version for good.
func (s *Server) deleteObject(rq *request) error {
	versionID, err := versionParam(rq)
	if err != nil {
		return err
	}
	res, err := s.deleteOne(rq, rq.key, versionID)
	if err != nil {
		return err
	}
	h := rq.w.Header()
	if res.VersionID != "" {
		h.Set("x-amz-version-id", s.versions.encode(res.VersionID))
	}
	if res.DeleteMarker {
		h.Set("x-amz-delete-marker", "true")
	}
	return writeEmpty(rq, http.StatusNoContent)
}

// deleteOne deletes key or one of its versions. A bucket that never had
// versioning takes the plain path (its only version is "null"; any other
// version ID is invalid there, as on S3).
func (s *Server) deleteOne(rq *request, key, versionID string) (objstore.DeleteResult, error) {
	if rq.bucketRec.Versioning == "" && !rq.bucketRec.ObjectLock {
		switch versionID {
		case "", objstore.NullVersionID:
			_, err := s.store.DeleteObject(rq.bucket, key)
			return objstore.DeleteResult{VersionID: versionID}, err
		default:
			return objstore.DeleteResult{}, errInvalidVersionID
		}
	}
	bypass, err := s.bypassGovernance(rq, key)
	if err != nil {
		return objstore.DeleteResult{}, err
	}
	return s.store.DeleteVersioned(rq.bucket, key, versionID, bypass)
}
