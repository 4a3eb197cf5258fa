package auth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var now = time.UnixMilli(1_790_000_000_000)

func TestNewKey(t *testing.T) {
	grants := []store.Grant{{Instance: "jobs", Role: "full"}, {Instance: "*", Role: "read"}}
	seen := map[string]bool{}
	for range 100 {
		secret, k, err := auth.NewKey("acme", grants, now)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(secret, "errk_") || len(secret) != auth.KeyLen || !auth.WellFormed(secret) {
			t.Fatalf("secret %q", secret)
		}
		if seen[secret] {
			t.Fatal("two keys alike")
		}
		seen[secret] = true
		d := sha256.Sum256([]byte(secret))
		if !bytes.Equal(k.Digest, d[:]) {
			t.Fatal("digest is not the SHA-256 of the secret")
		}
		if k.Org != "acme" || k.CreatedAt != now.UnixMilli() || k.RevokedAt != 0 || len(k.ID) != 21 {
			t.Fatalf("key %+v", k)
		}
		if !strings.HasPrefix(secret, k.Prefix) || len(k.Prefix) != len("errk_")+8 {
			t.Fatalf("prefix %q of %q", k.Prefix, secret)
		}
		if auth.FormatGrants(k.Grants) != "full:jobs,read:*" {
			t.Fatalf("grants %v", k.Grants)
		}
	}
	for _, c := range []struct {
		org    string
		grants []store.Grant
	}{
		{"", grants},
		{"no spaces", grants},
		{"acme", nil},
		{"acme", []store.Grant{{Instance: "jobs", Role: "admin"}}},
		{"acme", []store.Grant{{Instance: "", Role: "read"}}},
		{"acme", []store.Grant{{Instance: "a:b", Role: "read"}}},
	} {
		if _, _, err := auth.NewKey(c.org, c.grants, now); !task.IsCode(err, task.CodeInvalidArgument) {
			t.Errorf("NewKey(%q, %v) = %v, want INVALID_ARGUMENT", c.org, c.grants, err)
		}
	}
}

func TestParseGrant(t *testing.T) {
	for s, want := range map[string]store.Grant{
		"read:jobs":  {Instance: "jobs", Role: "read"},
		"write:*":    {Instance: "*", Role: "write"},
		"full:a-b_1": {Instance: "a-b_1", Role: "full"},
	} {
		g, err := auth.ParseGrant(s)
		if err != nil || g != want {
			t.Errorf("ParseGrant(%q) = %+v, %v", s, g, err)
		}
	}
	for _, s := range []string{"", "full", "full:", ":jobs", "admin:jobs", "Full:jobs", "full:jobs:x", "full:**", "full:-x"} {
		if _, err := auth.ParseGrant(s); !task.IsCode(err, task.CodeInvalidArgument) {
			t.Errorf("ParseGrant(%q) = %v, want INVALID_ARGUMENT", s, err)
		}
	}
}

// memKeys is an in-memory KeyStore.
type memKeys struct {
	mu   sync.Mutex
	keys []*store.APIKey
	err  error
}

func (m *memKeys) KeyCreate(_ context.Context, k *store.APIKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *k
	m.keys = append(m.keys, &c)
	return nil
}

func (m *memKeys) KeyByDigest(_ context.Context, d []byte) (*store.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	for _, k := range m.keys {
		if bytes.Equal(k.Digest, d) {
			c := *k
			return &c, nil
		}
	}
	return nil, task.ErrNotFound
}

func (m *memKeys) KeyList(context.Context, string) ([]*store.APIKey, error) { return nil, nil }

func (m *memKeys) KeyGet(context.Context, store.KeyRef) (*store.APIKey, error) {
	return nil, task.ErrNotFound
}

func (m *memKeys) KeyRevoke(_ context.Context, ref store.KeyRef, at int64) error {
	org, id := ref.Org, ref.ID
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.keys {
		if k.Org == org && k.ID == id {
			k.RevokedAt = at
			return nil
		}
	}
	return task.ErrNotFound
}

func (m *memKeys) KeyCount(context.Context) (int, error) { return len(m.keys), nil }

func TestKeysAuthenticate(t *testing.T) {
	ks := &memKeys{}
	mk := func(grants ...string) (string, *store.APIKey) {
		var gs []store.Grant
		for _, s := range grants {
			g, err := auth.ParseGrant(s)
			if err != nil {
				t.Fatal(err)
			}
			gs = append(gs, g)
		}
		secret, k, err := auth.NewKey("acme", gs, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := ks.KeyCreate(t.Context(), k); err != nil {
			t.Fatal(err)
		}
		return secret, k
	}
	good, gk := mk("read:*", "full:jobs", "write:jobs", "write:billing")
	revoked, rk := mk("full:*")
	if err := ks.KeyRevoke(t.Context(), store.KeyRef{Org: "acme", ID: rk.ID}, now.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	unknown, _, _ := auth.NewKey("acme", []store.Grant{{Instance: "*", Role: "full"}}, now)
	a := auth.Keys{Store: ks}
	req := func(h ...string) (*auth.Principal, error) {
		r := httptest.NewRequest("GET", "/v1/instances", nil)
		for _, v := range h {
			r.Header.Add("Authorization", v)
		}
		return a.Authenticate(r)
	}

	p, err := req("Bearer " + good)
	if err != nil {
		t.Fatal(err)
	}
	if p.Org != "acme" || p.KeyID != gk.ID || p.Dev {
		t.Fatalf("principal %+v", p)
	}
	for inst, want := range map[string]auth.Role{"jobs": auth.RoleFull, "billing": auth.RoleWrite, "other": auth.RoleRead} {
		if got := p.RoleOn(inst); got != want {
			t.Errorf("RoleOn(%s) = %s, want %s", inst, got, want)
		}
	}
	if _, err := req("bearer " + good); err != nil {
		t.Errorf("the scheme is case-insensitive: %v", err)
	}

	for what, h := range map[string][]string{
		"none":              nil,
		"revoked":           {"Bearer " + revoked},
		"unknown":           {"Bearer " + unknown},
		"empty":             {""},
		"scheme only":       {"Bearer"},
		"scheme and space":  {"Bearer "},
		"basic":             {"Basic " + good},
		"no scheme":         {good},
		"two spaces":        {"Bearer  " + good},
		"trailing space":    {"Bearer " + good + " "},
		"two headers":       {"Bearer " + good, "Bearer " + good},
		"truncated":         {"Bearer " + good[:len(good)-1]},
		"extended":          {"Bearer " + good + "0"},
		"uppercase hex":     {"Bearer " + strings.ToUpper(good[:5]) + good[5:]},
		"other prefix":      {"Bearer errx_" + good[5:]},
		"not hex":           {"Bearer " + good[:len(good)-1] + "g"},
		"the stored prefix": {"Bearer " + gk.Prefix},
	} {
		if p, err := req(h...); err != auth.ErrUnauthenticated || p != nil {
			t.Errorf("%s: %v, %v; want UNAUTHENTICATED", what, p, err)
		}
	}

	// A revocation shows on the very next call: nothing is cached.
	if err := ks.KeyRevoke(t.Context(), store.KeyRef{Org: "acme", ID: gk.ID}, now.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if _, err := req("Bearer " + good); err != auth.ErrUnauthenticated {
		t.Fatalf("after revoke: %v", err)
	}

	// A store that cannot answer is its own error, not a 401.
	ks.err = task.Errorf(task.CodeUnavailable, "down")
	if _, err := req("Bearer " + unknown); !task.IsCode(err, task.CodeUnavailable) {
		t.Fatalf("store down: %v", err)
	}
}
