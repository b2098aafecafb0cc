package server

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/blob"
	"github.com/b3-storage/b3/internal/s3api"
)

// TestUserNamesUnique: a bucket policy naming a user by name must not
// extend to a second user added under that name, or under a name that is
// another user's access key: the admin API refuses such names (409).
func TestUserNamesUnique(t *testing.T) {
	ctx := context.Background()
	fixed := s3api.User{Name: "carol", AccessKey: "CAROLACCESSKEY000001", SecretKey: "carol/secret/0000000000000000000000000"}
	n := startNode(t, Config{Sync: blob.SyncNone, Users: []s3api.User{fixed}})
	root := n.client(t, "", "")
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("shared")}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("shared"), Key: aws.String("for-bob"), Body: strings.NewReader("bob's")}); err != nil {
		t.Fatal(err)
	}
	bob, err := n.admin.AddUser(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["bob"]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::shared/*"}]}`
	if _, err := root.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("shared"), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.client(t, bob.AccessKey, bob.Secret).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("shared"), Key: aws.String("for-bob")}); err != nil {
		t.Fatalf("bob reads what the policy gives bob: %v", err)
	}
	rootKey, _, err := LoadOrCreateCredentials(n.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bob", "BOB", "carol", "root", fixed.AccessKey, rootKey.AccessKey, bob.AccessKey} {
		u, err := n.admin.AddUser(ctx, name)
		if err == nil {
			_, gerr := n.client(t, u.AccessKey, u.Secret).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("shared"), Key: aws.String("for-bob")})
			t.Errorf("a second user named %q was added (reads bob's object: %v)", name, gerr == nil)
			continue
		}
		if !strings.Contains(err.Error(), "(409)") || !strings.Contains(err.Error(), "choose another name") {
			t.Errorf("add %q: want 409 and why, got %v", name, err)
		}
	}
	if _, err := n.admin.AddUser(ctx, "dave"); err != nil {
		t.Errorf("a new name: %v", err)
	}
	users, err := n.admin.Users(ctx)
	if err != nil || len(users) != 4 { // root, carol, bob, dave
		t.Errorf("users: %+v %v", users, err)
	}
}

// TestUserNameClashesLoad: a users file written before names were
// checked, with a name twice, still loads (nobody loses access at an
// upgrade), and the server warns naming the clash.
func TestUserNameClashesLoad(t *testing.T) {
	dir := t.TempDir()
	doc := `[{"name":"bob","access_key":"BOBONE00000000000001","secret_key":"bob/one/secret/00000000000000000000000"},
{"name":"bob","access_key":"BOBTWO00000000000002","secret_key":"bob/two/secret/00000000000000000000000"},
{"name":"BOBONE00000000000001","access_key":"EVE00000000000000003","secret_key":"eve/secret/0000000000000000000000000000"}]`
	if err := os.WriteFile(filepath.Join(dir, UsersFile), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	st, err := openUserStore(dir, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.List()) != 3 {
		t.Errorf("loaded %d users, want 3", len(st.List()))
	}
	out := logs.String()
	for _, want := range []string{`name \"bob\" is shared by access keys BOBONE00000000000001 and BOBTWO00000000000002`,
		`name \"BOBONE00000000000001\" of access key EVE00000000000000003 is the access key of another user`} {
		if !strings.Contains(out, want) {
			t.Errorf("no warning %s in:\n%s", want, out)
		}
	}
	if _, err := st.Add("bob"); err == nil {
		t.Error("a third bob was added")
	}
}
