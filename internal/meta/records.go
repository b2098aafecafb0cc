package meta

import "time"

// Extent names a run of payload bytes in a blob segment. It mirrors
// blob.Extent field for field; the engine converts between the two so that
// meta does not depend on blob.
type Extent struct {
	Segment uint64 // segment ID
	Offset  int64  // offset of the record in the segment
	Length  int64  // bytes occupied in the segment (record framing included)
	Size    int64  // payload bytes
}

// Canned bucket ACLs.
const (
	ACLPrivate         = "private"
	ACLPublicRead      = "public-read"
	ACLPublicReadWrite = "public-read-write"
)

// Grant is one ACL grant: Permission (READ, WRITE, READ_ACP, WRITE_ACP or
// FULL_CONTROL) to Grantee, a canonical user id or a group URI.
type Grant struct {
	Grantee    string
	Permission string
}

// Object ownership settings of a bucket (OwnershipControls).
const (
	OwnershipBucketOwnerEnforced  = "BucketOwnerEnforced"
	OwnershipBucketOwnerPreferred = "BucketOwnerPreferred"
	OwnershipObjectWriter         = "ObjectWriter"
)

// PublicAccessBlock is a bucket's Block Public Access configuration.
type PublicAccessBlock struct {
	BlockPublicAcls       bool
	IgnorePublicAcls      bool
	BlockPublicPolicy     bool
	RestrictPublicBuckets bool
}

// Bucket is a bucket's configuration. The Name is the record's key; the
// configuration documents (CORS, lifecycle, tagging, policy) are kept as the
// raw bytes the client sent and parsed by the layers that use them.
type Bucket struct {
	Name      string
	Owner     string // access key of the creator
	Created   time.Time
	Region    string
	ACL       string // canned ACL, one of the ACL* constants
	CORS      []byte // raw XML, nil when unset
	Lifecycle []byte // raw XML, nil when unset
	Tagging   []byte // raw XML, nil when unset
	Policy    []byte // raw JSON, nil when unset

	// Versioning is the bucket's versioning state: "" (never enabled),
	// VersioningEnabled or VersioningSuspended. Once set it never returns
	// to "", as in S3.
	Versioning string
	// ObjectLock is true for a bucket created with Object Lock (its
	// versioning is Enabled for good); ObjectLockConfig is the raw
	// ObjectLockConfiguration XML (default retention), nil when unset.
	ObjectLock       bool
	ObjectLockConfig []byte

	// Grants, if not nil, is the bucket's ACL; nil means the canned ACL
	// named by ACL (records written before grants were stored).
	Grants []Grant
	// Ownership is one of the Ownership* constants; "" is a bucket made
	// before ownership controls existed (ACLs enabled, no controls set).
	Ownership string
	// PublicAccessBlock is nil when none is set.
	PublicAccessBlock *PublicAccessBlock

	// LLHLS makes the bucket a Low-Latency HLS origin: GETs of its .m3u8
	// keys honour the _HLS_ delivery directives (blocking reload, delta
	// updates; internal/hls). Off by default.
	LLHLS bool

	// Deleting: a deletion of the bucket is under way in a cluster of
	// several groups; writes that add data are refused until it ends
	// (package cluster).
	Deleting bool

	// Encryption is the bucket's default encryption
	// (ServerSideEncryptionConfiguration) as the raw XML the client sent,
	// nil when unset.
	Encryption []byte
}

// Encryption is what an encrypted object's record keeps of its key: the
// object's data key sealed (package sse), never the key itself nor, for
// SSE-C, the customer's key.
type Encryption struct {
	// Algorithm is how the data key is sealed: SSEAlgorithmS3 (a master
	// key of the key ring), SSEAlgorithmKMS (a named key of the key
	// ring) or SSEAlgorithmCustomer (the customer's key).
	Algorithm string
	// KeyID names the master key that sealed the data key ("" for SSE-C).
	KeyID string
	// SealedKey is the data key sealed under that key.
	SealedKey []byte
}

// Encryption algorithms of a record (Encryption.Algorithm).
const (
	SSEAlgorithmS3       = "AES256"
	SSEAlgorithmKMS      = "aws:kms"
	SSEAlgorithmCustomer = "SSE-C"
)

// Versioning states of a bucket.
const (
	VersioningEnabled   = "Enabled"
	VersioningSuspended = "Suspended"
)

// Object Lock retention modes.
const (
	LockGovernance = "GOVERNANCE"
	LockCompliance = "COMPLIANCE"
)

// PartSummary records one part of a completed multipart object, enough to
// answer GetObject?partNumber= and to verify a composite checksum.
type PartSummary struct {
	Number   int
	Size     int64
	ETag     string
	Checksum string
}

// Object is the record of the current version of one key. Bucket and Key
// come from the pebble key and are not stored in the value.
type Object struct {
	Bucket  string
	Key     string
	Version uint64 // from NextVersion: unique per write, larger is newer
	Size    int64
	ETag    string // quoted or not, as the engine chooses; stored verbatim
	// Modified is the time of the write (Last-Modified).
	Modified time.Time

	ContentType        string
	ContentEncoding    string
	ContentDisposition string
	ContentLanguage    string
	CacheControl       string
	Expires            string // the Expires header, verbatim
	UserMeta           map[string]string
	Tags               map[string]string

	ChecksumAlgorithm string // "CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME" or ""
	ChecksumType      string // "FULL_OBJECT" or "COMPOSITE"
	Checksum          string // base64

	// Expiry is when lifecycle expires the object; zero means never.
	Expiry time.Time
	// Parts is set for objects made by CompleteMultipartUpload.
	Parts []PartSummary
	// Extents hold the payload in order; their Sizes sum to Size.
	Extents []Extent
	Owner   string
	// Grants, if not nil, is the object's ACL; nil means the default:
	// FULL_CONTROL for the owner alone.
	Grants []Grant
	// Inline, if not nil, is the whole payload, kept in the record itself
	// (a small object: one metadata write, no segment record); Extents is
	// then empty. ListObjects and ScanObjects leave it out (payloadOmitted):
	// listings need no payload, and copying every one of them made a page
	// of small objects twice as slow.
	Inline []byte
	// SSE, if not nil, says the stored bytes (extents or Inline) are
	// ciphertext and holds what decrypts them (package sse): Size and the
	// parts' sizes are then the stored, encrypted sizes.
	SSE *Encryption

	// Versioned is true for a version with its own version ID, written
	// while its bucket's versioning was Enabled; false is S3's "null"
	// version (unversioned and suspended buckets, and every record written
	// before versioning existed).
	Versioned bool
	// DeleteMarker marks a delete marker: a version without data. Delete
	// markers live only among the versions ("v" table), never as a key's
	// current record.
	DeleteMarker bool
	// LockMode (LockGovernance, LockCompliance or "") and RetainUntil are
	// the version's Object Lock retention; LegalHold its legal hold. A
	// version under either cannot be deleted or replaced (see objstore).
	LockMode    string
	RetainUntil time.Time
	LegalHold   bool
	// LegalHoldSet records that a legal hold status, ON or OFF, was set
	// on the version (PutObjectLegalHold, or a write's legal-hold
	// header): GET and HEAD then report the status, OFF included, as AWS
	// does; a version never given one reports none.
	LegalHoldSet bool

	// IsLatest is set by ListVersions on the key's newest version; it is
	// not stored.
	IsLatest bool

	// payloadOmitted marks a record decoded without its inline payload. A
	// Batch refuses to write such a record back: it would drop the data.
	payloadOmitted bool
}

// Upload is a multipart upload in progress. Bucket, Key and UploadID come
// from the pebble key.
type Upload struct {
	Bucket   string
	Key      string
	UploadID string // UploadIDLen lowercase hex characters, see NewUploadID
	// Version is reserved at create and becomes the object's version when
	// the upload completes.
	Version   uint64
	Initiated time.Time
	Owner     string

	ContentType        string
	ContentEncoding    string
	ContentDisposition string
	ContentLanguage    string
	CacheControl       string
	Expires            string
	UserMeta           map[string]string
	Tags               map[string]string
	ChecksumAlgorithm  string
	ChecksumType       string
	// Grants is the ACL the object gets when the upload completes; nil
	// is the default (see Object.Grants).
	Grants []Grant
	// LockMode, RetainUntil and LegalHold are the Object Lock settings
	// asked for at create; the completed object gets them (see
	// Object.LockMode). An upload without them gets the bucket's default
	// retention at completion.
	LockMode    string
	RetainUntil time.Time
	LegalHold   bool
	// LegalHoldSet: the create named a legal hold, ON or OFF (see
	// Object.LegalHoldSet).
	LegalHoldSet bool
	// SSE, if not nil, is the encryption every part is written with; the
	// completed object takes it.
	SSE *Encryption
}

// Part is one uploaded part of a multipart upload. A re-uploaded part
// number replaces the previous record (the engine marks the old extents
// dead in the same batch).
type Part struct {
	UploadID string
	Number   int // 1..MaxPartNumber
	Size     int64
	ETag     string
	Checksum string // base64, of the part's ChecksumAlgorithm, "" if none
	Modified time.Time
	Extents  []Extent
}

// MaxPartNumber is S3's largest part number.
const MaxPartNumber = 10000
