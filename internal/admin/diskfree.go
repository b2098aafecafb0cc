package admin

import "golang.org/x/sys/unix"

// diskFree is the space an unprivileged writer can still use on dir's
// file system.
func diskFree(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil //nolint:unconvert // field types differ by GOARCH
}
