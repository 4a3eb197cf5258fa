package console

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/errandhq/errand/errandapi"
)

// instanceRow is one instance of the instances page with the caller's role.
type instanceRow struct {
	errandapi.Instance
	Role errandapi.Role
}

// instancesData is the instances page: the instances, what the key may
// create, and the create form as sent (nil but after a refusal).
type instancesData struct {
	Rows []instanceRow
	Form map[string]string
	// AnyName: the key has full on every instance ("*"), so the form takes
	// any name. Otherwise Creatable lists the instances it has full on
	// that do not exist (none: no form).
	AnyName   bool
	Creatable []string
}

// creatable is what s's key may create, as the API decides it: an
// instance needs the full grant on its name, so full:* may create any
// name and full:NAME only NAME, while it does not exist.
func (s *session) creatable(existing []errandapi.Instance) (anyName bool, names []string) {
	have := map[string]bool{}
	for _, in := range existing {
		have[in.Name] = true
	}
	for _, g := range s.self.Grants {
		switch {
		case !g.Role.Includes(errandapi.RoleFull):
		case g.Instance == "*":
			anyName = true
		case !have[g.Instance] && !slices.Contains(names, g.Instance):
			names = append(names, g.Instance)
		}
	}
	slices.Sort(names)
	return anyName, names
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
	v.Role = s.self.Strongest()
	d := &instancesData{Rows: rows, Form: form}
	d.AnyName, d.Creatable = s.creatable(insts)
	v.Err, v.Data = refusal, d
	c.render(w, r, statusOf(refusal), "instances", v)
}

func (c *Console) createInstance(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PostForm.Get("name")
	if _, err := s.cl.CreateInstance(r.Context(), name); err != nil {
		c.showInstances(w, r, s, apiError(err), formValues(r.PostForm, "name"))
		return
	}
	http.Redirect(w, r, doneURL(Prefix+"i/"+url.PathEscape(name)+"/", "created", -1), http.StatusSeeOther)
}
