package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// setupChannels is setupWith on kind with channel targets delivered as
// the node delivers them (deliver.Channel, telling the engine of each
// append), fn changing the rest.
func setupChannels(t testing.TB, kind string, fn func(*engine.Config)) *bundle {
	t.Helper()
	ch := &deliver.Channel{}
	b := setupWith(t, kind, func(c *engine.Config) {
		ch.Store = c.Store
		c.Deliverer = &deliver.Mux{Channel: ch}
		if fn != nil {
			fn(c)
		}
	})
	ch.Appended = b.eng.ChannelAppended
	return b
}

// toChannel adds one task per payload to jobs' default queue, targeting
// channel, and checks they were added.
func (b *bundle) toChannel(channel string, payloads ...string) {
	b.t.Helper()
	var items []string
	for _, p := range payloads {
		items = append(items, fmt.Sprintf(`{"payload":%s,"target":{"channel":%q}}`, p, channel))
	}
	b.do("POST", "/v1/tasks/jobs/queues/default/tasks", "["+strings.Join(items, ",")+"]").want(b.t, 201, "")
}

// TestChannelSSELiveAndResume: a real SSE client gets each message live,
// with its event id and the webhook body; the task's attempt succeeded
// with the event id as its result; a client that reconnects with
// Last-Event-ID gets exactly the messages it missed, in order, then the
// live ones; ?since=0 replays the retained window. On both backends.
func TestChannelSSELiveAndResume(t *testing.T) {
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) { testChannelSSELiveAndResume(t, setupChannels(t, kind, nil)) })
	}
}

func testChannelSSELiveAndResume(t *testing.T, b *bundle) {
	{
		b.start()
		url := b.srv.URL + "/v1/channels/jobs/room-1"
		watch := subscribeSSE(t, b.client, url, nil)
		if head := watch.ready(); head != "0" {
			t.Fatalf("a new channel's head is %s, want 0", head)
		}
		first := subscribeSSE(t, b.client, url, nil)
		first.ready()
		var want []string
		for i := 1; i <= 3; i++ {
			// One at a time, so that the appends' order is the adds'.
			b.toChannel("room-1", fmt.Sprintf(`{"n":%d}`, i))
			want = append(want, fmt.Sprintf(`%d:{"n":%d}`, i, i))
			if got := watch.messages(1); got[0] != want[i-1] {
				t.Fatalf("watcher got %v, want %s", got, want[i-1])
			}
		}
		if got := first.messages(3); !slices.Equal(got, want) {
			t.Fatalf("live: %v, want %v", got, want)
		}
		// The attempts' outcomes are stored after their appends: once all
		// three are, the first task's result names its event.
		wctx, cancel := context.WithTimeout(context.Background(), eventWait)
		defer cancel()
		if _, err := b.outcomes.After(wctx, 2); err != nil {
			t.Fatal(err)
		}
		tasks := b.do("GET", "/v1/tasks/jobs/queues/default/tasks?state=succeeded", nil).want(t, 200, "").list("tasks")
		if len(tasks) != 3 {
			t.Fatalf("succeeded tasks: %v", tasks)
		}
		full := b.do("GET", "/v1/tasks/jobs/tasks/"+tasks[2].(map[string]any)["id"].(string), nil).want(t, 200, "").obj("task")
		if r, _ := json.Marshal(full["result"]); string(r) != `{"channel":"room-1","eventId":"1"}` {
			t.Fatalf("the first task's result %s", r)
		}
		first.resp.Body.Close()

		// Missed while away: 4 and 5 (one with line breaks in its payload).
		b.toChannel("room-1", `{"n":4}`)
		watch.messages(1)
		b.toChannel("room-1", "{\"n\":\n 5}")
		watch.messages(1)
		again := subscribeSSE(t, b.client, url, map[string]string{"Last-Event-ID": "3"})
		if head := again.ready(); head != "5" {
			t.Fatalf("head on resume %s, want 5", head)
		}
		if got := again.messages(2); !slices.Equal(got, []string{`4:{"n":4}`, "5:{\"n\":\n 5}"}) {
			t.Fatalf("resumed: %v", got)
		}
		b.toChannel("room-1", `{"n":6}`)
		if got := again.messages(1); got[0] != `6:{"n":6}` {
			t.Fatalf("live after the resume: %v", got)
		}
		all := subscribeSSE(t, b.client, url+"?since=0", nil)
		all.ready()
		if got := all.messages(6); got[0] != `1:{"n":1}` || got[5] != `6:{"n":6}` {
			t.Fatalf("since=0: %v", got)
		}
	}
}

// TestChannelWebSocket: a real WebSocket client gets the same events as
// JSON frames: ready, then messages with id and data, live and from since.
func TestChannelWebSocket(t *testing.T) {
	b := setupChannels(t, "sqlite", nil)
	b.start()
	wsURL := "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/v1/channels/jobs/room-1"
	live := subscribeWS(t, wsURL, nil)
	if e := live.must(); e.Type != "ready" || e.Channel != "room-1" || e.Head != "0" {
		t.Fatalf("first frame %+v", e)
	}
	b.toChannel("room-1", `{"n":1}`)
	e := live.must()
	if e.Type != "message" || e.ID != "1" || payloadOf(t, e.Data) != `{"n":1}` {
		t.Fatalf("message frame %+v", e)
	}
	back := subscribeWS(t, wsURL+"?since=0", nil)
	if e := back.must(); e.Type != "ready" || e.Head != "1" {
		t.Fatalf("ready %+v", e)
	}
	if e := back.must(); e.ID != "1" {
		t.Fatalf("replayed %+v", e)
	}
	// A payload reaches subscribers byte for byte (<, > and & not escaped).
	b.toChannel("room-1", `{"s":"a<b>&c"}`)
	for _, w := range []*wsStream{live, back} {
		if e := w.must(); e.ID != "2" || payloadOf(t, e.Data) != `{"s":"a<b>&c"}` {
			t.Fatalf("second message %+v", e)
		}
	}
}

// TestChannelBadInput: an invalid channel name, a malformed or negative
// position, and a position the channel never gave are 400s naming the
// field; nothing is lost: a subscriber from 0 then gets every message.
func TestChannelBadInput(t *testing.T) {
	b := setupChannels(t, "sqlite", nil)
	b.start()
	watch := subscribeSSE(t, b.client, b.srv.URL+"/v1/channels/jobs/room-1", nil)
	watch.ready()
	b.toChannel("room-1", `{"n":1}`)
	watch.messages(1)
	get := func(path string, headers map[string]string) res {
		req, _ := http.NewRequest("GET", b.srv.URL+path, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		return b.send(req)
	}
	for _, name := range []string{"bad.name", "-dash", "under_%2Fslash", strings.Repeat("x", 101), "sp%20ace"} {
		r := get("/v1/channels/jobs/"+name, nil).want(t, 400, "INVALID_ARGUMENT")
		if !strings.HasPrefix(r.message(), "channel") {
			t.Errorf("%s: message %q does not name channel", name, r.message())
		}
		b.do("POST", "/v1/channels/jobs/"+name+"/token", nil).want(t, 400, "INVALID_ARGUMENT").names(t, "channel")
	}
	cases := []struct {
		query   string
		headers map[string]string
		field   string
	}{
		{"", map[string]string{"Last-Event-ID": "abc"}, "Last-Event-ID"},
		{"", map[string]string{"Last-Event-ID": "-1"}, "Last-Event-ID"},
		{"", map[string]string{"Last-Event-ID": "2"}, "Last-Event-ID"}, // never given
		{"?since=x", nil, "since"},
		{"?since=-5", nil, "since"},
		{"?since=+1", nil, "since"},
		{"?since=", nil, "since"},
		{"?since=99999999999999999999", nil, "since"},
		{"?since=2", nil, "since"},
	}
	for _, c := range cases {
		r := get("/v1/channels/jobs/room-1"+c.query, c.headers).want(t, 400, "INVALID_ARGUMENT")
		if !strings.HasPrefix(r.message(), c.field) {
			t.Errorf("%s %v: message %q does not name %s", c.query, c.headers, r.message(), c.field)
		}
	}
	b.toChannel("room-1", `{"n":2}`)
	watch.messages(1)
	all := subscribeSSE(t, b.client, b.srv.URL+"/v1/channels/jobs/room-1?since=0", nil)
	all.ready()
	if got := all.messages(2); !slices.Equal(got, []string{`1:{"n":1}`, `2:{"n":2}`}) {
		t.Fatalf("after the refusals: %v", got)
	}
}

// TestChannelRetention: the pruner keeps the last Keep messages or the
// last MaxAge (fake clock); a subscriber whose position was pruned gets a
// gap event naming the missing ids, then the retained messages; one whose
// position is still retained gets no gap.
func TestChannelRetention(t *testing.T) {
	b := setupChannels(t, "sqlite", func(c *engine.Config) {
		// The service prunes only at its start here: the test runs passes.
		c.Channels = engine.ChannelsConfig{Keep: 2, MaxAge: time.Hour, PruneEvery: 1000 * time.Hour}
	})
	b.start()
	watch := subscribeSSE(t, b.client, b.srv.URL+"/v1/channels/jobs/room-1", nil)
	watch.ready()
	for i := 1; i <= 5; i++ {
		b.toChannel("room-1", fmt.Sprintf(`{"n":%d}`, i))
		watch.messages(1)
	}
	pruner := b.eng.ChannelPruner()
	if n, err := pruner.RunOnce(context.Background()); err != nil || n != 0 {
		t.Fatalf("young messages pruned: %d %v", n, err)
	}
	b.clock.Advance(time.Hour + time.Millisecond)
	if n, err := pruner.RunOnce(context.Background()); err != nil || n != 3 {
		t.Fatalf("pruned %d %v, want 3 (all but the last 2)", n, err)
	}
	old := subscribeSSE(t, b.client, b.srv.URL+"/v1/channels/jobs/room-1", map[string]string{"Last-Event-ID": "1"})
	old.ready()
	gap := old.next()
	if gap.event != "gap" || gap.id != "3" || !strings.Contains(gap.data, `"from":"2"`) {
		t.Fatalf("gap event %+v, want ids 2 to 3", gap)
	}
	if got := old.messages(2); !slices.Equal(got, []string{`4:{"n":4}`, `5:{"n":5}`}) {
		t.Fatalf("after the gap: %v", got)
	}
	recent := subscribeSSE(t, b.client, b.srv.URL+"/v1/channels/jobs/room-1?since=3", nil)
	recent.ready()
	if got := recent.messages(2); got[0] != `4:{"n":4}` {
		t.Fatalf("a retained position: %v", got)
	}
}

// TestChannelLogIsTheTruth: a message that reaches the log without a hint
// (a lost notification) reaches a live subscriber at the room's backstop.
func TestChannelLogIsTheTruth(t *testing.T) {
	// The engine's services are not started: the room's is the one timer
	// on the clock.
	b := setup(t)
	watch := subscribeSSE(t, b.client, b.srv.URL+"/v1/channels/jobs/room-1", nil)
	watch.ready()
	inst, err := b.eng.Instance(context.Background(), "dev", "jobs")
	if err != nil {
		t.Fatal(err)
	}
	b.appendDirect(inst.ID, "room-1", `{"n":1}`, false)
	// The room sleeps a backstop (the engine's, a minute on a lone node).
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	if err := b.clock.WaitForSleeperAt(ctx, b.clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-watch.events:
		t.Fatalf("an event before the backstop: %+v", ev)
	default:
	}
	b.clock.Advance(time.Minute)
	if got := watch.messages(1); got[0] != `1:{"n":1}` {
		t.Fatalf("at the backstop: %v", got)
	}
}

// appendDirect appends a message to the log as a delivery would; with
// hint the engine is told, as a delivery tells it, else nothing is (a
// lost notification).
func (b *bundle) appendDirect(instanceID, channel, payload string, hint bool) {
	b.t.Helper()
	taskID := id.New(b.clock.Now())
	body := `{"task":{"id":"` + taskID + `","queue":"default"},"payload":` + payload + `}`
	ref := store.ChannelRef{InstanceID: instanceID, Channel: channel}
	ms, err := b.eng.Store().ChannelAppend(context.Background(), []*store.ChannelAppendParams{{
		Ref: ref, TaskID: taskID, Body: []byte(body), Now: b.clock.Now().UnixMilli()}})
	if err != nil {
		b.t.Fatal(err)
	}
	m := ms[0]
	if hint {
		b.eng.ChannelAppended(ref, m)
	}
}

// TestChannelShutdown: when the node ends its subscriptions (its HTTP
// server shutting down), each subscriber gets closing with its last event
// id and the stream ends; a new subscription is 503 UNAVAILABLE. In dev
// a ?token= is not looked at.
func TestChannelShutdown(t *testing.T) {
	b := setupChannels(t, "sqlite", nil)
	b.start()
	s := subscribeSSE(t, b.client, b.srv.URL+"/v1/channels/jobs/room-1?token=not-checked-in-dev", nil)
	s.ready()
	b.toChannel("room-1", `{"n":1}`)
	s.messages(1)
	b.eng.EndSubscriptions()
	ev := s.next()
	if ev.event != "closing" || !strings.Contains(ev.data, `"lastEventId":"1"`) {
		t.Fatalf("on shutdown: %+v", ev)
	}
	if !s.ended() {
		t.Fatal("the stream did not end")
	}
	b.do("GET", "/v1/channels/jobs/room-1?since=0", nil).want(t, 503, "UNAVAILABLE")
}

// TestChannelSSEIDsBeforeTheFirstMessage: every SSE event carries an id
// line, so that a browser's EventSource, which reconnects with the last
// id it saw, resumes where it was even before its first message: ready
// the id its stream starts after (a live subscriber's head, a resuming
// one's since), closing the id to resume from.
func TestChannelSSEIDsBeforeTheFirstMessage(t *testing.T) {
	b := setupChannels(t, "sqlite", nil)
	b.start()
	url := b.srv.URL + "/v1/channels/jobs/room-1"
	watch := subscribeSSE(t, b.client, url, nil)
	watch.ready()
	for i := 1; i <= 2; i++ {
		b.toChannel("room-1", fmt.Sprintf(`{"n":%d}`, i))
		watch.messages(1)
	}
	live := subscribeSSE(t, b.client, url, nil)
	if ev := live.next(); ev.event != "ready" || ev.id != "2" {
		t.Fatalf("a live subscriber's ready %+v, want id 2 (the head)", ev)
	}
	from1 := subscribeSSE(t, b.client, url+"?since=1", nil)
	if ev := from1.next(); ev.event != "ready" || ev.id != "1" {
		t.Fatalf("ready from since=1: %+v, want id 1 (where it resumes)", ev)
	}
	// What a browser does after the live subscriber's connection broke
	// before its first message: reconnect with ready's id.
	live.resp.Body.Close()
	b.toChannel("room-1", `{"n":3}`)
	watch.messages(1)
	again := subscribeSSE(t, b.client, url, map[string]string{"Last-Event-ID": "2"})
	again.ready()
	if got := again.messages(1); got[0] != `3:{"n":3}` {
		t.Fatalf("reconnected with ready's id: %v, want message 3", got)
	}
	b.eng.EndSubscriptions()
	if ev := watch.next(); ev.event != "closing" || ev.id != "3" {
		t.Fatalf("closing %+v, want id 3 (the last message sent)", ev)
	}
}
