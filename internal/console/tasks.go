package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/errandhq/errand/errandapi"
)

// taskURL is the page of one task.
func taskURL(inst, id string) string {
	return Prefix + "i/" + url.PathEscape(inst) + "/t/" + url.PathEscape(id)
}

func (c *Console) taskPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showTask(w, r, s, nil, r.URL.Query().Get("done"))
}

// taskNotice is the task page's word on the action that sent the browser
// back to it (?done=…), said only while the task's state bears it out: a
// link or a reload later cannot make the page claim what is not so.
func taskNotice(done string, t *errandapi.Task) string {
	finished := t.State == errandapi.StateSucceeded || t.State == errandapi.StateFailed || t.State == errandapi.StateCancelled
	switch {
	case done == "run" && !finished:
		return "The task runs now."
	case done == "run-running" && t.State == errandapi.StateRunning:
		return "The task is running; Run changed nothing."
	case done == "run-leased" && t.State == errandapi.StateLeased:
		return "The task is leased to a worker; Run changed nothing."
	case done == "cancel" && t.State == errandapi.StateCancelled:
		return "The task is cancelled."
	case done == "retry" && t.State != errandapi.StateFailed && t.State != errandapi.StateCancelled:
		return "The task is queued again with a fresh budget of attempts."
	case done == "add":
		return "The task is added."
	case done == "reschedule" && (t.State == errandapi.StateScheduled || t.State == errandapi.StateRetrying):
		return "The task is due at " + fmtMillis(t.RunAt) + "."
	case done == "priority":
		return fmt.Sprintf("The task's priority is %d: it applies whenever the task waits for a claim.", t.Priority)
	}
	return ""
}

// showTask renders one task with its payload, params, result and every
// attempt; refusal is a run, cancel or retry the API refused, done the
// action that sent the browser here (taskNotice).
func (c *Console) showTask(w http.ResponseWriter, r *http.Request, s *session, refusal *errandapi.Error, done string) {
	inst := r.PathValue("instance")
	t, err := s.cl.GetTask(r.Context(), inst, r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := s.view("Task "+t.ID, inst)
	v.Queue, v.Data, v.Err, v.Notice = t.Queue, t, refusal, taskNotice(done, t)
	c.render(w, r, statusOf(refusal), "task", v)
}

// confirmTaskDelete asks before a task's record is removed. It reads the
// task first (one the key cannot see is the API's NOT_FOUND), and tells a
// key without the full grant that the delete needs it.
func (c *Console) confirmTaskDelete(w http.ResponseWriter, r *http.Request, s *session) {
	inst := r.PathValue("instance")
	t, err := s.cl.GetTask(r.Context(), inst, r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.showConfirm(w, r, s, inst, t.Queue, confirmation{
		Question: "Delete the record of task " + t.ID + " (" + string(t.State) + ", queue " + t.Queue + ")? Its payload, result and attempts are gone and its name is free again. This cannot be undone.",
		Action:   taskURL(inst, t.ID) + "/delete", Button: "Delete the task", Back: taskURL(inst, t.ID),
	})
}

// taskOp runs, cancels, retries, sets the priority of, reschedules or
// (confirmed) deletes a task; a refusal (for example RUNNING_NOT_CANCELLABLE, or a
// priority that is not a whole number) is shown on the task's page at its
// status. A deleted task's page is gone: the browser goes to its queue's.
func (c *Console) taskOp(w http.ResponseWriter, r *http.Request, s *session) {
	inst, id, op := r.PathValue("instance"), r.PathValue("id"), r.PathValue("op")
	var t *errandapi.Task
	var err error
	switch op {
	case "run":
		t, err = s.cl.RunTask(r.Context(), inst, id)
	case "cancel":
		_, err = s.cl.CancelTask(r.Context(), inst, id)
	case "retry":
		_, err = s.cl.RetryTask(r.Context(), inst, id)
	case "priority", "reschedule":
		patch, bad := taskPatchOf(op, r.PostForm)
		if bad != nil {
			c.showTask(w, r, s, bad, "")
			return
		}
		_, err = s.cl.UpdateTask(r.Context(), inst, id, patch)
	case "delete":
		if err = confirmed(r, "deleting removes the task's record"); err == nil {
			if t, err = s.cl.DeleteTask(r.Context(), inst, id); err == nil {
				http.Redirect(w, r, doneURL(queueURL(inst, t.Queue), "task-deleted", -1), http.StatusSeeOther)
				return
			}
		}
	default:
		c.notFound(w, r, s)
		return
	}
	if err != nil {
		if ae := apiError(err); ae.Code == errandapi.CodeNotFound {
			c.fail(w, r, s, err)
		} else {
			c.showTask(w, r, s, ae, "")
		}
		return
	}
	done := op
	if t != nil && (t.State == errandapi.StateRunning || t.State == errandapi.StateLeased) {
		// The API leaves a task in flight as it is: say so, from the
		// state it answered.
		done += "-" + string(t.State)
	}
	http.Redirect(w, r, taskURL(inst, id)+"?done="+done, http.StatusSeeOther)
}

// taskPatchOf reads the task page's Set priority form (op "priority") or
// Reschedule form ("reschedule", a delay in seconds) into the API's PATCH.
// Only text that is not a number is refused here; every bound is the
// API's.
func taskPatchOf(op string, form url.Values) (errandapi.TaskPatchRequest, *errandapi.Error) {
	if op == "priority" {
		p, bad := parseWhole("priority", form.Get("priority"))
		return errandapi.TaskPatchRequest{Priority: &p}, bad
	}
	d, bad := parseNumber("delay", form.Get("delay"))
	return errandapi.TaskPatchRequest{Delay: &d}, bad
}

// addFields are the add form's fields, shown again with a refusal.
var addFields = []string{"name", "payload", "params", "delay", "priority", "targetKind", "target"}

// addTask adds one task from the queue page's form. The form is only read
// into the API's request: the API validates it.
func (c *Console) addTask(w http.ResponseWriter, r *http.Request, s *session) {
	inst, queue, f := r.PathValue("instance"), r.PathValue("queue"), r.PostForm
	form := formValues(f, addFields...)
	nt, ferr := newTaskOf(form)
	if ferr != nil {
		c.showQueue(w, r, s, ferr, form, nil)
		return
	}
	res, err := s.cl.AddTask(r.Context(), inst, queue, nt)
	if err != nil {
		c.showQueue(w, r, s, apiError(err), form, nil)
		return
	}
	http.Redirect(w, r, taskURL(inst, res.ID)+"?done=add", http.StatusSeeOther)
}

// newTaskOf reads the add form into the API's request. Only what cannot
// travel as JSON is refused here (text that is not JSON, a delay that is
// not a number), naming the field as the API does; every rule is the
// API's.
func newTaskOf(form map[string]string) (errandapi.NewTask, *errandapi.Error) {
	nt := errandapi.NewTask{Name: strings.TrimSpace(form["name"]), Target: formTarget(form["targetKind"], form["target"])}
	if p := strings.TrimSpace(form["payload"]); p != "" {
		if !json.Valid([]byte(p)) {
			return nt, badField("payload", "is not valid JSON")
		}
		nt.Payload = json.RawMessage(p)
	}
	if p := strings.TrimSpace(form["params"]); p != "" {
		if !json.Valid([]byte(p)) {
			return nt, badField("params", "is not valid JSON")
		}
		nt.Params = json.RawMessage(p)
	}
	if d := strings.TrimSpace(form["delay"]); d != "" {
		n, err := parseNumber("delay", d)
		if err != nil {
			return nt, err
		}
		nt.Delay = &n
	}
	var bad *errandapi.Error
	nt.Priority, bad = parseOptionalWhole("priority", form["priority"])
	return nt, bad
}
