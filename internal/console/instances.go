package console

import (
	"net/http"
	"net/url"

	"github.com/errandhq/errand/errandapi"
)

// instanceRow is one instance of the instances page with the caller's role.
type instanceRow struct {
	errandapi.Instance
	Role errandapi.Role
}

func (c *Console) instancesPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showInstances(w, r, s, http.StatusOK, nil)
}

// showInstances renders the instances the key may read, and the API's
// refusal of a create when there is one.
func (c *Console) showInstances(w http.ResponseWriter, r *http.Request, s *session, status int, refusal *errandapi.Error) {
	insts, err := s.cl.ListInstances(r.Context())
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	rows := make([]instanceRow, len(insts))
	for i, in := range insts {
		rows[i] = instanceRow{Instance: in, Role: s.roleOn(in.Name)}
	}
	v := s.view("Instances", "")
	// Creating an instance needs the full grant on its name: the form is
	// offered to a key that has a full grant somewhere.
	v.Role = s.self.Strongest()
	v.Err, v.Data = refusal, rows
	if refusal != nil {
		status = refusal.Status
	}
	c.render(w, r, status, "instances", v)
}

func (c *Console) createInstance(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PostForm.Get("name")
	if _, err := s.cl.CreateInstance(r.Context(), name); err != nil {
		c.showInstances(w, r, s, 0, apiError(err))
		return
	}
	http.Redirect(w, r, Prefix+"i/"+url.PathEscape(name)+"/", http.StatusSeeOther)
}
