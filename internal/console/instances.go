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

// instancesData is the instances page: the instances and the create form
// as sent (nil but after a refusal).
type instancesData struct {
	Rows []instanceRow
	Form map[string]string
}

func (c *Console) instancesPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showInstances(w, r, s, nil, nil)
}

// showInstances renders the instances the key may read, and the API's
// refusal of a create with the form as sent when there is one.
func (c *Console) showInstances(w http.ResponseWriter, r *http.Request, s *session, refusal *errandapi.Error, form map[string]string) {
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
	v.Err, v.Data = refusal, &instancesData{Rows: rows, Form: form}
	status := http.StatusOK
	if refusal != nil {
		status = refusal.Status
	}
	c.render(w, r, status, "instances", v)
}

func (c *Console) createInstance(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PostForm.Get("name")
	if _, err := s.cl.CreateInstance(r.Context(), name); err != nil {
		c.showInstances(w, r, s, apiError(err), formValues(r.PostForm, "name"))
		return
	}
	http.Redirect(w, r, doneURL(Prefix+"i/"+url.PathEscape(name)+"/", "created", -1), http.StatusSeeOther)
}
