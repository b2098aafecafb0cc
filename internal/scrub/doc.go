// Package scrub re-reads a store's segments and metadata in the background,
// long after they were written, to find what the disk lost — flipped bits,
// a truncated or deleted segment file — before a client does, and to say
// exactly which objects and which of their bytes are hit.
//
// # What a pass checks
//
// A pass is three sweeps over one store (an objstore.Store, through the
// Engine interface):
//
//  1. Segments, in ID order: every record of every segment is read and both
//     CRCs verified (blob.Store.CheckSegment), live and dead records alike.
//     What it finds is kept for the second sweep: the offsets of records
//     whose payload failed, and where a header that cannot be decoded
//     stopped the sweep of a segment.
//
//  2. Records, in metadata order (current objects, then noncurrent
//     versions): every object version whose bytes live in the segments has
//     its extents walked record by record (blob.Store.CheckValue): each
//     header's CRC, that it carries the object's key and version and the
//     chunk offset its place implies, that each extent holds the payload
//     the metadata says, and the payload verdict of sweep 1 (or, for a
//     record sweep 1 did not reach, its payload read and verified). This
//     is what a GET would verify, without the bytes going anywhere.
//
//  3. Metadata: every key and value of the metadata index read, a batch
//     at a time on a fresh view, so that pebble verifies the checksum of
//     every block (sweep 2 read the object records; this reads the rest
//     too). A damaged block stops the pass with pebble's error (Status's
//     LastError); Run tries again from there.
//
// Live bytes are thus read once (sweep 1) and their headers a second
// time. A version found damaged is read again from the metadata and
// checked again, so that a write, delete or vacuum move racing the pass is
// not reported.
//
// Not checked: the parts of multipart uploads still in progress (their
// records are in sweep 1, their metadata in sweep 3; a part damaged before
// its upload completes is found in the completed object by the next
// pass). Inline objects are metadata: sweep 3 reads them.
//
// # What it reports
//
// Status: whether a pass runs and where, the counts of the current (or
// last) pass, and the damaged object versions: bucket, key, version and
// the damaged byte ranges of each (offset and length in the object, the
// segment and file offset, the reason). While a pass runs, the list holds
// what it found so far plus what the last pass found at positions this
// one has not reached yet: the best knowledge at every moment. Every
// damaged version is logged at error level as it is found; Collector
// exports the counts and the list (bounded) to Prometheus. A pass lists
// at most MaxListed versions (the rest are counted and logged), and
// remembers at most 10,000 bad records per segment (past that, sweep 2
// reads that segment's payloads itself), so that a disk failing
// everywhere cannot grow the state without bound.
//
// # Pacing, resumption, schedule
//
// Every read is at background priority: it waits for client I/O and is
// paced with vacuum by the node's one pacer (iolimit.Pacer). The pass's
// position (the segment to sweep next, or the metadata position after the
// last version checked, with sweep 1's findings) is saved through
// Config.State at least every SaveEvery and at each step between sweeps,
// so a restart resumes the pass where it was (at most SaveEvery of work is
// done again; the findings are saved with the position they were found
// at, so work done again finds them again). A state that cannot be read
// is logged and replaced: it never keeps the store from starting. A pass starts Config.Interval after the last one ended
// (after the first start of the store when there was none), or at once on
// Start; Interval 0 leaves only Start.
//
// # Repair
//
// On a member of a replica group a damaged version can be fetched again
// from a healthy replica: Config.Repair, when set, is called for each
// damaged version, and one it repaired is counted (repaired) and not
// listed. Without it (b3 server) damage is only reported: reads of a
// damaged object keep failing (blob's Reader refuses the bytes), never
// returning other bytes, until the object is written again or deleted.
package scrub
