package httpapi_test

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func benchAdd(b *testing.B, body string, perCall int) {
	bb := setup(b)
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
