package s3api

import (
	"encoding/xml"
	"unicode/utf8"

	"github.com/b3-storage/b3/internal/objstore"
)

var opDeleteObjects = operation{name: "DeleteObjects", perm: permWrite, handle: (*Server).deleteObjects}

// deleteRequest is the Delete document of DeleteObjects.
type deleteRequest struct {
	XMLName xml.Name `xml:"Delete"`
	Quiet   bool
	Objects []struct {
		Key       string
		VersionID string `xml:"VersionId"`
	} `xml:"Object"`
}

type deleteResult struct {
	XMLName xml.Name        `xml:"DeleteResult"`
	Xmlns   string          `xml:"xmlns,attr"`
	Deleted []deletedObject `xml:"Deleted"`
	Errors  []deleteError   `xml:"Error"`
}

type deletedObject struct {
	Key                   string
	VersionId             string `xml:",omitempty"`
	DeleteMarker          bool   `xml:",omitempty"`
	DeleteMarkerVersionId string `xml:",omitempty"`
}

type deleteError struct {
	Key       string
	VersionId string `xml:",omitempty"`
	Code      string
	Message   string
}

// parseDeleteRequest decodes a Delete document: 1..1000 objects.
func parseDeleteRequest(data []byte) (*deleteRequest, error) {
	var req deleteRequest
	if err := xml.Unmarshal(data, &req); err != nil {
		return nil, errMalformedXML
	}
	if len(req.Objects) == 0 || len(req.Objects) > maxDeleteObjects {
		return nil, errMalformedXML
	}
	return &req, nil
}

// deleteObjects deletes up to 1000 keys; each key's outcome is reported
// (only failures when Quiet). Deleting a missing key succeeds, as in S3.
func (s *Server) deleteObjects(rq *request) error {
	data, err := readSmallBody(rq)
	if err != nil {
		return err
	}
	req, err := parseDeleteRequest(data)
	if err != nil {
		return err
	}
	res := deleteResult{Xmlns: s3Namespace}
	for _, o := range req.Objects {
		var failure error
		switch {
		case o.Key == "":
			failure = errInvalidArgument.withMessage("Key must not be empty")
		case len(o.Key) > maxKeyLength:
			failure = errKeyTooLong
		case !utf8.ValidString(o.Key):
			failure = errInvalidArgument.withMessage("Object key is not valid UTF-8")
		default:
			// Each key is authorized on its own, as a policy may allow
			// deletes under some prefixes only.
			var done objstore.DeleteResult
			var version string // the engine's id
			var err error
			if o.VersionID != "" {
				version, err = s.versions.decode(o.VersionID)
			}
			// DeleteObject decides the same way (objectAccess).
			if err != nil {
				failure = errNoSuchVersion
			} else if failure = s.decide(rq, rq.bucketRec, objectAccess(rq.op, version), o.Key); failure != nil {
			} else if done, failure = s.deleteOne(rq, o.Key, version); failure == nil && !req.Quiet {
				d := deletedObject{Key: o.Key, VersionId: o.VersionID, DeleteMarker: done.DeleteMarker}
				if o.VersionID == "" && done.DeleteMarker {
					d.DeleteMarkerVersionId = s.versions.encode(done.VersionID)
				}
				res.Deleted = append(res.Deleted, d)
			}
		}
		if failure != nil {
			e, known := toAPIError(failure)
			if !known {
				s.log.Error("delete object", "request_id", rq.id, "bucket", rq.bucket, "key", o.Key, "err", failure)
			}
			res.Errors = append(res.Errors, deleteError{Key: o.Key, VersionId: o.VersionID, Code: e.S3Code(), Message: messageOf(e)})
		}
	}
	return writeXML(rq, res)
}
