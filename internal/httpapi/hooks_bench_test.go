package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/errandhq/errand/internal/testkit/stores"
)

// BenchmarkHookCalls: senders POST JSON to a hook URL over loopback HTTP
// (8 per core); each call is a task added to a pull queue and counted on
// the rule. It reports tasks/s and checks the rule's fired equals the
// calls made.
func BenchmarkHookCalls(b *testing.B) {
	for _, kind := range stores.Kinds {
		b.Run(kind, func(b *testing.B) {
			bb := setupOn(b, kind)
			bb.do("POST", "/v1/tasks/jobs/queues", `{"name":"in","mode":"pull"}`).want(b, 201, "")
			tr := bb.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/in","hook":{"headers":["X-Event"]}}`).want(b, 201, "").obj("trigger")
			url := bb.srv.URL + tr["hook"].(map[string]any)["path"].(string)
			body := []byte(`{"action":"opened","number":1041,"repository":{"full_name":"acme/shop"}}`)
			b.SetParallelism(8)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, err := http.NewRequest("POST", url, bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-Event", "pull_request")
					resp, err := bb.client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 202 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
			got := bb.do("GET", "/v1/tasks/jobs/triggers/"+tr["id"].(string), nil).want(b, 200, "").obj("trigger")
			if got["fired"] != float64(b.N) {
				b.Fatalf("fired %v after %d calls", got["fired"], b.N)
			}
		})
	}
}
