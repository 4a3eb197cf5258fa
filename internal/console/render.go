package console

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// view is what every page template gets: the page's own data in Data, and
// around it the session, the instance in view and the caller's role there.
type view struct {
	Title    string
	Instance string
	Queue    string
	Role     errandapi.Role
	CSRF     string
	Org      string
	Dev      bool
	LoggedIn bool
	// Err is a refusal of the API to show (the page is answered with its
	// status); Notice a message of success.
	Err    *errandapi.Error
	Notice string
	Data   any
}

// Can reports whether the caller's role includes need ("read", "write",
// "full"): a page shows only the buttons the key may use.
func (v *view) Can(need string) bool { return v.Role.Includes(errandapi.Role(need)) }

// newView starts a page's view for a session on an instance ("" for none).
func (s *session) view(title, instance string) *view {
	v := &view{Title: title, Instance: instance, CSRF: s.csrf, Org: s.self.Org, Dev: s.dev, LoggedIn: true}
	if instance != "" {
		v.Role = s.roleOn(instance)
	}
	return v
}

// pages are the parsed templates, one per page, each with the layout.
type pages map[string]*template.Template

var funcs = template.FuncMap{
	"ms":     fmtMillis,
	"msp":    func(p *int64) string { return fmtMillisPtr(p) },
	"secs":   func(s int64) string { return fmtMillis(s * 1000) }, // the operations API's epoch seconds
	"pretty": prettyJSON,
	"num":    fmtNumber,
	"str":    func(p *string) string { return deref(p) },
	"q":      url.QueryEscape,
	"p":      url.PathEscape,
	"states": func() []errandapi.State { return allStates },
	"modeStates": func(m errandapi.Mode) []errandapi.State {
		return slices.DeleteFunc(slices.Clone(allStates), func(st errandapi.State) bool { return !inMode(m, st) })
	},
	"inMode":  inMode,
	"count":   func(m map[errandapi.State]int, s errandapi.State) int { return m[s] },
	"capped":  capped,
	"target":  fmtTarget,
	"taskOps": func() []string { return []string{"run", "cancel", "retry"} },
	"queueOf": queueName,
	"join":    func(s []string) string { return strings.Join(s, ", ") },
	"title": func(s string) string {
		if s == "" {
			return s
		}
		return strings.ToUpper(s[:1]) + s[1:]
	},
}

// inMode reports whether a queue of mode m has tasks in state st: a push
// queue's attempts are running, a pull queue's leased, and the API counts
// only its mode's.
func inMode(m errandapi.Mode, st errandapi.State) bool {
	return !(m == errandapi.ModePush && st == errandapi.StateLeased || m == errandapi.ModePull && st == errandapi.StateRunning)
}

// allStates are the v1 states in the order the console shows them.
var allStates = []errandapi.State{errandapi.StateScheduled, errandapi.StateRunning, errandapi.StateLeased,
	errandapi.StateRetrying, errandapi.StateSucceeded, errandapi.StateFailed, errandapi.StateCancelled}

func parsePages() pages {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := pages{}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".html")
		if base == "layout" {
			continue
		}
		out[base] = template.Must(template.Must(layout.Clone()).ParseFS(templateFS, n))
	}
	return out
}

// statusOf is the status a page is answered with: that of the API's
// refusal it shows, else 200.
func statusOf(refusal *errandapi.Error) int {
	if refusal != nil {
		return refusal.Status
	}
	return http.StatusOK
}

// render writes page name with v, answered with status. The page is
// rendered whole before anything is written, so a template error is a
// clean 500.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, v *view) {
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, "layout.html", v); err != nil {
		c.cfg.Logger.Error("console: rendering a page failed", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// apiError is err as the API's refusal; an error that is not one (the
// node could not answer) is shown as INTERNAL.
func apiError(err error) *errandapi.Error {
	var ae *errandapi.Error
	if errors.As(err, &ae) {
		c := *ae
		if c.Status == 0 {
			c.Status = errandapi.StatusOf(c.Code)
		}
		return &c
	}
	return &errandapi.Error{Code: errandapi.CodeInternal, Status: http.StatusInternalServerError, Message: err.Error()}
}

// fail answers a request the API refused (or that could not be made) with
// the error page, at the API's status: a foreign instance is the API's 404.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	v := &view{Title: "Error"}
	if s != nil {
		v = s.view("Error", "")
		v.Instance = r.PathValue("instance")
	}
	v.Err = apiError(err)
	v.Role = ""
	c.render(w, r, v.Err.Status, "error", v)
}

// notFound answers a path that is no console page; with the caller's
// session (nil: none) the page keeps its header (the instance's
// navigation, Log out).
func (c *Console) notFound(w http.ResponseWriter, r *http.Request, s *session) {
	v := &view{Title: "Not found"}
	if s != nil {
		v = s.view("Not found", r.PathValue("instance"))
	}
	// The path is not echoed: a link could make the page say whatever its
	// path spells (the address bar shows it anyway).
	v.Err = &errandapi.Error{Code: errandapi.CodeNotFound, Status: http.StatusNotFound, Message: "there is no console page at this address"}
	c.render(w, r, http.StatusNotFound, "error", v)
}

// timeLayout is how the console writes a time: UTC, and says so.
const timeLayout = "2006-01-02 15:04:05.000 UTC"

func fmtMillis(ms int64) string {
	if ms == 0 {
		return "—"
	}
	return time.UnixMilli(ms).UTC().Format(timeLayout)
}

func fmtMillisPtr(p *int64) string {
	if p == nil {
		return "—"
	}
	return fmtMillis(*p)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// prettyJSON indents raw JSON for reading ("" for none or null). It is shown as
// text: html/template escapes it.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return unescapeHTML(buf.String())
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes that Go's JSON
// encoder writes for <, > and & back into the characters, so a payload
// reads as it was sent (the page escapes it as HTML). Every other escape,
// and an escaped backslash before "u003c", is copied as it is.
func unescapeHTML(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch esc := s[i:min(i+6, len(s))]; esc {
		case `\u003c`:
			b.WriteByte('<')
		case `\u003e`:
			b.WriteByte('>')
		case `\u0026`:
			b.WriteByte('&')
		default:
			b.WriteString(s[i : i+2])
			i++
			continue
		}
		i += 5
	}
	return b.String()
}

// fmtTarget names a target ("webhook https://…", "—").
func fmtTarget(t *errandapi.Target) string { return cmp.Or(t.String(), "—") }
