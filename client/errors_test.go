package client_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the test's own connection that holds the write lock

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// refusal produces one error code for real through the server on a store
// of kind, with the client; it returns the call's error. only names the
// one store kind it runs on ("" for every kind).
type refusal struct {
	only    string
	produce func(t *testing.T, kind string) error
}

// pullTask adds a task to a pull queue jobs/pull and leases it.
func (e *env) pullTask(t *testing.T) (id, lease string) {
	ctx := context.Background()
	must(e.c.CreateQueue(ctx, "jobs", "pull", errandapi.QueueRequest{Mode: new(errandapi.ModePull)})).of(t)
	added := must(e.c.AddTask(ctx, "jobs", "pull", errandapi.NewTask{})).of(t)
	leased := must(e.c.Lease(ctx, "jobs", "pull", errandapi.LeaseRequest{})).of(t)
	return added.ID, leased[0].LeaseID
}

// refusals has a way to produce every code of the contract.
var refusals = map[errandapi.Code]refusal{
	errandapi.CodeInvalidArgument: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		_, err := e.c.CreateQueue(context.Background(), "jobs", "q", errandapi.QueueRequest{MaxAttempts: new(0)})
		if err != nil && !strings.HasPrefix(err.(*client.Error).Message, "maxAttempts") {
			t.Errorf("message %q does not start with the field", err.(*client.Error).Message)
		}
		return err
	}},
	errandapi.CodeNotFound: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		_, err := e.c.GetTask(context.Background(), "jobs", "0000000000000000000000")
		return err
	}},
	errandapi.CodeTaskExists: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		ctx := context.Background()
		must(e.c.CreateQueue(ctx, "jobs", "pull", errandapi.QueueRequest{Mode: new(errandapi.ModePull)})).of(t)
		first := must(e.c.AddTask(ctx, "jobs", "pull", errandapi.NewTask{Name: "once"})).of(t)
		_, err := e.c.AddTask(ctx, "jobs", "pull", errandapi.NewTask{Name: "once"})
		var ce *client.Error
		if !errors.As(err, &ce) || ce.ID != first.ID {
			t.Errorf("TASK_EXISTS carries id %+v, want the existing task's %s", ce, first.ID)
		}
		// In a batch the refusal is the task's result, with the id.
		res, berr := e.c.AddTasks(ctx, "jobs", "pull", errandapi.NewTask{Name: "once"}, errandapi.NewTask{Name: "twice"})
		if berr != nil || len(res) != 2 || !errors.Is(res[0].Err(), client.ErrTaskExists) || res[0].Err().(*client.Error).ID != first.ID || res[1].Err() != nil {
			t.Errorf("batch: %+v %v", res, berr)
		}
		return err
	}},
	errandapi.CodeQueueExists: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		_, err := e.c.CreateQueue(context.Background(), "jobs", "default", errandapi.QueueRequest{})
		return err
	}},
	errandapi.CodeInstanceExists: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		must(e.c.CreateInstance(context.Background(), "jobs")).of(t)
		_, err := e.c.CreateInstance(context.Background(), "jobs")
		return err
	}},
	errandapi.CodeNoTarget: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		_, err := e.c.AddTask(context.Background(), "jobs", "default", errandapi.NewTask{})
		return err
	}},
	errandapi.CodeLeaseLost: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		id, _ := e.pullTask(t)
		_, err := e.c.Ack(context.Background(), "jobs", id, errandapi.AckRequest{LeaseID: "not-the-lease"})
		return err
	}},
	errandapi.CodePayloadTooLarge: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		big, _ := json.Marshal(strings.Repeat("x", 65<<10))
		_, err := e.c.AddTask(context.Background(), "jobs", "default", errandapi.NewTask{Payload: big, Target: &errandapi.Target{Webhook: "http://127.0.0.1:9/"}})
		return err
	}},
	errandapi.CodeNotCancellable: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		id, lease := e.pullTask(t)
		must(e.c.Ack(context.Background(), "jobs", id, errandapi.AckRequest{LeaseID: lease})).of(t)
		_, err := e.c.CancelTask(context.Background(), "jobs", id)
		return err
	}},
	errandapi.CodeRunningNotCancellable: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		id, _ := e.pullTask(t)
		_, err := e.c.CancelTask(context.Background(), "jobs", id)
		return err
	}},
	errandapi.CodeNotRetryable: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		id, _ := e.pullTask(t)
		_, err := e.c.RetryTask(context.Background(), "jobs", id)
		return err
	}},
	errandapi.CodeNotRunnable: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		id, lease := e.pullTask(t)
		must(e.c.Ack(context.Background(), "jobs", id, errandapi.AckRequest{LeaseID: lease})).of(t)
		_, err := e.c.RunTask(context.Background(), "jobs", id)
		return err
	}},
	errandapi.CodeConfirmRequired: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		// The client always confirms; the same request path without it.
		return client.Raw(e.c, context.Background(), "DELETE", []string{"v1", "tasks", "jobs", "queues", "default"}, url.Values{})
	}},
	errandapi.CodeWrongMode: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		_, err := e.c.Lease(context.Background(), "jobs", "default", errandapi.LeaseRequest{})
		return err
	}},
	// An add from inside a delivery whose task is already MaxDepth deep:
	// the add carries the attempt's delivery token (as a function
	// worker's handler does), signed with the instance's own key for a
	// task of depth 8, so the task it adds would be 9 deep.
	errandapi.CodeDepthExceeded: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		ctx := context.Background()
		inst, err := e.eng.Instance(ctx, "dev", "jobs")
		if err != nil {
			t.Fatal(err)
		}
		must(e.c.CreateQueue(ctx, "jobs", "q", errandapi.QueueRequest{Mode: new(errandapi.ModePull)})).of(t)
		parent := &task.Task{InstanceID: inst.ID, ID: id.New(e.clock.Now()), Depth: errandapi.MaxDepth,
			DeadlineAt: e.clock.Now().Add(time.Minute).UnixMilli()}
		tok := deliver.SignToken(parent, inst.WebhookKey)
		_, err = e.c.AddTask(client.WithDelivery(ctx, tok), "jobs", "q", errandapi.NewTask{})
		return err
	}},
	errandapi.CodeUnauthenticated: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind, serve: true})
		_, err := e.c.ListInstances(context.Background())
		return err
	}},
	errandapi.CodePermissionDenied: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind, serve: true})
		admin := e.client(e.key("acme", "full:jobs"), client.RetryPolicy{})
		must(admin.CreateInstance(context.Background(), "jobs")).of(t)
		reader := e.client(e.key("acme", "read:jobs"), client.RetryPolicy{})
		must(reader.ListQueues(context.Background(), "jobs")).of(t)
		_, err := reader.CreateQueue(context.Background(), "jobs", "q", errandapi.QueueRequest{})
		return err
	}},
	errandapi.CodeRateLimited: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		c := e.client("", client.RetryPolicy{MaxAttempts: 1})
		must(c.UpdateSettings(context.Background(), "jobs", errandapi.SettingsRequest{RateLimit: errandapi.Value(1.0)})).of(t)
		must(c.ListQueues(context.Background(), "jobs")).of(t)
		_, err := c.ListQueues(context.Background(), "jobs")
		if ce, ok := err.(*client.Error); ok && ce.RetryAfter != time.Second {
			t.Errorf("RetryAfter %v, want the server's 1 s", ce.RetryAfter)
		}
		return err
	}},
	// SQLite: a write behind another connection's write lock waits out
	// busy_timeout (5 s) and is refused. PostgreSQL: a closed pool.
	errandapi.CodeUnavailable: {produce: func(t *testing.T, kind string) error {
		if kind == "postgres" {
			e := start(t, options{kind: kind})
			_ = e.st.Close()
			_, err := e.client("", client.RetryPolicy{MaxAttempts: 1}).ListQueues(context.Background(), "jobs")
			return err
		}
		path := filepath.Join(t.TempDir(), "errand.db")
		st, err := sqlite.Open(context.Background(), path, sqlite.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		e := start(t, options{st: st})
		must(e.c.CreateInstance(context.Background(), "jobs")).of(t)
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		conn := must(db.Conn(context.Background())).of(t)
		defer conn.Close()
		if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		defer conn.ExecContext(context.Background(), "ROLLBACK") //nolint:errcheck
		_, err = e.client("", client.RetryPolicy{MaxAttempts: 1}).CreateQueue(context.Background(), "jobs", "q", errandapi.QueueRequest{})
		return err
	}},
	// SQLite answers a closed database as INTERNAL (PostgreSQL's closed
	// pool is UNAVAILABLE, above).
	errandapi.CodeMethodNotAllowed: {produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		return client.Raw(e.c, context.Background(), "PUT", []string{"v1", "tasks", "jobs", "queues", "default"}, url.Values{})
	}},
	errandapi.CodeInternal: {only: "sqlite", produce: func(t *testing.T, kind string) error {
		e := start(t, options{kind: kind})
		must(e.c.CreateInstance(context.Background(), "jobs")).of(t)
		_ = e.st.Close()
		_, err := e.client("", client.RetryPolicy{MaxAttempts: 1}).ListQueues(context.Background(), "jobs")
		return err
	}},
}

// TestErrorRoundTrip produces every code of the contract for real through
// the server and checks that the
// client answers an *Error with the code, the table's status and a
// message, that errors.Is matches its sentinel and no other, and that
// every code of errandapi has its case.
func TestErrorRoundTrip(t *testing.T) {
	for _, code := range errandapi.Codes() {
		if _, ok := refusals[code]; !ok {
			t.Errorf("%s has no refusal case: add one", code)
		}
	}
	eachStore(t, func(t *testing.T, kind string) {
		for _, code := range errandapi.Codes() {
			r, ok := refusals[code]
			if !ok || r.only != "" && r.only != kind {
				continue
			}
			t.Run(string(code), func(t *testing.T) {
				t.Parallel()
				err := r.produce(t, kind)
				var ce *client.Error
				if !errors.As(err, &ce) {
					t.Fatalf("got %T %v, want a *client.Error", err, err)
				}
				if ce.Code != code || ce.Status != errandapi.StatusOf(code) || ce.Message == "" {
					t.Fatalf("got %+v, want code %s, status %d and a message", ce, code, errandapi.StatusOf(code))
				}
				for _, other := range errandapi.Codes() {
					if got := errors.Is(err, errandapi.Sentinel(other)); got != (other == code) {
						t.Errorf("errors.Is(%s, Err %s) = %v", code, other, got)
					}
				}
			})
		}
	})
}

// TestAnswersWithoutAnErrandBody: a proxy's answer without the v1 error
// body becomes the code errand uses for its status, with the body's start
// in the message; a 502 is UNAVAILABLE and retried like a 503.
func TestAnswersWithoutAnErrandBody(t *testing.T) {
	var tries atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tries.Add(1)
		switch r.URL.Path {
		case "/v1/tasks/jobs/queues/gone":
			http.Error(w, "<html>not here</html>", http.StatusNotFound)
		default:
			http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c, _ := client.New(srv.URL+"/", client.Options{HTTPClient: hc, Retry: client.RetryPolicy{MaxAttempts: 2}})
	client.SetSleep(c, func(context.Context, time.Duration) error { return nil })
	_, err := c.GetQueue(context.Background(), "jobs", "gone")
	var ce *client.Error
	if !errors.As(err, &ce) || !errors.Is(err, client.ErrNotFound) || ce.Status != 404 || !strings.Contains(ce.Message, "not here") {
		t.Fatalf("404 without a body: %+v", err)
	}
	tries.Store(0)
	_, err = c.ListQueues(context.Background(), "jobs")
	if !errors.Is(err, client.ErrUnavailable) || tries.Load() != 2 {
		t.Fatalf("502: %v after %d tries, want UNAVAILABLE after 2", err, tries.Load())
	}
}

// TestNewRefusesABadBaseURL: only http(s)://host[/prefix] is a base URL.
func TestNewRefusesABadBaseURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:9191", "ftp://h", "http://", "http://h/?x=1", "http://h/#f"} {
		if _, err := client.New(u, client.Options{}); err == nil || !strings.Contains(err.Error(), "want http(s)://host[:port][/prefix]") {
			t.Errorf("New(%q): %v; want the form of a base URL", u, err)
		}
	}
	if _, err := client.New("https://errand.example.com/prefix/", client.Options{}); err != nil {
		t.Errorf("a prefix: %v", err)
	}
}

// TestNewRefusesAKeyWithANewline: a key read from a file with its newline
// cannot travel in a header; New says so (it was a transport error on
// every call, retried).
func TestNewRefusesAKeyWithANewline(t *testing.T) {
	_, err := client.New("http://127.0.0.1:9", client.Options{APIKey: "errk_abc\n"})
	if !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), "APIKey holds whitespace or a control character at byte 8") {
		t.Fatalf("New with a key ending in a newline: %v", err)
	}
}

// TestEmptyPathPartsAreRefused: an instance, a queue or an id passed as ""
// is refused with INVALID_ARGUMENT naming it, and nothing is sent (the
// path with a hole in it was redirected, then answered "no route").
func TestEmptyPathPartsAreRefused(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { sent.Add(1) }))
	defer srv.Close()
	c, err := client.New(srv.URL, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for want, call := range map[string]func() error{
		"the instance is empty: /v1/tasks//queues has an empty part": func() error { _, err := c.ListQueues(ctx, ""); return err },
		"the queue is empty":     func() error { _, err := c.GetQueue(ctx, "jobs", ""); return err },
		"the task's id is empty": func() error { _, err := c.GetTask(ctx, "jobs", ""); return err },
	} {
		if err := call(); !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("%v; want INVALID_ARGUMENT with %q", err, want)
		}
	}
	if n := sent.Load(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
