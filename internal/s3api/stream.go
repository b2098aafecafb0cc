package s3api

import "io"

// Uploads of unknown length (HTTP Transfer-Encoding: chunked without a
// Content-Length, as live encoders send them, or a POST form) cannot be
// checked against the maximum object size or the free-space reserve before
// their body is read. They are checked as they stream instead: every read
// passes a boundedBody, which refuses the bytes that would make the object
// too large or cut into the reserve before they reach objstore, so the
// upload fails as a whole (objstore discards what it appended) and nothing
// of it becomes visible.

// boundedBody bounds an upload body as it streams: a read that passes max
// returns tooLarge, and one the free-space reserve has no room for returns
// that error, in both cases without its bytes, so they never reach the
// store.
type boundedBody struct {
	src      io.Reader
	max      int64
	tooLarge error
	space    *spaceLease
	got      int64
}

func (f *boundedBody) Read(p []byte) (int, error) {
	if f.got > f.max {
		return 0, f.tooLarge
	}
	// Read at most one byte past max: enough to tell the body is too long.
	if room := f.max + 1 - f.got; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := f.src.Read(p)
	f.got += int64(n)
	if f.got > f.max {
		return 0, f.tooLarge
	}
	if serr := f.space.take(int64(n)); serr != nil {
		return 0, serr
	}
	f.space.use(int64(n))
	return n, err
}

// spaceLease holds free-space reservations (objstore.Store.Reserve) ahead
// of the bytes a body delivers, taken in steps as the body grows, and
// releases them all when the request ends.
type spaceLease struct {
	reserve  func(int64) (func(), error)
	ahead    int64 // reserved and not yet used
	releases []func()
}

// spaceLeaseStep is how much more a lease reserves when it runs out.
const spaceLeaseStep = 8 << 20

// take makes sure n more bytes are reserved.
func (l *spaceLease) take(n int64) error {
	if n <= l.ahead {
		return nil
	}
	size := max(n-l.ahead, spaceLeaseStep)
	release, err := l.reserve(size)
	if err != nil {
		return err
	}
	l.releases = append(l.releases, release)
	l.ahead += size
	return nil
}

func (l *spaceLease) use(n int64) { l.ahead -= n }

func (l *spaceLease) release() {
	for _, release := range l.releases {
		release()
	}
}
