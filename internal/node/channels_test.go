package node

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// TestChannelAcrossNodes: two serve-like nodes on one PostgreSQL, a
// subscriber on B, the tasks added through A: each message reaches B's
// subscriber promptly, with its event id. The nodes' clocks are fake and
// never move, so no backstop runs: B hears of an append A delivered from
// the database's notification, of one it delivered itself from its own
// hint; a third message appended through A's store alone reaches B by the
// notification only.
func TestChannelAcrossNodes(t *testing.T) {
	open := stores.OpenPostgresShared(t)
	var urls []string
	var sts []store.Store
	for range 2 {
		st := open()
		sts = append(sts, st)
		_, url := serveNode(t, st, true)
		urls = append(urls, url)
	}
	a, b := urls[0], urls[1]
	post := func(url, body string) { t.Helper(); do(t, "POST", url, body, 201) }
	post(a+"/v1/instances", `{"name":"jobs"}`)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", b+"/v1/channels/jobs/room-1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		t.Helper()
		for lines.Scan() {
			if l := lines.Text(); l != "" && !strings.HasPrefix(l, ":") {
				return l
			}
		}
		t.Fatalf("the stream ended: %v", lines.Err())
		return ""
	}
	if l := next(); l != "id: 0" { // where the stream starts: the empty channel's head
		t.Fatalf("first line %q", l)
	}
	if l := next(); l != "event: ready" {
		t.Fatalf("second line %q", l)
	}
	next() // ready's data
	for i, want := range []string{"1", "2"} {
		post(a+"/v1/tasks/jobs/queues/default/tasks", `{"payload":{"n":`+want+`},"target":{"channel":"room-1"}}`)
		if l := next(); l != "id: "+want {
			t.Fatalf("message %d: %q, want id %s", i+1, l, want)
		}
		if l := next(); !strings.HasPrefix(l, "data: {") || !strings.HasSuffix(l, `"payload":{"n":`+want+`}}`) {
			t.Fatalf("message %d: %q", i+1, l)
		}
	}
	// An append through A's store alone (no node delivered it, so B has
	// no hint of its own): B hears it from the database.
	insts, err := sts[0].InstanceList(ctx, auth.DevOrg)
	if err != nil || len(insts) != 1 {
		t.Fatalf("instances %v %v", insts, err)
	}
	if _, err := sts[0].ChannelAppend(ctx, []*store.ChannelAppendParams{{Ref: store.ChannelRef{InstanceID: insts[0].ID, Channel: "room-1"},
		TaskID: "direct", Body: []byte(`{"task":{"id":"direct"},"payload":{"n":3}}`), Now: 1}}); err != nil {
		t.Fatal(err)
	}
	if l := next(); l != "id: 3" {
		t.Fatalf("the direct append: %q", l)
	}
	cancel()
}
