package auth

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// The API key format: KeyPrefix, then the lowercase hex of keyBytes random
// bytes (256 bits from crypto/rand, through internal/id). The prefix makes a
// key recognisable to people and to secret scanners; the fixed length and
// alphabet let a malformed token be refused without a store lookup.
const (
	KeyPrefix = "errk_"
	keyBytes  = 32
	// KeyLen is the length of a whole key.
	KeyLen = len(KeyPrefix) + 2*keyBytes
	// displayLen is how much of a key is stored in clear, for the operator
	// to recognise it in `errand keys list`: the prefix and 8 hex digits
	// (32 of the 256 bits).
	displayLen = len(KeyPrefix) + 8
)

// NewKey makes a new API key of org with grants, made at now. It returns
// the secret, to show once and never store, and the record to store: an id,
// the SHA-256 digest of the secret and its first characters.
func NewKey(org string, grants []store.Grant, now time.Time) (string, *store.APIKey, error) {
	if err := ValidateOrg(org); err != nil {
		return "", nil, err
	}
	if len(grants) == 0 {
		return "", nil, task.FieldErrorf(task.CodeInvalidArgument, "grant", "a key needs at least one grant (ROLE:INSTANCE)")
	}
	for _, g := range grants {
		if _, err := ParseGrant(g.Role + ":" + g.Instance); err != nil {
			return "", nil, err
		}
	}
	secret := KeyPrefix + id.Secret(keyBytes)
	k := &store.APIKey{
		ID:        id.New(now),
		Org:       org,
		Digest:    Digest(secret),
		Prefix:    secret[:displayLen],
		Grants:    append([]store.Grant(nil), grants...),
		CreatedAt: now.UnixMilli(),
	}
	return secret, k, nil
}

// Digest is what the store keeps of a secret: its SHA-256. A key carries
// 256 random bits, so a fast, unsalted hash is enough: there is nothing to
// guess that a slow hash would protect.
func Digest(secret string) []byte {
	d := sha256.Sum256([]byte(secret))
	return d[:]
}

// WellFormed reports whether s has the shape of an API key.
func WellFormed(s string) bool {
	if len(s) != KeyLen || !strings.HasPrefix(s, KeyPrefix) {
		return false
	}
	for _, c := range []byte(s[len(KeyPrefix):]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ValidateOrg checks an organization name: the same rule as an instance
// name (1–100 letters, digits, '-' and '_', starting with a letter or
// digit).
func ValidateOrg(org string) error {
	return task.ValidateQueueName(org, "org")
}

// ParseGrant parses ROLE:INSTANCE, where ROLE is read, write or full and
// INSTANCE an instance name or "*" for every instance.
func ParseGrant(s string) (store.Grant, error) {
	role, inst, ok := strings.Cut(s, ":")
	if !ok {
		return store.Grant{}, task.FieldErrorf(task.CodeInvalidArgument, "grant", "%q is not ROLE:INSTANCE (for example full:jobs or read:*)", s)
	}
	if _, ok := ParseRole(role); !ok {
		return store.Grant{}, task.FieldErrorf(task.CodeInvalidArgument, "grant", "%q: the role must be read, write or full", s)
	}
	if inst != "*" {
		if err := task.ValidateQueueName(inst, "grant"); err != nil {
			return store.Grant{}, task.FieldErrorf(task.CodeInvalidArgument, "grant", "%q: the instance must be a name or *", s)
		}
	}
	return store.Grant{Instance: inst, Role: role}, nil
}

// FormatGrants writes grants as ROLE:INSTANCE, comma separated.
func FormatGrants(gs []store.Grant) string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Role + ":" + g.Instance
	}
	return strings.Join(out, ",")
}

// PrincipalOf is the caller a stored key stands for: its organization and,
// per instance, the strongest role its grants give.
func PrincipalOf(k *store.APIKey) *Principal {
	p := &Principal{Org: k.Org, Grants: make(map[string]Role, len(k.Grants)), KeyID: k.ID, KeyDigest: k.Digest}
	for _, g := range k.Grants {
		if r, ok := ParseRole(g.Role); ok {
			p.Grants[g.Instance] = max(p.Grants[g.Instance], r)
		}
	}
	return p
}

// Keys authenticates API keys: `Authorization: Bearer <key>`, looked up by
// the SHA-256 digest of the key (exact match) in Store on every request.
//
// Keys itself keeps nothing; how soon a revocation (one UPDATE of the
// key's row) is seen depends on the store it is given. errand serve and
// the embedded engine give it the engine's store (engine.Engine.Store):
//
//   - on SQLite (one node) every call reads the row: a revoked key stops
//     working from the commit on;
//   - on PostgreSQL the engine caches the keys it found, by digest, to save
//     every call a round trip. A revocation through the engine or by
//     `errand keys revoke` sends a config notification, and every node
//     drops its copies when it hears it (milliseconds); a notification
//     lost, or a revocation written by another path, is seen when the copy
//     expires: a revoked key works on no node more than a second
//     (engine's cacheTTL) after the commit. A key not found is never kept.
//
// The lookup that reaches the store is one seek on a unique index.
type Keys struct {
	Store store.KeyStore
}

// Authenticate returns the key's principal, or ErrUnauthenticated for a
// missing, malformed, unknown or revoked key. A store that cannot answer is
// that store's error (UNAVAILABLE), not a 401.
func (k Keys) Authenticate(r *http.Request) (*Principal, error) {
	secret, ok := BearerToken(r)
	if !ok || !WellFormed(secret) {
		return nil, ErrUnauthenticated
	}
	key, err := k.Store.KeyByDigest(r.Context(), Digest(secret))
	if task.IsCode(err, task.CodeNotFound) {
		return nil, ErrUnauthenticated
	}
	if err != nil {
		return nil, fmt.Errorf("auth: looking the key up: %w", err)
	}
	if key.Revoked() {
		return nil, ErrUnauthenticated
	}
	return PrincipalOf(key), nil
}

// BearerToken returns the token of the request's one Authorization header
// of the Bearer scheme (the scheme name in any case, one space, no padding
// around the token).
func BearerToken(r *http.Request) (string, bool) {
	vs := r.Header.Values("Authorization")
	if len(vs) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(vs[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}
