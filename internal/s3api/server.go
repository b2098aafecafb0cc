package s3api

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/b3-storage/b3/internal/authlimit"
	"github.com/b3-storage/b3/internal/checksum"
	"github.com/b3-storage/b3/internal/hls"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/policy"
	"github.com/b3-storage/b3/internal/s3auth"
	"github.com/b3-storage/b3/internal/sse"
)

// User is one principal: an access key, its secret and a display name.
// An Admin (b3's root user) may do anything to every bucket, as the
// owner may.
type User struct {
	Name, AccessKey, SecretKey string
	Admin                      bool
}

// Config configures a Server.
type Config struct {
	// Region the server answers for (GetBucketLocation, SigV4 scope).
	// Default "us-east-1".
	Region string
	// Regions are further region names the server answers for: accepted
	// as a bucket's LocationConstraint (GetBucketLocation then reports it)
	// and in a SigV4 credential scope, so that clients configured for
	// another region work unchanged.
	Regions []string
	// Domains are the base domains of virtual-host-style requests: a
	// request to "photos.s3.example.com" with domain "s3.example.com"
	// addresses bucket "photos". Requests to other hosts are path-style.
	Domains []string
	// Users are the principals. Each bucket belongs to the access key
	// that created it.
	Users []User
	// MinPartSize is the smallest part but the last of a multipart upload
	// (default 5 MiB, as AWS). Tests may lower it.
	MinPartSize int64
	// MaxObjectSize is the largest single PUT, part or POST file (default
	// 5 GiB, as AWS). Tests may lower it.
	MaxObjectSize int64
	// MaxRetention bounds every Object Lock retention from the moment it
	// is set (retain-until dates in lock headers, POST fields and
	// PutObjectRetention, and a bucket's default retention); default
	// DefaultMaxRetention. A COMPLIANCE retention can never be shortened,
	// so this is the operator's guard against versions, and the buckets
	// holding them, kept for ever.
	MaxRetention time.Duration
	// MediaHeaders serves objects stored without a Content-Type (or with a
	// generic one) with the type of their key's extension (.m3u8, .ts,
	// .m4s, ...), and playlists without a Cache-Control with "no-cache":
	// see media.go. Off, objects are served with what was stored.
	MediaHeaders bool
	// Now returns the current time (default time.Now); the verifier uses it
	// for request skew and presign expiry.
	Now    func() time.Time
	Logger *slog.Logger
	// Keys are the master keys of SSE-S3 and SSE-KMS (package sse); nil
	// refuses those with NotImplemented (SSE-C needs none).
	Keys *sse.KeyRing
	// Directory, if set, is the user set in place of Users, and may change
	// while the server runs.
	Directory *UserDirectory
	// Observe, if set, is called after every request (metrics, access log).
	Observe func(RequestInfo)
	// VersionKey is the key of the version ids clients see (versionids.go):
	// the same for every server of a store, kept as long as the store. A
	// Server without one makes a random key: its ids last as long as it.
	VersionKey []byte
	// AuthLimiter, if set, backs off addresses and access keys that fail
	// to authenticate (authlimit.go): 503 SlowDown with Retry-After.
	AuthLimiter *authlimit.Limiter
	// NewBuckets are the access settings CreateBucket gives a bucket when
	// the request does not choose them. The zero value is AWS's defaults.
	NewBuckets BucketDefaults
}

// BucketDefaults are the access settings of new buckets. AWS's, since
// April 2023, are the zero value: ACLs disabled (BucketOwnerEnforced) and
// all four Block Public Access settings on. An operator whose older
// applications rely on object ACLs or public policies may choose the
// settings AWS gave before (docs/OPERATIONS.md, legacy-compatible mode).
type BucketDefaults struct {
	// ObjectOwnership is BucketOwnerEnforced ("" too),
	// BucketOwnerPreferred or ObjectWriter. A request's
	// x-amz-object-ownership header still chooses for its bucket.
	ObjectOwnership string
	// NoPublicAccessBlock creates buckets without a Block Public Access
	// configuration, so that public ACLs and policies take effect, instead
	// of with all four settings on.
	NoPublicAccessBlock bool
}

// Validate reports a default ownership that is none of the three.
func (d BucketDefaults) Validate() error {
	if d.ObjectOwnership != "" && !validOwnership(d.ObjectOwnership) {
		return fmt.Errorf("object ownership %q: want %s, %s or %s", d.ObjectOwnership,
			meta.OwnershipBucketOwnerEnforced, meta.OwnershipBucketOwnerPreferred, meta.OwnershipObjectWriter)
	}
	return nil
}

// Server is the S3 REST API over a Backend (an objstore.Store). It is an
// http.Handler, safe for concurrent use; it holds no lock across requests.
type Server struct {
	store    Backend
	cfg      Config
	log      *slog.Logger
	verifier *s3auth.Verifier
	users    *UserDirectory

	idPrefix  string
	idCounter atomic.Uint64

	// playlists holds the LL-HLS requests waiting for a playlist write
	// (llhls.go).
	playlists *hls.Registry
	// dateRanges follows the date ranges of LL-HLS playlists for delta
	// updates that skip them (_HLS_skip=v2).
	dateRanges *hls.History
	// parts holds the GETs of preload-hinted parts and the uploads they
	// read while in flight; partsHeld and partsStreamed count them
	// (llhls.go).
	parts                                   *hls.Parts
	playlistsHeld, partsHeld, partsStreamed atomic.Uint64
	// release is closed (and replaced) by ReleaseHeld.
	releaseMu sync.Mutex
	release   chan struct{}

	policies docCache[*policy.Policy]
	cors     docCache[*corsConfiguration]
	versions *versionCodec

	// rotationMu guards rotation, the key rotation job's status
	// (rotate.go).
	rotationMu sync.Mutex
	rotation   sse.RotationStatus
}

// New returns a Server answering for store.
func New(store Backend, cfg Config) *Server {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.MinPartSize <= 0 {
		cfg.MinPartSize = defaultMinPart
	}
	if cfg.MaxObjectSize <= 0 {
		cfg.MaxObjectSize = maxPutSize
	}
	if cfg.MaxRetention <= 0 {
		cfg.MaxRetention = DefaultMaxRetention
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{store: store, cfg: cfg, log: cfg.Logger, users: cfg.Directory, versions: newVersionCodec(cfg.VersionKey),
		playlists: hls.NewRegistry(), dateRanges: hls.NewHistory(), parts: hls.NewParts(), release: make(chan struct{})}
	if s.users == nil {
		s.users = NewUserDirectory(cfg.Users)
	}
	s.verifier = &s3auth.Verifier{Credentials: s.users, Region: cfg.Region, Regions: cfg.Regions, Domains: cfg.Domains, Now: cfg.Now}
	var seed [4]byte
	_, _ = rand.Read(seed[:])
	s.idPrefix = strings.ToUpper(hex.EncodeToString(seed[:]))
	return s
}

// request is the state of one S3 request as it passes routing,
// authentication and authorization on its way to a handler.
type request struct {
	*http.Request
	w      *responseWriter
	id     string
	bucket string // "" for the service (ListBuckets)
	key    string // "" for bucket operations
	query  url.Values
	op     *operation

	// Set by authentication.
	accessKey     string // "" when anonymous
	admin         bool   // the caller is an administrator (User.Admin)
	body          s3auth.Body
	contentLength int64 // decoded payload length, -1 if unknown

	// Set by authorization when the operation addresses a bucket.
	bucketRec *meta.Bucket
	// objRec is the object authorization read, if it read one (object
	// ACLs, s3:ExistingObjectTag): handlers may reuse it as a hint.
	objRec *meta.Object
	// judged is the current record a decision read (found or not): what
	// the handler must act on, or decide again for (actOnJudged).
	judged *judgedRecord
	// version is the engine's id of the version the versionId parameter
	// names ("" for none), set by route for object operations.
	version string
	// condHeader, when set, is what the condition keys of the write are
	// read from instead of the request's header (writeHeader): a POST
	// form's fields, or a Retention or LegalHold body as lock headers.
	condHeader http.Header
}

// responseWriter remembers whether the header was written, so that an
// error after the first byte of a streamed body is only logged.
type responseWriter struct {
	http.ResponseWriter
	status int
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ReadFrom keeps the sendfile/splice path of the underlying writer.
func (w *responseWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(w.ResponseWriter, r)
}

func (s *Server) newRequestID() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], s.idCounter.Add(1))
	return s.idPrefix + strings.ToUpper(hex.EncodeToString(b[:]))
}

// ServeHTTP routes, authenticates and authorizes the request, then runs
// its operation. Every failure, a panic included, ends as S3 error XML.
func (s *Server) ServeHTTP(hw http.ResponseWriter, r *http.Request) {
	var counted *countingWriter
	var body *countingBody
	if s.cfg.Observe != nil {
		counted = &countingWriter{ResponseWriter: hw}
		hw = counted
		if r.ContentLength < 0 && r.Body != nil {
			body = &countingBody{ReadCloser: r.Body}
			r.Body = body
		}
	}
	w := &responseWriter{ResponseWriter: hw}
	rq := &request{Request: r, w: w, id: s.newRequestID(), contentLength: r.ContentLength}
	if counted != nil {
		defer s.observe(rq, counted, body, time.Now())
	}
	h := w.Header()
	h.Set("x-amz-request-id", rq.id)
	h.Set("x-amz-id-2", base64.StdEncoding.EncodeToString([]byte(rq.id)))
	h.Set("Server", "b3")
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving request", "request_id", rq.id, "method", r.Method, "url", redactedURL(r.URL), "panic", v, "stack", string(debug.Stack()))
			s.writeError(rq, fmt.Errorf("panic: %v", v))
		}
	}()
	if err := s.serve(rq); err != nil {
		s.writeError(rq, err)
	}
}

func (s *Server) serve(rq *request) error {
	if err := s.route(rq); err != nil {
		return err
	}
	if rq.op.preAuth {
		// CORS preflight and browser form uploads carry no Authorization
		// header: they authenticate (or not) themselves.
		return rq.op.handle(s, rq)
	}
	if err := s.authenticateLimited(rq); err != nil {
		return err
	}
	if err := s.authorize(rq); err != nil {
		return err
	}
	return rq.op.handle(s, rq)
}

// writeError renders err as S3 error XML, unless the response has already
// started (a failure mid-stream can only be logged; the connection is then
// closed by aborting the handler so the client sees a truncated body).
func (s *Server) writeError(rq *request, err error) {
	e, known := toAPIError(err)
	if !known {
		s.log.Error("internal error", "request_id", rq.id, "method", rq.Method, "url", redactedURL(rq.URL), "err", err)
	}
	if rq.w.status != 0 {
		if known {
			s.log.Debug("error after response started", "request_id", rq.id, "err", err)
		}
		panic(http.ErrAbortHandler)
	}
	status := e.HTTPStatus()
	if status == http.StatusNotModified {
		rq.w.WriteHeader(status)
		return
	}
	doc := errorResponse{
		Code:      e.S3Code(),
		Message:   messageOf(e),
		Resource:  rq.URL.Path,
		RequestID: rq.id,
		HostID:    rq.w.Header().Get("x-amz-id-2"),
	}
	var authErr *s3auth.Error
	if errors.As(err, &authErr) {
		doc.Region = authErr.Region
		if authErr.HeadersNotSigned != "" {
			doc.Extra = append(doc.Extra, xmlElement{XMLName: xmlName("HeadersNotSigned"), Value: authErr.HeadersNotSigned})
		}
	}
	var ae *APIError
	if errors.As(err, &ae) {
		doc.Extra = append(doc.Extra, ae.Extra...)
	}
	switch doc.Code {
	case "NoSuchBucket", "BucketNotEmpty", "BucketAlreadyExists", "BucketAlreadyOwnedByYou":
		if rq.bucket != "" {
			doc.Extra = append(doc.Extra, xmlElement{XMLName: xml.Name{Local: "BucketName"}, Value: rq.bucket})
		}
	case "NoSuchKey":
		doc.Extra = append(doc.Extra, xmlElement{XMLName: xml.Name{Local: "Key"}, Value: rq.key})
	case "NoSuchUpload":
		doc.Extra = append(doc.Extra, xmlElement{XMLName: xml.Name{Local: "UploadId"}, Value: rq.query.Get("uploadId")})
	}
	h := rq.w.Header()
	// Drop headers a handler may have set for a success that did not
	// happen; keep the request id and CORS headers.
	for _, k := range []string{"Etag", "Last-Modified", "Accept-Ranges", "Content-Disposition", "Content-Encoding", "Content-Language", "Cache-Control", "Expires", "x-amz-expiration"} {
		h.Del(k)
	}
	if rq.Method == http.MethodHead {
		// A HEAD response has no body; the code travels in the status
		// (and, as a courtesy, a header).
		h.Set("x-amz-error-code", doc.Code)
		rq.w.WriteHeader(status)
		return
	}
	body := marshalErrorDoc(doc)
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", fmt.Sprint(len(xml.Header)+len(body)))
	rq.w.WriteHeader(status)
	_, _ = io.WriteString(rq.w, xml.Header)
	_, _ = rq.w.Write(body)
}

// marshalErrorDoc renders the error document with quotes and apostrophes
// as themselves, as S3 does: encoding/xml writes them as &#34; and &#39;,
// which clients that show the raw message (browsers answering a POST form,
// regex-based parsers) print as is. The document has no attributes, so
// quotes need no escaping anywhere in it.
func marshalErrorDoc(doc errorResponse) []byte {
	body, _ := xml.Marshal(doc)
	body = bytes.ReplaceAll(body, []byte("&#34;"), []byte(`"`))
	return bytes.ReplaceAll(body, []byte("&#39;"), []byte("'"))
}

func messageOf(e s3Error) string {
	switch v := e.(type) {
	case *APIError:
		return v.Message
	case *s3auth.Error:
		return v.Message
	case *checksum.Error:
		return v.Message
	}
	return e.Error()
}

// writeXML renders a success document with status 200.
func writeXML(rq *request, v any) error {
	return writeXMLStatus(rq, http.StatusOK, v)
}

func writeXMLStatus(rq *request, status int, v any) error {
	body, err := xml.Marshal(v)
	if err != nil {
		return fmt.Errorf("render %T: %w", v, err)
	}
	h := rq.w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", fmt.Sprint(len(xml.Header)+len(body)))
	rq.w.WriteHeader(status)
	if rq.Method == http.MethodHead {
		return nil
	}
	_, _ = io.WriteString(rq.w, xml.Header)
	_, _ = rq.w.Write(body)
	return nil
}

// writeEmpty answers with a status and no body.
func writeEmpty(rq *request, status int) error {
	rq.w.Header().Set("Content-Length", "0")
	rq.w.WriteHeader(status)
	return nil
}
