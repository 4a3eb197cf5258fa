package main

// errand_api.go holds the harness's calls to errand's v1 API, through the
// Go SDK (github.com/errandhq/errand/client): queues, adds, counts,
// listing, leases and acks.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// errandConn is the harness's connection to one `errand serve` node: its
// address, the run's key, and the SDK client over an http.Client of its own
// (Teardown closes its idle connections).
type errandConn struct {
	base   string         // http://127.0.0.1:PORT
	key    string         // the run's key (every node shares the store)
	api    *client.Client // the Go SDK's client of the node
	client *http.Client   // under api
}

// newErrandAPI is the SDK client of one run and the http.Client under it
// (Teardown closes its idle connections).
//
// The pool keeps up to 1,024 idle connections to the server, more than any
// concurrency the workloads use, so that no call waits for a connection or
// dials a new one. The SDK never retries (MaxAttempts 1): a benchmark must
// not hide a refused or lost call behind a retry and its backoff, which
// would be counted as the system's time; every error fails the run.
func newErrandAPI(base, key string) (*client.Client, *http.Client, error) {
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024, // ≥ every concurrency the workloads use
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	api, err := client.New(base, client.Options{APIKey: key, HTTPClient: hc, Retry: client.RetryPolicy{MaxAttempts: 1}})
	return api, hc, err
}

// createQueue makes a queue: pull, or push to the receiver (paused or not).
func (e *errandSystem) createQueue(ctx context.Context, name string, mode errandapi.Mode, paused bool) error {
	req := errandapi.QueueRequest{Mode: &mode}
	if mode == errandapi.ModePush {
		req.Target = errandapi.Value(errandapi.Target{Webhook: e.hook.URL()})
		req.Paused = &paused
	}
	_, err := e.api.CreateQueue(ctx, errandInstance, name, req)
	return err
}

// newTasks is k bench tasks, each with the payload {"t":at} and the given
// delay (nil: due now). They share one payload.
func newTasks(k int, at int64, delay *float64) []errandapi.NewTask {
	payload := json.RawMessage(strconv.AppendInt([]byte(`{"t":`), at, 10))
	payload = append(payload, '}')
	ts := make([]errandapi.NewTask, k)
	for i := range ts {
		ts[i] = errandapi.NewTask{Payload: payload, Delay: delay}
	}
	return ts
}

// add adds k tasks to queue in one call and returns their ids.
func (e *errandSystem) add(ctx context.Context, queue string, k int) ([]string, error) {
	return e.addWith(ctx, queue, k, nil)
}

// addWith is add with a delay (seconds) on every task.
func (e *errandSystem) addWith(ctx context.Context, queue string, k int, delay *float64) ([]string, error) {
	return addVia(ctx, e.api, queue, k, delay)
}

// addVia is addWith through the client api (of one node).
func addVia(ctx context.Context, api *client.Client, queue string, k int, delay *float64) ([]string, error) {
	res, err := api.AddTasks(ctx, errandInstance, queue, newTasks(k, time.Now().UnixNano(), delay)...)
	if err != nil {
		return nil, err
	}
	if len(res) != k {
		return nil, fmt.Errorf("add of %d answered %d results", k, len(res))
	}
	ids := make([]string, k)
	for i, r := range res {
		if !r.OK {
			return nil, fmt.Errorf("add refused task %d: %s", i, r.Code)
		}
		ids[i] = r.ID
	}
	return ids, nil
}

// addMany adds n tasks in batches of batch from clients concurrent callers
// and returns every id the server answered. With several nodes (the nodes
// workload) the callers are spread over them round-robin: caller i talks
// to node i mod k.
func (e *errandSystem) addMany(ctx context.Context, queue string, n, batch, clients int) ([]string, error) {
	var next atomic.Int64
	var mu sync.Mutex
	all := make([]string, 0, n)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	conns := e.conns()
	for i := range clients {
		api := conns[i%len(conns)].api
		wg.Go(func() {
			for {
				from := next.Add(int64(batch)) - int64(batch)
				if from >= int64(n) {
					return
				}
				ids, err := addVia(ctx, api, queue, int(min(int64(batch), int64(n)-from)), nil)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				all = append(all, ids...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return all, nil
}

// countsCapped is the queue's counts by state and the states whose count
// reached errand's cap (10,000: the count says "at least").
func (e *errandSystem) countsCapped(ctx context.Context, queue string) (map[errandapi.State]int, map[errandapi.State]bool, error) {
	q, err := e.api.GetQueue(ctx, errandInstance, queue)
	if err != nil {
		return nil, nil, err
	}
	capped := map[errandapi.State]bool{}
	for _, st := range q.Capped {
		capped[st] = true
	}
	return q.Counts, capped, nil
}

// listIDs pages through a queue's tasks in one state (untimed checks).
func (e *errandSystem) listIDs(ctx context.Context, queue string, state errandapi.State) (map[string]int, error) {
	ids := map[string]int{}
	for t, err := range e.api.Tasks(ctx, errandInstance, queue, client.ListOptions{State: state, Limit: 200}) {
		if err != nil {
			return nil, err
		}
		ids[t.ID]++
	}
	return ids, nil
}

// lease leases up to count tasks of queue for 60 s, waiting up to wait
// seconds for one to come due.
func (e *errandConn) lease(ctx context.Context, queue string, count, wait int) ([]errandapi.LeasedTask, error) {
	return e.api.Lease(ctx, errandInstance, queue, errandapi.LeaseRequest{Count: &count, LeaseSeconds: new(60), WaitSeconds: wait})
}

// leasedAt is the add time a leased task's payload carries ({"t": …}).
func leasedAt(t errandapi.LeasedTask) (int64, error) {
	var a noopArgs
	if err := json.Unmarshal(t.Payload, &a); err != nil {
		return 0, fmt.Errorf("leased task %s: payload %s: %w", t.ID, t.Payload, err)
	}
	return a.T, nil
}

// ackBatch acks ts in one call of errand's batch ack; every result must be ok.
func (e *errandConn) ackBatch(ctx context.Context, queue string, ts []errandapi.LeasedTask) error {
	acks := make([]errandapi.BatchAck, len(ts))
	for i, t := range ts {
		acks[i] = errandapi.BatchAck{ID: t.ID, LeaseID: t.LeaseID}
	}
	res, err := e.api.AckMany(ctx, errandInstance, queue, acks)
	if err != nil {
		return err
	}
	if len(res) != len(ts) {
		return fmt.Errorf("batch ack: %d results for %d acks", len(res), len(ts))
	}
	for _, r := range res {
		if !r.OK {
			return fmt.Errorf("batch ack of %s: %s", r.ID, r.Code)
		}
	}
	return nil
}

// ack acks one leased task (the single-ack path: --errand-tuning
// batchAck=0, and steady on a pull queue with it). It is hand-rolled, not
// the SDK's Ack: Ack decodes the task the server answers (its payload and
// attempts), which cost the harness ~25 µs per ack, a third more of its
// CPU in a single-ack burndown on the two cores it shares with the server,
// and lowered the figure; the harness needs only "it was acked". It never
// retries either. The answer is read to its end, so that the connection
// goes back to the pool.
func (e *errandConn) ack(ctx context.Context, t errandapi.LeasedTask) error {
	u := e.base + "/v1/tasks/" + errandInstance + "/tasks/" + url.PathEscape(t.ID) + "/ack"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(`{"leaseId":"`+t.LeaseID+`"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("ack of %s: HTTP %d: %s", t.ID, resp.StatusCode, bytes.TrimSpace(b))
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
