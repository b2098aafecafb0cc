package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClusterSecretMinimum: the cluster secret's minimum holds for each
// way it arrives: given (B3_CLUSTER_SECRET, --cluster-secret-file) or the
// copy kept in the data directory from an earlier start (edited by hand).
func TestClusterSecretMinimum(t *testing.T) {
	dir := t.TempDir()
	if _, err := loadSecret(dir, " short-secret \n"); err == nil || !strings.Contains(err.Error(), "want at least 16") {
		t.Errorf("a short given secret: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, secretFile), []byte("short-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadSecret(dir, ""); err == nil || !strings.Contains(err.Error(), "want at least 16") {
		t.Errorf("a short kept secret: %v", err)
	}
	if s, err := loadSecret(dir, "sixteen-chars-ok\n"); err != nil || string(s) != "sixteen-chars-ok" {
		t.Errorf("a 16-character secret: %q %v", s, err)
	}
}
