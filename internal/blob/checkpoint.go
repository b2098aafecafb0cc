package blob

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path"
	"sync"
	"time"

	"github.com/b3-storage/b3/internal/vfs"
)

// The CHECKPOINT file bounds the recovery scan of the last segment:
//
//	 0       4               12              20      24
//	+-------+---------------+---------------+-------+
//	| magic |   segment     |    offset     |  crc  |
//	+-------+---------------+---------------+-------+
//
//	magic   "B3CP"
//	segment segment ID, offset a record boundary in it; every byte before
//	        (segment, offset) was durable when the file was written
//	crc     crc32c of bytes [0,20)
//
// It is replaced atomically: written to CHECKPOINT.tmp, synced, renamed,
// directory synced. A missing or invalid checkpoint only makes the next
// Open scan the whole last segment.
const (
	checkpointName  = "CHECKPOINT"
	checkpointMagic = "B3CP"
	checkpointSize  = 24
)

func encodeCheckpoint(p position) []byte {
	b := make([]byte, checkpointSize)
	copy(b, checkpointMagic)
	binary.LittleEndian.PutUint64(b[4:], p.segment)
	binary.LittleEndian.PutUint64(b[12:], uint64(p.offset))
	binary.LittleEndian.PutUint32(b[20:], crc32.Checksum(b[:20], castagnoli))
	return b
}

func decodeCheckpoint(b []byte) (position, error) {
	if len(b) != checkpointSize || string(b[:4]) != checkpointMagic ||
		binary.LittleEndian.Uint32(b[20:]) != crc32.Checksum(b[:20], castagnoli) {
		return position{}, errors.New("invalid checkpoint")
	}
	return position{binary.LittleEndian.Uint64(b[4:]), int64(binary.LittleEndian.Uint64(b[12:]))}, nil
}

func readCheckpoint(fs vfs.FS, dir string) (position, error) {
	f, err := fs.Open(path.Join(dir, checkpointName))
	if err != nil {
		return position{}, err
	}
	defer f.Close()
	b := make([]byte, checkpointSize+1)
	n, _ := f.ReadAt(b, 0)
	return decodeCheckpoint(b[:n])
}

// writeCheckpoint persists p, which must be durable already.
func (s *Store) writeCheckpoint(p position) error {
	tmp := path.Join(s.opts.Dir, checkpointName+".tmp")
	f, _, err := s.fs.Create(tmp, false)
	if err != nil {
		return fmt.Errorf("blob: checkpoint: %w", err)
	}
	_, err = f.WriteAt(encodeCheckpoint(p), 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.fs.Rename(tmp, path.Join(s.opts.Dir, checkpointName))
	}
	if err == nil {
		err = s.fs.SyncDir(s.opts.Dir)
	}
	if err != nil {
		return fmt.Errorf("blob: checkpoint: %w", err)
	}
	s.stats.checkpoints.Add(1)
	s.ckpt.mu.Lock()
	if s.ckpt.last.less(p) {
		s.ckpt.last = p
	}
	s.ckpt.mu.Unlock()
	return nil
}

// checkpointer writes checkpoints in the background, off the fsync path:
// the syncer only kicks it when synced progress passed CheckpointBytes
// (or a new segment); a ticker catches slower progress.
type checkpointer struct {
	mu    sync.Mutex
	last  position // last checkpoint written
	every int64
	kick  chan struct{}
	quit  chan struct{}
	done  chan struct{}
}

// progress tells the checkpointer that p is durable.
func (c *checkpointer) progress(p position) {
	c.mu.Lock()
	due := p.segment != c.last.segment || p.offset-c.last.offset >= c.every
	c.mu.Unlock()
	if due {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

func (c *checkpointer) stop() {
	if c.quit == nil {
		return
	}
	select {
	case <-c.quit:
	default:
		close(c.quit)
	}
	<-c.done
}

func (s *Store) checkpointLoop(interval time.Duration) {
	c := &s.ckpt
	defer close(c.done)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-c.kick:
		case <-ticker.C:
		case <-c.quit:
			return
		}
		p := s.commit.syncedPos()
		c.mu.Lock()
		stale := c.last.less(p)
		c.mu.Unlock()
		if !stale {
			continue
		}
		if err := s.writeCheckpoint(p); err != nil {
			s.log.Warn("blob: writing checkpoint failed", "err", err)
		}
	}
}
