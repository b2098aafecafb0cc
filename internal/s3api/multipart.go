package s3api

import (
	"encoding/hex"
	"encoding/xml"
	"errors"
	"net/http"
	"strconv"

	"github.com/b3-storage/b3/internal/checksum"
	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

var (
	opCreateUpload   = operation{name: "CreateMultipartUpload", perm: permWrite, handle: (*Server).createUpload}
	opUploadPart     = operation{name: "UploadPart", perm: permWrite, handle: (*Server).uploadPart}
	opCompleteUpload = operation{name: "CompleteMultipartUpload", perm: permWrite, handle: (*Server).completeUpload}
	opAbortUpload    = operation{name: "AbortMultipartUpload", perm: permWrite, handle: (*Server).abortUpload}
	opListParts      = operation{name: "ListParts", perm: permWrite, handle: (*Server).listParts}
	opListUploads    = operation{name: "ListMultipartUploads", perm: permWrite, handle: (*Server).listUploads}
)

type initiateMultipartUploadResult struct {
	XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Bucket   string
	Key      string
	UploadID string `xml:"UploadId"`
}

func (s *Server) createUpload(rq *request) error {
	obj, err := s.objectFromHeaders(rq, true)
	if err != nil {
		return err
	}
	sealed, err := s.newSealedObject(rq, rq.Header, rq.bucketRec, rq.key)
	if err != nil {
		return err
	}
	up := &meta.Upload{Bucket: rq.bucket, Key: rq.key, Owner: obj.Owner, Tags: obj.Tags, Grants: obj.Grants, SSE: sealed.record()}
	// A lock asked for here is checked now and kept in the upload for the
	// completed object; without one, the object gets the bucket's default
	// retention when it completes (its creation).
	lock, err := s.requestedLock(rq, rq.Header)
	if err != nil {
		return err
	}
	up.LockMode, up.RetainUntil, up.LegalHold, up.LegalHoldSet = lock.Mode, lock.Until, lock.Hold, lock.Hold || lock.holdAsked
	attrsOfObject(obj).toUpload(up)
	if name := rq.Header.Get(checksum.HeaderAlgorithm); name != "" {
		alg, ok := checksum.ParseAlgorithm(name)
		if !ok {
			return checksum.ErrUnsupportedAlgorithm()
		}
		typ, err := checksum.ParseType(rq.Header.Get(checksum.HeaderType))
		if err != nil {
			return err
		}
		if typ == checksum.TypeUnset {
			typ = checksum.DefaultType(alg)
		}
		if !checksum.ValidType(alg, typ) {
			return errInvalidRequest.withMessage("The %s checksum type cannot be used with the %s checksum algorithm.", typ, alg)
		}
		up.ChecksumAlgorithm, up.ChecksumType = alg.String(), typ.String()
	} else if rq.Header.Get(checksum.HeaderType) != "" {
		return errInvalidRequest.withMessage("The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.")
	}
	up, err = s.store.CreateUpload(up)
	if err != nil {
		return err
	}
	if up.ChecksumAlgorithm != "" {
		rq.w.Header().Set(checksum.HeaderAlgorithm, up.ChecksumAlgorithm)
		rq.w.Header().Set(checksum.HeaderType, up.ChecksumType)
	}
	if sealed != nil {
		writeSSEHeaders(rq.w.Header(), sealed.rec, sealed.customerMD5)
	}
	return writeXML(rq, initiateMultipartUploadResult{Xmlns: s3Namespace, Bucket: rq.bucket, Key: rq.key, UploadID: up.UploadID})
}

func parsePartNumber(rq *request) (int, error) {
	n, err := strconv.Atoi(rq.query.Get("partNumber"))
	if err != nil || n < 1 || n > meta.MaxPartNumber {
		return 0, errInvalidPartNumber
	}
	return n, nil
}

// partAlgorithm is the checksum every part of up gets: the upload's
// algorithm, or the default CRC64NVME, so that completion can combine the
// parts' values into the object's checksum.
func partAlgorithm(up *meta.Upload) checksum.Algorithm {
	if alg, ok := checksum.ParseAlgorithm(up.ChecksumAlgorithm); ok {
		return alg
	}
	return checksum.Default
}

// uploadPart stores one part, in one pass as putObject does, computing
// the upload's checksum algorithm (partAlgorithm) for it too.
func (s *Server) uploadPart(rq *request) error {
	number, err := parsePartNumber(rq)
	if err != nil {
		return err
	}
	body, release, err := s.admitUpload(rq)
	if err != nil {
		return err
	}
	defer release()
	uploadID := rq.query.Get("uploadId")
	up, err := s.store.GetUpload(rq.bucket, rq.key, uploadID)
	if err != nil {
		return err
	}
	sealed, err := s.partKey(rq, up)
	if err != nil {
		return err
	}
	exp, err := checksum.ParseHeaders(rq.Header)
	if err != nil {
		return err
	}
	uploadAlg, _ := checksum.ParseAlgorithm(up.ChecksumAlgorithm)
	if uploadAlg != checksum.None && exp.Checksum.Algorithm != checksum.None && exp.Checksum.Algorithm != uploadAlg {
		return errInvalidRequest.withMessage("Checksum Type mismatch occurred, expected checksum Type: %s, actual checksum Type: %s", uploadAlg, exp.Checksum.Algorithm)
	}
	partAlg := partAlgorithm(up)
	cr := checksum.NewReader(body, exp, partAlg)
	stream, err := sealed.encrypt(&uploadBody{src: cr, want: rq.contentLength}, number)
	if err != nil {
		return err
	}
	part, err := s.store.PutPart(uploadContext(rq), rq.bucket, rq.key, uploadID, number, stream, func(p *meta.Part) error {
		if !cr.Done() {
			return errIncompleteBody
		}
		p.ETag = sealed.etag(cr.ETag())
		if c, ok := cr.Checksum(partAlg); ok {
			p.Checksum = c.Base64()
		}
		return nil
	})
	if err != nil {
		return err
	}
	h := rq.w.Header()
	h.Set("ETag", quoteETag(part.ETag))
	if sealed != nil {
		writeSSEHeaders(h, sealed.rec, sealed.customerMD5)
	}
	if c := cr.Requested(); !c.IsZero() {
		h.Set(c.Algorithm.HeaderName(), c.Base64())
	} else if part.Checksum != "" {
		h.Set(partAlg.HeaderName(), part.Checksum)
	}
	return writeEmpty(rq, http.StatusOK)
}

// completeMultipartUpload is the request document of Complete.
type completeMultipartUpload struct {
	XMLName xml.Name       `xml:"CompleteMultipartUpload"`
	Parts   []completePart `xml:"Part"`
}

type completePart struct {
	PartNumber int
	ETag       string
	Other      []xmlElement `xml:",any"` // <ChecksumCRC32>, <ChecksumSHA512>, ...
}

// checksum returns the part's <Checksum{alg}> value ("" if absent).
func (p completePart) checksum(alg checksum.Algorithm) string {
	for _, e := range p.Other {
		if e.XMLName.Local == "Checksum"+alg.String() {
			return e.Value
		}
	}
	return ""
}

type completeMultipartUploadResult struct {
	XMLName      xml.Name `xml:"CompleteMultipartUploadResult"`
	Xmlns        string   `xml:"xmlns,attr"`
	Location     string
	Bucket       string
	Key          string
	ETag         string
	Checksum     xmlChecksum
	ChecksumType string `xml:",omitempty"`
}

// parseCompleteRequest decodes and checks the part list: non-empty,
// strictly ascending part numbers within 1..10000.
func parseCompleteRequest(data []byte) (*completeMultipartUpload, error) {
	var req completeMultipartUpload
	if err := xml.Unmarshal(data, &req); err != nil || len(req.Parts) == 0 {
		return nil, errMalformedXML
	}
	prev := 0
	for _, p := range req.Parts {
		if p.PartNumber < 1 || p.PartNumber > meta.MaxPartNumber {
			return nil, errInvalidPart
		}
		if p.PartNumber <= prev {
			return nil, errInvalidPartOrder
		}
		prev = p.PartNumber
	}
	return &req, nil
}

// completeUpload turns the listed parts into the object. objstore hands
// the parts' extents to the object (no byte is copied); here the parts
// are validated and the ETag and checksum computed from the parts'.
//
// The request's x-amz-checksum-<alg> header is the checksum of the whole
// object (COMPOSITE or FULL_OBJECT, as the upload was created), not of the
// XML body: it is compared with the checksum computed from the parts
// before anything is committed. Only Content-MD5 covers the body.
func (s *Server) completeUpload(rq *request) error {
	declared, err := checksum.ParseObjectChecksum(rq.Header)
	if err != nil {
		return err
	}
	var bodyDigest checksum.Expected
	if v, ok := rq.Header[checksum.HeaderContentMD5]; ok && len(v) > 0 {
		if bodyDigest.ContentMD5, err = checksum.ParseContentMD5(v[0]); err != nil {
			return err
		}
	}
	wantSize := int64(-1)
	if v := rq.Header.Get("x-amz-mp-object-size"); v != "" {
		if wantSize, err = strconv.ParseInt(v, 10, 64); err != nil || wantSize < 0 {
			return errInvalidRequest.withMessage("Value for x-amz-mp-object-size header is invalid.")
		}
	}
	data, err := readSmallBodyExpecting(rq, bodyDigest)
	if err != nil {
		return err
	}
	req, err := parseCompleteRequest(data)
	if err != nil {
		return err
	}
	precondition, err := putPrecondition(rq.Header)
	if err != nil {
		return err
	}
	numbers := make([]int, len(req.Parts))
	for i, p := range req.Parts {
		numbers[i] = p.PartNumber
	}
	var alg checksum.Algorithm
	build := func(up *meta.Upload, parts []*meta.Part) (*meta.Object, error) {
		obj, err := s.objectOfParts(up, parts, req.Parts)
		if err != nil {
			return nil, err
		}
		if wantSize >= 0 && wantSize != objectSize(up, parts) {
			return nil, errInvalidRequest.withMessage("The provided 'x-amz-mp-object-size' header value %d does not match what was computed: %d", wantSize, objectSize(up, parts))
		}
		alg, _ = checksum.ParseAlgorithm(obj.ChecksumAlgorithm)
		typ, _ := checksum.ParseType(obj.ChecksumType)
		if err := declared.Verify(alg, typ, obj.Checksum); err != nil {
			return nil, err
		}
		objectLock{Mode: up.LockMode, Until: up.RetainUntil, Hold: up.LegalHold, holdAsked: up.LegalHoldSet}.orDefault(rq.bucketRec, s.cfg.Now(), s.cfg.MaxRetention).applyTo(obj)
		return obj, nil
	}
	obj, err := s.store.CompleteUpload(rq.bucket, rq.key, rq.query.Get("uploadId"), numbers, build, precondition)
	if errors.Is(err, objstore.ErrNoSuchUpload) {
		if done := s.completedEarlier(rq, req.Parts); done != nil {
			obj, err = done, nil
			alg, _ = checksum.ParseAlgorithm(obj.ChecksumAlgorithm)
		}
	}
	if err != nil {
		return err
	}
	s.playlistStored(rq)
	s.writeNewVersionHeader(rq.w.Header(), obj)
	writeSSEHeaders(rq.w.Header(), obj.SSE, "")
	res := completeMultipartUploadResult{Xmlns: s3Namespace, Location: "/" + rq.bucket + "/" + rq.key, Bucket: rq.bucket, Key: rq.key, ETag: quoteETag(obj.ETag),
		Checksum: xmlChecksum{alg, obj.Checksum}, ChecksumType: obj.ChecksumType}
	return writeXML(rq, res)
}

// completedEarlier finds the object a retried CompleteMultipartUpload
// already made (SDKs retry it after a timeout): the upload is gone, and
// the key's current object has the version the upload ID reserved (it
// begins with it) and the parts the request lists. The retry then gets
// the same answer, not NoSuchUpload. nil if there is no such object.
func (s *Server) completedEarlier(rq *request, listed []completePart) *meta.Object {
	id := rq.query.Get("uploadId")
	if !meta.ValidUploadID(id) {
		return nil
	}
	version, err := strconv.ParseUint(id[:16], 16, 64)
	if err != nil {
		return nil
	}
	obj, err := s.store.HeadObject(rq.bucket, rq.key)
	if err != nil || obj.Version != version || len(obj.Parts) != len(listed) {
		return nil
	}
	for i, p := range obj.Parts {
		if p.Number != listed[i].PartNumber || unquoteETag(p.ETag) != unquoteETag(listed[i].ETag) {
			return nil
		}
	}
	return obj
}

// objectSize is the (plaintext) size of the object the parts make.
func objectSize(up *meta.Upload, parts []*meta.Part) int64 {
	var n int64
	for _, p := range parts {
		n += partSize(up, p)
	}
	return n
}

// partSize is the plaintext size of a part of up (its stored size is
// larger if the upload is encrypted).
func partSize(up *meta.Upload, p *meta.Part) int64 {
	if up.SSE == nil {
		return p.Size
	}
	return plainSize(p.Size)
}

// partKey opens the data key a part of up is encrypted with (nil for a
// plain upload): an SSE-C upload needs its key on every UploadPart and
// UploadPartCopy, as in S3.
func (s *Server) partKey(rq *request, up *meta.Upload) (*sealedObject, error) {
	customer, err := parseCustomerKey(rq.Header, "")
	if err != nil {
		return nil, err
	}
	so, err := s.openDataKey(up.SSE, up.Bucket, up.Key, customer)
	if err != nil || up.SSE == nil {
		return nil, err
	}
	return &so, nil
}

// objectOfParts builds the object record of a completed upload from its
// parts (in request order; nil where a listed part does not exist) and
// the request's part list: ETag, part table and checksum. An upload made
// without a checksum algorithm gets the default FULL_OBJECT CRC64NVME,
// combined from its parts' (absent if a part predates default checksums).
func (s *Server) objectOfParts(up *meta.Upload, parts []*meta.Part, listed []completePart) (*meta.Object, error) {
	uploadAlg, _ := checksum.ParseAlgorithm(up.ChecksumAlgorithm)
	partAlg := partAlgorithm(up)
	obj := &meta.Object{Owner: up.Owner, Tags: up.Tags, Grants: up.Grants, SSE: up.SSE}
	attrsOfUpload(up).toObject(obj)
	md5s := make([][]byte, len(parts))
	var sums [][]byte
	var crcParts []checksum.Part
	for i, part := range parts {
		want := listed[i]
		if part == nil || unquoteETag(want.ETag) != unquoteETag(part.ETag) {
			return nil, errInvalidPart
		}
		if i < len(parts)-1 && partSize(up, part) < s.cfg.MinPartSize {
			e := *errEntityTooSmall
			e.Extra = []xmlElement{
				{XMLName: xmlName("ProposedSize"), Value: strconv.FormatInt(partSize(up, part), 10)},
				{XMLName: xmlName("MinSizeAllowed"), Value: strconv.FormatInt(s.cfg.MinPartSize, 10)},
				{XMLName: xmlName("PartNumber"), Value: strconv.Itoa(part.Number)},
				{XMLName: xmlName("ETag"), Value: quoteETag(part.ETag)},
			}
			return nil, &e
		}
		sum, err := hex.DecodeString(unquoteETag(part.ETag))
		if err != nil {
			return nil, errInvalidPart
		}
		md5s[i] = sum
		obj.Parts = append(obj.Parts, meta.PartSummary{Number: part.Number, Size: part.Size, ETag: part.ETag, Checksum: part.Checksum})
		if given := want.checksum(partAlg); given != "" && given != part.Checksum {
			return nil, errInvalidPart.withMessage("The checksum of part %d does not match the uploaded part.", part.Number)
		}
		raw, err := partAlg.Decode(part.Checksum)
		switch {
		case err == nil:
			sums = append(sums, raw)
			crcParts = append(crcParts, checksum.Part{Sum: raw, Size: partSize(up, part)})
		case uploadAlg != checksum.None:
			return nil, errInvalidPart.withMessage("Part %d was uploaded without its %s checksum.", part.Number, uploadAlg)
		}
		// else: a part stored before default checksums; the object gets none
	}
	obj.ETag = checksum.MultipartETag(md5s)
	typ := up.ChecksumType
	if uploadAlg == checksum.None {
		typ = checksum.FullObject.String()
	}
	switch {
	case uploadAlg == checksum.None && len(crcParts) < len(parts):
		// no checksum
	case typ == checksum.FullObject.String():
		full, err := checksum.CombineCRC(partAlg, crcParts)
		if err != nil {
			return nil, errInvalidRequest.withMessage("%v", err)
		}
		obj.Checksum = checksum.Encode(full)
	default:
		composite, err := checksum.CompositeChecksum(partAlg, sums)
		if err != nil {
			return nil, errInvalidRequest.withMessage("%v", err)
		}
		obj.Checksum = composite
	}
	if obj.Checksum != "" {
		obj.ChecksumAlgorithm, obj.ChecksumType = partAlg.String(), typ
	}
	return obj, nil
}

func (s *Server) abortUpload(rq *request) error {
	if err := s.store.AbortUpload(rq.bucket, rq.key, rq.query.Get("uploadId")); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}

type listPartsResult struct {
	XMLName              xml.Name `xml:"ListPartsResult"`
	Xmlns                string   `xml:"xmlns,attr"`
	Bucket               string
	Key                  string
	UploadID             string `xml:"UploadId"`
	PartNumberMarker     int
	NextPartNumberMarker int
	MaxParts             int
	IsTruncated          bool
	Initiator            *xmlOwner
	Owner                *xmlOwner
	StorageClass         string
	ChecksumAlgorithm    string    `xml:",omitempty"`
	ChecksumType         string    `xml:",omitempty"`
	Parts                []xmlPart `xml:"Part"`
}

type xmlPart struct {
	PartNumber   int
	LastModified string
	ETag         string
	Size         int64
	Checksum     xmlChecksum
}

func (s *Server) listParts(rq *request) error {
	uploadID := rq.query.Get("uploadId")
	up, err := s.store.GetUpload(rq.bucket, rq.key, uploadID)
	if err != nil {
		return err
	}
	marker, maxParts := 0, meta.DefaultMaxKeys
	if v := rq.query.Get("part-number-marker"); v != "" {
		if marker, err = strconv.Atoi(v); err != nil || marker < 0 {
			return errInvalidArgument.withMessage("Provided part-number-marker not an integer or within integer range")
		}
	}
	if v := rq.query.Get("max-parts"); v != "" {
		if maxParts, err = strconv.Atoi(v); err != nil || maxParts < 0 {
			return errInvalidArgument.withMessage("Provided max-parts not an integer or within integer range")
		}
		maxParts = min(maxParts, meta.DefaultMaxKeys)
	}
	var parts []*meta.Part
	truncated := false
	if maxParts > 0 {
		parts, truncated, err = s.store.Meta().ListParts(uploadID, marker, maxParts)
		if err != nil {
			if errors.Is(err, meta.ErrNotFound) {
				return errNoSuchUpload
			}
			return err
		}
	}
	alg := partAlgorithm(up)
	res := listPartsResult{Xmlns: s3Namespace, Bucket: rq.bucket, Key: rq.key, UploadID: uploadID, PartNumberMarker: marker,
		MaxParts: maxParts, IsTruncated: truncated, Initiator: s.owner(up.Owner), Owner: s.owner(up.Owner), StorageClass: "STANDARD",
		ChecksumAlgorithm: up.ChecksumAlgorithm, ChecksumType: up.ChecksumType, Parts: []xmlPart{}}
	for _, p := range parts {
		res.Parts = append(res.Parts, xmlPart{PartNumber: p.Number, LastModified: isoTime(p.Modified), ETag: quoteETag(p.ETag), Size: partSize(up, p),
			Checksum: xmlChecksum{alg, p.Checksum}})
		res.NextPartNumberMarker = p.Number
	}
	return writeXML(rq, res)
}

type listMultipartUploadsResult struct {
	XMLName            xml.Name `xml:"ListMultipartUploadsResult"`
	Xmlns              string   `xml:"xmlns,attr"`
	Bucket             string
	KeyMarker          keyText
	UploadIDMarker     string `xml:"UploadIdMarker"`
	NextKeyMarker      keyText
	NextUploadIDMarker string `xml:"NextUploadIdMarker"`
	Prefix             keyText
	Delimiter          keyText `xml:",omitempty"`
	MaxUploads         int
	IsTruncated        bool
	EncodingType       string      `xml:",omitempty"`
	Uploads            []xmlUpload `xml:"Upload"`
	CommonPrefixes     []xmlPrefix
}

type xmlUpload struct {
	Key               keyText
	UploadID          string `xml:"UploadId"`
	Initiator         *xmlOwner
	Owner             *xmlOwner
	StorageClass      string
	Initiated         string
	ChecksumAlgorithm string `xml:",omitempty"`
	ChecksumType      string `xml:",omitempty"`
}

func (s *Server) listUploads(rq *request) error {
	p, err := parseListParams(rq)
	if err != nil {
		return err
	}
	maxUploads := meta.DefaultMaxKeys
	if v := rq.query.Get("max-uploads"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errInvalidArgument.withMessage("Provided max-uploads not an integer or within integer range")
		}
		maxUploads = min(n, meta.DefaultMaxKeys)
	}
	keyMarker, idMarker := rq.query.Get("key-marker"), rq.query.Get("upload-id-marker")
	res := listMultipartUploadsResult{Xmlns: s3Namespace, Bucket: rq.bucket, KeyMarker: p.encode(keyMarker), UploadIDMarker: idMarker,
		Prefix: p.encode(p.prefix), Delimiter: p.encode(p.delimiter), MaxUploads: maxUploads, EncodingType: p.encodingType}
	if maxUploads > 0 {
		page, err := s.store.ListUploads(rq.bucket, meta.UploadListOptions{Prefix: p.prefix, Delimiter: p.delimiter,
			KeyMarker: keyMarker, UploadIDMarker: idMarker, MaxUploads: maxUploads})
		if err != nil {
			return err
		}
		res.IsTruncated, res.NextKeyMarker, res.NextUploadIDMarker = page.IsTruncated, p.encode(page.NextKeyMarker), page.NextUploadIDMarker
		for _, u := range page.Uploads {
			res.Uploads = append(res.Uploads, xmlUpload{Key: p.encode(u.Key), UploadID: u.UploadID, Initiator: s.owner(u.Owner), Owner: s.owner(u.Owner),
				StorageClass: "STANDARD", Initiated: isoTime(u.Initiated), ChecksumAlgorithm: u.ChecksumAlgorithm, ChecksumType: u.ChecksumType})
		}
		for _, cp := range page.CommonPrefixes {
			res.CommonPrefixes = append(res.CommonPrefixes, xmlPrefix{Prefix: p.encode(cp)})
		}
	}
	return writeXML(rq, res)
}
