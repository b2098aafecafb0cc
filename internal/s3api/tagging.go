package s3api

import (
	"encoding/xml"
	"net/http"

	"github.com/b3-storage/b3/internal/meta"
)

var (
	opGetObjectTagging    = operation{name: "GetObjectTagging", perm: permRead, handle: (*Server).getObjectTagging}
	opPutObjectTagging    = operation{name: "PutObjectTagging", perm: permWrite, handle: (*Server).putObjectTagging}
	opDeleteObjectTagging = operation{name: "DeleteObjectTagging", perm: permWrite, handle: (*Server).deleteObjectTagging}
	opGetBucketTagging    = operation{name: "GetBucketTagging", perm: permOwner, handle: (*Server).getBucketTagging}
	opPutBucketTagging    = operation{name: "PutBucketTagging", perm: permOwner, handle: (*Server).putBucketTagging}
	opDeleteBucketTagging = operation{name: "DeleteBucketTagging", perm: permOwner, handle: (*Server).deleteBucketTagging}
)

// tagging is the Tagging document of object and bucket tagging.
type tagging struct {
	XMLName xml.Name `xml:"Tagging"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	TagSet  []xmlTag `xml:"TagSet>Tag"`
}

type xmlTag struct {
	Key   string
	Value string
}

// parseTaggingXML decodes and validates a Tagging document: no duplicate
// keys, at most limit tags, AWS's key and value lengths.
func parseTaggingXML(data []byte, limit int) (map[string]string, error) {
	var doc tagging
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, errMalformedXML
	}
	tags := make(map[string]string, len(doc.TagSet))
	for _, t := range doc.TagSet {
		if _, dup := tags[t.Key]; dup {
			return nil, errInvalidTag.withMessage("Cannot provide multiple Tags with the same key")
		}
		tags[t.Key] = t.Value
	}
	if err := validateTags(tags, limit); err != nil {
		return nil, err
	}
	return tags, nil
}

func renderTagging(tags map[string]string) tagging {
	doc := tagging{Xmlns: s3Namespace, TagSet: []xmlTag{}}
	for _, k := range sortedKeys(tags) {
		doc.TagSet = append(doc.TagSet, xmlTag{Key: k, Value: tags[k]})
	}
	return doc
}

func (s *Server) getObjectTagging(rq *request) error {
	obj, err := s.versionOrCurrent(rq)
	if err != nil {
		return err
	}
	s.writeVersionHeader(rq.w.Header(), rq.bucketRec, obj)
	return writeXML(rq, renderTagging(obj.Tags))
}

func (s *Server) putObjectTagging(rq *request) error {
	data, err := readSmallBody(rq)
	if err != nil {
		return err
	}
	tags, err := parseTaggingXML(data, maxTagsPerObject)
	if err != nil {
		return err
	}
	if err := s.updateTags(rq, tags); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}

func (s *Server) deleteObjectTagging(rq *request) error {
	if err := s.updateTags(rq, nil); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}

// updateTags replaces the tags of the version the request names, or of
// the current object (which must not have expired).
func (s *Server) updateTags(rq *request, tags map[string]string) error {
	if _, ok := rq.query["versionId"]; !ok {
		if _, err := s.store.HeadObject(rq.bucket, rq.key); err != nil {
			return err
		}
	}
	return s.updateVersion(rq, func(o *meta.Object) error {
		o.Tags = tags
		return nil
	})
}

func (s *Server) getBucketTagging(rq *request) error {
	if len(rq.bucketRec.Tagging) == 0 {
		return errNoSuchTagSet
	}
	tags, err := parseTaggingXML(rq.bucketRec.Tagging, maxTagsPerBucket)
	if err != nil {
		return err
	}
	return writeXML(rq, renderTagging(tags))
}

func (s *Server) putBucketTagging(rq *request) error {
	data, err := readSmallBody(rq)
	if err != nil {
		return err
	}
	if _, err := parseTaggingXML(data, maxTagsPerBucket); err != nil {
		return err
	}
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error { b.Tagging = data; return nil }); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}

func (s *Server) deleteBucketTagging(rq *request) error {
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error { b.Tagging = nil; return nil }); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}
