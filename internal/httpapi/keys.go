package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/errandhq/errand/errandapi"
)

// keySelf answers who the calling key is: its organization and grants.
// It is how a tool (the MCP server, a CLI) learns what to offer a key
// without trying calls; it needs no grant, as any key may read its own.
func (s *Server) keySelf(w http.ResponseWriter, r *http.Request, c *call) {
	out := errandapi.KeySelf{Org: c.p.Org, Dev: c.p.Dev, Grants: []errandapi.Grant{}}
	if c.p.KeyID != "" {
		out.KeyID = &c.p.KeyID
	}
	for inst, role := range c.p.Grants {
		out.Grants = append(out.Grants, errandapi.Grant{Instance: inst, Role: errandapi.Role(role.String())})
	}
	slices.SortFunc(out.Grants, func(a, b errandapi.Grant) int { return strings.Compare(a.Instance, b.Instance) })
	writeJSON(w, http.StatusOK, out)
}
