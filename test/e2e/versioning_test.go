package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBoto3Versioning runs boto3_versioning.py: random versioned
// histories (suspended buckets, delete markers, single-version deletes)
// against a model of AWS's rules, thousands of versions paged, Object
// Lock refusals, and buckets emptied through ListObjectVersions as
// Terraform's force_destroy does.
func TestBoto3Versioning(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs("boto3_versioning.py")
	if err != nil {
		t.Fatal(err)
	}
	out := runTool(t, "python3", script, "--endpoint", env.endpoint, "--bucket", "e2e-versions")
	if !strings.Contains(out, "boto3 versioning: OK") {
		t.Fatalf("boto3 versioning session did not finish:\n%s", out)
	}
}
