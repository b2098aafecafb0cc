package mount

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTarAndRsync archives a tree of the mount with tar and copies it out
// with rsync, twice. The objects were written through the S3 API, so the
// mount first learns of them from a listing (times in milliseconds) and
// then from a GET (Last-Modified in seconds): a file's times must not
// change between the two, or tar fails with "file changed as we read it"
// and every rsync copies every file again.
func TestTarAndRsync(t *testing.T) {
	e := newEnv(t)
	want := map[string][]byte{}
	for i := range 12 {
		rel := fmt.Sprintf("d%d/f%02d", i%3, i)
		want[rel] = pattern(300+i, 1000*i+1)
		e.putObject("tree/"+rel, want[rel])
	}
	same := func(how, root string) {
		t.Helper()
		for rel, body := range want {
			got, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil || !bytes.Equal(got, body) {
				t.Errorf("%s: %s has %d bytes (%v), want %d", how, rel, len(got), err, len(body))
			}
		}
	}

	archive := filepath.Join(t.TempDir(), "tree.tar")
	e.run("tar", "-cf", archive, "-C", e.dir, "tree") // tar exits 1 when a file changed as it read it
	extracted := t.TempDir()
	e.run("tar", "-xf", archive, "-C", extracted)
	same("tar", filepath.Join(extracted, "tree"))

	copied := t.TempDir()
	e.run("rsync", "-a", e.path("tree")+"/", copied+"/")
	same("rsync", copied)
	if again := strings.TrimSpace(e.run("rsync", "-a", "--itemize-changes", e.path("tree")+"/", copied+"/")); again != "" {
		t.Errorf("a second rsync of an unchanged tree copied again:\n%s", again)
	}
}
