package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
)

// memTarget is an in-memory Target for tests. failEvery makes every n-th
// measured upload (key containing "/up/") fail with errInjected.
type memTarget struct {
	mu        sync.Mutex
	objects   map[string][]byte
	puts      int
	failEvery int
	deleted   int
}

var errInjected = errors.New("injected failure")

func newMemTarget() *memTarget { return &memTarget{objects: map[string][]byte{}} }

func (m *memTarget) Put(ctx context.Context, key string, body *Payload) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data := make([]byte, body.Len())
	if _, err := body.ReadAt(data, 0); err != nil && body.Len() > 0 {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if m.failEvery > 0 && m.puts%m.failEvery == 0 && strings.Contains(key, "/up/") {
		return errInjected
	}
	m.objects[key] = data
	return nil
}

func (m *memTarget) Get(ctx context.Context, key string, size int64, sink *Sink) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	data, ok := m.objects[key]
	m.mu.Unlock()
	if !ok {
		return 0, errors.New("NoSuchKey")
	}
	if _, err := copyPooled(sink, bytes.NewReader(data)); err != nil {
		return 0, err
	}
	return sink.Result(size)
}

func (m *memTarget) Delete(ctx context.Context, keys []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		if _, ok := m.objects[k]; ok {
			delete(m.objects, k)
			m.deleted++
		}
	}
	return nil
}

func (m *memTarget) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.objects)
}
