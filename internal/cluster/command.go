package cluster

import (
	"encoding/json"
	"fmt"

	"github.com/b3-storage/b3/internal/meta"
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
}

// User is a cluster-wide S3 principal.
type User struct {
	Name      string `json:"name"`
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
	Root      bool   `json:"root,omitempty"`
}

func (c *command) encode() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("encode command %s: %v", c.Op, err)) // plain structs: cannot fail
	}
	return b
}

func decodeCommand(b []byte) (*command, error) {
	var c command
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("decode command: %w", err)
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
