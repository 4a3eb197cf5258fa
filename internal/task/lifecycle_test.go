package task

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func pushQueue() *Queue {
	q := NewQueue("inst", "emails", ModePush)
	q.Target = &Target{Webhook: "https://example.com/hook"}
	return q
}

func TestNewTaskValidation(t *testing.T) {
	now := int64(1_000_000)
	q := pushQueue()
	noTarget := NewQueue("inst", "default", ModePush)
	pull := NewQueue("inst", "thumbs", ModePull)
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	big := json.RawMessage(`"` + strings.Repeat("a", MaxPayloadBytes) + `"`)
	cases := []struct {
		name  string
		q     *Queue
		in    AddInput
		code  Code
		field string
	}{
		{"ok", q, AddInput{Payload: json.RawMessage(`{"a":1}`)}, "", ""},
		{"bad name", q, AddInput{Name: "a b"}, CodeInvalidArgument, "name"},
		{"long name", q, AddInput{Name: strings.Repeat("a", 501)}, CodeInvalidArgument, "name"},
		{"bad json", q, AddInput{Payload: json.RawMessage(`{`)}, CodeInvalidArgument, "payload"},
		{"too large", q, AddInput{Payload: big}, CodePayloadTooLarge, "payload"},
		{"params too large", q, AddInput{Params: big}, CodePayloadTooLarge, "params"},
		{"no target", noTarget, AddInput{}, CodeNoTarget, ""},
		{"own target", noTarget, AddInput{Target: &Target{Function: "app/send"}}, "", ""},
		{"bad own target", noTarget, AddInput{Target: &Target{Webhook: "ftp://x"}}, CodeInvalidArgument, "target.webhook"},
		{"two targets", noTarget, AddInput{Target: &Target{Webhook: "https://x", Channel: "c"}}, CodeInvalidArgument, "target"},
		{"pull with target", pull, AddInput{Target: &Target{Channel: "c"}}, CodeInvalidArgument, "target"},
		{"pull ok", pull, AddInput{}, "", ""},
		{"negative delay", q, AddInput{Delay: f(-1)}, CodeInvalidArgument, "delay"},
		{"delay and runAt", q, AddInput{Delay: f(1), RunAt: &now}, CodeInvalidArgument, "delay"},
		{"deadline", q, AddInput{DeadlineSeconds: i(841)}, CodeInvalidArgument, "deadlineSeconds"},
		{"depth", q, AddInput{Depth: 9}, CodeDepthExceeded, ""},
		// A field's refusal comes before the queue's lack of a target.
		{"no target, bad deadline", noTarget, AddInput{DeadlineSeconds: i(841)}, CodeInvalidArgument, "deadlineSeconds"},
		{"no target, bad delay", noTarget, AddInput{Delay: f(-1)}, CodeInvalidArgument, "delay"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewTask(c.q, c.in, now, URLRules{})
			if ErrorCode(err) != c.code {
				t.Fatalf("code %q, want %q (%v)", ErrorCode(err), c.code, err)
			}
			if c.field != "" && err.(*Error).Field != c.field {
				t.Fatalf("field %q, want %q", err.(*Error).Field, c.field)
			}
		})
	}
	tk, err := NewTask(q, AddInput{Delay: f(1.5)}, now, URLRules{})
	if err != nil || tk.RunAt != now+1500 || tk.State != Pending || string(tk.Payload) != "null" || tk.Source != SourceAPI {
		t.Fatalf("delay: %+v %v", tk, err)
	}
}

func TestAttemptAccountingAndBackoff(t *testing.T) {
	q := pushQueue()
	q.MaxAttempts = 3
	tk, _ := NewTask(q, AddInput{}, 0, URLRules{})
	now := int64(0)
	for n := 1; n <= 3; n++ {
		if err := tk.Claim(q, now, "L", 1000); err != nil {
			t.Fatal(err)
		}
		if tk.Attempt != n || tk.DeadlineAt != now+600_000 {
			t.Fatalf("attempt %d deadline %d", tk.Attempt, tk.DeadlineAt)
		}
		failed, err := tk.Finish(q, now+5, Outcome{Status: AttemptFailed, Error: "HTTP 500"})
		if err != nil {
			t.Fatal(err)
		}
		if n < 3 {
			wait := Backoff(n, q.Backoff()).Milliseconds()
			if failed || tk.State != RetryWait || tk.RunAt != now+5+wait {
				t.Fatalf("n=%d: %s runAt %d", n, tk.State, tk.RunAt)
			}
			now = tk.RunAt
		} else if !failed || tk.State != Failed || tk.FinishedAt != now+5 {
			t.Fatalf("budget spent but %s", tk.State)
		}
	}
	if len(tk.Attempts) != 3 || tk.Attempts[2].Attempt != 3 || tk.LastError != "HTTP 500" {
		t.Fatalf("history %+v", tk.Attempts)
	}
	if err := tk.Retry(now + 10); err != nil || tk.State != Pending || tk.Attempt != 0 {
		t.Fatalf("retry: %v %s %d", err, tk.State, tk.Attempt)
	}
}

func TestDeferDoesNotCount(t *testing.T) {
	q := pushQueue()
	q.MaxAttempts = 1
	tk, _ := NewTask(q, AddInput{}, 0, URLRules{})
	_ = tk.Claim(q, 0, "L", 1000)
	failed, err := tk.Finish(q, 10, Outcome{Status: AttemptDeferred, HTTPStatus: 503, Delay: time.Minute})
	if err != nil || failed || tk.State != RetryWait || tk.Attempt != 0 || tk.RunAt != 60_010 {
		t.Fatalf("defer: %v %v %s attempt=%d runAt=%d", failed, err, tk.State, tk.Attempt, tk.RunAt)
	}
	_ = tk.Claim(q, 60_010, "M", 1000)
	if tk.Attempt != 1 {
		t.Fatalf("attempt %d", tk.Attempt)
	}
}

// TestLongErrorCutAtACharacter: an attempt's error over 500 bytes keeps
// its first 500 at most, cut before a character that would not fit (not
// into a U+FFFD), and says how long it was.
func TestLongErrorCutAtACharacter(t *testing.T) {
	q := pushQueue()
	tk, _ := NewTask(q, AddInput{}, 0, URLRules{})
	_ = tk.Claim(q, 0, "L", 1000)
	msg := "a" + strings.Repeat("é", 300) // 601 bytes: byte 500 is inside an é
	if _, err := tk.Finish(q, 10, Outcome{Status: AttemptFailed, Error: msg}); err != nil {
		t.Fatal(err)
	}
	want := "a" + strings.Repeat("é", 249) + "… (601 bytes)"
	if got := tk.Attempts[0].Error; got != want || tk.LastError != want {
		t.Fatalf("error %q, lastError %q; want %q", got, tk.LastError, want)
	}
}

// TestNoBackoffCounts checks that an attempt abandoned by its dead node is
// retried at once but still counts, so a task that kills every node that
// takes it still ends FAILED.
func TestNoBackoffCounts(t *testing.T) {
	q := pushQueue()
	q.MaxAttempts = 2
	tk, _ := NewTask(q, AddInput{}, 0, URLRules{})
	_ = tk.Claim(q, 0, "L", 1000)
	o := Outcome{Status: AttemptTimedOut, Error: "node died", NoBackoff: true}
	if failed, err := tk.Finish(q, 4000, o); err != nil || failed || tk.State != RetryWait || tk.RunAt != 4000 || tk.Attempt != 1 {
		t.Fatalf("first: %v %v %s runAt=%d attempt=%d", failed, err, tk.State, tk.RunAt, tk.Attempt)
	}
	_ = tk.Claim(q, 4000, "M", 1000)
	if failed, _ := tk.Finish(q, 8000, o); !failed || tk.State != Failed {
		t.Fatalf("budget spent but %s", tk.State)
	}
}

// TestFailureWithDelay: a failed attempt given a Delay (a pull release
// with an error and delaySeconds) waits it instead of the backoff, counts
// against maxAttempts, and still ends the task when the budget is spent.
func TestFailureWithDelay(t *testing.T) {
	q := pushQueue()
	q.MaxAttempts = 2
	tk, _ := NewTask(q, AddInput{}, 0, URLRules{})
	_ = tk.Claim(q, 0, "L", 1000)
	o := Outcome{Status: AttemptFailed, Error: "busy", Delay: time.Hour}
	if failed, err := tk.Finish(q, 1000, o); err != nil || failed || tk.State != RetryWait || tk.RunAt != 1000+3_600_000 || tk.Attempt != 1 {
		t.Fatalf("first: %v %v %s runAt=%d attempt=%d", failed, err, tk.State, tk.RunAt, tk.Attempt)
	}
	_ = tk.Claim(q, tk.RunAt, "M", 1000)
	if failed, _ := tk.Finish(q, tk.RunAt+1, o); !failed || tk.State != Failed {
		t.Fatalf("budget spent but %s", tk.State)
	}
}

// TestDeferralWaitsAtLeastASecond: a deferral of 0 (a retry-after of 0 or
// of a past date, a worker's Defer(0)) waits MinDeferDelay, so a target
// that defers again and again is not called in a loop; a release (no
// worker free, a node stopping) is due at once.
func TestDeferralWaitsAtLeastASecond(t *testing.T) {
	q := pushQueue()
	tk, _ := NewTask(q, AddInput{}, 0, URLRules{})
	_ = tk.Claim(q, 0, "L", 1000)
	if _, err := tk.Finish(q, 500, Outcome{Status: AttemptDeferred, HTTPStatus: 503}); err != nil || tk.RunAt != 500+MinDeferDelay.Milliseconds() {
		t.Fatalf("deferred for 0: runAt %d, %v", tk.RunAt, err)
	}
	_ = tk.Claim(q, tk.RunAt, "L2", 1000)
	if _, err := tk.Finish(q, 2000, Outcome{Status: AttemptReleased}); err != nil || tk.RunAt != 2000 {
		t.Fatalf("released: runAt %d, %v", tk.RunAt, err)
	}
}

func TestMaxAgeEndsRetriesAndDefers(t *testing.T) {
	q := pushQueue()
	q.MaxAgeSeconds = 30
	tk, _ := NewTask(q, AddInput{}, 0, URLRules{})
	_ = tk.Claim(q, 0, "L", 1000)
	if failed, _ := tk.Finish(q, 25_000, Outcome{Status: AttemptFailed, Error: "HTTP 500"}); !failed || tk.State != Failed ||
		tk.LastError != "HTTP 500; maxAgeSeconds passed before the next attempt" || tk.Attempts[0].Error != "HTTP 500" {
		t.Fatalf("maxAge passed by backoff: %s, lastError %q", tk.State, tk.LastError)
	}
	tk, _ = NewTask(q, AddInput{}, 0, URLRules{})
	_ = tk.Claim(q, 0, "L", 1000)
	if failed, _ := tk.Finish(q, 1000, Outcome{Status: AttemptDeferred, Delay: time.Minute}); !failed {
		t.Fatalf("maxAge passed by defer: %s", tk.State)
	}
}

func TestCancelRetryRunNowRefusals(t *testing.T) {
	q := pushQueue()
	mk := func(s State) *Task { return &Task{ID: "t", State: s, Pull: false} }
	if err := mk(Running).Cancel(1); !IsCode(err, CodeRunningNotCancellable) || !strings.HasSuffix(err.Error(), "the task is running; it is left running") {
		t.Fatal(err)
	}
	leased := &Task{ID: "t", State: Running, Pull: true}
	if err := leased.Cancel(1); !IsCode(err, CodeRunningNotCancellable) || !strings.HasSuffix(err.Error(), "the task is leased; it is left leased") {
		t.Fatal(err)
	}
	for _, s := range []State{Succeeded, Failed, Cancelled} {
		if err := mk(s).Cancel(1); !IsCode(err, CodeNotCancellable) {
			t.Fatal(s, err)
		}
		if err := mk(s).RunNow(1); s != Failed && !IsCode(err, CodeNotRunnable) {
			t.Fatal(s, err)
		}
	}
	for _, s := range []State{Pending, Running, RetryWait, Succeeded, Cancelled} {
		if err := mk(s).Retry(1); !IsCode(err, CodeNotRetryable) {
			t.Fatal(s, err)
		}
	}
	for _, s := range []State{Pending, RetryWait} {
		tk := mk(s)
		if err := tk.Cancel(5); err != nil || tk.State != Cancelled || tk.FinishedAt != 5 {
			t.Fatal(s, err)
		}
		tk = mk(s)
		if err := tk.RunNow(7); err != nil || tk.State != Pending || tk.RunAt != 7 {
			t.Fatal(s, err)
		}
	}
	_ = q
}

func TestLeaseFence(t *testing.T) {
	q := NewQueue("inst", "thumbs", ModePull)
	tk, _ := NewTask(q, AddInput{}, 0, URLRules{})
	_ = tk.Claim(q, 1000, "L1", 30_000)
	if tk.DeadlineAt != 0 || tk.LeaseExpiresAt != 31_000 {
		t.Fatalf("pull claim: %+v", tk)
	}
	if err := tk.CheckLease("L1", 30_999); err != nil {
		t.Fatal("just before expiry must be accepted:", err)
	}
	if err := tk.CheckLease("L1", 31_000); !IsCode(err, CodeLeaseLost) {
		t.Fatal("at expiry must be lost:", err)
	}
	if err := tk.CheckLease("L0", 2000); !IsCode(err, CodeLeaseLost) {
		t.Fatal("wrong lease:", err)
	}
	if err := tk.Extend("L1", 30_000, 60); err != nil || tk.LeaseExpiresAt != 90_000 {
		t.Fatal(err)
	}
}

func TestDeadLetterCopy(t *testing.T) {
	q := pushQueue()
	dlq := NewQueue("inst", "dead", ModePull)
	tk, _ := NewTask(q, AddInput{Name: "n", Payload: json.RawMessage(`{"x":1}`), Params: json.RawMessage(`{"p":2}`)}, 0, URLRules{})
	tk.ID = "abc"
	d := tk.DeadLetter(dlq, 9)
	if d.Name != "" || d.DeadLetterOf != "abc" || d.Source != SourceDeadLetter || d.Queue != "dead" || !d.Pull ||
		string(d.Payload) != `{"x":1}` || string(d.Params) != `{"p":2}` || d.State != Pending || d.Depth != 1 {
		t.Fatalf("%+v", d)
	}
	// Each copy is one link deeper; a copy past MaxDepth is not made, so a
	// loop of dead-letter queues ends.
	for d.Depth < MaxDepth {
		d = d.DeadLetter(dlq, 10)
	}
	if d.Depth != MaxDepth {
		t.Fatalf("depth %d", d.Depth)
	}
	if past := d.DeadLetter(dlq, 11); past != nil {
		t.Fatalf("a copy at depth %d was made", past.Depth)
	}
}

func TestQueuePatch(t *testing.T) {
	q := NewQueue("i", "q", ModePush)
	bad := -1
	if err := (&QueuePatch{MaxAttempts: &bad}).Apply(q, false, URLRules{}); ErrorCode(err) != CodeInvalidArgument || err.(*Error).Field != "maxAttempts" {
		t.Fatal(err)
	}
	pull := ModePull
	if err := (&QueuePatch{Mode: &pull}).Apply(q, false, URLRules{}); err == nil {
		t.Fatal("mode change allowed")
	}
	d := 900
	if err := (&QueuePatch{DeadlineSeconds: &d}).Apply(q, false, URLRules{}); err == nil {
		t.Fatal("deadline 900 allowed")
	}
	lo := 100.0
	if err := (&QueuePatch{MinBackoffSeconds: &lo}).Apply(NewQueue("i", "q", ModePush), false, URLRules{}); err != nil {
		t.Fatal(err)
	}
	hi := 5.0
	if err := (&QueuePatch{MaxBackoffSeconds: &hi}).Apply(NewQueue("i", "q", ModePush), false, URLRules{}); err == nil {
		t.Fatal("max below min allowed")
	}
	// The message names the field once, and the bound it passed.
	if err := (&QueuePatch{MinBackoffSeconds: &lo, MaxBackoffSeconds: &hi}).Apply(NewQueue("i", "q", ModePush), false, URLRules{}); err == nil ||
		err.Error() != "INVALID_ARGUMENT: maxBackoffSeconds: must not be below minBackoffSeconds (100)" {
		t.Fatal(err)
	}
	lo = 7200
	if err := (&QueuePatch{MinBackoffSeconds: &lo}).Apply(NewQueue("i", "q", ModePush), false, URLRules{}); err == nil ||
		err.Error() != "INVALID_ARGUMENT: minBackoffSeconds: must not be above maxBackoffSeconds (3600)" {
		t.Fatal(err)
	}
}

func TestWebhookURLRules(t *testing.T) {
	for _, c := range []struct {
		url  string
		dev  bool
		good bool
	}{
		{"https://example.com/x", false, true},
		{"http://example.com/x", false, false},
		{"http://127.0.0.1:8080/x", true, true},
		{"https://user:pw@example.com/", false, false},
		{"https://example.com/" + strings.Repeat("a", 2048), false, false},
		{"example.com/x", false, false},
		{"https:///x", false, false},
		{"https://1.1.1.1:99999/", false, false},
		{"https://1.1.1.1:0/", false, false},
		{"https://1.1.1.1:65536/", false, false},
		{"https://1.1.1.1:65535/", false, true},
		{"https://[2606:4700::1111]:443/x", false, true},
		{"https://example.com:/x", false, true}, // an empty port is the scheme's
	} {
		err := ValidateWebhookURL(c.url, "target.webhook", URLRules{AllowHTTP: c.dev})
		if (err == nil) != c.good {
			t.Errorf("%q dev=%v: %v", c.url, c.dev, err)
		}
	}
}

// TestAckedBy: only the lease whose ack succeeded the task's last attempt
// is known again; another worker's lease, a lease of an earlier attempt
// (the task retried and acked under a new lease), a push attempt's and a
// task not succeeded are not.
func TestAckedBy(t *testing.T) {
	q := NewQueue("inst", "thumbs", ModePull)
	tk, err := NewTask(q, AddInput{}, 0, URLRules{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Claim(q, 1, "lease-1", 60_000); err != nil {
		t.Fatal(err)
	}
	if tk.AckedBy("lease-1") {
		t.Fatal("a running task is acked")
	}
	if _, err := tk.Finish(q, 2, Outcome{Status: AttemptFailed, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	if tk.AckedBy("lease-1") {
		t.Fatal("a failed attempt's lease is known as an ack")
	}
	if err := tk.Claim(q, 3, "lease-2", 60_000); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Finish(q, 4, Outcome{Status: AttemptSucceeded}); err != nil {
		t.Fatal(err)
	}
	for lease, want := range map[string]bool{"lease-2": true, "lease-1": false, "lease-3": false, "": false} {
		if got := tk.AckedBy(lease); got != want {
			t.Errorf("AckedBy(%q) = %v, want %v", lease, got, want)
		}
	}
	push := pushQueue()
	pt, _ := NewTask(push, AddInput{}, 0, URLRules{})
	_ = pt.Claim(push, 1, "node.lease", 60_000)
	_, _ = pt.Finish(push, 2, Outcome{Status: AttemptSucceeded})
	if pt.AckedBy("node.lease") || pt.Attempts[0].Lease != "" {
		t.Fatal("a push attempt keeps its lease")
	}
}

// TestChange: a change's priority applies in any state; a new due time
// only to a scheduled or retrying task (which stays retrying), others
// refused NOT_RUNNABLE naming the state; a refused change changes nothing,
// its priority included; delay and runAt are an add's.
func TestChange(t *testing.T) {
	const now = 10_000
	p := func(n int) *int { return &n }
	delay := func(s float64) *float64 { return &s }
	at := func(ms int64) *int64 { return &ms }
	for _, s := range []State{Pending, RetryWait} {
		tk := &Task{State: s, RunAt: 5}
		if err := tk.Change(Change{Priority: p(3), Delay: delay(60)}, now); err != nil || tk.Priority != 3 || tk.RunAt != now+60_000 || tk.State != s {
			t.Fatalf("%s: %v %+v", s, err, tk)
		}
		if err := tk.Change(Change{RunAt: at(2)}, now); err != nil || tk.RunAt != now {
			t.Fatalf("%s, a past runAt: %v, runAt %d; want now", s, err, tk.RunAt)
		}
	}
	for _, c := range []struct {
		s    State
		pull bool
		word string
	}{{Running, false, "running"}, {Running, true, "leased"}, {Succeeded, false, "succeeded"}, {Failed, false, "failed"}, {Cancelled, false, "cancelled"}} {
		tk := &Task{State: c.s, Pull: c.pull, RunAt: 5}
		err := tk.Change(Change{Priority: p(4), RunAt: at(now + 1)}, now)
		if !IsCode(err, CodeNotRunnable) || !strings.Contains(err.Error(), "the task is "+c.word) || tk.Priority != 0 || tk.RunAt != 5 {
			t.Fatalf("%s: %v %+v", c.word, err, tk)
		}
		if err := tk.Change(Change{Priority: p(4)}, now); err != nil || tk.Priority != 4 {
			t.Fatalf("%s, the priority alone: %v %+v", c.word, err, tk)
		}
	}
	for _, c := range []struct {
		change Change
		field  string
	}{
		{Change{Priority: p(10)}, "priority"}, {Change{Priority: p(-1)}, "priority"},
		{Change{Delay: delay(-1)}, "delay"}, {Change{Delay: delay(400 * 86400)}, "delay"},
		{Change{RunAt: at(now + 366*86400*1000)}, "runAt"}, {Change{Delay: delay(1), RunAt: at(now)}, "delay"},
		{Change{Priority: p(2), RunAt: at(-1)}, "runAt"},
	} {
		tk := &Task{State: Pending, RunAt: 5}
		err := tk.Change(c.change, now)
		if !IsCode(err, CodeInvalidArgument) || !strings.Contains(err.Error(), ": "+c.field+": ") || tk.Priority != 0 || tk.RunAt != 5 {
			t.Fatalf("%+v: %v, want INVALID_ARGUMENT naming %s, nothing changed (%+v)", c.change, err, c.field, tk)
		}
	}
}

// TestEffectiveFunction: a task's own target wins over its queue's, a
// webhook's is no function, and a task without a target takes its
// queue's.
func TestEffectiveFunction(t *testing.T) {
	fnQ := NewQueue("inst", "resize", ModePush)
	fnQ.Target = &Target{Function: "img/resize"}
	for _, c := range []struct {
		name   string
		target *Target
		q      *Queue
		want   string
	}{
		{"the queue's function", nil, fnQ, "img/resize"},
		{"its own webhook in a function queue", &Target{Webhook: "https://example.com/h"}, fnQ, ""},
		{"its own function in a webhook queue", &Target{Function: "app/send"}, pushQueue(), "app/send"},
		{"the queue's webhook", nil, pushQueue(), ""},
		{"no queue", nil, nil, ""},
	} {
		tk := &Task{Target: c.target}
		if got := tk.EffectiveFunction(c.q); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
