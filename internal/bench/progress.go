package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Progress prints a live status line on stderr about once a second: the
// current cell, operations, MB/s over the last interval, errors and time
// left. On a terminal the line is rewritten in place; otherwise one line is
// printed every 10 seconds so logs stay readable.
type Progress struct {
	w        io.Writer
	tty      bool
	mu       sync.Mutex
	label    string
	rec      *Recorder
	deadline time.Time
	stop     chan struct{}
	done     chan struct{}
	lastLen  int
}

// NewProgress starts the ticker; Close stops it.
func NewProgress(w io.Writer) *Progress {
	p := &Progress{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	go p.loop()
	return p
}

// Track switches the line to a new cell. deadline may be zero (count-bound).
func (p *Progress) Track(label string, rec *Recorder, deadline time.Time) {
	p.mu.Lock()
	p.label, p.rec, p.deadline = label, rec, deadline
	p.mu.Unlock()
}

func (p *Progress) loop() {
	defer close(p.done)
	interval := time.Second
	if !p.tty {
		interval = 10 * time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var lastBytes int64
	var lastRec *Recorder
	last := time.Now()
	for {
		select {
		case <-p.stop:
			if p.tty && p.lastLen > 0 {
				fmt.Fprint(p.w, "\r"+strings.Repeat(" ", p.lastLen)+"\r")
			}
			return
		case now := <-tick.C:
			p.mu.Lock()
			label, rec, deadline := p.label, p.rec, p.deadline
			p.mu.Unlock()
			if rec == nil {
				continue
			}
			ok, failed, bytes := rec.Counts()
			if rec != lastRec {
				lastBytes, lastRec = 0, rec
			}
			rate := float64(bytes-lastBytes) / 1e6 / now.Sub(last).Seconds()
			lastBytes, last = bytes, now
			left := "-"
			if !deadline.IsZero() {
				left = formatDuration(max(0, time.Until(deadline)))
			}
			line := fmt.Sprintf("%s  ops %d  %.1f MB/s  errors %d  left %s", label, ok, rate, failed, left)
			if p.tty {
				pad := ""
				if n := p.lastLen - len(line); n > 0 {
					pad = strings.Repeat(" ", n)
				}
				fmt.Fprint(p.w, "\r"+line+pad)
				p.lastLen = len(line)
			} else {
				fmt.Fprintln(p.w, line)
			}
		}
	}
}

// Close stops the line and clears it.
func (p *Progress) Close() {
	close(p.stop)
	<-p.done
}
