package bench

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// memFile creates an anonymous in-memory file (memfd) and the path that
// opens it again with a position of its own.
func memFile(name string) (*os.File, string, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, "", fmt.Errorf("memfd_create: %w", err)
	}
	return os.NewFile(uintptr(fd), name), fmt.Sprintf("/proc/self/fd/%d", fd), nil
}
