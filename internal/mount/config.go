package mount

import (
	"errors"
	"fmt"
	"log"
	"time"
)

// Config is what `b3 mount` was asked for.
type Config struct {
	Bucket string
	Prefix string // "" or ending in "/"

	ReadOnly   bool
	AllowOther bool
	UID, GID   uint32
	FileMode   uint32 // permission bits of files, e.g. 0644
	DirMode    uint32 // permission bits of directories, e.g. 0755

	// MetadataTTL bounds how long the kernel and this mount trust a name,
	// attributes or a directory listing before asking the server again.
	MetadataTTL time.Duration
	// NegativeTTL is how long the kernel trusts that a name does not exist.
	NegativeTTL time.Duration
	// DirCacheSize bounds the number of directory listings kept.
	DirCacheSize int

	// PartSize is the multipart part size of uploads (at least 5 MiB);
	// files smaller than one part are a single PutObject.
	PartSize int
	// UploadConcurrency is the number of parts in flight per file.
	UploadConcurrency int
	// WriteBuffers bounds the part buffers of all uploads together.
	WriteBuffers int

	// ReadPartSize is the size of one ranged GET of read-ahead.
	ReadPartSize int
	// ReadAhead is the largest read-ahead window of one open file.
	ReadAhead int
	// ReadBuffers bounds the read-ahead buffers of all open files.
	ReadBuffers int
	// SmallFile: objects up to this size are read with one GET.
	SmallFile int

	// DirectIO bypasses the kernel's page cache (see openFlags).
	DirectIO bool

	// SDKRequests sends every request through the SDK client; otherwise
	// GetObject, PutObject and UploadPart go as plain signed HTTP requests built
	// from that client's configuration (direct.go).
	SDKRequests bool
	// SignPayload puts the SHA-256 of every body in the signature of
	// those plain requests, as the SDK client was told to (else
	// UNSIGNED-PAYLOAD).
	SignPayload bool

	Log   *log.Logger
	Debug bool // log every FUSE request
}

const minPartSize = 5 << 20

func (c *Config) validate() error {
	switch {
	case c.Bucket == "":
		return errors.New("no bucket")
	case c.PartSize < minPartSize || int64(c.PartSize) > 5<<30:
		return fmt.Errorf("part size %d: must be between 5 MiB and 5 GiB", c.PartSize)
	case c.UploadConcurrency < 1 || c.WriteBuffers < 1 || c.ReadBuffers < 1:
		return errors.New("concurrency and buffer counts must be at least 1")
	case c.ReadPartSize < 64<<10 || c.ReadAhead < c.ReadPartSize:
		return errors.New("read part size must be at least 64 KiB and read-ahead at least one read part")
	case c.DirCacheSize < 1:
		return errors.New("directory cache size must be at least 1")
	}
	return nil
}
