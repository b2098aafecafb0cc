package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"

	"github.com/b3-storage/b3/internal/vfs"
)

// logStore is raft's LogStore and StableStore on a pebble directory of its
// own (DATA/raft), apart from the metadata: the log is written on every
// entry and truncated in ranges, a different life from the object index.
//
// Keys:
//
//	"l" index (u64 big-endian)  ->  one encoded raft.Log (see encodeLog)
//	"s" name                    ->  stable value (current term, last vote)
//
// Every write is synced (pebble.Sync) before it returns: raft acknowledges
// an entry to its leader, and counts its own vote, only after StoreLogs and
// Set return, so those must be durable then.
type logStore struct {
	db *pebble.DB
}

var _ raft.LogStore = (*logStore)(nil)
var _ raft.StableStore = (*logStore)(nil)

func openLogStore(dir string, log *slog.Logger) (*logStore, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{log}, FS: vfs.PrivateDisk()}) // holds inline objects: private like the store
	if err != nil {
		return nil, fmt.Errorf("open raft log in %s: %w", dir, err)
	}
	return &logStore{db: db}, nil
}

func (s *logStore) Close() error { return s.db.Close() }

func logKey(index uint64) []byte { return binary.BigEndian.AppendUint64([]byte{'l'}, index) }
func stableKey(k []byte) []byte  { return append([]byte{'s'}, k...) }

var (
	logLower = []byte{'l'}
	logUpper = []byte{'l' + 1}
)

// encodeLog lays one entry out as:
//
//	term u64 | type u8 | appendedAt unix ns i64 | len(data) u32 | data | len(ext) u32 | ext
func encodeLog(l *raft.Log) []byte {
	b := make([]byte, 0, 8+1+8+4+len(l.Data)+4+len(l.Extensions))
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	b = binary.BigEndian.AppendUint64(b, uint64(l.AppendedAt.UnixNano()))
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Extensions)))
	return append(b, l.Extensions...)
}

var errCorruptLog = errors.New("cluster: corrupt raft log entry")

func decodeLog(index uint64, b []byte, l *raft.Log) error {
	if len(b) < 8+1+8+4 {
		return errCorruptLog
	}
	l.Index = index
	l.Term = binary.BigEndian.Uint64(b)
	l.Type = raft.LogType(b[8])
	l.AppendedAt = time.Unix(0, int64(binary.BigEndian.Uint64(b[9:])))
	n := int(binary.BigEndian.Uint32(b[17:]))
	b = b[21:]
	if len(b) < n+4 {
		return errCorruptLog
	}
	l.Data = append([]byte(nil), b[:n]...)
	b = b[n:]
	m := int(binary.BigEndian.Uint32(b))
	b = b[4:]
	if len(b) != m {
		return errCorruptLog
	}
	l.Extensions = nil
	if m > 0 {
		l.Extensions = append([]byte(nil), b...)
	}
	return nil
}

func (s *logStore) edge(last bool) (uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logLower, UpperBound: logUpper})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	ok := it.First()
	if last {
		ok = it.Last()
	}
	if !ok {
		return 0, it.Error()
	}
	return binary.BigEndian.Uint64(it.Key()[1:]), nil
}

func (s *logStore) FirstIndex() (uint64, error) { return s.edge(false) }
func (s *logStore) LastIndex() (uint64, error)  { return s.edge(true) }

func (s *logStore) GetLog(index uint64, l *raft.Log) error {
	v, closer, err := s.db.Get(logKey(index))
	if errors.Is(err, pebble.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	return decodeLog(index, v, l)
}

func (s *logStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *logStore) StoreLogs(logs []*raft.Log) error {
	b := s.db.NewBatch()
	defer b.Close()
	for _, l := range logs {
		if err := b.Set(logKey(l.Index), encodeLog(l), nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.Sync)
}

func (s *logStore) DeleteRange(min, max uint64) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(logKey(min), logKey(max+1), nil); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}

func (s *logStore) Set(k, v []byte) error {
	return s.db.Set(stableKey(k), v, pebble.Sync)
}

func (s *logStore) Get(k []byte) ([]byte, error) {
	v, closer, err := s.db.Get(stableKey(k))
	if errors.Is(err, pebble.ErrNotFound) {
		// raft recognises a missing key by this error text (raft-boltdb's).
		return nil, errors.New("not found")
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

func (s *logStore) SetUint64(k []byte, v uint64) error {
	return s.Set(k, binary.BigEndian.AppendUint64(nil, v))
}

func (s *logStore) GetUint64(k []byte) (uint64, error) {
	v, err := s.Get(k)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("cluster: stable value %q of %d bytes", k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// pebbleLogger keeps pebble's informational chatter out of the node's log
// and passes its errors on.
type pebbleLogger struct{ log *slog.Logger }

func (pebbleLogger) Infof(string, ...any) {}
func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error("raft log store: " + fmt.Sprintf(format, args...))
}
func (pebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
