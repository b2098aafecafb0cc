package s3api

import (
	"crypto/md5"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/sse"
)

// Server-side encryption (package sse holds the formats and the keys).
//
// Bodies are encrypted here, before they reach the store: objstore, its
// cache, vacuum and a cluster's staging, replication and Raft log see the
// ciphertext only. A record keeps the stored (encrypted) sizes and its
// sealed data key (meta.Encryption); what a client sees (Content-Length,
// listings, ranges) is the plaintext, computed from the stored sizes
// (plainView). A read decrypts only the packages its range touches.

// Request headers of server-side encryption.
const (
	hdrSSE           = "x-amz-server-side-encryption"
	hdrSSEKMSKeyID   = "x-amz-server-side-encryption-aws-kms-key-id"
	hdrSSECAlgorithm = "x-amz-server-side-encryption-customer-algorithm"
	hdrSSECKey       = "x-amz-server-side-encryption-customer-key"
	hdrSSECKeyMD5    = "x-amz-server-side-encryption-customer-key-MD5"
	// copySourcePrefix replaces "x-amz-" in the SSE-C headers of a copy's
	// source.
	copySourcePrefix = "x-amz-copy-source-"
)

var (
	errSSECAlgorithm    = apiErr("InvalidEncryptionAlgorithmError", 400, "The encryption request you specified is not valid. The valid value is AES256.")
	errSSECRequired     = errInvalidRequest.withMessage("The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.")
	errSSENotApplicable = errInvalidRequest.withMessage("The encryption parameters are not applicable to this object.")
	errSSECWrongKey     = apiErr("AccessDenied", 403, "The provided encryption key does not match the key the object was encrypted with.")
	errSSEMethod        = errInvalidArgument.withMessage("The encryption method specified is not supported")
	errSSEKMSKeyID      = errInvalidArgument.withMessage("Server Side Encryption with AWS KMS managed key requires HTTP header x-amz-server-side-encryption : aws:kms")
	errSSEBoth          = errInvalidArgument.withMessage("Server Side Encryption with Customer provided key is incompatible with the encryption method specified")
	errKMSNotFound      = apiErr("KMS.NotFoundException", 400, "The KMS key named does not exist on this server.")
	errNoMasterKeys     = errNotImplemented.withMessage("Server-side encryption with server-managed keys (SSE-S3, SSE-KMS) needs master keys: start the server with --kms-keys or --kms-keys-file (docs/ENCRYPTION.md).")
	errMasterKeyMissing = apiErr("InternalError", 500, "The master key that sealed this object's data key is not in this server's key ring.")
)

// sseSpec is the encryption a request names: none, SSE-S3, SSE-KMS (with
// a key name, "" for the default key) or SSE-C (with the customer's key,
// checked against its MD5).
type sseSpec struct {
	algorithm   string // "" or a meta.SSEAlgorithm*
	keyID       string
	customer    sse.Key
	customerMD5 string // base64, as sent
}

// parseCustomerKey reads the SSE-C headers (prefix "" for the object's,
// copySourcePrefix for a copy source's), with the checks and errors of S3.
func parseCustomerKey(h http.Header, prefix string) (sseSpec, error) {
	get := func(name string) string {
		if prefix != "" {
			name = prefix + strings.TrimPrefix(name, "x-amz-")
		}
		return h.Get(name)
	}
	alg, key, sum := get(hdrSSECAlgorithm), get(hdrSSECKey), get(hdrSSECKeyMD5)
	if alg == "" && key == "" && sum == "" {
		return sseSpec{}, nil
	}
	const must = "Requests specifying Server Side Encryption with Customer provided keys must provide "
	switch {
	case alg == "":
		return sseSpec{}, errInvalidArgument.withMessage(must + "a valid encryption algorithm.")
	case alg != "AES256":
		return sseSpec{}, errSSECAlgorithm
	case key == "":
		return sseSpec{}, errInvalidArgument.withMessage(must + "an appropriate secret key.")
	}
	raw, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(raw) != sse.KeySize {
		return sseSpec{}, errInvalidArgument.withMessage("The secret key was invalid for the specified algorithm.")
	}
	if sum == "" {
		return sseSpec{}, errInvalidArgument.withMessage(must + "the client calculated MD5 of the secret key.")
	}
	want := md5.Sum(raw)
	given, err := base64.StdEncoding.DecodeString(sum)
	if err != nil || subtle.ConstantTimeCompare(given, want[:]) != 1 {
		return sseSpec{}, errInvalidArgument.withMessage("The calculated MD5 hash of the key did not match the hash that was provided.")
	}
	spec := sseSpec{algorithm: meta.SSEAlgorithmCustomer, customerMD5: sum}
	copy(spec.customer[:], raw)
	return spec, nil
}

// parseReadSSE reads the SSE-C key of a read (GET, HEAD); the headers of
// SSE-S3 and SSE-KMS belong to writes, and a read that sends them is
// refused, as S3 does.
func parseReadSSE(h http.Header) (sseSpec, error) {
	if h.Get(hdrSSE) != "" || h.Get(hdrSSEKMSKeyID) != "" {
		return sseSpec{}, errInvalidArgument.withMessage("The x-amz-server-side-encryption headers apply to writes; a read of an encrypted object names only an SSE-C key.")
	}
	return parseCustomerKey(h, "")
}

// parseWriteSSE reads the encryption a write asks for.
func parseWriteSSE(h http.Header) (sseSpec, error) {
	customer, err := parseCustomerKey(h, "")
	if err != nil {
		return sseSpec{}, err
	}
	method, keyID := h.Get(hdrSSE), h.Get(hdrSSEKMSKeyID)
	if customer.algorithm != "" {
		if method != "" || keyID != "" {
			return sseSpec{}, errSSEBoth
		}
		return customer, nil
	}
	switch method {
	case "":
		if keyID != "" {
			return sseSpec{}, errSSEKMSKeyID
		}
		return sseSpec{}, nil
	case meta.SSEAlgorithmS3:
		if keyID != "" {
			return sseSpec{}, errSSEKMSKeyID
		}
	case meta.SSEAlgorithmKMS:
	default:
		return sseSpec{}, errSSEMethod
	}
	return sseSpec{algorithm: method, keyID: keyID}, nil
}

// sealedObject is what a write encrypts with: the record's Encryption
// and the data key it seals.
type sealedObject struct {
	rec         *meta.Encryption
	dataKey     sse.Key
	customerMD5 string
}

// sealContext binds a sealed data key to its object.
func sealContext(bucket, key string) string { return bucket + "/" + key }

// newSealedObject returns the encryption of a new object (or upload) of
// bucket/key: what the request's headers ask for, else the bucket's
// default encryption; nil for a plain write.
func (s *Server) newSealedObject(rq *request, h http.Header, bucketRec *meta.Bucket, key string) (*sealedObject, error) {
	spec, err := parseWriteSSE(h)
	if err != nil {
		return nil, err
	}
	if spec.algorithm == "" && bucketRec != nil {
		if spec, err = bucketDefaultSSE(bucketRec); err != nil {
			return nil, err
		}
	}
	if spec.algorithm == "" {
		return nil, nil
	}
	return s.seal(spec, bucketRec.Name, key)
}

// seal makes a fresh data key and seals it as spec says.
func (s *Server) seal(spec sseSpec, bucket, key string) (*sealedObject, error) {
	dk, err := sse.NewDataKey()
	if err != nil {
		return nil, err
	}
	kek, keyID := spec.customer, ""
	if spec.algorithm != meta.SSEAlgorithmCustomer {
		if kek, keyID, err = s.masterKey(spec); err != nil {
			return nil, err
		}
	}
	sealed, err := sse.Seal(kek, dk, sealContext(bucket, key))
	if err != nil {
		return nil, err
	}
	return &sealedObject{rec: &meta.Encryption{Algorithm: spec.algorithm, KeyID: keyID, SealedKey: sealed},
		dataKey: dk, customerMD5: spec.customerMD5}, nil
}

// masterKey is the key ring's key for an SSE-S3 or SSE-KMS write.
func (s *Server) masterKey(spec sseSpec) (sse.Key, string, error) {
	if s.cfg.Keys == nil {
		return sse.Key{}, "", errNoMasterKeys
	}
	name := ""
	if spec.algorithm == meta.SSEAlgorithmKMS {
		name = spec.keyID
	}
	k, name, err := s.cfg.Keys.Key(name)
	if errors.Is(err, sse.ErrNoKey) {
		return k, name, errKMSNotFound.withMessage("Invalid keyId %s", name)
	}
	return k, name, err
}

// encrypt wraps body (plaintext) into the stored bytes of stream part.
func (so *sealedObject) encrypt(body io.Reader, part int) (io.Reader, error) {
	if so == nil {
		return body, nil
	}
	return sse.EncryptReader(body, so.dataKey.PartKey(part))
}

// etag is the ETag of a body whose plaintext MD5 is md5hex: that MD5 for
// plain and SSE-S3 writes, as S3 does; for SSE-C and SSE-KMS a digest
// that does not disclose the plaintext's MD5 (S3's are not its MD5
// either), stable for the object's data key.
func (so *sealedObject) etag(md5hex string) string {
	if so == nil || so.rec.Algorithm == meta.SSEAlgorithmS3 {
		return md5hex
	}
	raw, err := hex.DecodeString(md5hex)
	if err != nil {
		return md5hex
	}
	sum := md5.Sum(append(append([]byte(nil), so.dataKey[:]...), raw...))
	return hex.EncodeToString(sum[:])
}

// record is the Encryption to store (nil for a plain write).
func (so *sealedObject) record() *meta.Encryption {
	if so == nil {
		return nil
	}
	return so.rec
}

// openDataKey opens the data key of a record encrypted as rec, for
// bucket/key, with the SSE-C key the request gave (customer), following
// S3's rules: an SSE-C object needs its key (400 without, 403 with
// another); any other object refuses SSE-C headers.
func (s *Server) openDataKey(rec *meta.Encryption, bucket, key string, customer sseSpec) (sealedObject, error) {
	so := sealedObject{rec: rec, customerMD5: customer.customerMD5}
	if rec == nil {
		if customer.algorithm != "" {
			return so, errSSENotApplicable
		}
		return so, nil
	}
	var err error
	if rec.Algorithm == meta.SSEAlgorithmCustomer {
		if customer.algorithm == "" {
			return so, errSSECRequired
		}
		if so.dataKey, err = sse.Unseal(customer.customer, rec.SealedKey, sealContext(bucket, key)); err != nil {
			return so, errSSECWrongKey
		}
		return so, nil
	}
	if customer.algorithm != "" {
		return so, errSSENotApplicable
	}
	if s.cfg.Keys == nil {
		return so, errMasterKeyMissing
	}
	kek, _, err := s.cfg.Keys.Key(rec.KeyID)
	if err != nil {
		return so, errMasterKeyMissing.withMessage("The master key %q that sealed this object's data key is not in this server's key ring.", rec.KeyID)
	}
	if so.dataKey, err = sse.Unseal(kek, rec.SealedKey, sealContext(bucket, key)); err != nil {
		return so, errMasterKeyMissing.withMessage("The master key %q does not open this object's data key.", rec.KeyID)
	}
	return so, nil
}

// plainView returns obj as a client sees it (a copy, with plaintext sizes,
// the parts' too) and the layout of its streams; obj itself for a plain
// object.
func plainView(obj *meta.Object) (*meta.Object, sse.Layout, error) {
	if obj == nil || obj.SSE == nil {
		return obj, sse.Layout{}, nil
	}
	var streams []sse.Stream
	if len(obj.Parts) == 0 {
		streams = []sse.Stream{{Part: 0, Stored: obj.Size}}
	}
	for _, p := range obj.Parts {
		streams = append(streams, sse.Stream{Part: p.Number, Stored: p.Size})
	}
	layout, err := sse.NewLayout(streams)
	if err != nil {
		return obj, layout, err
	}
	view := *obj
	view.Size = layout.Size()
	if len(obj.Parts) > 0 {
		view.Parts = make([]meta.PartSummary, len(obj.Parts))
		for i, p := range obj.Parts {
			p.Size = plainSize(p.Size)
			view.Parts[i] = p
		}
	}
	return &view, layout, nil
}

// plainSize is the plaintext size of one stream stored in n bytes (n
// itself if no stream is that long: a damaged record shows its size).
func plainSize(n int64) int64 {
	p, err := sse.DecryptedSize(n)
	if err != nil {
		return n
	}
	return p
}

// viewSize is the size a listing shows of obj.
func viewSize(obj *meta.Object) int64 {
	if view, _, err := plainView(obj); err == nil {
		return view.Size
	}
	return obj.Size
}

// openPlain runs open (a store read) so that rng sees the object as a
// client does (plainView) and the body returned is the plaintext: it
// checks the request's SSE-C key (customer) against the object, reads
// only the packages holding the range and decrypts them. The record
// returned, also with an error (for a 304's or 416's headers), is the
// plain view.
func (s *Server) openPlain(customer sseSpec, open func(objstore.RangeFunc) (*meta.Object, io.ReadCloser, error), rng objstore.RangeFunc) (*meta.Object, io.ReadCloser, sealedObject, error) {
	var plan *sse.Plan
	var so sealedObject
	obj, body, err := open(func(obj *meta.Object) (int64, int64, error) {
		plan = nil
		var err error
		if so, err = s.openDataKey(obj.SSE, obj.Bucket, obj.Key, customer); err != nil {
			return 0, 0, err
		}
		if obj.SSE == nil {
			return rng(obj)
		}
		view, layout, err := plainView(obj)
		if err != nil {
			return 0, 0, err
		}
		off, n, err := rng(view)
		if err != nil {
			return 0, 0, err
		}
		p := layout.Range(so.dataKey, off, n)
		plan = &p
		return p.StoredOff, p.Stored, nil
	})
	if view, _, verr := plainView(obj); verr == nil {
		obj = view
	}
	if err != nil || plan == nil {
		return obj, body, so, err
	}
	return obj, decryptedBody{Reader: plan.Decrypt(body), Closer: body}, so, nil
}

type decryptedBody struct {
	io.Reader
	io.Closer
}

// headPlain checks the request's SSE-C key against obj as a read does
// and returns the plain view.
func (s *Server) headPlain(obj *meta.Object, customer sseSpec) (*meta.Object, sealedObject, error) {
	so, err := s.openDataKey(obj.SSE, obj.Bucket, obj.Key, customer)
	if err != nil {
		return obj, so, err
	}
	view, _, err := plainView(obj)
	return view, so, err
}

// writeSSEHeaders answers with the encryption an object has, as S3 does
// on PUT, GET, HEAD, copies and multipart requests.
func writeSSEHeaders(h http.Header, rec *meta.Encryption, customerMD5 string) {
	if rec == nil {
		return
	}
	switch rec.Algorithm {
	case meta.SSEAlgorithmCustomer:
		h.Set(hdrSSECAlgorithm, "AES256")
		if customerMD5 != "" {
			h.Set(hdrSSECKeyMD5, customerMD5)
		}
	case meta.SSEAlgorithmKMS:
		h.Set(hdrSSE, meta.SSEAlgorithmKMS)
		h.Set(hdrSSEKMSKeyID, rec.KeyID)
	default:
		h.Set(hdrSSE, meta.SSEAlgorithmS3)
	}
}
