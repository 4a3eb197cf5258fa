package main

// errand_api.go holds the harness's calls to errand's v1 API: queues,
// adds, counts, listing, leases and acks.

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
)

func (e *errandSystem) path(rest string) string { return "/v1/tasks/" + errandInstance + rest }

// call sends body (JSON bytes, or nil) and decodes a 2xx answer into out (if
// not nil); anything else is an error carrying the answer.
func (e *errandSystem) call(ctx context.Context, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// createQueue makes a queue: pull, or push to the receiver (paused or not).
func (e *errandSystem) createQueue(ctx context.Context, name, mode string, paused bool) error {
	body := map[string]any{"name": name, "mode": mode}
	if mode == "push" {
		body["target"] = map[string]string{"webhook": e.hook.URL()}
		body["paused"] = paused
	}
	b, _ := json.Marshal(body)
	return e.call(ctx, "POST", e.path("/queues"), b, nil)
}

// addBody is an array of k bench tasks, each {"payload":{"t":at}} followed
// by extra (e.g. `,"delay":86400`, or "").
func addBody(k int, at int64, extra string) []byte {
	b := make([]byte, 0, k*(32+len(extra))+2)
	b = append(b, '[')
	for i := range k {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"payload":{"t":`...)
		b = strconv.AppendInt(b, at, 10)
		b = append(b, '}')
		b = append(b, extra...)
		b = append(b, '}')
	}
	return append(b, ']')
}

type addAnswer struct {
	Tasks []struct {
		OK   bool   `json:"ok"`
		ID   string `json:"id"`
		Code string `json:"code"`
	} `json:"tasks"`
}

// add adds k tasks to queue in one call and returns their ids.
func (e *errandSystem) add(ctx context.Context, queue string, k int) ([]string, error) {
	return e.addWith(ctx, queue, k, "")
}

// addWith is add with extra fields in every task (see addBody).
func (e *errandSystem) addWith(ctx context.Context, queue string, k int, extra string) ([]string, error) {
	var a addAnswer
	if err := e.call(ctx, "POST", e.path("/queues/"+queue+"/tasks"), addBody(k, time.Now().UnixNano(), extra), &a); err != nil {
		return nil, err
	}
	if len(a.Tasks) != k {
		return nil, fmt.Errorf("add of %d answered %d results", k, len(a.Tasks))
	}
	ids := make([]string, k)
	for i, r := range a.Tasks {
		if !r.OK {
			return nil, fmt.Errorf("add refused task %d: %s", i, r.Code)
		}
		ids[i] = r.ID
	}
	return ids, nil
}

// addMany adds n tasks in batches of batch from clients concurrent callers
// and returns every id the server answered.
func (e *errandSystem) addMany(ctx context.Context, queue string, n, batch, clients int) ([]string, error) {
	var next atomic.Int64
	var mu sync.Mutex
	all := make([]string, 0, n)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for {
				from := next.Add(int64(batch)) - int64(batch)
				if from >= int64(n) {
					return
				}
				ids, err := e.add(ctx, queue, int(min(int64(batch), int64(n)-from)))
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

type queueAnswer struct {
	Queue struct {
		Paused bool           `json:"paused"`
		Counts map[string]int `json:"counts"`
		Capped []string       `json:"capped"`
	} `json:"queue"`
}

func (e *errandSystem) counts(ctx context.Context, queue string) (map[string]int, error) {
	c, _, err := e.countsCapped(ctx, queue)
	return c, err
}

// countsCapped is the queue's counts by state and the states whose count
// reached errand's cap (10,000: the count says "at least").
func (e *errandSystem) countsCapped(ctx context.Context, queue string) (map[string]int, map[string]bool, error) {
	var q queueAnswer
	if err := e.call(ctx, "GET", e.path("/queues/"+queue), nil, &q); err != nil {
		return nil, nil, err
	}
	capped := map[string]bool{}
	for _, st := range q.Queue.Capped {
		capped[st] = true
	}
	return q.Queue.Counts, capped, nil
}

// scheduledIs reports whether a queue's scheduled count (c, capped) reads
// as n: exactly, or capped below n (errand counts no further).
func scheduledIs(c map[string]int, capped map[string]bool, n int) bool {
	return c["scheduled"] == n || (capped["scheduled"] && c["scheduled"] > 0 && c["scheduled"] < n)
}

// listIDs pages through a queue's tasks in one state (untimed checks).
func (e *errandSystem) listIDs(ctx context.Context, queue, state string) (map[string]int, error) {
	ids := map[string]int{}
	cursor := ""
	for {
		p := e.path("/queues/"+queue+"/tasks") + "?limit=200&state=" + state
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Tasks []struct {
				ID string `json:"id"`
			} `json:"tasks"`
			Cursor *string `json:"cursor"`
		}
		if err := e.call(ctx, "GET", p, nil, &page); err != nil {
			return nil, err
		}
		for _, t := range page.Tasks {
			ids[t.ID]++
		}
		if page.Cursor == nil || *page.Cursor == "" {
			return ids, nil
		}
		cursor = *page.Cursor
	}
}

// expectAll checks (untimed) that the store lists exactly the ids added, once
// each, in state.
func (e *errandSystem) expectAll(ctx context.Context, queue, state string, added []string) error {
	got, err := e.listIDs(ctx, queue, state)
	if err != nil {
		return err
	}
	return sameIDs(fmt.Sprintf("the store's %s tasks", state), got, added)
}

type leased struct {
	ID      string `json:"id"`
	LeaseID string `json:"leaseId"`
	Payload struct {
		T int64 `json:"t"`
	} `json:"payload"`
}

func (e *errandSystem) lease(ctx context.Context, queue string, count, wait int) ([]leased, error) {
	var a struct {
		Tasks []leased `json:"tasks"`
	}
	body := fmt.Appendf(nil, `{"count":%d,"leaseSeconds":60,"waitSeconds":%d}`, count, wait)
	if err := e.call(ctx, "POST", e.path("/queues/"+queue+"/lease"), body, &a); err != nil {
		return nil, err
	}
	return a.Tasks, nil
}

// ackBatch acks ts in one call of errand's batch ack; every result must be ok.
func (e *errandSystem) ackBatch(ctx context.Context, queue string, ts []leased) error {
	var b strings.Builder
	b.WriteString(`{"acks":[`)
	for i, t := range ts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":"` + t.ID + `","leaseId":"` + t.LeaseID + `"}`)
	}
	b.WriteString(`]}`)
	var a struct {
		Results []struct {
			OK   bool   `json:"ok"`
			ID   string `json:"id"`
			Code string `json:"code"`
		} `json:"results"`
	}
	if err := e.call(ctx, "POST", e.path("/queues/"+queue+"/ack"), []byte(b.String()), &a); err != nil {
		return err
	}
	if len(a.Results) != len(ts) {
		return fmt.Errorf("batch ack: %d results for %d acks", len(a.Results), len(ts))
	}
	for _, r := range a.Results {
		if !r.OK {
			return fmt.Errorf("batch ack of %s: %s", r.ID, r.Code)
		}
	}
	return nil
}

func (e *errandSystem) ack(ctx context.Context, t leased) error {
	return e.call(ctx, "POST", e.path("/tasks/"+t.ID+"/ack"), []byte(`{"leaseId":"`+t.LeaseID+`"}`), nil)
}

// pullWorkers runs workers that lease and ack until stop says so. Each
// worker leases up to 100 and acks them with AckConcurrency concurrent
