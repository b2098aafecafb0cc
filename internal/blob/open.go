package blob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/b3-storage/b3/internal/vfs"
)

// Open opens (creating if needed) the store in opts.Dir and recovers it.
//
// Recovery, in order:
//  1. List the segment files. All but the last are sealed: they were
//     fsynced before their successor was created, so they are trusted.
//  2. Read CHECKPOINT. If it names the last segment, every byte before its
//     offset is durable and valid; the scan starts there, else at 0.
//  3. Scan the last segment verifying both CRCs, and cut the file at the
//     first invalid record (Truncate + Sync). Everything ever acknowledged
//     precedes the synced position (see groupCommit), and the synced
//     position is a record boundary, so the first invalid record after the
//     checkpoint is the end of the acknowledged data: what follows is a
//     torn or unacknowledged tail.
//  4. Continue appending to the last segment, its partial last block
//     loaded into the write buffer.
func Open(opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{
		opts:     opts,
		fs:       opts.FS,
		log:      opts.Logger,
		pool:     newBufPool(opts.WriteBuffer, opts.FlushQueue+2),
		segments: map[uint64]*segment{},
	}
	s.chunkPool.New = func() any { b := make([]byte, opts.ChunkSize); return &b }
	s.readPool.New = func() any { b := make([]byte, s.readBufSize()); return &b }
	s.ckpt.every = opts.CheckpointBytes

	// The directory entry itself must survive a crash, or every segment
	// in it would vanish with it.
	if err := vfs.MkdirAllDurable(s.fs, opts.Dir); err != nil {
		return nil, fmt.Errorf("blob: create %s: %w", opts.Dir, err)
	}
	ids, err := s.listSegments()
	if err != nil {
		return nil, err
	}
	var synced position
	if len(ids) == 0 {
		w, err := s.createSegment(1)
		if err != nil {
			return nil, err
		}
		s.setActive(w)
		synced = position{1, 0}
	} else {
		for _, id := range ids[:len(ids)-1] {
			size, err := s.fs.Stat(s.segmentPath(id))
			if err != nil {
				return nil, fmt.Errorf("blob: stat segment %016x: %w", id, err)
			}
			s.segments[id] = &segment{id: id, size: size}
		}
		last := ids[len(ids)-1]
		w, err := s.recoverLast(last)
		if err != nil {
			return nil, err
		}
		s.setActive(w)
		s.segments[last] = &segment{id: last, writer: w}
		synced = position{last, w.end.Load()}
	}

	s.commit.init(synced)
	if opts.Sync == SyncBatch {
		go s.syncLoop()
	} else {
		close(s.commit.done)
	}
	s.ckpt.kick = make(chan struct{}, 1)
	s.ckpt.quit = make(chan struct{})
	s.ckpt.done = make(chan struct{})
	go s.checkpointLoop(opts.CheckpointInterval)
	return s, nil
}

func (s *Store) listSegments() ([]uint64, error) {
	names, err := s.fs.List(s.opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("blob: list %s: %w", s.opts.Dir, err)
	}
	var ids []uint64
	for _, name := range names {
		hex, ok := strings.CutSuffix(name, ".seg")
		if !ok || len(hex) != 16 {
			continue
		}
		id, err := strconv.ParseUint(hex, 16, 64)
		if err != nil || id == 0 {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// recoverLast cuts the torn tail of the last segment and opens it for
// appending.
func (s *Store) recoverLast(id uint64) (*segWriter, error) {
	f, err := s.fs.OpenReadWrite(s.segmentPath(id))
	if err != nil {
		return nil, fmt.Errorf("blob: open segment %016x: %w", id, err)
	}
	w, err := s.recoverFile(id, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func (s *Store) recoverFile(id uint64, f vfs.File) (*segWriter, error) {
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("blob: size of segment %016x: %w", id, err)
	}
	var from int64
	ck, err := readCheckpoint(s.fs, s.opts.Dir)
	switch {
	case err != nil && !vfs.IsNotExist(err):
		s.log.Warn("blob: ignoring checkpoint", "err", err)
	case err == nil && ck.segment == id && ck.offset <= size:
		from = ck.offset
	case err == nil && ck.segment == id:
		s.log.Warn("blob: checkpoint past the end of the last segment; scanning it whole",
			"segment", id, "checkpoint", ck.offset, "size", size)
	}
	s.ckpt.last = ck

	start := time.Now()
	sc := newScanner(context.Background(), s, f, id, from, size)
	var end int64
	var stop error
	for stop == nil {
		_, end, stop = sc.next()
	}
	if !errors.Is(stop, errEndOfData) && !errors.Is(stop, errBadHeader) &&
		!errors.Is(stop, errShortRecord) && !errors.Is(stop, errBadPayload) {
		return nil, fmt.Errorf("blob: recover segment %016x: %w", id, stop)
	}
	if end < size {
		level := slog.LevelWarn
		if errors.Is(stop, errEndOfData) {
			level = slog.LevelDebug // zero padding of the last block
		}
		s.log.Log(context.Background(), level, "blob: cutting segment tail", "segment", id, "valid", end, "size", size, "reason", stop)
		if err := f.Truncate(end); err != nil {
			return nil, fmt.Errorf("blob: truncate segment %016x to %d: %w", id, end, err)
		}
	}
	// Sync even without a cut: after a process kill the data may still sit
	// in the page cache, and it counts as durable from here on.
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("blob: sync segment %016x: %w", id, err)
	}
	s.log.Debug("blob: recovered segment", "ckpt", ck, "stop", stop, "segment", id, "scanned_from", from, "end", end, "took", time.Since(start))

	prefix := make([]byte, end-alignDown(end))
	if len(prefix) > 0 {
		if err := s.readAt(context.Background(), f, id, prefix, alignDown(end)); err != nil {
			return nil, err
		}
	}
	return newSegWriter(id, f, false, s.pool, s.opts.FlushQueue, end, prefix, s.setFailed), nil
}
