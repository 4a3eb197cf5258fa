package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/errandhq/errand/internal/testkit/stores"
)

func benchAdd(b *testing.B, body string, perCall int) {
	for _, kind := range stores.Kinds {
		b.Run(kind, func(b *testing.B) { benchAddOn(b, kind, body, perCall) })
	}
}

func benchAddOn(b *testing.B, kind, body string, perCall int) {
	bb := setupOn(b, kind)
	client := bb.client
	bb.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`).want(b, 201, "")
	url := bb.srv.URL + "/v1/tasks/jobs/queues/q/tasks"
	raw := []byte(body)
	b.SetParallelism(8) // 8 callers per core, as BenchmarkHookCalls's senders
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(url, "application/json", bytes.NewReader(raw))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 201 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*perCall)/b.Elapsed().Seconds(), "tasks/s")
}

// BenchmarkAdd1 adds one task per HTTP call.
func BenchmarkAdd1(b *testing.B) {
	benchAdd(b, `{"payload":{"orderId":"o-1041","amount":1299}}`, 1)
}

// BenchmarkAdd100 adds 100 tasks per HTTP call (one transaction).
func BenchmarkAdd100(b *testing.B) {
	body := "[" + strings.TrimSuffix(strings.Repeat(`{"payload":{"orderId":"o-1041","amount":1299}},`, 100), ",") + "]"
	benchAdd(b, body, 100)
}

// BenchmarkLeaseAckBatch: pull workers lease batches of 100 over HTTP and
// ack each batch in one call of errand's batch ack.
func BenchmarkLeaseAckBatch(b *testing.B) {
	for _, kind := range stores.Kinds {
		b.Run(kind, func(b *testing.B) {
			benchLeaseWorkers(b, kind, func(bb *bundle, ts []leasedTask) error {
				var sb strings.Builder
				sb.WriteString(`{"acks":[`)
				for i, tk := range ts {
					if i > 0 {
						sb.WriteByte(',')
					}
					sb.WriteString(`{"id":"` + tk.ID + `","leaseId":"` + tk.LeaseID + `"}`)
				}
				sb.WriteString(`]}`)
				return postOK(bb, "/v1/tasks/jobs/queues/q/ack", sb.String())
			})
		})
	}
}

// BenchmarkLeaseAck: pull workers lease batches of 100 over HTTP and ack each
// task with 8 concurrent requests, as a worker pool would (acks from
// concurrent workers are group-committed by the engine).
func BenchmarkLeaseAck(b *testing.B) {
	for _, kind := range stores.Kinds {
		b.Run(kind, func(b *testing.B) {
			benchLeaseWorkers(b, kind, func(bb *bundle, ts []leasedTask) error {
				var ag sync.WaitGroup
				var next atomic.Int64
				errs := make(chan error, 8)
				for range 8 {
					ag.Go(func() {
						for {
							i := int(next.Add(1)) - 1
							if i >= len(ts) {
								return
							}
							if err := postOK(bb, "/v1/tasks/jobs/tasks/"+ts[i].ID+"/ack", `{"leaseId":"`+ts[i].LeaseID+`"}`); err != nil {
								errs <- err
								return
							}
						}
					})
				}
				ag.Wait()
				close(errs)
				return <-errs
			})
		})
	}
}

// leasedTask is what a benchmark worker keeps of a leased task.
type leasedTask struct {
	ID      string `json:"id"`
	LeaseID string `json:"leaseId"`
}

// benchLeaseWorkers preloads b.N tasks into the pull queue q, then runs 4
// workers that lease 100 at a time over HTTP and hand each batch to ack,
// and reports tasks/s.
func benchLeaseWorkers(b *testing.B, kind string, ack func(bb *bundle, ts []leasedTask) error) {
	bb := setupOn(b, kind)
	bb.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`).want(b, 201, "")
	batch := "[" + strings.TrimSuffix(strings.Repeat(`{"payload":{"n":1}},`, 100), ",") + "]"
	for i := 0; i < b.N; i += 100 {
		bb.do("POST", "/v1/tasks/jobs/queues/q/tasks", batch).want(b, 201, "")
	}
	var acked atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for acked.Load() < int64(b.N) {
				resp, err := bb.client.Post(bb.srv.URL+"/v1/tasks/jobs/queues/q/lease", "application/json", strings.NewReader(`{"count":100,"leaseSeconds":60}`))
				if err != nil {
					b.Error(err)
					return
				}
				var l struct {
					Tasks []leasedTask `json:"tasks"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&l)
				resp.Body.Close()
				if len(l.Tasks) == 0 {
					return
				}
				if err := ack(bb, l.Tasks); err != nil {
					b.Error(err)
					return
				}
				acked.Add(int64(len(l.Tasks)))
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(acked.Load())/b.Elapsed().Seconds(), "tasks/s")
}

// postOK posts body to path and wants 200.
func postOK(bb *bundle, path, body string) error {
	resp, err := bb.client.Post(bb.srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("POST %s: %d", path, resp.StatusCode)
	}
	return nil
}
