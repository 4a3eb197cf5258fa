package storetest

import (
	"bytes"
	"crypto/sha256"
	"reflect"
	"slices"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var keyCases = []testCase{
	{"CreateGet", testKeyCreateGet},
	{"ExactDigest", testKeyExactDigest},
	{"Conflicts", testKeyConflicts},
	{"ByID", testKeyGet},
	{"List", testKeyList},
	{"Revoke", testKeyRevoke},
	{"RevokeOtherOrg", testKeyRevokeOtherOrg},
	{"Count", testKeyCount},
}

// digest returns the SHA-256 of secret, as auth makes it.
func digest(secret string) []byte {
	d := sha256.Sum256([]byte(secret))
	return d[:]
}

// key stores a key of org with grants, made at createdAt, and returns it.
func (e *env) key(org string, createdAt int64, grants ...store.Grant) *store.APIKey {
	e.t.Helper()
	id := e.id("key")
	k := &store.APIKey{
		ID: id, Org: org, Digest: digest("secret-" + id), Prefix: "errk_" + id[len(id)-4:],
		Grants: grants, CreatedAt: createdAt,
	}
	if err := e.s.KeyCreate(e.ctx, k); err != nil {
		e.t.Fatalf("KeyCreate(%s): %v", id, err)
	}
	return k
}

// sameKey fails the test unless got holds want's values; nil and empty
// grants are alike.
func sameKey(t *testing.T, what string, got, want *store.APIKey) {
	t.Helper()
	g, w := *got, *want
	if len(g.Grants) == 0 {
		g.Grants = nil
	}
	if len(w.Grants) == 0 {
		w.Grants = nil
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s = %+v, want %+v", what, g, w)
	}
}

func keyIDs(ks []*store.APIKey) []string {
	out := []string{}
	for _, k := range ks {
		out = append(out, k.ID)
	}
	return out
}

func testKeyCreateGet(t *testing.T, e *env) {
	k := e.key("acme", T0+7,
		store.Grant{Instance: "jobs", Role: "full"},
		store.Grant{Instance: "*", Role: "read"},
		store.Grant{Instance: "billing", Role: "write"})
	got, err := e.s.KeyByDigest(e.ctx, k.Digest)
	if err != nil {
		t.Fatal(err)
	}
	sameKey(t, "KeyByDigest", got, k)
	if got.RevokedAt != 0 {
		t.Fatalf("a new key is revoked at %d", got.RevokedAt)
	}
	// The returned key is the caller's own copy.
	got.Grants[0].Role = "none"
	got.Digest[0] ^= 0xff
	again, err := e.s.KeyByDigest(e.ctx, k.Digest)
	if err != nil {
		t.Fatal(err)
	}
	sameKey(t, "KeyByDigest after changing a returned key", again, k)

	// A key without grants round-trips too.
	bare := e.key("acme", T0+8)
	got, err = e.s.KeyByDigest(e.ctx, bare.Digest)
	if err != nil {
		t.Fatal(err)
	}
	sameKey(t, "KeyByDigest(no grants)", got, bare)
}

// testKeyExactDigest: only the whole digest finds a key; a prefix, an
// extension, a one-bit change, an empty or a nil digest find nothing.
func testKeyExactDigest(t *testing.T, e *env) {
	k := e.key("acme", T0, store.Grant{Instance: "*", Role: "full"})
	flipped := bytes.Clone(k.Digest)
	flipped[len(flipped)-1] ^= 1
	for what, d := range map[string][]byte{
		"prefix":    k.Digest[:16],
		"extended":  append(bytes.Clone(k.Digest), 0),
		"flipped":   flipped,
		"empty":     {},
		"nil":       nil,
		"other":     digest("no such key"),
		"hex-ascii": []byte("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
	} {
		_, err := e.s.KeyByDigest(e.ctx, d)
		wantCode(t, err, task.CodeNotFound, "KeyByDigest("+what+")")
	}
}

func testKeyConflicts(t *testing.T, e *env) {
	k := e.key("acme", T0)
	dupDigest := &store.APIKey{ID: e.id("key"), Org: "other", Digest: bytes.Clone(k.Digest), Prefix: "errk_x", CreatedAt: T0}
	if err := e.s.KeyCreate(e.ctx, dupDigest); err == nil {
		t.Fatal("KeyCreate with a digest already stored succeeded")
	}
	dupID := &store.APIKey{ID: k.ID, Org: "acme", Digest: digest("another"), Prefix: "errk_y", CreatedAt: T0}
	if err := e.s.KeyCreate(e.ctx, dupID); err == nil {
		t.Fatal("KeyCreate with an id already stored succeeded")
	}
	// Neither refused key was stored, and the first is intact.
	if n, err := e.s.KeyCount(e.ctx); err != nil || n != 1 {
		t.Fatalf("KeyCount = %d, %v; want 1", n, err)
	}
	if _, err := e.s.KeyByDigest(e.ctx, digest("another")); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("a refused key is findable: %v", err)
	}
	got, err := e.s.KeyByDigest(e.ctx, k.Digest)
	if err != nil {
		t.Fatal(err)
	}
	sameKey(t, "KeyByDigest after conflicts", got, k)
}

// testKeyList: an organization's keys oldest first, never another's; ""
// lists every organization's.
func testKeyList(t *testing.T, e *env) {
	got, err := e.s.KeyList(e.ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("KeyList on an empty store = %v", keyIDs(got))
	}
	b := e.key("acme", T0+20, store.Grant{Instance: "jobs", Role: "read"})
	a := e.key("acme", T0+10, store.Grant{Instance: "*", Role: "full"})
	o := e.key("globex", T0+15, store.Grant{Instance: "jobs", Role: "write"})
	c := e.key("acme", T0+30)
	if err := e.s.KeyRevoke(e.ctx, store.KeyRef{Org: "acme", ID: c.ID}, T0+40); err != nil {
		t.Fatal(err)
	}
	c.RevokedAt = T0 + 40

	got, err = e.s.KeyList(e.ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{a.ID, b.ID, c.ID}; !slices.Equal(keyIDs(got), want) {
		t.Fatalf("KeyList(acme) = %v, want %v (oldest first, revoked ones included)", keyIDs(got), want)
	}
	for i, want := range []*store.APIKey{a, b, c} {
		sameKey(t, "KeyList(acme)["+want.ID+"]", got[i], want)
	}
	got, err = e.s.KeyList(e.ctx, "globex")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{o.ID}; !slices.Equal(keyIDs(got), want) {
		t.Fatalf("KeyList(globex) = %v, want %v", keyIDs(got), want)
	}
	got, err = e.s.KeyList(e.ctx, "nobody")
	if err != nil || len(got) != 0 {
		t.Fatalf("KeyList(nobody) = %v, %v", keyIDs(got), err)
	}
	got, err = e.s.KeyList(e.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{a.ID, o.ID, b.ID, c.ID}; !slices.Equal(keyIDs(got), want) {
		t.Fatalf("KeyList(\"\") = %v, want %v", keyIDs(got), want)
	}
}

// testKeyRevoke: a revoked key is still found by its digest, carrying the
// time it was revoked, so that every reader refuses it at once; revoking
// again keeps the first time.
// testKeyGet: a key is found by its organization and id, revoked or not;
// another organization, an unknown id or an empty one find nothing.
func testKeyGet(t *testing.T, e *env) {
	k := e.key("acme", T0, store.Grant{Instance: "jobs", Role: "read"})
	e.key("acme", T0+1)
	got, err := e.s.KeyGet(e.ctx, store.KeyRef{Org: "acme", ID: k.ID})
	if err != nil {
		t.Fatal(err)
	}
	sameKey(t, "KeyGet", got, k)
	if err := e.s.KeyRevoke(e.ctx, store.KeyRef{Org: "acme", ID: k.ID}, T0+100); err != nil {
		t.Fatal(err)
	}
	if got, err = e.s.KeyGet(e.ctx, store.KeyRef{Org: "acme", ID: k.ID}); err != nil || got.RevokedAt != T0+100 {
		t.Fatalf("KeyGet of a revoked key = %+v, %v; want it, revoked at %d", got, err, T0+100)
	}
	for what, ref := range map[string]store.KeyRef{
		"another organization": {Org: "globex", ID: k.ID},
		"an unknown id":        {Org: "acme", ID: "no-such-key"},
		"an empty id":          {Org: "acme"},
	} {
		_, err := e.s.KeyGet(e.ctx, ref)
		wantCode(t, err, task.CodeNotFound, "KeyGet("+what+")")
	}
}

func testKeyRevoke(t *testing.T, e *env) {
	k := e.key("acme", T0, store.Grant{Instance: "*", Role: "full"})
	other := e.key("acme", T0+1, store.Grant{Instance: "*", Role: "full"})
	if err := e.s.KeyRevoke(e.ctx, store.KeyRef{Org: "acme", ID: k.ID}, T0+100); err != nil {
		t.Fatal(err)
	}
	got, err := e.s.KeyByDigest(e.ctx, k.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if got.RevokedAt != T0+100 {
		t.Fatalf("RevokedAt = %d, want %d", got.RevokedAt, T0+100)
	}
	if err := e.s.KeyRevoke(e.ctx, store.KeyRef{Org: "acme", ID: k.ID}, T0+200); err != nil {
		t.Fatalf("second KeyRevoke: %v", err)
	}
	got, err = e.s.KeyByDigest(e.ctx, k.Digest)
	if err != nil {
		t.Fatal(err)
	}
	want := *k
	want.RevokedAt = T0 + 100
	sameKey(t, "KeyByDigest after two revokes", got, &want)
	// The other key of the organization is untouched.
	got, err = e.s.KeyByDigest(e.ctx, other.Digest)
	if err != nil {
		t.Fatal(err)
	}
	sameKey(t, "the other key", got, other)
	wantCode(t, e.s.KeyRevoke(e.ctx, store.KeyRef{Org: "acme", ID: "no-such-key"}, T0), task.CodeNotFound, "KeyRevoke(missing)")
}

// testKeyRevokeOtherOrg: an organization cannot revoke another's key; the
// answer is the same as for a key that does not exist.
func testKeyRevokeOtherOrg(t *testing.T, e *env) {
	k := e.key("acme", T0, store.Grant{Instance: "*", Role: "full"})
	wantCode(t, e.s.KeyRevoke(e.ctx, store.KeyRef{Org: "globex", ID: k.ID}, T0+5), task.CodeNotFound, "KeyRevoke(foreign)")
	wantCode(t, e.s.KeyRevoke(e.ctx, store.KeyRef{Org: "", ID: k.ID}, T0+5), task.CodeNotFound, "KeyRevoke(org \"\")")
	got, err := e.s.KeyByDigest(e.ctx, k.Digest)
	if err != nil {
		t.Fatal(err)
	}
	sameKey(t, "a key another organization tried to revoke", got, k)
}

func testKeyCount(t *testing.T, e *env) {
	if n, err := e.s.KeyCount(e.ctx); err != nil || n != 0 {
		t.Fatalf("KeyCount on an empty store = %d, %v", n, err)
	}
	e.key("acme", T0)
	k := e.key("globex", T0)
	if err := e.s.KeyRevoke(e.ctx, store.KeyRef{Org: "globex", ID: k.ID}, T0+1); err != nil {
		t.Fatal(err)
	}
	if n, err := e.s.KeyCount(e.ctx); err != nil || n != 2 {
		t.Fatalf("KeyCount = %d, %v; want 2 (revoked keys count)", n, err)
	}
}
