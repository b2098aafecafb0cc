//go:build !linux

package bench

import (
	"errors"
	"os"
)

// memFile: only Linux has memfd and /proc/self/fd; elsewhere uploads are
// sent from memory.
func memFile(string) (*os.File, string, error) {
	return nil, "", errors.New("no in-memory file on this system")
}
