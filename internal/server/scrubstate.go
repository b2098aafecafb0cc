package server

import (
	"os"
)

// ScrubStateFile, in the data root, keeps the scrub's position and its
// last pass's findings over restarts (package scrub).
const ScrubStateFile = "scrub.json"

// StateFile is a scrub.StateStore on one file, written with
// WriteFileSync (temporary file, fsync, rename, directory fsync).
type StateFile string

// Load reads the file; an error wrapping fs.ErrNotExist when absent.
func (f StateFile) Load() ([]byte, error) { return os.ReadFile(string(f)) }

// Save replaces the file durably.
func (f StateFile) Save(data []byte) error { return WriteFileSync(string(f), data, 0o600) }
