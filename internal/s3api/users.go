package s3api

import (
	"fmt"
	"sort"
	"strings"
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

// Names and access keys share one namespace. Bucket policies name a
// principal by access key or by user name, aws:username is the name, and
// ACL grants by e-mail address resolve a name: a second user called like
// another (or called like another's access key) would be granted what was
// granted to the first. So a user's name is unique among the names, case
// aside (grants by e-mail compare names so), and differs from every other
// user's access key; an access key likewise differs from every other
// user's name. Compared case-insensitively throughout.

// UserConflict reports why u cannot join others (nil: it can). A user of
// others with u's access key is u itself (or the one u replaces) and is
// not compared.
func UserConflict(others []User, u User) error {
	for _, o := range others {
		if o.AccessKey == u.AccessKey {
			continue
		}
		switch {
		case u.Name != "" && strings.EqualFold(u.Name, o.Name):
			return fmt.Errorf("user name %q is taken by access key %s", u.Name, o.AccessKey)
		case u.Name != "" && strings.EqualFold(u.Name, o.AccessKey):
			return fmt.Errorf("user name %q is another user's access key", u.Name)
		case o.Name != "" && strings.EqualFold(u.AccessKey, o.Name):
			return fmt.Errorf("access key %s is the name of another user (access key %s)", u.AccessKey, o.AccessKey)
		}
	}
	return nil
}

// UserClashes describes every pair of users whose names clash, or whose
// name is another's access key (see UserConflict), in a stable order. A
// store made before names were checked may hold such pairs: they load,
// and the server warns with these.
func UserClashes(users []User) []string {
	byName := map[string][]User{}
	byKey := map[string]User{}
	for _, u := range users {
		if u.Name != "" {
			byName[strings.ToLower(u.Name)] = append(byName[strings.ToLower(u.Name)], u)
		}
		byKey[strings.ToLower(u.AccessKey)] = u
	}
	var out []string
	for _, same := range byName {
		for i := 1; i < len(same); i++ {
			if same[i].AccessKey != same[0].AccessKey {
				out = append(out, fmt.Sprintf("name %q is shared by access keys %s and %s", same[i].Name, same[0].AccessKey, same[i].AccessKey))
			}
		}
		if k, ok := byKey[strings.ToLower(same[0].Name)]; ok {
			for _, u := range same {
				if u.AccessKey != k.AccessKey {
					out = append(out, fmt.Sprintf("name %q of access key %s is the access key of another user", u.Name, u.AccessKey))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}
