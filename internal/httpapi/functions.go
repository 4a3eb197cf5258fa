package httpapi

import (
	"net/http"

	"github.com/errandhq/errand/errandapi"
)

// listFunctions answers the instance's functions: those connected workers
// serve now and those its queues target (engine.Functions).
func (s *Server) listFunctions(w http.ResponseWriter, r *http.Request, c *call) {
	fs, err := s.eng.Functions(r.Context(), c.p.Org, c.instance)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, errandapi.FunctionList{Functions: fs})
}
