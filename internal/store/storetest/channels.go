package storetest

import (
	"fmt"
	"testing"

	"github.com/errandhq/errand/internal/store"
)

var channelCases = []testCase{
	{"AppendRead", testChannelAppendRead},
	{"AppendSameTask", testChannelAppendSameTask},
	{"AppendMany", testChannelAppendMany},
	{"Prune", testChannelPrune},
	{"InstanceDelete", testChannelInstanceDelete},
}

// appendMsg appends task's message to ref at now and returns its number.
func (e *env) appendMsg(ref store.ChannelRef, taskID string, now int64) int64 {
	e.t.Helper()
	ms, err := e.s.ChannelAppend(e.ctx, []*store.ChannelAppendParams{{Ref: ref, TaskID: taskID,
		Body: []byte(fmt.Sprintf(`{"task":{"id":%q},"payload":{"n":%d}}`, taskID, now)), Now: now}})
	if err != nil || len(ms) != 1 {
		e.t.Fatalf("ChannelAppend(%s, %s): %v %v", ref.Channel, taskID, ms, err)
	}
	m := ms[0]
	if m.Repeat {
		e.t.Fatalf("ChannelAppend(%s, %s): a first append is marked Repeat", ref.Channel, taskID)
	}
	return m.Seq
}

// read reads ref after after.
func (e *env) read(ref store.ChannelRef, after int64, limit int) *store.ChannelPage {
	e.t.Helper()
	p, err := e.s.ChannelRead(e.ctx, &store.ChannelReadParams{Ref: ref, After: after, Limit: limit})
	if err != nil {
		e.t.Fatalf("ChannelRead(%s after %d): %v", ref.Channel, after, err)
	}
	return p
}

// seqs lists a page's sequence numbers.
func seqs(p *store.ChannelPage) []int64 {
	out := []int64{}
	for _, m := range p.Messages {
		out = append(out, m.Seq)
	}
	return out
}

func wantPage(t *testing.T, what string, p *store.ChannelPage, head, oldest int64, want ...int64) {
	t.Helper()
	got := seqs(p)
	if p.Head != head || p.Oldest != oldest || fmt.Sprint(got) != fmt.Sprint(append([]int64{}, want...)) {
		t.Fatalf("%s: head %d oldest %d messages %v; want head %d oldest %d messages %v", what, p.Head, p.Oldest, got, head, oldest, want)
	}
}

// testChannelAppendRead: numbers start at 1 per channel and instance and
// rise by one; a read pages in order after a position, with the head and
// the oldest retained; a channel never appended to reads empty.
func testChannelAppendRead(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("other", "jobs")
	room := store.ChannelRef{InstanceID: a.ID, Channel: "room-1"}
	for i := int64(1); i <= 3; i++ {
		if n := e.appendMsg(room, fmt.Sprintf("t%d", i), T0+i); n != i {
			t.Fatalf("append %d got number %d", i, n)
		}
	}
	if n := e.appendMsg(store.ChannelRef{InstanceID: a.ID, Channel: "room-2"}, "t9", T0); n != 1 {
		t.Fatalf("another channel's first message is %d, want 1", n)
	}
	if n := e.appendMsg(store.ChannelRef{InstanceID: b.ID, Channel: "room-1"}, "t1", T0); n != 1 {
		t.Fatalf("another instance's first message is %d, want 1", n)
	}
	p := e.read(room, 0, 10)
	wantPage(t, "all", p, 3, 1, 1, 2, 3)
	m := p.Messages[1]
	if m.TaskID != "t2" || m.CreatedAt != T0+2 || string(m.Body) != `{"task":{"id":"t2"},"payload":{"n":1700000000002}}` {
		t.Fatalf("message 2: %+v %s", m, m.Body)
	}
	wantPage(t, "a page", e.read(room, 1, 1), 3, 1, 2)
	wantPage(t, "at the head", e.read(room, 3, 10), 3, 1)
	wantPage(t, "no page", e.read(room, 0, 0), 3, 1)
	wantPage(t, "never appended", e.read(store.ChannelRef{InstanceID: a.ID, Channel: "quiet"}, 0, 10), 0, 1)
}

// testChannelAppendSameTask: a task's second append answers its first
// message and appends nothing.
func testChannelAppendSameTask(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	room := store.ChannelRef{InstanceID: a.ID, Channel: "room-1"}
	e.appendMsg(room, "t1", T0)
	e.appendMsg(room, "t2", T0+1)
	ms, err := e.s.ChannelAppend(e.ctx, []*store.ChannelAppendParams{{Ref: room, TaskID: "t1", Body: []byte(`{"again":true}`), Now: T0 + 5}})
	if err != nil || len(ms) != 1 {
		t.Fatal(ms, err)
	}
	if m := ms[0]; m.Seq != 1 || m.CreatedAt != T0 || !m.Repeat || string(m.Body) != `{"task":{"id":"t1"},"payload":{"n":1700000000000}}` {
		t.Fatalf("a retried append answered %+v %s, want the first message", m, m.Body)
	}
	wantPage(t, "after a retried append", e.read(room, 0, 10), 2, 1, 1, 2)
	if n := e.appendMsg(room, "t3", T0+6); n != 3 {
		t.Fatalf("the next append got %d, want 3 (no number used by the retry)", n)
	}
}

// testChannelAppendMany: one call's appends to two channels are numbered
// in the order given within each channel and answered in that order; a
// task already in its log (a retry batched with others) answers its first
// message, uses no number, and the others are appended all the same.
func testChannelAppendMany(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	one, two := store.ChannelRef{InstanceID: a.ID, Channel: "room-1"}, store.ChannelRef{InstanceID: a.ID, Channel: "room-0"}
	e.appendMsg(one, "t1", T0)
	for _, retry := range []bool{false, true} {
		ps := []*store.ChannelAppendParams{
			{Ref: one, TaskID: "a", Body: []byte(`{"n":"a"}`), Now: T0 + 1},
			{Ref: two, TaskID: "b", Body: []byte(`{"n":"b"}`), Now: T0 + 1},
			{Ref: one, TaskID: "c", Body: []byte(`{"n":"c"}`), Now: T0 + 1},
		}
		want := []int64{2, 1, 3}
		if retry {
			ps = append(ps, &store.ChannelAppendParams{Ref: one, TaskID: "t1", Body: []byte(`{"again":true}`), Now: T0 + 2},
				&store.ChannelAppendParams{Ref: two, TaskID: "d", Body: []byte(`{"n":"d"}`), Now: T0 + 2})
			for i := range 3 {
				ps[i].TaskID += "2"
			}
			want = []int64{4, 2, 5, 1, 3}
		}
		ms, err := e.s.ChannelAppend(e.ctx, ps)
		if err != nil || len(ms) != len(ps) {
			t.Fatalf("ChannelAppend of %d: %v %v", len(ps), ms, err)
		}
		for i, m := range ms {
			if m.Seq != want[i] || m.TaskID != ps[i].TaskID || m.Repeat != (ps[i].TaskID == "t1") {
				t.Fatalf("append %d (%s) answered %+v, want number %d", i, ps[i].TaskID, m, want[i])
			}
		}
	}
	wantPage(t, "room-1", e.read(one, 0, 10), 5, 1, 1, 2, 3, 4, 5)
	wantPage(t, "room-0", e.read(two, 0, 10), 3, 1, 1, 2, 3)
	if page := e.read(one, 1, 1); string(page.Messages[0].Body) != `{"n":"a"}` {
		t.Fatalf("room-1's message 2: %s, want a's", page.Messages[0].Body)
	}
}

// testChannelPrune: a message goes only when it is both older than Before
// and not among its channel's last Keep; batches stop at Limit; numbers
// are never reused after a prune, even of everything.
func testChannelPrune(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	room := store.ChannelRef{InstanceID: a.ID, Channel: "room-1"}
	small := store.ChannelRef{InstanceID: a.ID, Channel: "small"}
	for i := int64(1); i <= 5; i++ {
		e.appendMsg(room, fmt.Sprintf("t%d", i), T0+i)
	}
	e.appendMsg(small, "s1", T0)
	e.appendMsg(small, "s2", T0)
	prune := func(keep int, before int64, limit int) int {
		t.Helper()
		n, err := e.s.ChannelPrune(e.ctx, &store.ChannelPruneParams{Keep: keep, Before: before, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Messages 1–3 are older than T0+4 and outside the last 2; 4 is
	// outside them too but not old enough; small's two are its last 2.
	if n := prune(2, T0+4, 1); n != 1 {
		t.Fatalf("a batch of 1 pruned %d", n)
	}
	if n := prune(2, T0+4, 100); n != 2 {
		t.Fatalf("pruned %d, want 2 more", n)
	}
	wantPage(t, "pruned", e.read(room, 0, 10), 5, 4, 4, 5)
	wantPage(t, "small kept", e.read(small, 0, 10), 2, 1, 1, 2)
	if n := prune(2, T0+4, 100); n != 0 {
		t.Fatalf("a second pass pruned %d", n)
	}
	if n := prune(0, T0+100, 100); n != 4 {
		t.Fatalf("pruning everything removed %d, want 4", n)
	}
	wantPage(t, "all pruned", e.read(room, 0, 10), 5, 6)
	if n := e.appendMsg(room, "t6", T0+200); n != 6 {
		t.Fatalf("after pruning everything the next number is %d, want 6", n)
	}
	wantPage(t, "after the prune", e.read(room, 0, 10), 6, 6, 6)
}

// testChannelInstanceDelete: an instance's channel logs go with it.
func testChannelInstanceDelete(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	room := store.ChannelRef{InstanceID: a.ID, Channel: "room-1"}
	e.appendMsg(room, "t1", T0)
	if err := e.s.InstanceDelete(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"}); err != nil {
		t.Fatal(err)
	}
	wantPage(t, "deleted instance", e.read(room, 0, 10), 0, 1)
}
