package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/testkit/history"
)

// behaviour is how the fault receiver answers one delivery.
type behaviour string

// The receiver's behaviours: the hostile ones make the attempt fail.
const (
	answerOK   behaviour = "ok"   // 200 at once
	answerFail behaviour = "fail" // 500 at once
	// hang answers 200 only after hostileFor, past the queue's 1 s deadline.
	hang behaviour = "hang"
	// drip answers 200 and then its body one byte at a time for
	// hostileFor, past the deadline.
	drip behaviour = "drip"
	// huge answers 500 with a 32 MiB body (errand reads 4 KiB of it).
	huge behaviour = "huge"
	// hugeOK answers 200 with a 32 MiB body that is not JSON: it succeeds,
	// with no result.
	hugeOK behaviour = "huge-ok"
	// reset closes the connection with a TCP RST before answering.
	reset behaviour = "reset"
)

// hostileFor is how long hang and drip hold a delivery: past a 1 s
// deadline, well short of anything else.
const hostileFor = 2500 * time.Millisecond

// faultReceiver is a webhook target that records every delivery in the
// history: the body's task id, name, queue and attempt, its Webhook-Id and
// whether its signature verifies, when it arrived and how it ended.
type faultReceiver struct {
	h      *history.History
	srv    *httptest.Server
	key    atomic.Value // the instance's whsec_ key
	behave func(name string, attempt int) behaviour
	// plantDrop: the receiver forgets to record its first 2xx delivery (a
	// planted fault, ERRAND_FAULT_PLANT=drop-delivery): the checker must
	// then fail the run.
	plantDrop atomic.Bool
}

// newFaultReceiver starts the receiver on a loopback port; behave picks
// each delivery's answer (nil: always 200).
func newFaultReceiver(t *testing.T, h *history.History, behave func(string, int) behaviour) *faultReceiver {
	fr := &faultReceiver{h: h, behave: behave}
	fr.plantDrop.Store(os.Getenv("ERRAND_FAULT_PLANT") == "drop-delivery")
	fr.srv = httptest.NewServer(http.HandlerFunc(fr.serve))
	t.Cleanup(func() {
		fr.srv.CloseClientConnections()
		fr.srv.Close()
	})
	return fr
}

// URL is where the receiver listens.
func (fr *faultReceiver) URL() string { return fr.srv.URL + "/hook" }

func (fr *faultReceiver) serve(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var body struct {
		Task struct {
			ID      string `json:"id"`
			Queue   string `json:"queue"`
			Name    string `json:"name"`
			Attempt int    `json:"attempt"`
		} `json:"task"`
	}
	_ = json.Unmarshal(raw, &body)
	key, _ := fr.key.Load().(string)
	sigOK := deliver.Verify(key, r.Header, raw, time.Now(), 5*time.Minute) == nil
	b := answerOK
	if fr.behave != nil {
		b = fr.behave(body.Task.Name, body.Task.Attempt)
	}
	e := fr.h.Begin(history.Entry{Process: "receiver", F: history.Deliver, Queue: body.Task.Queue, Name: body.Task.Name,
		ID: body.Task.ID, Attempt: body.Task.Attempt, Start: arrived, WebhookID: r.Header.Get(deliver.HeaderWebhookID), SigOK: sigOK, Err: string(b)})
	typ, status, end := fr.answer(w, r, b)
	if typ == history.OK && fr.plantDrop.CompareAndSwap(true, false) {
		fr.h.End(e, history.Info, func(e *history.Entry) { e.F, e.Name = "dropped", "" }) // forgotten
		return
	}
	if r.Context().Err() != nil && typ == history.OK {
		typ = history.Info // the sender went away: it may not have read the 200
	}
	fr.h.End(e, typ, func(e *history.Entry) { e.Status, e.End = status, end })
}

// answer carries out behaviour b and says how the delivery ended (OK for
// a 2xx answer, Fail for anything the sender must count as a failed
// attempt) and when: a moment at which the sender surely still held the
// delivery open (before the answer is complete), so that the deliveries'
// intervals never overstate how many were open at once.
func (fr *faultReceiver) answer(w http.ResponseWriter, r *http.Request, b behaviour) (history.Type, int, time.Time) {
	switch b {
	case answerFail:
		end := time.Now()
		http.Error(w, "planned failure", http.StatusInternalServerError)
		return history.Fail, 500, end
	case hang:
		select {
		case <-time.After(hostileFor):
		case <-r.Context().Done():
		}
		end := time.Now()
		w.WriteHeader(http.StatusOK)
		return history.Fail, 200, end // after the deadline: a timed-out attempt
	case drip:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		deadline := time.After(hostileFor)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-deadline:
				end := time.Now()
				_, _ = w.Write([]byte("}"))
				return history.Fail, 200, end
			case <-r.Context().Done():
				return history.Fail, 200, time.Now()
			case <-tick.C:
				_, _ = w.Write([]byte(" "))
				_ = rc.Flush()
			}
		}
	case huge, hugeOK:
		status := http.StatusInternalServerError
		if b == hugeOK {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		_ = http.NewResponseController(w).Flush()
		end := time.Now() // the sender stops reading at some point below
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 512 { // 32 MiB, cut short when the sender closes
			if _, err := w.Write(chunk); err != nil {
				break
			}
		}
		if b == hugeOK {
			return history.OK, status, end
		}
		return history.Fail, status, end
	case reset:
		end := time.Now()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close with RST
			}
			conn.Close()
		}
		return history.Fail, 0, end
	}
	end := time.Now()
	w.WriteHeader(http.StatusOK)
	return history.OK, 200, end
}
