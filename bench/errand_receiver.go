package main

// errand_receiver.go is the loopback webhook receiver that errand's push
// queues (and raw-http) deliver to, and the parsing of errand's deliveries.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// webhookReceiver is the push target: every request's JSON body carries the
// add time and an id, which the extract function finds. It feeds the probe
// and counts deliveries per id (to check exactly-once).
type webhookReceiver struct {
	srv *http.Server
	ln  net.Listener
	p   *probe

	mu    sync.Mutex
	seen  map[string]int
	conns atomic.Int64 // connections accepted: a client that reuses them opens few
}

// newWebhookReceiver listens on 127.0.0.1 on a free port. extract returns
// the add time and the task id from a request body.
func newWebhookReceiver(p *probe, extract func(body []byte) (int64, string, error)) (*webhookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &webhookReceiver{ln: ln, p: p, seen: map[string]int{}}
	w.srv = &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		t, id, err := extract(body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		p.onStart(t)
		w.mu.Lock()
		w.seen[id]++
		w.mu.Unlock()
		p.onFinish()
		rw.WriteHeader(http.StatusOK)
	})}
	w.srv.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			w.conns.Add(1)
		}
	}
	go w.srv.Serve(ln)
	return w, nil
}

// URL is the receiver's address (http://127.0.0.1:PORT/hook); errand serve
// needs `--webhook-allow 127.0.0.0/8` to deliver to it.
func (w *webhookReceiver) URL() string { return "http://" + w.ln.Addr().String() + "/hook" }

// ids is how many deliveries each id got: a copy, safe to read while
// deliveries go on.
func (w *webhookReceiver) ids() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := make(map[string]int, len(w.seen))
	for k, v := range w.seen {
		m[k] = v
	}
	return m
}

// count is the deliveries so far and how many distinct ids they carried.
func (w *webhookReceiver) count() (deliveries, distinct int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.seen {
		deliveries += int64(v)
	}
	return deliveries, int64(len(w.seen))
}

func (w *webhookReceiver) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return w.srv.Shutdown(ctx)
}

// errandDelivery reads a webhook delivery of errand ({"task": {"id": …},
// "payload": {"t": …}}): the add time and the task id.
func errandDelivery(body []byte) (int64, string, error) {
	var v struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
		Payload noopArgs `json:"payload"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return 0, "", err
	}
	if v.Payload.T == 0 || v.Task.ID == "" {
		return 0, "", errors.New(`no task.id or payload.t in the body`)
	}
	return v.Payload.T, v.Task.ID, nil
}
