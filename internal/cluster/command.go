package cluster

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
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
	// Delete is a deletion as the leader decided it (delete marker's
	// version and time, the Object Lock check's instant, governance
	// bypass); with opExpire, the marker a versioned bucket's expiry adds.
	Delete     *objstore.Deletion `json:"delete,omitempty"`
	OnlyMarker bool               `json:"only_marker,omitempty"`
}

// User is a cluster-wide S3 principal.
type User struct {
	Name      string `json:"name"`
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
	Root      bool   `json:"root,omitempty"`
}

// An encoded command is its JSON, except for a command carrying an inline
// object: its bytes then follow the JSON raw instead of inside it as
// base64, which every node would otherwise scan twice and decode in its
// (serial) apply:
//
//	'{' ... '}'                                  JSON only
//	withInline | uvarint len(JSON) | JSON | inline bytes
//
// No JSON text starts with withInline, so entries written before the
// second form existed decode as before.
const withInline = 0x02

func (c *command) encode() []byte {
	inline := c.Object != nil && len(c.Object.Inline) > 0
	v := c
	if inline {
		cc, obj := *c, *c.Object
		obj.Inline = nil
		cc.Object = &obj
		v = &cc
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode command %s: %v", c.Op, err)) // plain structs: cannot fail
	}
	if !inline {
		return b
	}
	out := make([]byte, 0, 1+binary.MaxVarintLen64+len(b)+len(c.Object.Inline))
	out = append(out, withInline)
	out = binary.AppendUvarint(out, uint64(len(b)))
	out = append(out, b...)
	return append(out, c.Object.Inline...)
}

func decodeCommand(b []byte) (*command, error) {
	var inline []byte
	if len(b) > 0 && b[0] == withInline {
		n, k := binary.Uvarint(b[1:])
		if k <= 0 || n > uint64(len(b)-1-k) {
			return nil, errors.New("decode command: bad length")
		}
		b, inline = b[1+k:1+k+int(n)], b[1+k+int(n):]
	}
	var c command
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("decode command: %w", err)
	}
	if inline != nil {
		if c.Object == nil {
			return nil, errors.New("decode command: inline bytes without an object")
		}
		c.Object.Inline = bytes.Clone(inline)
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
}

func (c *command) bytesRef(index uint64) (bytesRef, bool) {
	switch {
	case c.Op == opPutObject && c.Stage != 0:
		return bytesRef{Stage: c.Stage, Bucket: c.Object.Bucket, Key: c.Object.Key, Version: c.Object.Version, Index: index}, true
	case c.Op == opPutPart && c.Stage != 0:
		return bytesRef{Stage: c.Stage, Bucket: c.Name, Key: c.Key, Version: c.Version, UploadID: c.Part.UploadID, Part: c.Part.Number, Index: index}, true
	}
	return bytesRef{}, false
}
