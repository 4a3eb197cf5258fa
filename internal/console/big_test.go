package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TestBigQueue measures the console's pages on a queue of a million tasks
// (ERRAND_CONSOLE_BIG=N for another size; skipped unless set, since
// seeding takes a while): every page is one page of the keyset-paged
// listing and capped counts, so each should take milliseconds.
//
//	ERRAND_CONSOLE_BIG=1000000 go test -run TestBigQueue -v ./internal/console/
func TestBigQueue(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ERRAND_CONSOLE_BIG"))
	if n <= 0 {
		t.Skip("set ERRAND_CONSOLE_BIG=1000000 to measure the pages on a queue of a million tasks")
	}
	e := newEnv(t, envOptions{realClock: true})
	e.fixture()
	ctx := context.Background()
	inst, err := e.st.InstanceGet(ctx, store.InstanceRef{Org: e.org, Name: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.st.QueueGet(ctx, store.QueueRef{InstanceID: inst.ID, Name: "pull"})
	if err != nil {
		t.Fatal(err)
	}
	// Every task made in the last hour, so the chart's read of adds is at
	// its bound; one in a thousand named.
	start := time.Now()
	now := start.UnixMilli()
	const batch = 5000
	for done := 0; done < n; done += batch {
		ts := make([]*task.Task, 0, batch)
		for i := done; i < min(n, done+batch); i++ {
			in := task.AddInput{Payload: json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`)}
			if i%1000 == 0 {
				in.Name = "t" + strconv.Itoa(i)
			}
			created := now - int64(i%3_500_000)
			tk, err := task.NewTask(q, in, created, task.URLRules{})
			if err != nil {
				t.Fatal(err)
			}
			tk.ID = id.New(time.UnixMilli(created))
			ts = append(ts, tk)
		}
		if _, err := e.st.TaskAdd(ctx, ts); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seeded %d tasks in %v", n, time.Since(start).Round(time.Second))

	u := e.user()
	u.login(e.full)
	first := u.get("/console/i/jobs/q/pull/").want(t, http.StatusOK, "10000+")
	next := nextLink(first.body)
	for _, path := range []string{"/console/i/jobs/", "/console/i/jobs/q/pull/", next, "/console/i/jobs/q/pull/?name=t5000",
		"/console/i/jobs/q/pull/?state=failed", "/console/i/jobs/q/pull/dead"} {
		var took []time.Duration
		for range 7 {
			s := time.Now()
			u.get(path).want(t, http.StatusOK)
			took = append(took, time.Since(s))
		}
		slices.Sort(took)
		t.Logf("%-60s median %v, max %v", path, took[3].Round(100*time.Microsecond), took[6].Round(100*time.Microsecond))
	}
}
