package testutil

import (
	"io/fs"
	"path/filepath"
	"testing"
)

// CheckPrivate fails t for every directory under root (root included) that
// is not 0700 and every file that is not 0600: what b3 stores is readable
// by its own user only. It returns the number of files it checked.
func CheckPrivate(t testing.TB, root string) (files int) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else {
			files++
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
