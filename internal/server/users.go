package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/b3-storage/b3/internal/admin"
	"github.com/b3-storage/b3/internal/s3api"
)

// UsersFile holds the users added through the admin API, under the data
// root (mode 0600).
const UsersFile = "users.json"

// userStore is admin.UserStore over a JSON file: the fixed users (root,
// B3_USERS) plus the managed ones. Every change is written (temp file,
// fsync, rename) before the S3 API sees it.
type userStore struct {
	path  string
	fixed []s3api.User
	dir   *s3api.UserDirectory

	mu      sync.Mutex
	managed []s3api.User
}

func openUserStore(root string, fixed []s3api.User, log *slog.Logger) (*userStore, error) {
	st := &userStore{path: filepath.Join(root, UsersFile), fixed: fixed, dir: s3api.NewUserDirectory(nil)}
	var docs []credentialsDoc
	if _, err := ReadJSONFile(st.path, "users", &docs); err != nil {
		return nil, err
	}
	for _, d := range docs {
		st.managed = append(st.managed, s3api.User{Name: d.Name, AccessKey: d.AccessKey, SecretKey: d.SecretKey})
	}
	// Names were not checked before: a store (or B3_USERS) may hold a
	// name twice, or a name that is another user's access key. They load
	// as they are, so no one loses access at an upgrade, but policies and
	// grants naming them are ambiguous: say which, so the operator
	// removes one (b3 admin users remove).
	for _, clash := range s3api.UserClashes(st.all()) {
		log.Warn("user names clash: a policy or grant naming one applies to both; remove or replace one of them (docs/SECURITY.md)", "clash", clash)
	}
	st.publish()
	return st, nil
}

// all is every user, the managed first; st.mu held or not yet shared.
func (st *userStore) all() []s3api.User {
	return append(append([]s3api.User{}, st.managed...), st.fixed...)
}

// publish hands the S3 API the current set; st.mu held or not yet shared.
func (st *userStore) publish() {
	st.dir.Set(st.all()) // fixed win on a clash of access keys
}

func (st *userStore) save(users []s3api.User) error {
	docs := make([]credentialsDoc, 0, len(users))
	for _, u := range users {
		docs = append(docs, credentialsDoc{Name: u.Name, AccessKey: u.AccessKey, SecretKey: u.SecretKey})
	}
	data, _ := json.MarshalIndent(docs, "", "  ")
	if err := WriteFileSync(st.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("save users: %w", err)
	}
	return nil
}

func (st *userStore) List() []admin.User {
	st.mu.Lock()
	managed := map[string]bool{}
	for _, u := range st.managed {
		managed[u.AccessKey] = true
	}
	st.mu.Unlock()
	var out []admin.User
	for _, u := range st.dir.List() {
		out = append(out, admin.User{Name: u.Name, AccessKey: u.AccessKey, Managed: managed[u.AccessKey], Admin: u.Admin,
			CanonicalID: s3api.CanonicalID(u.AccessKey)})
	}
	return out
}

func (st *userStore) Add(name string) (admin.User, error) {
	u := NewUser(name)
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s3api.UserConflict(st.all(), u); err != nil {
		return admin.User{}, fmt.Errorf("%w: %v", admin.ErrUserConflict, err)
	}
	next := append(append([]s3api.User{}, st.managed...), u)
	if err := st.save(next); err != nil {
		return admin.User{}, err
	}
	st.managed = next
	st.publish()
	return admin.User{Name: u.Name, AccessKey: u.AccessKey, Secret: u.SecretKey, Managed: true,
		CanonicalID: s3api.CanonicalID(u.AccessKey)}, nil
}

func (st *userStore) Remove(accessKey string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	var next []s3api.User
	for _, u := range st.managed {
		if u.AccessKey != accessKey {
			next = append(next, u)
		}
	}
	if len(next) == len(st.managed) {
		return admin.ErrNoSuchUser
	}
	if err := st.save(next); err != nil {
		return err
	}
	st.managed = next
	st.publish()
	return nil
}

// AdminTokenFile holds the generated admin token under the data root.
const AdminTokenFile = "admin-token"

// LoadOrCreateAdminToken returns the admin token kept in root, generating
// one (mode 0600) on first start.
func LoadOrCreateAdminToken(root string) (string, error) {
	path := filepath.Join(root, AdminTokenFile)
	data, err := os.ReadFile(path)
	if err == nil {
		tok := string(trimSpace(data))
		if tok == "" {
			return "", fmt.Errorf("admin token file %s is empty (delete it to generate a new token)", path)
		}
		if err := minLen("the admin token in "+path, tok); err != nil {
			return "", fmt.Errorf("%w (delete the file to generate a new token)", err)
		}
		return tok, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read admin token: %w", err)
	}
	tok := randomString(40, upperAlnum+"abcdefghijklmnopqrstuvwxyz")
	if err := WriteFileSync(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("save admin token: %w", err)
	}
	return tok, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}
