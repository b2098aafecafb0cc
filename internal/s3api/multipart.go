package s3api

import (
	"encoding/hex"
	"encoding/xml"
	"errors"
	"net/http"
	"strconv"

	"github.com/b3-storage/b3/internal/checksum"
	"github.com/b3-storage/b3/internal/meta"
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
	obj, err := s.objectFromHeaders(rq)
	if err != nil {
		return err
	}
	up := &meta.Upload{Bucket: rq.bucket, Key: rq.key, Owner: rq.accessKey, Tags: obj.Tags}
	attrsOfObject(obj).toUpload(up)
	if name := rq.Header.Get(checksum.HeaderAlgorithm); name != "" {
		alg, ok := checksum.ParseAlgorithm(name)
		if !ok {
			return errInvalidRequest.withMessage("Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]")
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
	return writeXML(rq, initiateMultipartUploadResult{Xmlns: s3Namespace, Bucket: rq.bucket, Key: rq.key, UploadID: up.UploadID})
}

func parsePartNumber(rq *request) (int, error) {
	n, err := strconv.Atoi(rq.query.Get("partNumber"))
	if err != nil || n < 1 || n > meta.MaxPartNumber {
		return 0, errInvalidPartNumber
	}
	return n, nil
}

// uploadPart stores one part, in one pass as putObject does. When the
// upload was created with a checksum algorithm, that algorithm is
// computed for the part too, so completion can combine the parts'.
func (s *Server) uploadPart(rq *request) error {
	number, err := parsePartNumber(rq)
	if err != nil {
		return err
	}
	release, err := s.admitUpload(rq)
	if err != nil {
		return err
	}
	defer release()
	uploadID := rq.query.Get("uploadId")
	up, err := s.store.GetUpload(rq.bucket, rq.key, uploadID)
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
	cr := checksum.NewReader(rq.body, exp, uploadAlg)
	part, err := s.store.PutPart(rq.Context(), rq.bucket, rq.key, uploadID, number, &uploadBody{src: cr, want: rq.contentLength}, func(p *meta.Part) error {
		if !cr.Done() {
			return errIncompleteBody
		}
		p.ETag = cr.ETag()
		if uploadAlg != checksum.None {
			if c, ok := cr.Checksum(uploadAlg); ok {
				p.Checksum = c.Base64()
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	h := rq.w.Header()
	h.Set("ETag", quoteETag(part.ETag))
	if c := cr.Requested(); !c.IsZero() {
		h.Set(c.Algorithm.HeaderName(), c.Base64())
	} else if part.Checksum != "" {
		h.Set(uploadAlg.HeaderName(), part.Checksum)
	}
	return writeEmpty(rq, http.StatusOK)
}

// completeMultipartUpload is the request document of Complete.
type completeMultipartUpload struct {
	XMLName xml.Name       `xml:"CompleteMultipartUpload"`
	Parts   []completePart `xml:"Part"`
}

type completePart struct {
	PartNumber        int
	ETag              string
	ChecksumCRC32     string
	ChecksumCRC32C    string
	ChecksumCRC64NVME string
	ChecksumSHA1      string
	ChecksumSHA256    string
}

func (p completePart) checksum(alg checksum.Algorithm) string {
	switch alg {
	case checksum.CRC32:
		return p.ChecksumCRC32
	case checksum.CRC32C:
		return p.ChecksumCRC32C
	case checksum.CRC64NVME:
		return p.ChecksumCRC64NVME
	case checksum.SHA1:
		return p.ChecksumSHA1
	case checksum.SHA256:
		return p.ChecksumSHA256
	}
	return ""
}

type completeMultipartUploadResult struct {
	XMLName           xml.Name `xml:"CompleteMultipartUploadResult"`
	Xmlns             string   `xml:"xmlns,attr"`
	Location          string
	Bucket            string
	Key               string
	ETag              string
	ChecksumCRC32     string `xml:",omitempty"`
	ChecksumCRC32C    string `xml:",omitempty"`
	ChecksumCRC64NVME string `xml:",omitempty"`
	ChecksumSHA1      string `xml:",omitempty"`
	ChecksumSHA256    string `xml:",omitempty"`
	ChecksumType      string `xml:",omitempty"`
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
func (s *Server) completeUpload(rq *request) error {
	data, err := readSmallBody(rq)
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
		alg, _ = checksum.ParseAlgorithm(up.ChecksumAlgorithm)
		obj := &meta.Object{Owner: up.Owner, Tags: up.Tags}
		attrsOfUpload(up).toObject(obj)
		md5s := make([][]byte, len(parts))
		var sums [][]byte
		var crcParts []checksum.Part
		for i, part := range parts {
			want := req.Parts[i]
			if part == nil || unquoteETag(want.ETag) != unquoteETag(part.ETag) {
				return nil, errInvalidPart
			}
			if i < len(parts)-1 && part.Size < s.cfg.MinPartSize {
				e := *errEntityTooSmall
				e.Extra = []xmlElement{
					{XMLName: xmlName("ProposedSize"), Value: strconv.FormatInt(part.Size, 10)},
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
			if alg == checksum.None {
				continue
			}
			if given := want.checksum(alg); given != "" && given != part.Checksum {
				return nil, errInvalidPart.withMessage("The checksum of part %d does not match the uploaded part.", part.Number)
			}
			raw, err := alg.Decode(part.Checksum)
			if err != nil {
				return nil, errInvalidPart.withMessage("Part %d was uploaded without its %s checksum.", part.Number, alg)
			}
			sums = append(sums, raw)
			crcParts = append(crcParts, checksum.Part{Sum: raw, Size: part.Size})
		}
		obj.ETag = checksum.MultipartETag(md5s)
		if alg != checksum.None {
			obj.ChecksumAlgorithm, obj.ChecksumType = up.ChecksumAlgorithm, up.ChecksumType
			if up.ChecksumType == checksum.FullObject.String() {
				full, err := checksum.CombineCRC(alg, crcParts)
				if err != nil {
					return nil, errInvalidRequest.withMessage("%v", err)
				}
				obj.Checksum = checksum.Encode(full)
			} else {
				composite, err := checksum.CompositeChecksum(alg, sums)
				if err != nil {
					return nil, errInvalidRequest.withMessage("%v", err)
				}
				obj.Checksum = composite
			}
		}
		return obj, nil
	}
	obj, err := s.store.CompleteUpload(rq.bucket, rq.key, rq.query.Get("uploadId"), numbers, build, precondition)
	if err != nil {
		return err
	}
	res := completeMultipartUploadResult{Xmlns: s3Namespace, Location: "/" + rq.bucket + "/" + rq.key, Bucket: rq.bucket, Key: rq.key, ETag: quoteETag(obj.ETag)}
	if alg != checksum.None {
		setChecksumField(alg, obj.Checksum, &res.ChecksumCRC32, &res.ChecksumCRC32C, &res.ChecksumCRC64NVME, &res.ChecksumSHA1, &res.ChecksumSHA256)
		res.ChecksumType = obj.ChecksumType
	}
	return writeXML(rq, res)
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
	PartNumber        int
	LastModified      string
	ETag              string
	Size              int64
	ChecksumCRC32     string `xml:",omitempty"`
	ChecksumCRC32C    string `xml:",omitempty"`
	ChecksumCRC64NVME string `xml:",omitempty"`
	ChecksumSHA1      string `xml:",omitempty"`
	ChecksumSHA256    string `xml:",omitempty"`
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
	alg, _ := checksum.ParseAlgorithm(up.ChecksumAlgorithm)
	res := listPartsResult{Xmlns: s3Namespace, Bucket: rq.bucket, Key: rq.key, UploadID: uploadID, PartNumberMarker: marker,
		MaxParts: maxParts, IsTruncated: truncated, Initiator: s.owner(up.Owner), Owner: s.owner(up.Owner), StorageClass: "STANDARD",
		ChecksumAlgorithm: up.ChecksumAlgorithm, ChecksumType: up.ChecksumType, Parts: []xmlPart{}}
	for _, p := range parts {
		x := xmlPart{PartNumber: p.Number, LastModified: isoTime(p.Modified), ETag: quoteETag(p.ETag), Size: p.Size}
		setChecksumField(alg, p.Checksum, &x.ChecksumCRC32, &x.ChecksumCRC32C, &x.ChecksumCRC64NVME, &x.ChecksumSHA1, &x.ChecksumSHA256)
		res.Parts = append(res.Parts, x)
		res.NextPartNumberMarker = p.Number
	}
	return writeXML(rq, res)
}

type listMultipartUploadsResult struct {
	XMLName            xml.Name `xml:"ListMultipartUploadsResult"`
	Xmlns              string   `xml:"xmlns,attr"`
	Bucket             string
	KeyMarker          string
	UploadIDMarker     string `xml:"UploadIdMarker"`
	NextKeyMarker      string
	NextUploadIDMarker string `xml:"NextUploadIdMarker"`
	Prefix             string
	Delimiter          string `xml:",omitempty"`
	MaxUploads         int
	IsTruncated        bool
	EncodingType       string      `xml:",omitempty"`
	Uploads            []xmlUpload `xml:"Upload"`
	CommonPrefixes     []xmlPrefix
}

type xmlUpload struct {
	Key               string
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
		page, err := s.store.Meta().ListUploads(rq.bucket, meta.UploadListOptions{Prefix: p.prefix, Delimiter: p.delimiter,
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
