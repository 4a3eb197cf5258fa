package storetest

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var sessionCases = []testCase{
	{"Lifecycle", testSessionLifecycle},
	{"Expiry", testSessionExpiry},
}

// session makes a console session named name, made at created and
// expiring at expires.
func (e *env) session(name string, created, expires int64) *store.ConsoleSession {
	e.t.Helper()
	h := sha256.Sum256([]byte(name))
	cs := &store.ConsoleSession{IDHash: h[:], Sealed: []byte("sealed " + name), CreatedAt: created, ExpiresAt: expires}
	if err := e.s.ConsoleSessionCreate(e.ctx, cs); err != nil {
		e.t.Fatalf("ConsoleSessionCreate(%s): %v", name, err)
	}
	return cs
}

// testSessionLifecycle: a session is found by its id's hash with what was
// stored, each apart from the others; deleted, it is NOT_FOUND, and a
// second delete, or one of a hash never stored, is no error. An id hash
// that is not 32 bytes is refused.
func testSessionLifecycle(t *testing.T, e *env) {
	a, b := e.session("a", T0, T0+Day), e.session("b", T0, T0+Day)
	for _, want := range []*store.ConsoleSession{a, b} {
		got, err := e.s.ConsoleSessionGet(e.ctx, want.IDHash, T0+1)
		if err != nil || !bytes.Equal(got.Sealed, want.Sealed) || got.CreatedAt != want.CreatedAt || got.ExpiresAt != want.ExpiresAt ||
			!bytes.Equal(got.IDHash, want.IDHash) {
			t.Fatalf("ConsoleSessionGet(%s): %+v %v, want %+v", want.Sealed, got, err, want)
		}
	}
	if err := e.s.ConsoleSessionDelete(e.ctx, a.IDHash); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.ConsoleSessionGet(e.ctx, a.IDHash, T0+1); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("a deleted session: %v, want NOT_FOUND", err)
	}
	if _, err := e.s.ConsoleSessionGet(e.ctx, b.IDHash, T0+1); err != nil {
		t.Fatalf("the other session after a delete: %v", err)
	}
	never := sha256.Sum256([]byte("never"))
	for _, h := range [][]byte{a.IDHash, never[:]} {
		if err := e.s.ConsoleSessionDelete(e.ctx, h); err != nil {
			t.Fatalf("deleting a session that is not there: %v", err)
		}
	}
	if err := e.s.ConsoleSessionCreate(e.ctx, &store.ConsoleSession{IDHash: []byte("short"), Sealed: []byte("x"), CreatedAt: T0, ExpiresAt: T0 + Day}); err == nil {
		t.Fatal("an id hash of 5 bytes was stored")
	}
}

// testSessionExpiry: a session is found until its expiry and NOT_FOUND
// from then on; a later create removes the sessions expired by its time
// (asked again with an earlier clock, the expired one is gone), and
// leaves the others.
func testSessionExpiry(t *testing.T, e *env) {
	short, long := e.session("short", T0, T0+1000), e.session("long", T0, T0+Day)
	if _, err := e.s.ConsoleSessionGet(e.ctx, short.IDHash, T0+999); err != nil {
		t.Fatalf("a session before its expiry: %v", err)
	}
	if _, err := e.s.ConsoleSessionGet(e.ctx, short.IDHash, T0+1000); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("a session at its expiry: %v, want NOT_FOUND", err)
	}
	if _, err := e.s.ConsoleSessionGet(e.ctx, short.IDHash, T0+1); err != nil {
		t.Fatalf("an expired session is still stored until a create removes it: %v", err)
	}
	e.session("later", T0+1000, T0+Day)
	if _, err := e.s.ConsoleSessionGet(e.ctx, short.IDHash, T0+1); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("an expired session after a later create: %v, want it removed", err)
	}
	if _, err := e.s.ConsoleSessionGet(e.ctx, long.IDHash, T0+1001); err != nil {
		t.Fatalf("an unexpired session after a later create: %v", err)
	}
}
