package httpapi

import (
	"net/http"
	"strconv"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/task"
)

// refuser answers a refused call in one API's shape: writeError (the v1
// envelope) or writeOpsError (the operations API's lowercase codes).
type refuser func(w http.ResponseWriter, r *http.Request, err error)

// authenticate returns the caller of r, or answers the refusal with refuse
// and returns nil: a missing, malformed, unknown or revoked key is
// UNAUTHENTICATED with `WWW-Authenticate: Bearer`.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, refuse refuser) *auth.Principal {
	return s.authenticateWith(s.auth, w, r, refuse)
}

// authenticateWith is authenticate with another authenticator (the
// subscribe route's, which also takes subscribe tokens).
func (s *Server) authenticateWith(a auth.Authenticator, w http.ResponseWriter, r *http.Request, refuse refuser) *auth.Principal {
	p, err := a.Authenticate(r)
	if err != nil {
		if task.IsCode(err, task.CodeUnauthenticated) {
			w.Header().Set("WWW-Authenticate", errandapi.BearerChallenge)
		}
		refuse(w, r, err)
		return nil
	}
	return p
}

// takeCall takes one call from the instance's rate limit, or answers
// RATE_LIMITED with Retry-After through refuse and reports false.
func (s *Server) takeCall(w http.ResponseWriter, r *http.Request, org, instance string, refuse refuser) bool {
	wait, err := s.limits.allow(r.Context(), org, instance)
	if err != nil {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
		refuse(w, r, err)
		return false
	}
	return true
}
