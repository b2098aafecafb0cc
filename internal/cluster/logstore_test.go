package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestLogStore(t *testing.T) {
	dir := t.TempDir()
	s, err := openLogStore(dir, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if first, err := s.FirstIndex(); err != nil || first != 0 {
		t.Fatalf("empty FirstIndex = %d, %v", first, err)
	}
	at := time.Unix(1700000000, 123)
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: i / 4, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(i)}, int(i)), AppendedAt: at})
	}
	logs[3].Extensions = []byte("ext")
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get([]byte("LastVoteCand")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing stable key: %v, want the error \"not found\"", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = openLogStore(dir, slog.Default()) // everything above was synced
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 4 || last != 10 {
		t.Fatalf("after DeleteRange(1,3): first %d last %d, want 4 and 10", first, last)
	}
	var got raft.Log
	if err := s.GetLog(2, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("deleted entry: %v", err)
	}
	for _, want := range logs[3:] {
		if err := s.GetLog(want.Index, &got); err != nil {
			t.Fatal(err)
		}
		if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) ||
			!bytes.Equal(got.Extensions, want.Extensions) || !got.AppendedAt.Equal(want.AppendedAt) {
			t.Fatalf("entry %d read back as %+v, want %+v", want.Index, got, *want)
		}
	}
	if term, err := s.GetUint64([]byte("CurrentTerm")); err != nil || term != 7 {
		t.Fatalf("CurrentTerm = %d, %v", term, err)
	}
	for _, bad := range [][]byte{nil, make([]byte, 20), append(encodeLog(logs[5]), 0)} {
		if err := decodeLog(1, bad, &got); err == nil {
			t.Fatalf("decodeLog accepted %d corrupt bytes", len(bad))
		}
	}
}
