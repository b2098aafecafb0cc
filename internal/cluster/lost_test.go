package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/b3-storage/b3/internal/meta"
	"github.com/b3-storage/b3/internal/objstore"
)

// TestDeclareLostConverges: a replica that held the bytes of a put (it
// applied it with them) and one that waited for them and installed the
// record hollow once the put was declared lost hold the same records
// after each later command and after the declaration, which removes the
// version on both, whatever the bucket's versioning, a legal hold, or
// what the commands in between did. A lost part aborts its upload.
func TestDeclareLostConverges(t *testing.T) {
	big := strings.Repeat("L", 4096) // staged, not inline
	obj := func(key string, version uint64, hold bool) *meta.Object {
		return &meta.Object{Bucket: "b", Key: key, Version: version, Size: int64(len(big)), ETag: `"e"`, Modified: t0, LegalHold: hold}
	}
	cases := []struct {
		name       string
		versioning string
		hold       bool
		between    []*command // commands between the lost put (index 3) and the declaration
		want       []string   // records of b/k at the end
	}{
		{name: "unversioned", want: nil},
		{name: "unversioned, overwritten", between: []*command{{Op: opPutObject, Object: inlineObj("k", 30, "new")}},
			want: []string{"k cur v30 size 3"}},
		{name: "versioned", versioning: meta.VersioningEnabled, want: []string{"k cur v10 size 4096 versioned"}},
		{name: "versioned, legal hold", versioning: meta.VersioningEnabled, hold: true, want: []string{"k cur v10 size 4096 versioned"}},
		{name: "versioned, deleted since", versioning: meta.VersioningEnabled,
			between: []*command{{Op: opDeleteVersion, Name: "b", Key: "k", Delete: &objstore.Deletion{Marker: 40, Modified: t0, At: t0}}},
			want:    []string{"k v40 marker versioned", "k v10 size 4096 versioned"}},
		{name: "suspended", versioning: meta.VersioningSuspended, want: []string{"k cur v10 size 4096 versioned"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			held, waited := newReplica(t), newReplica(t)
			var states [][]string
			for _, r := range []*replica{held, waited} {
				f := &fsm{store: r.store, users: r.users, log: slog.Default()}
				bk := &meta.Bucket{Name: "b", Created: t0}
				if tc.versioning != "" {
					bk.Versioning = meta.VersioningEnabled
				}
				if err := r.store.ApplyPutBucket(bk, true, 1); err != nil {
					t.Fatal(err)
				}
				putBytes(t, r, obj("k", 10, false), big, 2)
				if tc.versioning == meta.VersioningSuspended {
					bk.Versioning = meta.VersioningSuspended
					if err := r.store.ApplyPutBucket(bk, false, 2); err != nil {
						t.Fatal(err)
					}
				}
				lost := &command{Op: opPutObject, Object: obj("k", 20, tc.hold), Stage: 7}
				var state []string
				if r == held {
					putBytes(t, r, lost.Object, big, 3)
				} else {
					got, err := f.applyHollow(lost, 3)
					if err != nil || !objstore.Hollow(got) {
						t.Fatalf("hollow install: %+v, %v", got, err)
					}
				}
				state = append(state, records(t, r)...)
				for i, c := range tc.between {
					if res, ok := f.applyVersioned(c, uint64(4+i)); ok && res.err != nil {
						t.Fatal(res.err)
					} else if !ok {
						if _, err := f.apply(c, uint64(4+i)); err != nil {
							t.Fatal(err)
						}
					}
					state = append(state, records(t, r)...)
				}
				decl := &command{Op: opDeclareLost, Lost: &lostBytes{Index: 3, Op: opPutObject, Bucket: "b", Key: "k", Version: 20, Actor: "test"}}
				if _, err := f.apply(decl, 9); err != nil {
					t.Fatal(err)
				}
				end := records(t, r)
				if !slices.Equal(end, tc.want) {
					t.Errorf("records after the declaration: %q, want %q", end, tc.want)
				}
				states = append(states, append(state, end...))
			}
			if !slices.Equal(states[0], states[1]) {
				t.Errorf("the replicas diverge:\nheld:   %q\nwaited: %q", states[0], states[1])
			}
		})
	}

	t.Run("part", func(t *testing.T) {
		for _, hollow := range []bool{false, true} {
			r := newReplica(t)
			f := &fsm{store: r.store, users: r.users, log: slog.Default()}
			up := meta.NewUploadID(50)
			r.bucket("b", 1)
			r.upload("b", "k", up, 50, 2)
			part := &command{Op: opPutPart, Name: "b", Key: "k", Version: 50, Part: &meta.Part{UploadID: up, Number: 1, Size: int64(len(big)), Modified: t0}, Stage: 8}
			if hollow {
				if _, err := f.applyHollow(part, 3); err != nil {
					t.Fatal(err)
				}
			} else {
				r.part("b", "k", 50, up, 1, big, 3)
			}
			decl := &command{Op: opDeclareLost, Lost: &lostBytes{Index: 3, Op: opPutPart, Bucket: "b", Key: "k", Version: 50, UploadID: up, Part: 1}}
			if _, err := f.apply(decl, 4); err != nil {
				t.Fatal(err)
			}
			if _, err := r.store.GetUpload("b", "k", up); !errors.Is(err, objstore.ErrNoSuchUpload) {
				t.Errorf("hollow %v: upload after its part was declared lost: %v, want aborted", hollow, err)
			}
			// Declared again (or its upload completed since): nothing to do.
			if _, err := f.apply(decl, 5); err != nil {
				t.Errorf("a second declaration: %v", err)
			}
		}
	})
}

func inlineObj(key string, version uint64, data string) *meta.Object {
	return &meta.Object{Bucket: "b", Key: key, Version: version, Size: int64(len(data)), Modified: t0, Inline: []byte(data)}
}

// putBytes installs obj with data staged in r's segments.
func putBytes(t *testing.T, r *replica, obj *meta.Object, data string, stamp uint64) {
	t.Helper()
	st, err := r.store.Stage(context.Background(), obj.Bucket, obj.Key, obj.Version, strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	o := *obj
	o.Extents = st.Extents
	if err := r.store.ApplyPutObject(&o, stamp); err != nil {
		t.Fatal(err)
	}
	st.Release()
}

// records lists r's records of bucket b (current, then versions), bytes
// aside: what every replica must agree on.
func records(t *testing.T, r *replica) []string {
	t.Helper()
	view := r.store.Meta().NewView()
	defer view.Close()
	var out []string
	show := func(current bool) func(o *meta.Object) error {
		return func(o *meta.Object) error {
			s := o.Key
			if current {
				s += " cur"
			}
			s += fmt.Sprintf(" v%d", o.Version)
			if o.DeleteMarker {
				s += " marker"
			} else {
				s += fmt.Sprintf(" size %d", o.Size)
			}
			if o.Versioned {
				s += " versioned"
			}
			out = append(out, s)
			return nil
		}
	}
	if err := view.ScanObjects(show(true)); err != nil {
		t.Fatal(err)
	}
	if err := view.ScanVersions(show(false)); err != nil {
		t.Fatal(err)
	}
	return out
}
