package errandapi

import "fmt"

// BearerChallenge is the WWW-Authenticate header of a 401 UNAUTHENTICATED,
// on the v1 API, the operations API and MCP alike.
const BearerChallenge = `Bearer realm="errand"`

// Role is a grant level on an instance: read ⊂ write ⊂ full.
type Role string

// The roles, weakest first.
const (
	RoleRead  Role = "read"
	RoleWrite Role = "write"
	RoleFull  Role = "full"
)

// rank orders the roles; an unknown role ranks below read.
func (r Role) rank() int {
	switch r {
	case RoleRead:
		return 1
	case RoleWrite:
		return 2
	case RoleFull:
		return 3
	}
	return 0
}

// Includes reports whether r is at least need (full includes write and
// read, write includes read).
func (r Role) Includes(need Role) bool { return need.rank() > 0 && r.rank() >= need.rank() }

// Grant is one grant of an API key: a role on an instance name, "*" for
// every instance.
type Grant struct {
	Instance string `json:"instance"`
	Role     Role   `json:"role"`
}

// KeySelf is the answer of GET /v1/keys/self: the calling key's
// organization and grants. In errand dev, Dev is true, KeyID is nil and
// the one grant is full on "*".
type KeySelf struct {
	Org    string  `json:"org"`
	KeyID  *string `json:"keyId"`
	Dev    bool    `json:"dev"`
	Grants []Grant `json:"grants"`
}

// Strongest is the strongest role any grant of k gives, on any instance
// ("" when it has none).
func (k *KeySelf) Strongest() Role {
	var best Role
	for _, g := range k.Grants {
		if g.Role.rank() > best.rank() {
			best = g.Role
		}
	}
	return best
}

// CheckAPIKey refuses a key that cannot travel in an Authorization header:
// one holding whitespace or a control character, most often the newline
// that ends a key read from a file. The error is INVALID_ARGUMENT and
// names the option ("APIKey"); an empty key (errand dev) is fine.
func CheckAPIKey(key string) error {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c == 0x7f {
			return NewError(CodeInvalidArgument, fmt.Sprintf("APIKey holds whitespace or a control character at byte %d "+
				"(a newline read from a file?): an API key has none; trim it", i))
		}
	}
	return nil
}
