package s3api

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"

	"github.com/b3-storage/b3/internal/checksum"
)

var opGetObjectAttributes = operation{name: "GetObjectAttributes", perm: permRead, handle: (*Server).getObjectAttributes}

type getObjectAttributesResponse struct {
	XMLName      xml.Name         `xml:"GetObjectAttributesResponse"`
	Xmlns        string           `xml:"xmlns,attr"`
	ETag         string           `xml:",omitempty"`
	Checksum     *xmlAttrChecksum `xml:"Checksum,omitempty"`
	ObjectParts  *xmlObjectParts  `xml:"ObjectParts,omitempty"`
	StorageClass string           `xml:",omitempty"`
	ObjectSize   *int64           `xml:",omitempty"`
}

type xmlAttrChecksum struct {
	Value        xmlChecksum
	ChecksumType string `xml:",omitempty"`
}

type xmlObjectParts struct {
	IsTruncated          bool
	MaxParts             int
	NextPartNumberMarker int `xml:",omitempty"`
	PartNumberMarker     int
	Parts                []xmlAttrPart `xml:"Part"`
	PartsCount           int
}

type xmlAttrPart struct {
	Checksum   xmlChecksum
	PartNumber int
	Size       int64
}

// getObjectAttributes answers GetObjectAttributes: the attributes named in
// x-amz-object-attributes (ETag, Checksum, ObjectParts, StorageClass,
// ObjectSize), the parts paged by x-amz-max-parts and
// x-amz-part-number-marker. The ETag is unquoted, as S3 sends it here.
func (s *Server) getObjectAttributes(rq *request) error {
	want := map[string]bool{}
	for _, name := range splitHeaderList(strings.Join(rq.Header.Values("x-amz-object-attributes"), ",")) {
		switch name {
		case "ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize":
			want[name] = true
		default:
			return errInvalidArgument.withMessage("Invalid attribute name specified.")
		}
	}
	if len(want) == 0 {
		return errInvalidArgument.withMessage("The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty")
	}
	maxParts, err := headerInt(rq.Header, "x-amz-max-parts", 1000)
	if err != nil {
		return err
	}
	marker, err := headerInt(rq.Header, "x-amz-part-number-marker", 0)
	if err != nil {
		return err
	}
	// The version authorized (requestAccess) is the version answered.
	obj, err := s.versionOrCurrent(rq)
	if err != nil {
		return err
	}
	customer, err := parseReadSSE(rq.Header)
	if err != nil {
		return err
	}
	if obj, _, err = s.headPlain(obj, customer); err != nil {
		return err
	}
	if err := readConditions(rq.Header).check(obj, true); err != nil {
		return s.objectReadError(rq, obj, err)
	}
	alg, _ := checksum.ParseAlgorithm(obj.ChecksumAlgorithm)
	res := getObjectAttributesResponse{Xmlns: s3Namespace}
	if want["ETag"] {
		res.ETag = unquoteETag(obj.ETag)
	}
	if want["Checksum"] && obj.Checksum != "" {
		// A COMPOSITE checksum is stored as GET/HEAD send it, with its
		// "-N" part count; here AWS sends the bare value (the count is
		// ObjectParts' PartsCount).
		value := obj.Checksum
		if obj.ChecksumType == checksum.Composite.String() {
			value, _, _ = strings.Cut(value, "-")
		}
		res.Checksum = &xmlAttrChecksum{Value: xmlChecksum{alg, value}, ChecksumType: obj.ChecksumType}
	}
	if want["StorageClass"] {
		res.StorageClass = "STANDARD"
	}
	if want["ObjectSize"] {
		res.ObjectSize = &obj.Size
	}
	if want["ObjectParts"] && len(obj.Parts) > 0 {
		op := &xmlObjectParts{MaxParts: maxParts, PartNumberMarker: marker, PartsCount: len(obj.Parts), Parts: []xmlAttrPart{}}
		for _, p := range obj.Parts {
			if p.Number <= marker {
				continue
			}
			if len(op.Parts) == maxParts {
				op.IsTruncated = true
				break
			}
			op.Parts = append(op.Parts, xmlAttrPart{Checksum: xmlChecksum{alg, p.Checksum}, PartNumber: p.Number, Size: p.Size})
			op.NextPartNumberMarker = p.Number
		}
		res.ObjectParts = op
	}
	rq.w.Header().Set("Last-Modified", obj.Modified.UTC().Format(http.TimeFormat))
	s.writeVersionHeader(rq.w.Header(), rq.bucketRec, obj)
	return writeXML(rq, res)
}

// headerInt reads a non-negative integer header, def when absent.
func headerInt(h http.Header, name string, def int) (int, error) {
	v := h.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errInvalidArgument.withMessage("Invalid value for %s: %q", name, v)
	}
	return n, nil
}
