package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// rawHTTPSystem is the physical limit of the push workload: a plain Go HTTP
// client in this process POSTs bodies shaped like errand's deliveries to the
// same loopback webhookReceiver, as fast as it can. It runs the push
// workload only.
type rawHTTPSystem struct {
	name        string
	concurrency int
	p           *probe
	hook        *webhookReceiver
	client      *http.Client
}

func newRawHTTP(o Options) System {
	return &rawHTTPSystem{name: "raw-http", concurrency: o.RawConcurrency}
}

// newRawHTTPWide is raw-http at the concurrency errand's push runs at (the
// instance's maxInFlight, 1,000): one connection per request in flight. The
// same receiver answers ~1.5–1.7× fewer requests a second that way than
// over 64 connections on this 2-core machine: what the connections alone
// cost it (errand's push keeps a target that keeps up at about 64).
func newRawHTTPWide(o Options) System {
	return &rawHTTPSystem{name: "raw-http-wide", concurrency: o.ErrandTuning.MaxInFlight}
}

func (r *rawHTTPSystem) Name() string  { return r.name }
func (r *rawHTTPSystem) Store() string { return "none" }
func (r *rawHTTPSystem) Settings(workload string, tuned bool) string {
	if workload == "push" {
		return fmt.Sprintf("net/http client, %d concurrent POSTs of a delivery-shaped body (~330 B) to the same loopback receiver, keep-alive pool ≥ %d; no store, no signing", r.concurrency, r.concurrency)
	}
	return ""
}

func (r *rawHTTPSystem) Supports(workload string) bool { return workload == "push" }

func (r *rawHTTPSystem) Setup(ctx context.Context) error {
	r.p = newProbe()
	var err error
	r.hook, err = newWebhookReceiver(r.p, errandDelivery)
	r.client = &http.Client{Transport: &http.Transport{
		Proxy: nil, MaxIdleConns: 1024, MaxIdleConnsPerHost: max(r.concurrency, 2), DisableCompression: true,
	}}
	return err
}

func (r *rawHTTPSystem) Teardown(ctx context.Context) error {
	var err error
	if r.client != nil {
		r.client.CloseIdleConnections()
		r.client = nil
	}
	if r.hook != nil {
		err = r.hook.Close()
		r.hook = nil
	}
	return err
}

// rawBody is a body of the shape and about the size of errand's delivery.
func rawBody(i int, at int64) []byte {
	b := make([]byte, 0, 400)
	b = append(b, `{"task":{"id":"raw-`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `","queue":"push","name":null,"attempt":1,"maxAttempts":10,"runAt":`...)
	ms := at / 1e6
	b = strconv.AppendInt(b, ms, 10)
	b = append(b, `,"createdAt":`...)
	b = strconv.AppendInt(b, ms, 10)
	b = append(b, `,"deadlineAt":`...)
	b = strconv.AppendInt(b, ms+600_000, 10)
	b = append(b, `,"source":"api","depth":0,"params":null,"deadLetterOf":null},"payload":{"t":`...)
	b = strconv.AppendInt(b, at, 10)
	return append(b, `}}`...)
}

func (r *rawHTTPSystem) Push(ctx context.Context, n int) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, r.concurrency)
	url := r.hook.URL()
	start := time.Now()
	for range r.concurrency {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(rawBody(int(i), time.Now().UnixNano())))
				req.Header.Set("Content-Type", "application/json")
				resp, err := r.client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("receiver answered HTTP %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	want := make([]string, n)
	for i := range want {
		want[i] = "raw-" + strconv.Itoa(i)
	}
	logf("  %s push: the receiver accepted %d connections for %d requests", r.name, r.hook.conns.Load(), n)
	return d, sameIDs("receiver", r.hook.ids(), want)
}

var errUnsupported = errors.New("raw-http runs the push workload only")

func (r *rawHTTPSystem) Insert(context.Context, int, int) (time.Duration, error) {
	return 0, errUnsupported
}
func (r *rawHTTPSystem) BurnDown(context.Context, int) (time.Duration, error) {
	return 0, errUnsupported
}
func (r *rawHTTPSystem) Steady(context.Context, time.Duration, int) (SteadyResult, error) {
	return SteadyResult{}, errUnsupported
}
func (r *rawHTTPSystem) Idle(context.Context, bool) (IdleProbe, error) { return nil, errUnsupported }

var (
	_ System    = (*rawHTTPSystem)(nil)
	_ Pusher    = (*rawHTTPSystem)(nil)
	_ Supporter = (*rawHTTPSystem)(nil)
)
