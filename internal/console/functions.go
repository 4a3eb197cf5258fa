package console

import (
	"net/http"
)

// functionsPage lists the instance's functions (the API's GET
// …/functions): each one a connected worker or an embedded program serves
// now, with its slots across the nodes, and each one a queue targets,
// served or not, with those queues; one nothing serves is marked.
func (c *Console) functionsPage(w http.ResponseWriter, r *http.Request, s *session) {
	inst := r.PathValue("instance")
	fs, err := s.cl.Functions(r.Context(), inst)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := s.view(inst+" functions", inst)
	v.Data = fs
	c.render(w, r, http.StatusOK, "functions", v)
}
