package server

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/b3-storage/b3/internal/s3api"
)

// CredentialsFile is the name of the generated credentials under the data
// root.
const CredentialsFile = "credentials.json"

type credentialsDoc struct {
	Name      string `json:"name"`
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
}

// LoadOrCreateCredentials returns the root user kept in dir, generating
// and saving one (mode 0600) if there is none. created says which.
func LoadOrCreateCredentials(dir string) (user s3api.User, created bool, err error) {
	path := filepath.Join(dir, CredentialsFile)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		var doc credentialsDoc
		if err := json.Unmarshal(data, &doc); err != nil || doc.AccessKey == "" || doc.SecretKey == "" {
			return s3api.User{}, false, fmt.Errorf("credentials file %s is malformed (delete it to generate new credentials)", path)
		}
		return s3api.User{Name: doc.Name, AccessKey: doc.AccessKey, SecretKey: doc.SecretKey}, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return s3api.User{}, false, fmt.Errorf("read credentials: %w", err)
	}
	user = NewUser("root")
	data, _ = json.MarshalIndent(credentialsDoc{Name: user.Name, AccessKey: user.AccessKey, SecretKey: user.SecretKey}, "", "  ")
	if err := WriteFileSync(path, append(data, '\n'), 0o600); err != nil {
		return s3api.User{}, false, fmt.Errorf("save credentials: %w", err)
	}
	return user, true, nil
}

const (
	upperAlnum     = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	secretAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
)

func randomString(n int, alphabet string) string {
	buf := make([]byte, n)
	_, _ = rand.Read(buf) // never fails (crypto/rand panics rather)
	for i, b := range buf {
		buf[i] = alphabet[int(b)%len(alphabet)]
	}
	return string(buf)
}

// NewUser returns a user with a fresh access key and secret.
func NewUser(name string) s3api.User {
	return s3api.User{Name: name, AccessKey: "B3" + randomString(18, upperAlnum), SecretKey: randomString(40, secretAlphabet)}
}

// ReadJSONFile reads the JSON file path, as WriteFileSync wrote it, into
// v. A file that does not exist is no error: found is false and v is
// left as it was. what names the content in errors ("users").
func ReadJSONFile(path, what string, v any) (found bool, err error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s: %w", what, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return true, fmt.Errorf("%s file %s is malformed: %w", what, path, err)
	}
	return true, nil
}

// WriteFileSync writes a new file atomically and durably: temp file,
// fsync, rename, fsync of the directory.
func WriteFileSync(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	// The rename is durable once the directory is synced.
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ParseUsers parses B3_USERS: "name:accesskey:secret[,...]".
func ParseUsers(spec string) ([]s3api.User, error) {
	var users []s3api.User
	for entry := range strings.SplitSeq(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		parts := strings.SplitN(entry, ":", 3)
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return nil, fmt.Errorf("user %q: want name:accesskey:secret", entry)
		}
		users = append(users, s3api.User{Name: parts[0], AccessKey: parts[1], SecretKey: parts[2]})
	}
	return users, nil
}
