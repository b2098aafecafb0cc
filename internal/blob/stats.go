package blob

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// BatchBuckets is the number of buckets of Stats.GroupBatchHist.
const BatchBuckets = 8

// FsyncBounds are the upper bounds of Stats.FsyncHist's buckets; its last
// bucket counts the fsyncs slower than all of them.
var FsyncBounds = [...]time.Duration{100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second}

// Stats are cumulative counters since Open.
type Stats struct {
	BytesAppended   int64 // record bytes (headers included) copied into segments
	PayloadAppended int64 // payload bytes of those records
	Records         int64 // records appended, by Append and CopyRecords
	RecordsCopied   int64 // of which by CopyRecords
	BytesRead       int64 // bytes read from segment files (readers, scans, copies)

	Fsyncs        int64 // segment fsyncs of any origin
	FsyncNanos    int64 // their total latency
	FsyncMaxNanos int64
	// FsyncHist counts fsyncs by latency: [i] those at most FsyncBounds[i]
	// (and above the bound before), the last those slower than every bound.
	FsyncHist       [len(FsyncBounds) + 1]int64
	GroupCommits    int64 // fsyncs issued by the group-commit syncer
	GroupWaiters    int64 // appenders they served; GroupWaiters/GroupCommits = mean batch
	GroupMaxWaiters int64
	// GroupBatchHist counts group commits by appenders served:
	// [0]=1, [1]=2-3, [2]=4-7, ... [7]=128 or more.
	GroupBatchHist [BatchBuckets]int64

	CorruptRecords int64 // records found corrupt by readers, scans and copies
	// MisdirectedRecords counts valid records a Reader refused because
	// they are not the value's (another owner's, or out of place): the
	// metadata disagrees with the segments. Also in CorruptRecords.
	MisdirectedRecords int64
	SegmentsCreated    int64
	SegmentsRemoved    int64
	Checkpoints        int64
}

type counters struct {
	bytesAppended, payloadAppended, records, recordsCopied, bytesRead   atomic.Int64
	fsyncs, fsyncNanos, fsyncMaxNanos                                   atomic.Int64
	groupCommits, groupWaiters, groupMaxWaiters                         atomic.Int64
	groupBatchHist                                                      [BatchBuckets]atomic.Int64
	fsyncHist                                                           [len(FsyncBounds) + 1]atomic.Int64
	corrupt, misdirected, segmentsCreated, segmentsRemoved, checkpoints atomic.Int64
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

func (c *counters) fsync(d time.Duration) {
	c.fsyncs.Add(1)
	c.fsyncNanos.Add(int64(d))
	storeMax(&c.fsyncMaxNanos, int64(d))
	b := 0
	for b < len(FsyncBounds) && d > FsyncBounds[b] {
		b++
	}
	c.fsyncHist[b].Add(1)
}

func (c *counters) groupCommit(waiters int) {
	c.groupCommits.Add(1)
	c.groupWaiters.Add(int64(waiters))
	storeMax(&c.groupMaxWaiters, int64(waiters))
	b := 0
	if waiters > 0 {
		b = min(bits.Len(uint(waiters))-1, BatchBuckets-1)
	}
	c.groupBatchHist[b].Add(1)
}

// Stats returns a snapshot of the counters.
func (s *Store) Stats() Stats {
	c := &s.stats
	st := Stats{
		BytesAppended:      c.bytesAppended.Load(),
		PayloadAppended:    c.payloadAppended.Load(),
		Records:            c.records.Load(),
		RecordsCopied:      c.recordsCopied.Load(),
		BytesRead:          c.bytesRead.Load(),
		Fsyncs:             c.fsyncs.Load(),
		FsyncNanos:         c.fsyncNanos.Load(),
		FsyncMaxNanos:      c.fsyncMaxNanos.Load(),
		GroupCommits:       c.groupCommits.Load(),
		GroupWaiters:       c.groupWaiters.Load(),
		GroupMaxWaiters:    c.groupMaxWaiters.Load(),
		CorruptRecords:     c.corrupt.Load(),
		MisdirectedRecords: c.misdirected.Load(),
		SegmentsCreated:    c.segmentsCreated.Load(),
		SegmentsRemoved:    c.segmentsRemoved.Load(),
		Checkpoints:        c.checkpoints.Load(),
	}
	for i := range st.GroupBatchHist {
		st.GroupBatchHist[i] = c.groupBatchHist[i].Load()
	}
	for i := range st.FsyncHist {
		st.FsyncHist[i] = c.fsyncHist[i].Load()
	}
	return st
}
