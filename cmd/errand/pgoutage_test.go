package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/testkit"
)

// TestPostgresOutageKeepsAnsweredOutcomes: a receiver answers 200 while a
// private PostgreSQL is down for longer than a caller's patience (the
// node's ninth write of the outcome fails: 2.5 s and more). When the
// database is back, that answer is stored: the task ends succeeded after
// one delivery, not left running for its 30 s lease and delivered again
// (recorded as abandoned), as it was when the writer gave up after 2.5 s.
func TestPostgresOutageKeepsAnsweredOutcomes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a private PostgreSQL cluster and a server process")
	}
	pg := testkit.StartPGCluster(t)
	bin := buildErrand(t)

	var mu sync.Mutex
	deliveries := 0
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		deliveries++
		mu.Unlock()
		arrived <- struct{}{}
		select { // held until the database is down
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer rcv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	_, _, logs, o, taskID := onePushTask(t, pg, bin, rcv.URL, `"maxConcurrent":1`)
	select {
	case <-arrived:
	case <-time.After(60 * time.Second):
		t.Fatalf("the delivery never arrived\n%s", logs)
	}
	pg.Crash()
	close(release) // answered 200 while the database is down
	// The writer is still trying after a caller's patience ran out.
	logs.waitFor(t, "try=9", 30*time.Second)
	pg.Start()
	// Stored once the database is back; before, it came after the lease
	// (30 s) with a second delivery. The bound is well under the lease.
	state := o.waitIDs(t, []string{taskID}, 20*time.Second)[taskID]
	mu.Lock()
	defer mu.Unlock()
	if state != "succeeded" || deliveries != 1 {
		t.Fatalf("task %s is %s after %d deliveries; want succeeded after one\n%s", taskID, state, deliveries, logs)
	}
	// The log says when the outage ended.
	logs.waitFor(t, "msg=\"the store answers again\"", 10*time.Second)
}
