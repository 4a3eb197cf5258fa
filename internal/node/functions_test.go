package node

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// TestFunctionsListed: GET /v1/tasks/{instance}/functions lists what a
// connected worker serves (its slots), an in-process function (1), and a
// function a queue targets that nothing serves (0, with the queue), on
// every backend; once the worker leaves, its function is gone and the
// queue's is listed with 0.
func TestFunctionsListed(t *testing.T) {
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) {
			st := stores.Open(t, kind)
			defer st.Close()
			fns := &deliver.Functions{}
			if err := fns.Handle("app/a", func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil }); err != nil {
				t.Fatal(err)
			}
			n := New(Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Dev: true, Functions: fns})
			puts := publishes(n)
			if err := n.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(n.Handler(HandlerConfig{Auth: auth.Dev{}}))
			defer n.Close()
			defer srv.Close()
			do(t, "POST", srv.URL+"/v1/tasks/jobs/queues", `{"name":"mail","target":{"function":"app/f"}}`, 201)
			do(t, "POST", srv.URL+"/v1/tasks/jobs/queues", `{"name":"bill","target":{"function":"app/gone"}}`, 201)
			do(t, "POST", srv.URL+"/v1/tasks/jobs/queues", `{"name":"hooks","target":{"webhook":"http://127.0.0.1:9/x"}}`, 201)
			list := func() []errandapi.Function {
				t.Helper()
				resp, err := http.Get(srv.URL + "/v1/tasks/jobs/functions")
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var out errandapi.FunctionList
				if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
					t.Fatalf("GET functions: %d %v", resp.StatusCode, err)
				}
				return out.Functions
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ws := testkit.DialWorker(t, ctx, srv.URL, "jobs", nil) // serves app/f, 1 slot
			want := []errandapi.Function{
				{Function: "app/a", Slots: 1, Queues: []string{}},
				{Function: "app/f", Slots: 1, Queues: []string{"mail"}},
				{Function: "app/gone", Slots: 0, Queues: []string{"bill"}},
			}
			var got []errandapi.Function
			waitFor(t, "the worker's function listed", puts, func() bool { got = list(); return reflect.DeepEqual(got, want) })
			ws.CloseNow()
			want[1].Slots = 0
			waitFor(t, "the worker's function unserved", puts, func() bool { got = list(); return reflect.DeepEqual(got, want) })
			resp, err := http.Get(srv.URL + "/v1/tasks/nope/functions?x=1")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 400 {
				t.Fatalf("an unknown query parameter: %d, want 400", resp.StatusCode)
			}
		})
	}
}
