package cluster

import (
	"errors"
	"testing"

	"github.com/b3-storage/b3/internal/admin"
)

// TestUserNamesUniqueApply: an add-user the leader marked UniqueName is
// refused by every replica's apply when its name is another user's name
// or access key (or its key another's name), the same way on each; an
// entry from before the check (no mark) applies as it always did, so a
// log replayed after an upgrade ends where a snapshot taken before it
// does.
func TestUserNamesUniqueApply(t *testing.T) {
	u, err := openUserState(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	add := func(x User, unique bool) error {
		return u.apply(&command{Op: opAddUser, User: &x, UniqueName: unique})
	}
	if err := add(User{Name: "root", AccessKey: "ROOTKEY", SecretKey: "s", Root: true}, true); err != nil {
		t.Fatal(err)
	}
	if err := add(User{Name: "bob", AccessKey: "BOB1", SecretKey: "s"}, true); err != nil {
		t.Fatal(err)
	}
	for _, x := range []User{
		{Name: "bob", AccessKey: "BOB2"},
		{Name: "Bob", AccessKey: "BOB3"},
		{Name: "ROOTKEY", AccessKey: "X1"},
		{Name: "eve", AccessKey: "bob"},
	} {
		x.SecretKey = "s"
		c := &command{Op: opAddUser, User: &x}
		if err := u.checkUserCommand(c); !errors.Is(err, admin.ErrUserConflict) || !c.UniqueName {
			t.Errorf("leader's check of %+v: %v (marked %v)", x, err, c.UniqueName)
		}
		if err := add(x, true); !errors.Is(err, admin.ErrUserConflict) {
			t.Errorf("apply %+v: %v, want a conflict", x, err)
		}
	}
	if n := len(u.snapshot()); n != 2 {
		t.Fatalf("%d users after refused adds, want 2", n)
	}
	// The same access key again is not a clash of names (whether it may
	// replace the user is the add-user's own rule).
	if err := u.checkUserCommand(&command{Op: opAddUser, User: &User{Name: "bob", AccessKey: "BOB1"}}); err != nil {
		t.Errorf("the user's own key: %v", err)
	}
	// An entry from before the check applies, and the clash is reported.
	if err := add(User{Name: "bob", AccessKey: "BOBOLD", SecretKey: "s"}, false); err != nil {
		t.Fatalf("an old entry: %v", err)
	}
	if c := u.clashes(); len(c) != 1 {
		t.Errorf("clashes: %q", c)
	}
}
