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
// task: a leased task's leaseExpiresAt, a task's own deadlineSeconds.
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
	u.get("/console/i/jobs/t/"+id).want(t, http.StatusOK, `<th>deadlineSeconds</th><td id="deadline-seconds">10<`).lacks(t, "leaseExpiresAt")
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
