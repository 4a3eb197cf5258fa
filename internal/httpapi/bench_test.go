package httpapi_test

import (
	"bytes"
	"encoding/json"
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
		b.Run(kind, func(b *testing.B) { benchLeaseAckBatch(b, kind) })
	}
}

func benchLeaseAckBatch(b *testing.B, kind string) {
	bb := setupOn(b, kind)
	bb.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`).want(b, 201, "")
	batch := "[" + strings.TrimSuffix(strings.Repeat(`{"payload":{"n":1}},`, 100), ",") + "]"
	for i := 0; i < b.N; i += 100 {
		bb.do("POST", "/v1/tasks/jobs/queues/q/tasks", batch).want(b, 201, "")
	}
	url := bb.srv.URL + "/v1/tasks/jobs/queues/q"
	var acked atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for acked.Load() < int64(b.N) {
				resp, err := bb.client.Post(url+"/lease", "application/json", strings.NewReader(`{"count":100,"leaseSeconds":60}`))
				if err != nil {
					b.Error(err)
					return
				}
				var l struct {
					Tasks []struct {
						ID      string `json:"id"`
						LeaseID string `json:"leaseId"`
					} `json:"tasks"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&l)
				resp.Body.Close()
				if len(l.Tasks) == 0 {
					return
				}
				var sb strings.Builder
				sb.WriteString(`{"acks":[`)
				for i, tk := range l.Tasks {
					if i > 0 {
						sb.WriteByte(',')
					}
					sb.WriteString(`{"id":"` + tk.ID + `","leaseId":"` + tk.LeaseID + `"}`)
				}
				sb.WriteString(`]}`)
				resp, err = bb.client.Post(url+"/ack", "application/json", strings.NewReader(sb.String()))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("ack: %d", resp.StatusCode)
					return
				}
				acked.Add(int64(len(l.Tasks)))
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(acked.Load())/b.Elapsed().Seconds(), "tasks/s")
}

// BenchmarkLeaseAck: pull workers lease batches of 100 over HTTP and ack each
// task (acks from concurrent workers are group-committed by the engine).
func BenchmarkLeaseAck(b *testing.B) {
	for _, kind := range stores.Kinds {
		b.Run(kind, func(b *testing.B) { benchLeaseAck(b, kind) })
	}
}

func benchLeaseAck(b *testing.B, kind string) {
	bb := setupOn(b, kind)
	bb.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`).want(b, 201, "")
	batch := "[" + strings.TrimSuffix(strings.Repeat(`{"payload":{"n":1}},`, 100), ",") + "]"
	for i := 0; i < b.N; i += 100 {
		bb.do("POST", "/v1/tasks/jobs/queues/q/tasks", batch).want(b, 201, "")
	}
	type leased struct {
		Tasks []struct {
			ID      string `json:"id"`
			LeaseID string `json:"leaseId"`
		} `json:"tasks"`
	}
	url := bb.srv.URL + "/v1/tasks/jobs"
	var acked atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 4 { // workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for acked.Load() < int64(b.N) {
				resp, err := bb.client.Post(url+"/queues/q/lease", "application/json", strings.NewReader(`{"count":100,"leaseSeconds":60}`))
				if err != nil {
					b.Error(err)
					return
				}
				var l leased
				_ = json.NewDecoder(resp.Body).Decode(&l)
				resp.Body.Close()
				if len(l.Tasks) == 0 {
					return
				}
				// Ack the batch with 8 concurrent requests, as a worker pool would.
				var ag sync.WaitGroup
				next := atomic.Int64{}
				for range 8 {
					ag.Add(1)
					go func() {
						defer ag.Done()
						for {
							i := int(next.Add(1)) - 1
							if i >= len(l.Tasks) {
								return
							}
							tk := l.Tasks[i]
							resp, err := bb.client.Post(url+"/tasks/"+tk.ID+"/ack", "application/json", strings.NewReader(`{"leaseId":"`+tk.LeaseID+`"}`))
							if err != nil {
								b.Error(err)
								return
							}
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							if resp.StatusCode != 200 {
								b.Errorf("ack: %d", resp.StatusCode)
								return
							}
							acked.Add(1)
						}
					}()
				}
				ag.Wait()
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(acked.Load())/b.Elapsed().Seconds(), "tasks/s")
}
