// Package auth holds who a caller is and what it may do: principals, roles
// and the authenticators that make them from a request.
package auth

import (
	"net/http"

	"github.com/errandhq/errand/internal/task"
)

// Role is a grant level on an instance; each includes the ones below it.
type Role int

// The roles, weakest first.
const (
	RoleNone  Role = iota
	RoleRead       // list, get
	RoleWrite      // add, run, cancel, retry, lease, ack, extend, release
	RoleFull       // queues, triggers, settings, purge, delete, webhook key
)

// String returns the role's name as grants spell it.
func (r Role) String() string {
	switch r {
	case RoleRead:
		return "read"
	case RoleWrite:
		return "write"
	case RoleFull:
		return "full"
	}
	return "none"
}

// ParseRole parses read, write or full.
func ParseRole(s string) (Role, bool) {
	switch s {
	case "read":
		return RoleRead, true
	case "write":
		return RoleWrite, true
	case "full":
		return RoleFull, true
	}
	return RoleNone, false
}

// Principal is an authenticated caller: an organization and its grants per
// instance name ("*" for every instance).
type Principal struct {
	Org    string
	Grants map[string]Role
	// KeyID names the API key (for a subscribe token, the key that minted
	// it), for logs and for an open subscription's checks; "" in dev.
	KeyID string
	// KeyDigest is the key's stored digest (for a subscribe token, the
	// minting key's), which signs the subscribe tokens it mints and finds
	// the key again for an open subscription's checks; nil in dev.
	KeyDigest []byte
	// Dev marks the emulator's implicit caller.
	Dev bool
	// Channel, when set, is the one channel the caller may subscribe to
	// (a subscribe token's); "" for an API key.
	Channel string
}

// RoleOn returns the caller's role on an instance.
func (p *Principal) RoleOn(instance string) Role {
	return max(p.Grants[instance], p.Grants["*"])
}

// Allows reports whether the caller holds at least need on instance.
func (p *Principal) Allows(instance string, need Role) bool { return p.RoleOn(instance) >= need }

// AllowsChannel reports whether the caller may subscribe to channel of
// an instance it reads: any channel for an API key, the token's own for a
// subscribe token.
func (p *Principal) AllowsChannel(channel string) bool {
	return p.Channel == "" || p.Channel == channel
}

// Authenticator makes a Principal from a request, or answers
// UNAUTHENTICATED.
type Authenticator interface {
	Authenticate(r *http.Request) (*Principal, error)
}

// DevOrg is the organization of every call in dev mode.
const DevOrg = "dev"

// Dev authenticates every request as the emulator's one organization with
// full grants everywhere: `errand dev` needs no key.
type Dev struct{}

// Authenticate returns the dev principal.
func (Dev) Authenticate(*http.Request) (*Principal, error) {
	return &Principal{Org: DevOrg, Grants: map[string]Role{"*": RoleFull}, Dev: true}, nil
}

// ErrUnauthenticated is the answer for a missing, unknown, revoked or
// malformed token.
var ErrUnauthenticated = task.Errorf(task.CodeUnauthenticated, "a valid API key is required: send the header Authorization: Bearer KEY")
