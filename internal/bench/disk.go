package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DiskMode is one way of writing: through the page cache or around it
// (O_DIRECT), with or without an fdatasync after every write.
type DiskMode struct {
	Direct bool
	Sync   bool
}

func (m DiskMode) String() string {
	s := "buffered"
	if m.Direct {
		s = "direct"
	}
	if m.Sync {
		s += "+sync"
	}
	return s
}

// AllDiskModes is buffered, buffered+sync, direct, direct+sync.
var AllDiskModes = []DiskMode{{}, {Sync: true}, {Direct: true}, {Direct: true, Sync: true}}

// DiskConfig is the raw write test of a directory's filesystem and device.
type DiskConfig struct {
	Dir   string
	Sizes []int64 // write buffer sizes
	Modes []DiskMode
	// Each cell writes one file sequentially and stops at BytesPerCell or
	// MaxDuration, whichever comes first (at least one write).
	BytesPerCell int64
	MaxDuration  time.Duration
}

// directAlign is the buffer, offset and length alignment O_DIRECT needs on
// Linux for every common device (4 KiB logical sectors; 512-byte devices
// accept it too).
const directAlign = 4096

// DiskRunner runs the disk test.
type DiskRunner struct {
	Pool     *Pool
	Progress *Progress
	Log      io.Writer
}

// Run measures every size × mode and appends a cell for each ("write" op,
// latency per write() syscall — plus its fdatasync in sync modes). Files are
// removed after each cell, also when ctx is canceled.
//
// What it measures: buffered without sync is the page cache's speed (memory
// copies) until dirty pages throttle the writer; buffered+sync and direct
// modes reach the device. A direct write smaller than the device's logical
// sector is refused by the kernel; the cell then reports the error and a
// note.
func (d *DiskRunner) Run(ctx context.Context, cfg DiskConfig, rep *Report) error {
	if st, err := os.Stat(cfg.Dir); err != nil || !st.IsDir() {
		return fmt.Errorf("disk: %s is not a directory: %v", cfg.Dir, err)
	}
	var largest int64
	for _, s := range cfg.Sizes {
		largest = max(largest, s)
	}
	buf := alignedBuffer(largest)
	_, _ = d.Pool.Payload("disk", largest).ReadAt(buf, 0)
	for _, mode := range cfg.Modes {
		for _, size := range cfg.Sizes {
			if ctx.Err() != nil {
				return nil
			}
			cell, note, err := d.cell(ctx, cfg, mode, size, buf[:size])
			if err != nil {
				return err
			}
			if note != "" {
				rep.AddNote(d.Log, note)
			}
			rep.Cells = append(rep.Cells, cell)
		}
	}
	return nil
}

func (d *DiskRunner) cell(ctx context.Context, cfg DiskConfig, mode DiskMode, size int64, buf []byte) (Cell, string, error) {
	name := filepath.Join(cfg.Dir, fmt.Sprintf(".b3-bench-disk-%d-%s-%d", os.Getpid(), mode, size))
	f, direct, err := createForWrite(name, mode.Direct)
	if err != nil {
		return Cell{}, "", fmt.Errorf("disk: %w", err)
	}
	defer os.Remove(name)
	defer f.Close()
	var note string
	effective := mode
	if mode.Direct && !direct {
		effective.Direct = false
		note = fmt.Sprintf("O_DIRECT is not supported on %s; direct cells fell back to buffered writes (mode %q)", cfg.Dir, effective)
	}
	rec := NewRecorder()
	if d.Progress != nil {
		d.Progress.Track(fmt.Sprintf("disk %s %s", mode, FormatSize(size)), rec, time.Now().Add(cfg.MaxDuration))
	}
	fd := int(f.Fd())
	start := time.Now()
	var off int64
	for off == 0 || (off < cfg.BytesPerCell && time.Since(start) < cfg.MaxDuration && ctx.Err() == nil) {
		rec.Issue()
		t0 := time.Now()
		err := writeFull(fd, buf, off)
		if err == nil && mode.Sync {
			err = fdatasync(fd)
		}
		rec.Done(time.Since(t0), size, err)
		off += size
		if err != nil {
			if errors.Is(err, unix.EINVAL) && direct {
				note = fmt.Sprintf("O_DIRECT refused a %d-byte write on %s (smaller than the device sector?)", size, cfg.Dir)
			}
			break // one failure describes the cell; do not spin on it
		}
	}
	cell := rec.Cell(time.Since(start))
	cell.Op, cell.Mode, cell.Size, cell.Concurrency = "write", effective.String(), size, 1
	if note != "" {
		cell.Note = note
	}
	return cell, note, nil
}

// createForWrite opens name for writing with O_DIRECT if asked and possible,
// reporting whether direct I/O is in effect.
func createForWrite(name string, direct bool) (*os.File, bool, error) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if direct {
		f, err := os.OpenFile(name, flags|unix.O_DIRECT, 0o600)
		if err == nil {
			return f, true, nil
		}
		if !errors.Is(err, unix.EINVAL) {
			return nil, false, fmt.Errorf("create %s: %w", name, err)
		}
	}
	f, err := os.OpenFile(name, flags, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("create %s: %w", name, err)
	}
	return f, false, nil
}

// writeFull issues pwrite until buf is written: one syscall in practice.
func writeFull(fd int, buf []byte, off int64) error {
	for len(buf) > 0 {
		n, err := unix.Pwrite(fd, buf, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("pwrite %d bytes at %d: %w", len(buf), off, err)
		}
		buf, off = buf[n:], off+int64(n)
	}
	return nil
}

func fdatasync(fd int) error {
	for {
		err := unix.Fdatasync(fd)
		if err != unix.EINTR {
			if err != nil {
				return fmt.Errorf("fdatasync: %w", err)
			}
			return nil
		}
	}
}

// alignedBuffer returns size bytes (rounded up to directAlign) starting at a
// directAlign-aligned address, as O_DIRECT requires.
func alignedBuffer(size int64) []byte {
	n := (size + directAlign - 1) / directAlign * directAlign
	raw := make([]byte, n+directAlign)
	shift := (directAlign - int(uintptr(unsafe.Pointer(&raw[0]))%directAlign)) % directAlign
	return raw[shift : shift+int(n)]
}
