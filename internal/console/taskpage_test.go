package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// TestTaskPageEveryField: the task page shows every field of the API's
// task: a leased task's leaseExpiresAt, a task's own deadlineSeconds, its
// priority (shown when not the default).
func TestTaskPageEveryField(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	leased := e.leased()
	tk := e.waitState(leased, errandapi.StateLeased)
	if tk.LeaseExpiresAt == nil {
		t.Fatal("the API shows no leaseExpiresAt")
	}
	at := time.UnixMilli(*tk.LeaseExpiresAt).UTC().Format("2006-01-02 15:04:05.000 UTC")
	u.get("/console/i/jobs/t/"+leased).want(t, http.StatusOK, `<th>leaseExpiresAt</th><td id="lease-expires-at">`+at+`<`)

	ten := 10
	id := e.add("pull", errandapi.NewTask{Payload: json.RawMessage(`{}`), DeadlineSeconds: &ten})
	u.get("/console/i/jobs/t/"+id).want(t, http.StatusOK, `<th>deadlineSeconds</th><td id="deadline-seconds">10<`).lacks(t, "leaseExpiresAt").lacks(t, "<th>priority")

	seven := 7
	id = e.add("pull", errandapi.NewTask{Payload: json.RawMessage(`{}`), Priority: &seven})
	u.get("/console/i/jobs/t/"+id).want(t, http.StatusOK, `<th>priority</th><td id="priority">7<`)
}

// TestRunNotice: Run says what happened, from the task's state after the
// call: a scheduled task runs now; a leased one is left as it is.
func TestRunNotice(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	later := e.add("pull", errandapi.NewTask{Payload: json.RawMessage(`{}`), Delay: new(3600.0)})
	leased := e.leased()
	tok := u.csrf("/console/i/jobs/t/" + later)
	for _, c := range []struct{ id, notice, not string }{
		{later, "The task runs now.", "changed nothing"},
		{leased, "Run changed nothing.", "runs now"},
	} {
		p := u.post("/console/i/jobs/t/"+c.id+"/run", url.Values{"csrf": {tok}})
		if p.status != http.StatusSeeOther {
			t.Fatalf("run: %d %s", p.status, p.body)
		}
		u.get(p.header.Get("Location")).want(t, http.StatusOK, c.notice).lacks(t, c.not)
	}
}

// TestTaskDelete: a full key's task page offers Delete…, which asks first
// (the task read, its state named); the confirmed form removes the record
// and sends the browser to the queue's page with a notice; a leased task is
// refused on its page and stays; an unconfirmed post is CONFIRM_REQUIRED; a
// write key is offered no Delete and is told the confirmation needs full.
func TestTaskDelete(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	id := e.add("pull", errandapi.NewTask{Payload: json.RawMessage(`{}`), Name: "doomed", Delay: new(3600.0)})
	page := "/console/i/jobs/t/" + id
	u.get(page).want(t, http.StatusOK, `href="`+page+`/confirm-delete" id="delete"`)
	u.get(page+"/confirm-delete").want(t, http.StatusOK, `id="confirm"`, "Delete the record of task "+id+" (scheduled, queue pull)?", `action="`+page+`/delete"`)
	tok := u.csrf(page)
	u.post(page+"/delete", url.Values{"csrf": {tok}}).want(t, http.StatusBadRequest, "CONFIRM_REQUIRED")
	p := u.post(page+"/delete", url.Values{"csrf": {tok}, "confirm": {"true"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/i/jobs/q/pull/?done=task-deleted" {
		t.Fatalf("delete: %d %s %s", p.status, p.header.Get("Location"), p.body)
	}
	u.get(p.header.Get("Location")).want(t, http.StatusOK, "The task&#39;s record is deleted; its name is free again.")
	u.get(page).want(t, http.StatusNotFound, "NOT_FOUND")
	e.add("pull", errandapi.NewTask{Payload: json.RawMessage(`{}`), Name: "doomed", Delay: new(3600.0)}) // the name is free

	leased := e.leased()
	e.waitState(leased, errandapi.StateLeased)
	u.post("/console/i/jobs/t/"+leased+"/delete", url.Values{"csrf": {tok}, "confirm": {"true"}}).want(t, http.StatusBadRequest, "RUNNING_NOT_CANCELLABLE")
	u.get("/console/i/jobs/t/"+leased).want(t, http.StatusOK, `id="task-state">leased<`)

	w := e.user()
	w.login(e.key(e.org, "write:jobs"))
	w.get("/console/i/jobs/t/"+leased).want(t, http.StatusOK, `id="cancel"`).lacks(t, `id="delete"`)
	w.get("/console/i/jobs/t/"+leased+"/confirm-delete").want(t, http.StatusForbidden, "PERMISSION_DENIED", "needs the full grant on instance jobs; the key&#39;s is write")
}

// TestTaskPriorityForm: a write key's task page sets the task's priority
// through the API and says so; a priority out of range or not whole is
// refused on the page, changing nothing; a read key's page has no form,
// nor has a cancelled task's (it will not wait again).
func TestTaskPriorityForm(t *testing.T) {
	e, u, id, page := waitingTaskPage(t)
	u.get(page).want(t, http.StatusOK, `id="priority-form"`, `id="set-priority" name="priority" inputmode="numeric" size="2" value="0"`)
	tok := u.csrf(page)
	p := u.post(page+"/priority", url.Values{"csrf": {tok}, "priority": {"6"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("set priority: %d %s", p.status, p.body)
	}
	u.get(p.header.Get("Location")).want(t, http.StatusOK, "The task&#39;s priority is 6", `<th>priority</th><td id="priority">6<`)
	u.post(page+"/priority", url.Values{"csrf": {tok}, "priority": {"10"}}).want(t, http.StatusBadRequest, "INVALID_ARGUMENT", "priority: must be 0–9")
	u.post(page+"/priority", url.Values{"csrf": {tok}, "priority": {"1.5"}}).want(t, http.StatusBadRequest, "INVALID_ARGUMENT", "priority: must be a whole number")
	if got, err := e.api.GetTask(t.Context(), "jobs", id); err != nil || got.Priority != 6 {
		t.Fatalf("after the refusals: %+v, %v; want priority 6", got, err)
	}
	r := e.user()
	r.login(e.key(e.org, "read:jobs"))
	r.get(page).want(t, http.StatusOK, `id="task-fields"`).lacks(t, "priority-form")
	if _, err := e.api.CancelTask(t.Context(), "jobs", id); err != nil {
		t.Fatal(err)
	}
	u.get(page).want(t, http.StatusOK, `id="task-actions"`).lacks(t, "priority-form")
}

// TestTaskRescheduleForm: a waiting task's page reschedules it through the
// API (Due in, seconds) and says when it is due; a delay out of range or
// not a number is refused on the page, changing nothing; a leased task's
// page has no form.
func TestTaskRescheduleForm(t *testing.T) {
	e, u, id, page := waitingTaskPage(t)
	u.get(page).want(t, http.StatusOK, `id="reschedule-form"`)
	tok := u.csrf(page)
	p := u.post(page+"/reschedule", url.Values{"csrf": {tok}, "delay": {"60"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("reschedule: %d %s", p.status, p.body)
	}
	due := T0.Add(time.Minute).UTC().Format("2006-01-02 15:04:05.000 UTC")
	u.get(p.header.Get("Location")).want(t, http.StatusOK, "The task is due at "+due+".")
	u.post(page+"/reschedule", url.Values{"csrf": {tok}, "delay": {"-5"}}).want(t, http.StatusBadRequest, "INVALID_ARGUMENT", "delay: must be 0–31536000 seconds")
	u.post(page+"/reschedule", url.Values{"csrf": {tok}, "delay": {"soon"}}).want(t, http.StatusBadRequest, "INVALID_ARGUMENT", "delay: ")
	if got, err := e.api.GetTask(t.Context(), "jobs", id); err != nil || got.RunAt != T0.Add(time.Minute).UnixMilli() {
		t.Fatalf("after the refusals: %+v, %v; want due in a minute", got, err)
	}
	leased := e.leased()
	e.waitState(leased, errandapi.StateLeased)
	u.get("/console/i/jobs/t/"+leased).want(t, http.StatusOK, `id="task-fields"`).lacks(t, "reschedule-form")
}

// waitingTaskPage is a fixture with a pull task due in an hour, a user
// logged in with the full grant, and the task's id and page.
func waitingTaskPage(t *testing.T) (*env, *user, string, string) {
	t.Helper()
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	id := e.add("pull", errandapi.NewTask{Payload: json.RawMessage(`{}`), Delay: new(3600.0)})
	return e, u, id, "/console/i/jobs/t/" + id
}
