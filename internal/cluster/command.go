package cluster

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/partition"
)

// op names a replicated command.
type op string

const (
	opPutObject    op = "put"           // Object (+ Stage, or Object.Inline)
	opDeleteObject op = "delete"        // Name (bucket), Key
	opExpire       op = "expire"        // Name, Key, Version: lifecycle delete of that version
	opUpdateObject op = "update"        // Object: attributes of the same version
	opCreateBucket op = "create-bucket" // Bucket
	opPutBucket    op = "put-bucket"    // Bucket: settings of an existing bucket
	opDeleteBucket op = "delete-bucket" // Name
	opCreateUpload op = "create-upload" // Upload
	opPutPart      op = "put-part"      // Name, Key, Part (+ Stage), Version
	opComplete     op = "complete"      // Object, UploadID, Numbers
	opAbort        op = "abort"         // Name, Key, UploadID
	opAddUser      op = "add-user"      // User
	opRemoveUser   op = "remove-user"   // User.AccessKey

	// Versioning and Object Lock (versioning.go).
	opDeleteVersion op = "delete-version" // Name, Key, Delete: a deletion of any bucket
	opExpireVersion op = "expire-version" // Name, Key, Version, OnlyMarker, Delete.At: lifecycle removal of a noncurrent version or a lone delete marker
	opUpdateVersion op = "update-version" // Object: attributes of one version, current or not

	// An operator's declaration that the bytes of the command at
	// Lost.Index are lost: that version is removed everywhere (lost.go).
	opDeclareLost op = "declare-lost" // Lost

	// The cluster map's next epoch, in the first group's log (cmap.go).
	opMap op = "map" // Map
	// Another group's copy of the first group's buckets and users
	// (catalog.go).
	opCatalog op = "catalog" // Catalog
	// Moving partitions here (move.go): a record installed as the group
	// it leaves holds it, and records removed.
	opMigrate op = "migrate" // Object + Current (+ Stage, or Inline), or Upload, or Part + Name + Key + Stage
	opDrop    op = "drop"    // Drops
)

// command is one entry of the replicated log. It carries the outcome the
// leader decided (versions, times, upload IDs, attributes), never a rule
// to evaluate with a clock or a counter, so that every replica applying it
// ends in the same state. Object bytes do not travel in it except for
// small objects kept inline (Object.Inline); larger ones are named by
// Stage, the id of bytes each replica holds beside the log (stage.go).
type command struct {
	Op       op           `json:"op"`
	Object   *meta.Object `json:"object,omitempty"`
	Bucket   *meta.Bucket `json:"bucket,omitempty"`
	Upload   *meta.Upload `json:"upload,omitempty"`
	Part     *meta.Part   `json:"part,omitempty"`
	Name     string       `json:"name,omitempty"`
	Key      string       `json:"key,omitempty"`
	UploadID string       `json:"upload_id,omitempty"`
	Version  uint64       `json:"version,omitempty"`
	Numbers  []int        `json:"numbers,omitempty"`
	Stage    uint64       `json:"stage,omitempty"`
	User     *User        `json:"user,omitempty"`
	// UniqueName, on an add-user, has the apply refuse a user whose name
	// or access key clashes with another's (userState.conflict). Leaders
	// set it from the release that checks names on; entries older than
	// that apply as they did, so replaying them ends where a snapshot
	// taken before the upgrade does.
	UniqueName bool `json:"unique_name,omitempty"`
	// Delete is a deletion as the leader decided it (delete marker's
	// version and time, the Object Lock check's instant, governance
	// bypass); with opExpire, the marker a versioned bucket's expiry adds.
	Delete     *objstore.Deletion `json:"delete,omitempty"`
	OnlyMarker bool               `json:"only_marker,omitempty"`
	// Marked: an opDeleteBucket of a deletion across groups, applied only
	// while the bucket still carries its deletion mark (bucketdelete.go).
	Marked  bool           `json:"marked,omitempty"`
	Lost    *lostBytes     `json:"lost,omitempty"`
	Map     *partition.Map `json:"map,omitempty"`
	Catalog *catalog       `json:"catalog,omitempty"`
	Current bool           `json:"current,omitempty"`
	Drops   []dropRef      `json:"drops,omitempty"`
	// Encrypted, on a put-part, says the upload is encrypted (its
	// Upload.SSE): the part's bytes are ciphertext and its ETag is no MD5
	// of them (see bodyCheck). A put-object says it by Object.SSE.
	Encrypted bool `json:"encrypted,omitempty"`
}

// User is a cluster-wide S3 principal.
type User struct {
	Name      string `json:"name"`
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
	Root      bool   `json:"root,omitempty"`
}

// An encoded command is its JSON, except for a put: its object then
// follows the JSON in meta's record form (meta.AppendObject), the bytes of
// an inline object raw inside it, so that no node spends its (serial)
// apply parsing the object's JSON or the bytes' base64:
//
//	'{' ... '}'                                           JSON only
//	withInline | uvarint len(JSON) | JSON | inline bytes  (older entries)
//	withRecord | uvarint len(JSON) | JSON | string bucket | string key | object record
//
// (string: uvarint length, then the bytes.) The JSON of the last two
// forms is the command without the object's bytes (withInline) or without
// the object (withRecord). No JSON text starts with either byte, and
// entries written in an earlier form decode as before.
const (
	withInline = 0x02
	withRecord = 0x03
)

func (c *command) encode() []byte {
	if c.Op != opPutObject || c.Object == nil || !recordable(c.Object) {
		return c.json()
	}
	cc := *c
	cc.Object = nil
	b := cc.json()
	o := c.Object
	out := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(b)+len(o.Bucket)+len(o.Key)+160+len(o.Inline))
	out = append(out, withRecord)
	out = binary.AppendUvarint(out, uint64(len(b)))
	out = append(out, b...)
	out = appendString(out, o.Bucket)
	out = appendString(out, o.Key)
	return meta.AppendObject(out, o)
}

// recordable reports whether o decodes from its record form: a record
// holds either inline bytes, exactly Size of them, or extents.
func recordable(o *meta.Object) bool {
	return o.Inline == nil || (int64(len(o.Inline)) == o.Size && len(o.Extents) == 0)
}

func (c *command) json() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("encode command %s: %v", c.Op, err)) // plain structs: cannot fail
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errBadLength = errors.New("decode command: bad length")

// cut returns the uvarint-length-prefixed bytes at the start of b, and
// the rest.
func cut(b []byte) (field, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, errBadLength
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

func decodeCommand(b []byte) (*command, error) {
	var form byte
	var rest []byte
	if len(b) > 0 && (b[0] == withInline || b[0] == withRecord) {
		var err error
		form = b[0]
		if b, rest, err = cut(b[1:]); err != nil {
			return nil, err
		}
	}
	var c command
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("decode command: %w", err)
	}
	switch form {
	case withInline:
		if c.Object == nil {
			return nil, errors.New("decode command: inline bytes without an object")
		}
		c.Object.Inline = bytes.Clone(rest)
	case withRecord:
		if c.Object != nil {
			return nil, errors.New("decode command: an object twice")
		}
		bucket, rest, err := cut(rest)
		if err != nil {
			return nil, err
		}
		key, rest, err := cut(rest)
		if err != nil {
			return nil, err
		}
		if c.Object, err = meta.ReadObject(string(bucket), string(key), rest); err != nil {
			return nil, fmt.Errorf("decode command: %w", err)
		}
	}
	return &c, nil
}

// bytesRef names the bytes a put or put-part command refers to, so that a
// replica missing them can ask a peer.
type bytesRef struct {
	Stage    uint64
	Bucket   string
	Key      string
	Version  uint64
	UploadID string // with Part: a part's bytes
	Part     int
	Index    uint64 // the command's log position
	// want is what the bytes must be, when the command says (nil: it
	// does not); not sent to peers: the receiver checks.
	want *bodyCheck
}

func (c *command) bytesRef(index uint64) (bytesRef, bool) {
	switch {
	case c.Op == opPutObject && c.Stage != 0:
		return bytesRef{Stage: c.Stage, Bucket: c.Object.Bucket, Key: c.Object.Key, Version: c.Object.Version, Index: index,
			want: wantBody(c.Object.Size, c.Object.ETag, c.Object.SSE != nil)}, true
	case c.Op == opMigrate && c.Stage != 0 && c.Object != nil:
		return bytesRef{Stage: c.Stage, Bucket: c.Object.Bucket, Key: c.Object.Key, Version: c.Object.Version, Index: index,
			want: wantBody(c.Object.Size, c.Object.ETag, c.Object.SSE != nil)}, true
	case c.Op == opMigrate && c.Stage != 0 && c.Part != nil:
		return bytesRef{Stage: c.Stage, Bucket: c.Name, Key: c.Key, UploadID: c.Part.UploadID, Part: c.Part.Number, Index: index,
			want: wantBody(c.Part.Size, c.Part.ETag, c.Encrypted)}, true
	case c.Op == opPutPart && c.Stage != 0:
		return bytesRef{Stage: c.Stage, Bucket: c.Name, Key: c.Key, Version: c.Version, UploadID: c.Part.UploadID, Part: c.Part.Number, Index: index,
			want: wantBody(c.Part.Size, c.Part.ETag, c.Encrypted)}, true
	}
	return bytesRef{}, false
}

// bodyCheck is what a body must be: its size, and its MD5 sum where the
// record's ETag is one (a PUT's, a part's, a copy's: b3 computes them
// over the body it stores; a multipart object's is not, nor is the ETag
// of an encrypted body, computed over the plaintext).
type bodyCheck struct {
	size int64
	md5  []byte // nil: not an MD5 sum
}

func wantBody(size int64, etag string, encrypted bool) *bodyCheck {
	return &bodyCheck{size: size, md5: bodyMD5(etag, encrypted)}
}

// bodyMD5 is the MD5 sum of the stored body an ETag names, nil where it
// names none (a multipart ETag, an encrypted body's).
func bodyMD5(etag string, encrypted bool) []byte {
	if encrypted {
		return nil
	}
	if sum, err := hex.DecodeString(strings.Trim(etag, `"`)); err == nil && len(sum) == md5.Size {
		return sum
	}
	return nil
}

// errBadBody: bytes a peer gave are not those the command names (another
// version's, or corrupted on the way or on its disk).
var errBadBody = errors.New("its bytes are not those the command names")

// verify checks a body of size bytes whose MD5 sum is sum (nil: not
// computed) against w.
func (w *bodyCheck) verify(size int64, sum []byte) error {
	switch {
	case w == nil:
		return nil
	case size != w.size:
		return fmt.Errorf("%w: %d bytes, want %d", errBadBody, size, w.size)
	case w.md5 != nil && sum != nil && !bytes.Equal(sum, w.md5):
		return fmt.Errorf("%w: MD5 %x, want %x", errBadBody, sum, w.md5)
	}
	return nil
}
