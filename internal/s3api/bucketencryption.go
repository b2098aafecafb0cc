package s3api

import (
	"encoding/xml"
	"net/http"

	"github.com/b3-storage/b3/internal/meta"
)

var (
	opGetBucketEncryption    = operation{name: "GetBucketEncryption", perm: permOwner, handle: (*Server).getBucketEncryption}
	opPutBucketEncryption    = operation{name: "PutBucketEncryption", perm: permOwner, handle: (*Server).putBucketEncryption}
	opDeleteBucketEncryption = operation{name: "DeleteBucketEncryption", perm: permOwner, handle: (*Server).deleteBucketEncryption}

	errNoSuchEncryption = apiErr("ServerSideEncryptionConfigurationNotFoundError", 404, "The server side encryption configuration was not found")
)

// encryptionConfig is a bucket's default encryption
// (ServerSideEncryptionConfiguration): one rule.
type encryptionConfig struct {
	XMLName xml.Name         `xml:"ServerSideEncryptionConfiguration"`
	Xmlns   string           `xml:"xmlns,attr,omitempty"`
	Rules   []encryptionRule `xml:"Rule"`
}

type encryptionRule struct {
	Apply struct {
		SSEAlgorithm   string
		KMSMasterKeyID string `xml:",omitempty"`
	} `xml:"ApplyServerSideEncryptionByDefault"`
	BucketKeyEnabled *bool `xml:",omitempty"`
}

// parseEncryptionConfig checks a default encryption document: one rule,
// AES256 or aws:kms (with an optional key name, only for aws:kms).
func parseEncryptionConfig(data []byte) (*encryptionConfig, error) {
	var c encryptionConfig
	if err := xml.Unmarshal(data, &c); err != nil {
		return nil, errMalformedXML
	}
	if len(c.Rules) != 1 {
		return nil, errMalformedXML
	}
	a := c.Rules[0].Apply
	switch a.SSEAlgorithm {
	case meta.SSEAlgorithmS3:
		if a.KMSMasterKeyID != "" {
			return nil, errInvalidArgument.withMessage("a KMSMasterKeyID is not applicable if the default sse algorithm is not aws:kms")
		}
	case meta.SSEAlgorithmKMS:
	default:
		return nil, errMalformedXML
	}
	return &c, nil
}

// bucketDefaultSSE is the encryption of a write to b that names none.
func bucketDefaultSSE(b *meta.Bucket) (sseSpec, error) {
	if b.Encryption == nil {
		return sseSpec{}, nil
	}
	c, err := parseEncryptionConfig(b.Encryption)
	if err != nil {
		return sseSpec{}, err
	}
	a := c.Rules[0].Apply
	return sseSpec{algorithm: a.SSEAlgorithm, keyID: a.KMSMasterKeyID}, nil
}

func (s *Server) putBucketEncryption(rq *request) error {
	data, err := readSmallBody(rq)
	if err != nil {
		return err
	}
	c, err := parseEncryptionConfig(data)
	if err != nil {
		return err
	}
	// The keys must be there now, not at the first write.
	a := c.Rules[0].Apply
	if _, _, err := s.masterKey(sseSpec{algorithm: a.SSEAlgorithm, keyID: a.KMSMasterKeyID}); err != nil {
		return err
	}
	c.Xmlns = ""
	stored, err := xml.Marshal(c)
	if err != nil {
		return err
	}
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error { b.Encryption = stored; return nil }); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusOK)
}

func (s *Server) getBucketEncryption(rq *request) error {
	if rq.bucketRec.Encryption == nil {
		return errNoSuchEncryption
	}
	c, err := parseEncryptionConfig(rq.bucketRec.Encryption)
	if err != nil {
		return err
	}
	c.Xmlns = s3Namespace
	return writeXML(rq, c)
}

func (s *Server) deleteBucketEncryption(rq *request) error {
	if err := s.store.UpdateBucket(rq.bucket, func(b *meta.Bucket) error { b.Encryption = nil; return nil }); err != nil {
		return err
	}
	return writeEmpty(rq, http.StatusNoContent)
}
