package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestAddForms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"emails","target":{"webhook":"http://127.0.0.1:1/x"}}`).want(t, 201, "")
	r := b.do("POST", "/v1/tasks/jobs/queues/emails/tasks", `{"payload":{"orderId":"o-1041"},"name":"receipt-o-1041","delay":60}`).want(t, 201, "")
	one := r.list("tasks")[0].(map[string]any)
	if one["ok"] != true || one["state"] != "scheduled" || one["name"] != "receipt-o-1041" || one["runAt"] != float64(T0.UnixMilli()+60_000) || len(one["id"].(string)) != 21 {
		t.Fatalf("%s", r.raw)
	}
	// The same name again: TASK_EXISTS with the existing id, 409 since none was added.
	r = b.do("POST", "/v1/tasks/jobs/queues/emails/tasks", `{"payload":{},"name":"receipt-o-1041"}`).want(t, 409, "TASK_EXISTS")
	dup := r.list("tasks")[0].(map[string]any)
	if dup["ok"] != false || dup["code"] != "TASK_EXISTS" || dup["id"] != one["id"] {
		t.Fatalf("%s", r.raw)
	}
	// An array: results in request order, 201 because one was added.
	r = b.do("POST", "/v1/tasks/jobs/queues/emails/tasks", `[{"name":"a"},{"name":"receipt-o-1041"},{"name":"a"}]`).want(t, 201, "")
	l := r.list("tasks")
	if len(l) != 3 || l[0].(map[string]any)["ok"] != true || l[1].(map[string]any)["code"] != "TASK_EXISTS" || l[2].(map[string]any)["code"] != "TASK_EXISTS" {
		t.Fatalf("%s", r.raw)
	}
	// {"tasks": [...]}, runAt in the past is now.
	r = b.do("POST", "/v1/tasks/jobs/queues/emails/tasks", fmt.Sprintf(`{"tasks":[{"runAt":%d},{"payload":[1,2]}]}`, T0.UnixMilli()-5)).want(t, 201, "")
	if l := r.list("tasks"); len(l) != 2 || l[0].(map[string]any)["runAt"] != float64(T0.UnixMilli()) {
		t.Fatalf("%s", r.raw)
	}
	// Payload bytes come back as sent.
	id := r.list("tasks")[1].(map[string]any)["id"].(string)
	g := b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, "")
	if !strings.Contains(string(g.raw), `"payload":[1,2]`) {
		t.Fatalf("%s", g.raw)
	}
}

func TestAddRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"emails","target":{"webhook":"http://127.0.0.1:1/x"}}`).want(t, 201, "")
	// default has no target: a task with none is refused, and nothing in the call is added.
	r := b.do("POST", "/v1/tasks/jobs/queues/default/tasks", `[{"target":{"function":"app/x"}},{"payload":1}]`).want(t, 400, "NO_TARGET")
	// The message says which task and how to give it a target.
	if msg := r.message(); !strings.HasPrefix(msg, `tasks[1]: queue "default" has no target`) || !strings.Contains(msg, `"target": {"webhook"`) || !strings.Contains(msg, "PATCH the queue") {
		t.Fatal(msg)
	}
	if n := b.do("GET", "/v1/tasks/jobs/queues/default", nil).obj("queue")["counts"].(map[string]any)["scheduled"]; n != 0.0 {
		t.Fatalf("NO_TARGET added %v", n)
	}
	b.do("POST", "/v1/tasks/jobs/queues/default/tasks", `{"target":{"function":"app/x"}}`).want(t, 201, "")
	big := `{"payload":"` + strings.Repeat("x", 64<<10) + `"}`
	r = b.do("POST", "/v1/tasks/jobs/queues/emails/tasks", big).want(t, 400, "PAYLOAD_TOO_LARGE")
	if !strings.HasPrefix(r.message(), "payload") {
		t.Fatal(r.message())
	}
	for _, c := range []struct{ body, field string }{
		{`{"payload":1,"state":"succeeded"}`, "state"},
		{`{"owner":"x"}`, "owner"},
		{`{"delay":"soon"}`, "delay"},
		{`{"delay":-3}`, "delay"},
		{`{"name":"no spaces"}`, "name"},
		{`[{"name":"ok"},{"name":"no spaces"}]`, "tasks[1].name"},
		{`{"tasks":[{"bogus":1}]}`, "tasks[0].bogus"},
		{`{"deadlineSeconds":900}`, "deadlineSeconds"},
		{`{"priority":10}`, "priority"},
		{`{"priority":-1}`, "priority"},
		{`{"priority":1.5}`, "priority"},
		{`[{},{"priority":"high"}]`, "tasks[1].priority"},
		{`[]`, "tasks"},
		{`"str"`, "body"},
		{`{"payload":`, "body"},
	} {
		r := b.do("POST", "/v1/tasks/jobs/queues/emails/tasks", c.body).want(t, 400, "INVALID_ARGUMENT")
		if !strings.HasPrefix(r.message(), c.field) {
			t.Errorf("%s: %q does not name %s", c.body, r.message(), c.field)
		}
	}
	many := "[" + strings.TrimSuffix(strings.Repeat(`{},`, 101), ",") + "]"
	b.do("POST", "/v1/tasks/jobs/queues/emails/tasks", many).want(t, 400, "INVALID_ARGUMENT").names(t, "tasks")
	b.do("POST", "/v1/tasks/jobs/queues/nope/tasks", `{}`).want(t, 404, "NOT_FOUND")
	// Nothing of the refused calls was stored.
	if n := b.do("GET", "/v1/tasks/jobs/queues/emails", nil).obj("queue")["counts"].(map[string]any)["scheduled"]; n != 0.0 {
		t.Fatalf("refused adds stored %v tasks", n)
	}
}

func TestListPagingAndOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`).want(t, 201, "")
	var batch []string
	for i := range 25 {
		batch = append(batch, fmt.Sprintf(`{"name":"t%02d","delay":%d}`, i, 100-i))
	}
	b.do("POST", "/v1/tasks/jobs/queues/q/tasks", "["+strings.Join(batch, ",")+"]").want(t, 201, "")
	// scheduled: soonest first → t24 first; page by 10 with the cursor.
	var names []string
	cursor := ""
	for pages := 0; ; pages++ {
		path := "/v1/tasks/jobs/queues/q/tasks?state=scheduled&limit=10"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := b.do("GET", path, nil).want(t, 200, "")
		for _, x := range r.list("tasks") {
			m := x.(map[string]any)
			if _, has := m["payload"]; has {
				t.Fatal("list carries payloads")
			}
			names = append(names, m["name"].(string))
		}
		c, _ := r.body["cursor"].(string)
		if r.body["cursor"] == nil {
			break
		}
		cursor = c
		if pages > 5 {
			t.Fatal("cursor never ends")
		}
	}
	if len(names) != 25 || names[0] != "t24" || names[24] != "t00" {
		t.Fatalf("order/paging: %v", names)
	}
	r := b.do("GET", "/v1/tasks/jobs/queues/q/tasks?name=t07", nil).want(t, 200, "")
	if l := r.list("tasks"); len(l) != 1 || l[0].(map[string]any)["name"] != "t07" {
		t.Fatalf("%s", r.raw)
	}
	for query, field := range map[string]string{
		"limit=0": "limit", "limit=201": "limit", "limit=-1": "limit", "limit=ten": "limit",
		"state=done": "state", "cursor=garbage!": "cursor", "name=no%20spaces": "name",
	} {
		b.do("GET", "/v1/tasks/jobs/queues/q/tasks?"+query, nil).want(t, 400, "INVALID_ARGUMENT").names(t, field)
	}
}

// leaseOne leases one task of a pull queue and returns its id and lease.
func (b *bundle) leaseOne(queue string, seconds int) (string, string) {
	b.t.Helper()
	r := b.do("POST", "/v1/tasks/jobs/queues/"+queue+"/lease", fmt.Sprintf(`{"count":1,"leaseSeconds":%d}`, seconds)).want(b.t, 200, "")
	l := r.list("tasks")
	if len(l) != 1 {
		b.t.Fatalf("lease: %s", r.raw)
	}
	m := l[0].(map[string]any)
	return m["id"].(string), m["leaseId"].(string)
}

func TestRunCancelRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull","maxAttempts":1}`).want(t, 201, "")
	add := func(body string) string {
		return b.do("POST", "/v1/tasks/jobs/queues/q/tasks", body).want(t, 201, "").list("tasks")[0].(map[string]any)["id"].(string)
	}
	later := add(`{"delay":3600}`)
	r := b.do("POST", "/v1/tasks/jobs/tasks/"+later+"/run", nil).want(t, 200, "")
	if r.obj("task")["runAt"] != float64(T0.UnixMilli()) {
		t.Fatalf("run now: %s", r.raw)
	}
	b.do("POST", "/v1/tasks/jobs/tasks/"+later+"/retry", nil).want(t, 400, "NOT_RETRYABLE")
	r = b.do("POST", "/v1/tasks/jobs/tasks/"+later+"/cancel", nil).want(t, 200, "")
	if r.obj("task")["state"] != "cancelled" {
		t.Fatalf("%s", r.raw)
	}
	b.do("POST", "/v1/tasks/jobs/tasks/"+later+"/cancel", nil).want(t, 400, "NOT_CANCELLABLE")
	b.do("POST", "/v1/tasks/jobs/tasks/"+later+"/run", nil).want(t, 400, "NOT_RUNNABLE")

	// A leased task is running: cancel leaves it running.
	id := add(`{"payload":{"k":1}}`)
	gotID, lease := b.leaseOne("q", 60)
	if gotID != id {
		t.Fatal("leased another task")
	}
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/cancel", nil).want(t, 400, "RUNNING_NOT_CANCELLABLE")
	if s := b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).obj("task")["state"]; s != "leased" {
		t.Fatalf("state after refused cancel: %v", s)
	}
	// A release with an error spends the only attempt: FAILED, then retry.
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/release", map[string]any{"leaseId": lease, "error": "boom"}).want(t, 200, "")
	g := b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, "").obj("task")
	atts := g["attempts"].([]any)
	if g["state"] != "failed" || g["lastError"] != "boom" || len(atts) != 1 || atts[0].(map[string]any)["status"] != "failed" {
		t.Fatalf("after failing release: %v", g)
	}
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/cancel", nil).want(t, 400, "NOT_CANCELLABLE")
	r = b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/retry", nil).want(t, 200, "")
	if tk := r.obj("task"); tk["state"] != "scheduled" || tk["attempt"] != 0.0 {
		t.Fatalf("retry: %s", r.raw)
	}
	b.do("GET", "/v1/tasks/jobs/tasks/nope", nil).want(t, 404, "NOT_FOUND")
	b.do("POST", "/v1/tasks/jobs/tasks/nope/cancel", nil).want(t, 404, "NOT_FOUND")
	b.do("GET", "/v1/tasks/other/tasks/"+id, nil).want(t, 404, "NOT_FOUND")
}

func TestPullLeaseAckExtendRelease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"thumbs","mode":"pull"}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues/thumbs/tasks", `[{"payload":{"key":"a"}},{"payload":{"key":"b"}}]`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues/default/lease", `{"count":1}`).want(t, 400, "WRONG_MODE")
	// Both ends of each bound, the field named.
	for _, c := range []struct{ body, field string }{
		{`{"count":0}`, "count"}, {`{"count":1001}`, "count"},
		{`{"leaseSeconds":0}`, "leaseSeconds"}, {`{"leaseSeconds":86401}`, "leaseSeconds"},
		{`{"waitSeconds":-1}`, "waitSeconds"}, {`{"waitSeconds":31}`, "waitSeconds"},
		{`{"count":1,"leaseSeconds":1.5}`, "leaseSeconds"},
	} {
		b.do("POST", "/v1/tasks/jobs/queues/thumbs/lease", c.body).want(t, 400, "INVALID_ARGUMENT").names(t, c.field)
	}
	r := b.do("POST", "/v1/tasks/jobs/queues/thumbs/lease", `{"count":10,"leaseSeconds":120}`).want(t, 200, "")
	l := r.list("tasks")
	if len(l) != 2 {
		t.Fatalf("%s", r.raw)
	}
	a := l[0].(map[string]any)
	if a["attempts"] != 1.0 || a["leaseExpiresAt"] != float64(T0.UnixMilli()+120_000) || a["payload"] == nil {
		t.Fatalf("%s", r.raw)
	}
	id, lease := a["id"].(string), a["leaseId"].(string)
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/ack", map[string]any{"leaseId": "wrong"}).want(t, 409, "LEASE_LOST")
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/ack", map[string]any{}).want(t, 400, "INVALID_ARGUMENT").names(t, "leaseId")
	for _, c := range []struct{ route, body, field string }{
		{"ack", `{"leaseId":""}`, "leaseId"},
		{"extend", `{}`, "leaseId"},
		{"extend", `{"leaseId":"` + lease + `"}`, "leaseSeconds"},
		{"extend", `{"leaseId":"` + lease + `","leaseSeconds":0}`, "leaseSeconds"},
		{"extend", `{"leaseId":"` + lease + `","leaseSeconds":86401}`, "leaseSeconds"},
		{"release", `{}`, "leaseId"},
		{"release", `{"leaseId":"` + lease + `","delaySeconds":-1}`, "delaySeconds"},
		{"release", `{"leaseId":"` + lease + `","delaySeconds":86401}`, "delaySeconds"},
	} {
		b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/"+c.route, c.body).want(t, 400, "INVALID_ARGUMENT").names(t, c.field)
	}
	big := map[string]any{"leaseId": lease, "result": strings.Repeat("r", 64<<10)}
	r = b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/ack", big).want(t, 400, "PAYLOAD_TOO_LARGE")
	if !strings.HasPrefix(r.message(), "result") {
		t.Fatal(r.message())
	}
	b.clock.Advance(100 * time.Second)
	r = b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/extend", map[string]any{"leaseId": lease, "leaseSeconds": 60}).want(t, 200, "")
	if r.obj("task")["leaseExpiresAt"] != float64(T0.UnixMilli()+160_000) {
		t.Fatalf("%s", r.raw)
	}
	b.clock.Advance(59 * time.Second)
	r = b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/ack", map[string]any{"leaseId": lease, "result": map[string]any{"width": 320}}).want(t, 200, "")
	if tk := r.obj("task"); tk["state"] != "succeeded" || tk["result"].(map[string]any)["width"] != 320.0 {
		t.Fatalf("%s", r.raw)
	}
	// The same ack again (its answer lost, say) is done: 200 with the task
	// as the first ack stored it; the lease holds nothing else any more.
	r = b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/ack", map[string]any{"leaseId": lease, "result": map[string]any{"width": 1}}).want(t, 200, "")
	if tk := r.obj("task"); tk["state"] != "succeeded" || tk["result"].(map[string]any)["width"] != 320.0 || len(tk["attempts"].([]any)) != 1 {
		t.Fatalf("a repeated ack: %s", r.raw)
	}
	if strings.Contains(string(r.raw), lease) {
		t.Fatalf("the task shows its attempt's lease: %s", r.raw)
	}
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/ack", map[string]any{"leaseId": "x" + lease[1:]}).want(t, 409, "LEASE_LOST")
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/extend", map[string]any{"leaseId": lease, "leaseSeconds": 5}).want(t, 409, "LEASE_LOST")
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/release", map[string]any{"leaseId": lease}).want(t, 409, "LEASE_LOST")

	// The other lease ran out: the rescuer makes it a failed attempt; the old lease is lost.
	other, olease := l[1].(map[string]any)["id"].(string), l[1].(map[string]any)["leaseId"].(string)
	b.clock.Advance(time.Second)
	if n, err := b.eng.Rescuer().RunOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("rescuer: %d %v", n, err)
	}
	g := b.do("GET", "/v1/tasks/jobs/tasks/"+other, nil).obj("task")
	if g["state"] != "retrying" || g["attempts"].([]any)[0].(map[string]any)["status"] != "lease_expired" {
		t.Fatalf("%v", g)
	}
	b.do("POST", "/v1/tasks/jobs/tasks/"+other+"/ack", map[string]any{"leaseId": olease}).want(t, 409, "LEASE_LOST")
	// Release without error: back unharmed, attempt not counted.
	b.clock.Advance(time.Hour)
	_, l2 := b.leaseOne("thumbs", 30)
	r = b.do("POST", "/v1/tasks/jobs/tasks/"+other+"/release", map[string]any{"leaseId": l2, "delaySeconds": 5}).want(t, 200, "")
	if tk := r.obj("task"); tk["state"] != "retrying" || tk["attempt"] != 1.0 {
		t.Fatalf("%s", r.raw)
	}
	// Release with an error: a failed attempt, retried after delaySeconds
	// when given (not the queue's 10 s backoff), else after the backoff.
	b.clock.Advance(time.Minute)
	_, l3 := b.leaseOne("thumbs", 30)
	r = b.do("POST", "/v1/tasks/jobs/tasks/"+other+"/release", map[string]any{"leaseId": l3, "error": "upstream busy", "delaySeconds": 3000}).want(t, 200, "")
	if tk := r.obj("task"); tk["state"] != "retrying" || tk["attempt"] != 2.0 || tk["runAt"] != float64(b.clock.Now().UnixMilli()+3_000_000) {
		t.Fatalf("release with an error and delaySeconds 3000: %s", r.raw)
	}
	b.clock.Advance(time.Hour)
	_, l4 := b.leaseOne("thumbs", 30)
	r = b.do("POST", "/v1/tasks/jobs/tasks/"+other+"/release", map[string]any{"leaseId": l4, "error": "again"}).want(t, 200, "")
	if tk := r.obj("task"); tk["state"] != "retrying" || tk["attempt"] != 3.0 || tk["runAt"].(float64) > float64(b.clock.Now().UnixMilli()+60_000) {
		t.Fatalf("release with an error and no delay waits the queue's backoff: %s", r.raw)
	}
}

func TestCountsCapped(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("adds 10,000 tasks")
	}
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`).want(t, 201, "")
	batch := "[" + strings.TrimSuffix(strings.Repeat(`{},`, 100), ",") + "]"
	for range 101 {
		b.do("POST", "/v1/tasks/jobs/queues/q/tasks", batch).want(t, 201, "")
	}
	q := b.do("GET", "/v1/tasks/jobs/queues/q", nil).want(t, 200, "").obj("queue")
	if q["counts"].(map[string]any)["scheduled"] != 10000.0 || len(q["capped"].([]any)) != 1 || q["capped"].([]any)[0] != "scheduled" {
		t.Fatalf("%v", q)
	}
}

func TestRetentionFreesTheName(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`).want(t, 201, "")
	id := b.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{"name":"once"}`).want(t, 201, "").list("tasks")[0].(map[string]any)["id"].(string)
	b.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{"name":"pending"}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/cancel", nil).want(t, 200, "")
	b.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{"name":"once"}`).want(t, 409, "TASK_EXISTS")
	b.clock.Advance(7*24*time.Hour - time.Minute)
	if n, _ := b.eng.Cleaner().RunOnce(context.Background()); n != 0 {
		t.Fatalf("deleted %d before retention", n)
	}
	b.clock.Advance(2 * time.Minute)
	if n, _ := b.eng.Cleaner().RunOnce(context.Background()); n != 1 {
		t.Fatalf("deleted %d, want the one finished task", n)
	}
	b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 404, "NOT_FOUND")
	b.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{"name":"once"}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{"name":"pending"}`).want(t, 409, "TASK_EXISTS")
}

func TestBatchAck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"thumbs","mode":"pull"}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues/thumbs/tasks", `[{},{},{}]`).want(t, 201, "")
	l := b.do("POST", "/v1/tasks/jobs/queues/thumbs/lease", `{"count":3,"leaseSeconds":60}`).want(t, 200, "").list("tasks")
	id := func(i int) string { return l[i].(map[string]any)["id"].(string) }
	lease := func(i int) string { return l[i].(map[string]any)["leaseId"].(string) }
	body := fmt.Sprintf(`{"acks":[{"id":%q,"leaseId":%q,"result":{"w":1}},{"id":%q,"leaseId":"stale"},{"id":"missing","leaseId":"x"},{"id":%q,"leaseId":%q}]}`,
		id(0), lease(0), id(1), id(2), lease(2))
	r := b.do("POST", "/v1/tasks/jobs/queues/thumbs/ack", body).want(t, 200, "")
	res := r.list("results")
	codes := []any{nil, "LEASE_LOST", "NOT_FOUND", nil}
	for i, want := range codes {
		m := res[i].(map[string]any)
		if m["code"] != want || (want == nil) != (m["ok"] == true) {
			t.Fatalf("result %d: %v (want %v): %s", i, m, want, r.raw)
		}
	}
	if g := b.do("GET", "/v1/tasks/jobs/tasks/"+id(0), nil).obj("task"); g["state"] != "succeeded" || g["result"].(map[string]any)["w"] != 1.0 {
		t.Fatalf("%v", g)
	}
	if g := b.do("GET", "/v1/tasks/jobs/tasks/"+id(1), nil).obj("task"); g["state"] != "leased" {
		t.Fatalf("stale ack changed the task: %v", g)
	}
	// The same ack again is done; none acked: 409 with the first refusal.
	r = b.do("POST", "/v1/tasks/jobs/queues/thumbs/ack", fmt.Sprintf(`{"acks":[{"id":%q,"leaseId":%q}]}`, id(0), lease(0))).want(t, 200, "")
	if m := r.list("results")[0].(map[string]any); m["ok"] != true {
		t.Fatalf("a repeated ack in a batch: %s", r.raw)
	}
	b.do("POST", "/v1/tasks/jobs/queues/thumbs/ack", fmt.Sprintf(`{"acks":[{"id":%q,"leaseId":"stale"}]}`, id(1))).want(t, 409, "LEASE_LOST")
	// The same ack twice in one call: both answered alike; another lease
	// of the task in the same call is refused.
	r = b.do("POST", "/v1/tasks/jobs/queues/thumbs/ack", fmt.Sprintf(`{"acks":[{"id":%q,"leaseId":%q},{"id":%q,"leaseId":%q},{"id":%q,"leaseId":"other"}]}`,
		id(1), lease(1), id(1), lease(1), id(1))).want(t, 200, "")
	if res := r.list("results"); res[0].(map[string]any)["ok"] != true || res[1].(map[string]any)["ok"] != true || res[2].(map[string]any)["code"] != "LEASE_LOST" {
		t.Fatalf("one ack twice in a call: %s", r.raw)
	}
	// A refused ack of a task does not refuse a later one with its lease.
	b.do("POST", "/v1/tasks/jobs/queues/thumbs/tasks", `[{}]`).want(t, 201, "")
	l = b.do("POST", "/v1/tasks/jobs/queues/thumbs/lease", `{"count":1,"leaseSeconds":60}`).want(t, 200, "").list("tasks")
	r = b.do("POST", "/v1/tasks/jobs/queues/thumbs/ack", fmt.Sprintf(`{"acks":[{"id":%q,"leaseId":"wrong"},{"id":%q,"leaseId":%q}]}`,
		id(0), id(0), lease(0))).want(t, 200, "")
	if res := r.list("results"); res[0].(map[string]any)["code"] != "LEASE_LOST" || res[1].(map[string]any)["ok"] != true {
		t.Fatalf("a wrong lease, then the right one: %s", r.raw)
	}
	if g := b.do("GET", "/v1/tasks/jobs/tasks/"+id(0), nil).obj("task"); g["state"] != "succeeded" {
		t.Fatalf("after the right lease's ack: %v", g)
	}
	// Whatever the refusals' codes: a batch of unknown ids is 409 too, each
	// result NOT_FOUND (the one status not from statusOf).
	r = b.do("POST", "/v1/tasks/jobs/queues/thumbs/ack", `{"acks":[{"id":"missing","leaseId":"x"}]}`).want(t, 409, "NOT_FOUND")
	if m := r.list("results")[0].(map[string]any); m["code"] != "NOT_FOUND" || m["ok"] != false {
		t.Fatalf("result of an unknown id: %v", m)
	}
	b.do("POST", "/v1/tasks/jobs/queues/thumbs/ack", `{"acks":[]}`).want(t, 400, "INVALID_ARGUMENT").names(t, "acks")
	b.do("POST", "/v1/tasks/jobs/queues/thumbs/ack", `{}`).want(t, 400, "INVALID_ARGUMENT").names(t, "acks")
	tooMany := `{"acks":[` + strings.TrimSuffix(strings.Repeat(`{"id":"x","leaseId":"y"},`, 1001), ",") + `]}`
	b.do("POST", "/v1/tasks/jobs/queues/thumbs/ack", tooMany).want(t, 400, "INVALID_ARGUMENT").names(t, "acks")
	for body, field := range map[string]string{`{"acks":[{"id":"x"}]}`: "acks[0].leaseId", `{"acks":[{"id":"x","leaseId":"y"},{"leaseId":"x"}]}`: "acks[1].id", `{"acks":[null]}`: "acks[0].id"} {
		if m := b.do("POST", "/v1/tasks/jobs/queues/thumbs/ack", body).want(t, 400, "INVALID_ARGUMENT").message(); !strings.HasPrefix(m, field+": is required") {
			t.Fatalf("%s: %s, want it to name %s", body, m, field)
		}
	}
}

// TestAddAnswersTheCommittedState: an add's result carries the state its
// task was committed in: a due task of a push queue is claimed in the
// add's own transaction, on both stores, and answered running; a task
// added to a paused queue is answered scheduled.
func TestAddAnswersTheCommittedState(t *testing.T) {
	t.Parallel()
	onEach(t, func(t *testing.T, b *bundle) {
		b.start()
		b.do("POST", "/v1/tasks/jobs/queues", `{"name":"emails","target":{"webhook":"http://127.0.0.1:1/x"}}`).want(t, 201, "")
		for _, c := range []struct{ paused, want string }{{"false", "running"}, {"true", "scheduled"}} {
			b.do("PATCH", "/v1/tasks/jobs/queues/emails", `{"paused":`+c.paused+`}`).want(t, 200, "")
			r := b.do("POST", "/v1/tasks/jobs/queues/emails/tasks", `{"payload":{"orderId":"o-1041"}}`).want(t, 201, "")
			if one := r.list("tasks")[0].(map[string]any); one["ok"] != true || one["state"] != c.want {
				t.Fatalf("paused %s: want state %s: %s", c.paused, c.want, r.raw)
			}
		}
	})
}
