package httpapi

import (
	"net/http"

	"github.com/errandhq/errand/errandapi"
)

// getUsage answers the instance's usage in the current month.
func (s *Server) getUsage(w http.ResponseWriter, r *http.Request, c *call) {
	u, err := s.eng.InstanceUsage(r.Context(), c.p.Org, c.instance)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, errandapi.UsageResponse{Usage: *u})
}
