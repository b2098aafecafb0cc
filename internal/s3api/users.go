package s3api

import (
	"sort"
	"sync"
)

// UserDirectory is the set of users, changeable while the server runs (the
// admin API adds and removes access keys). It is the verifier's credential
// source, so a removed key is refused from the next request on.
type UserDirectory struct {
	mu    sync.RWMutex
	byKey map[string]User
}

// NewUserDirectory returns a directory holding users.
func NewUserDirectory(users []User) *UserDirectory {
	d := &UserDirectory{}
	d.Set(users)
	return d
}

// Set replaces every user.
func (d *UserDirectory) Set(users []User) {
	m := make(map[string]User, len(users))
	for _, u := range users {
		m[u.AccessKey] = u
	}
	d.mu.Lock()
	d.byKey = m
	d.mu.Unlock()
}

// Lookup returns the user of an access key.
func (d *UserDirectory) Lookup(accessKey string) (User, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	u, ok := d.byKey[accessKey]
	return u, ok
}

// SecretKey implements s3auth.Credentials.
func (d *UserDirectory) SecretKey(accessKey string) (string, bool) {
	u, ok := d.Lookup(accessKey)
	return u.SecretKey, ok
}

// List returns the users ordered by access key.
func (d *UserDirectory) List() []User {
	d.mu.RLock()
	out := make([]User, 0, len(d.byKey))
	for _, u := range d.byKey {
		out = append(out, u)
	}
	d.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].AccessKey < out[j].AccessKey })
	return out
}
