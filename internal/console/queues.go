package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// listLimit is how many tasks a page of the console lists (the API's
// default page).
const listLimit = 50

// queuesData is the queues page: the instance's queues and the create
// form as sent (nil but after a refusal).
type queuesData struct {
	Queues []errandapi.Queue
	Form   map[string]string
}

// createQueueFields are the create form's fields, shown again with a
// refusal.
var createQueueFields = []string{"name", "mode", "targetKind", "target", "headers"}

func (c *Console) queuesPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showQueues(w, r, s, nil, nil)
}

// showQueues renders an instance's queues with their counts by state, and
// a create's refusal with the form as sent.
func (c *Console) showQueues(w http.ResponseWriter, r *http.Request, s *session, refusal *errandapi.Error, form map[string]string) {
	inst := r.PathValue("instance")
	qs, err := s.cl.ListQueues(r.Context(), inst)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := s.view(inst, inst)
	v.Data, v.Err = &queuesData{Queues: qs, Form: form}, refusal
	if refusal == nil {
		v.Notice = queuesNotice(r.URL.Query())
	}
	c.render(w, r, statusOf(refusal), "queues", v)
}

func (c *Console) createQueue(w http.ResponseWriter, r *http.Request, s *session) {
	inst, f := r.PathValue("instance"), r.PostForm
	req := errandapi.QueueRequest{}
	mode := errandapi.Mode(f.Get("mode"))
	req.Mode = &mode
	t := formTarget(f.Get("targetKind"), f.Get("target"))
	h, bad := formHeaders(f.Get("headers"))
	if bad == nil && h != nil && t == nil {
		bad = badField("target.headers", "give the webhook URL they are sent to")
	}
	if bad != nil {
		c.showQueues(w, r, s, bad, formValues(f, createQueueFields...))
		return
	}
	if t != nil {
		t.Headers = h
		req.Target = errandapi.Value(*t)
	}
	name := f.Get("name")
	if _, err := s.cl.CreateQueue(r.Context(), inst, name, req); err != nil {
		c.showQueues(w, r, s, apiError(err), formValues(f, createQueueFields...))
		return
	}
	http.Redirect(w, r, doneURL(queueURL(inst, name), "created", -1), http.StatusSeeOther)
}

// queueData is the queue page: the queue with its counts, one page of its
// tasks and the chart of the last hour.
type queueData struct {
	Queue  *errandapi.Queue
	State  string
	Name   string
	Tasks  []errandapi.Task
	Cursor string // the next page's, "" on the last
	Paged  bool   // this is not the first page
	Chart  *chart
	// ChartErr is the API's refusal of the chart's read, shown in its
	// place.
	ChartErr *errandapi.Error
	// Form is the add form as sent, shown again with a refusal.
	Form map[string]string
	// Settings is the settings form: the queue's settings, or after a
	// refusal what was sent (then SettingsOpen).
	Settings     map[string]string
	SettingsOpen bool
	// Served is, for a queue whose target is a function, who serves it
	// now (Slots 0: no worker); ServedErr the API's refusal of that read.
	Served    *errandapi.Function
	ServedErr *errandapi.Error
}

func (c *Console) queuePage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showQueue(w, r, s, nil, nil, nil)
}

// showQueue renders a queue's page; refusal is an action's refusal, add
// what the add form sent, settings what the settings form sent (each nil
// but with its form's refusal).
func (c *Console) showQueue(w http.ResponseWriter, r *http.Request, s *session, refusal *errandapi.Error, add, settings map[string]string) {
	inst, name := r.PathValue("instance"), r.PathValue("queue")
	ctx := r.Context()
	q, err := s.cl.GetQueue(ctx, inst, name)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	qv := r.URL.Query()
	d := &queueData{Queue: q, State: qv.Get("state"), Name: qv.Get("name"), Paged: qv.Get("cursor") != "", Form: add,
		Settings: settings, SettingsOpen: settings != nil}
	if settings == nil {
		d.Settings = queueSettingsForm(q)
	}
	v := s.view(inst+" / "+name, inst)
	v.Queue = name
	page, err := s.cl.ListTasks(ctx, inst, name, client.ListOptions{State: errandapi.State(d.State), Name: d.Name, Limit: listLimit, Cursor: qv.Get("cursor")})
	if err != nil {
		// A bad filter (an unknown state, a malformed name or cursor) is
		// the API's INVALID_ARGUMENT, shown on the page.
		refusal = apiError(err)
	} else {
		d.Tasks = page.Tasks
		if page.Cursor != nil {
			d.Cursor = *page.Cursor
		}
	}
	if q.Target != nil && q.Target.Function != "" {
		d.Served, d.ServedErr = served(ctx, s.cl, inst, q.Target.Function)
	}
	if act, err := s.cl.QueueActivity(ctx, inst, name); err != nil {
		d.ChartErr = apiError(err)
	} else {
		d.Chart = newChart(act)
	}
	v.Data, v.Err = d, refusal
	if refusal == nil {
		v.Notice = queueNotice(qv)
	}
	c.render(w, r, statusOf(refusal), "queue", v)
}

func (c *Console) pauseQueue(paused bool) func(w http.ResponseWriter, r *http.Request, s *session) {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		inst, name := r.PathValue("instance"), r.PathValue("queue")
		if _, err := s.cl.UpdateQueue(r.Context(), inst, name, errandapi.QueueRequest{Paused: &paused}); err != nil {
			c.showQueue(w, r, s, apiError(err), nil, nil)
			return
		}
		done := "resumed"
		if paused {
			done = "paused"
		}
		http.Redirect(w, r, doneURL(queueURL(inst, name), done, -1), http.StatusSeeOther)
	}
}

// confirmed reports whether a form is the confirmation page's; a form
// without it is the API's CONFIRM_REQUIRED, saying what it would have done.
func confirmed(r *http.Request, does string) error {
	if r.PostForm.Get("confirm") == "true" {
		return nil
	}
	return &errandapi.Error{Code: errandapi.CodeConfirmRequired, Status: errandapi.StatusOf(errandapi.CodeConfirmRequired),
		Message: does + ": confirm it on the confirmation page"}
}

func (c *Console) purgeQueue(w http.ResponseWriter, r *http.Request, s *session) {
	inst, name := r.PathValue("instance"), r.PathValue("queue")
	err := confirmed(r, "purging removes every task of the queue")
	n := 0
	if err == nil {
		n, err = s.cl.PurgeQueue(r.Context(), inst, name)
	}
	if err != nil {
		c.showQueue(w, r, s, apiError(err), nil, nil)
		return
	}
	http.Redirect(w, r, doneURL(queueURL(inst, name), "purged", n), http.StatusSeeOther)
}

func (c *Console) deleteQueue(w http.ResponseWriter, r *http.Request, s *session) {
	inst, name := r.PathValue("instance"), r.PathValue("queue")
	err := confirmed(r, "deleting removes the queue and all its tasks")
	n := 0
	if err == nil {
		n, err = s.cl.DeleteQueue(r.Context(), inst, name)
	}
	if err != nil {
		c.showQueue(w, r, s, apiError(err), nil, nil)
		return
	}
	http.Redirect(w, r, doneURL(Prefix+"i/"+url.PathEscape(inst)+"/", "deleted", n), http.StatusSeeOther)
}

// confirmation is the confirmation page of a destructive action.
type confirmation struct {
	Question string
	Action   string // the form's URL
	Button   string
	All      bool   // the form also sends all=true (a replay of every failed task)
	Back     string // where Cancel goes: the queue's page, or the settings, when empty
}

// confirmPage asks before a purge, a delete, or showing or rotating the
// webhook key; its form posts with confirm=true. It reads the queue (or
// the instance's settings) first, so a queue or an instance the key
// cannot see is the API's refusal (NOT_FOUND), not a question.
func (c *Console) confirmPage(w http.ResponseWriter, r *http.Request, s *session) {
	inst, name, what := r.PathValue("instance"), r.PathValue("queue"), r.PathValue("what")
	base := Prefix + "i/" + url.PathEscape(inst) + "/"
	var cf confirmation
	switch {
	case name != "" && what == "purge":
		cf = confirmation{Question: "Remove every task of queue " + name + "? This cannot be undone.", Action: queueURL(inst, name) + "purge", Button: "Purge " + name}
	case name != "" && what == "delete":
		cf = confirmation{Question: "Delete queue " + name + " and all its tasks? This cannot be undone.", Action: queueURL(inst, name) + "delete", Button: "Delete " + name}
	case name != "" && what == "replay-all":
		cf = confirmation{Action: queueURL(inst, name) + "replay", Button: "Replay all failed tasks of " + name, All: true, Back: queueURL(inst, name) + "dead"}
	case name == "" && what == "reveal":
		cf = confirmation{Question: "Show the webhook signing key of " + inst + "? Anyone who sees it can sign requests as errand.", Action: base + "settings/webhook-key", Button: "Show the key"}
	case name == "" && what == "rotate":
		cf = confirmation{Question: "Replace the webhook signing key of " + inst + "? The next delivery is signed with the new key; receivers must be updated.", Action: base + "settings/webhook-key/rotate", Button: "Rotate the key"}
	default:
		c.notFound(w, r, s)
		return
	}
	var err error
	if name != "" {
		var q *errandapi.Queue
		if q, err = s.cl.GetQueue(r.Context(), inst, name); err == nil && cf.All {
			cf.Question = replayAllQuestion(q)
		}
	} else {
		_, err = s.cl.Settings(r.Context(), inst)
	}
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.showConfirm(w, r, s, inst, name, cf)
}

// showConfirm renders confirmation cf on instance inst (and queue, for
// the page's links), once the page has read what it asks about. The
// action needs full: a key without it is told so here, not offered a
// button the API then refuses.
func (c *Console) showConfirm(w http.ResponseWriter, r *http.Request, s *session, inst, queue string, cf confirmation) {
	v := s.view("Confirm", inst)
	if !v.Can(string(errandapi.RoleFull)) {
		c.fail(w, r, s, &errandapi.Error{Code: errandapi.CodePermissionDenied, Status: http.StatusForbidden,
			Message: fmt.Sprintf("this needs the full grant on instance %s; the key's is %s", inst, roleWord(v.Role))})
		return
	}
	v.Queue, v.Data = queue, cf
	c.render(w, r, http.StatusOK, "confirm", v)
}

// roleWord names a key's role on an instance for a refusal.
func roleWord(r errandapi.Role) string {
	if r == "" {
		return "none"
	}
	return string(r)
}

func queueURL(inst, queue string) string {
	return Prefix + "i/" + url.PathEscape(inst) + "/q/" + url.PathEscape(queue) + "/"
}

// replayAllQuestion asks before every failed task of q is replayed, with
// how many there are now (counts stop at 10,000).
func replayAllQuestion(q *errandapi.Queue) string {
	n, more := q.Counts[errandapi.StateFailed], ""
	if slices.Contains(q.Capped, errandapi.StateFailed) {
		more = " or more"
	}
	return fmt.Sprintf("Replay every failed task of queue %s (%d%s now, and any that fail before the job reaches them) against its target with a fresh budget? Each is attempted again.", q.Name, n, more)
}

// served reads who serves fn, a function of instance, now: its entry of
// the instance's functions (Slots 0 when no worker does).
func served(ctx context.Context, cl *client.Client, instance, fn string) (*errandapi.Function, *errandapi.Error) {
	fs, err := cl.Functions(ctx, instance)
	if err != nil {
		return nil, apiError(err)
	}
	for i := range fs {
		if fs[i].Function == fn {
			return &fs[i], nil
		}
	}
	return &errandapi.Function{Function: fn}, nil
}
