package deliver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
)

// benchParallelism × GOMAXPROCS goroutines deliver at once: 32 on two cores,
// as in the machine's loopback ceiling measurement.
const benchParallelism = 16

// benchTask carries a payload that makes the body about 400 bytes.
func benchTask() *task.Task {
	t := katTask()
	t.Payload = json.RawMessage(`{"orderId":"o-1041","note":"` + strings.Repeat("x", 100) + `"}`)
	return t
}

func benchReceiver(b *testing.B) *httptest.Server {
	return receiver(b, func(rw http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	})
}

// report adds deliveries/s and the process's CPU µs per delivery (the
// receiver's share included) since cpu0 was taken.
func report(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
	b.ReportMetric(float64((testkit.CPUTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/delivery")
}

// BenchmarkWebhookDeliver drives the webhook deliverer, guard on with
// loopback allowed, against a trivial loopback receiver.
func BenchmarkWebhookDeliver(b *testing.B) {
	srv := benchReceiver(b)
	w := newWebhook(b, WebhookOptions{Guard: NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})})
	req := &Request{Task: benchTask(), Target: task.Target{Webhook: srv.URL + "/hook"}, Key: katKey}
	ctx := context.Background()
	b.SetParallelism(benchParallelism)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := testkit.CPUTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if res := w.Deliver(ctx, req); res.Outcome.Status != task.AttemptSucceeded {
				b.Error(res.Outcome.Error)
				return
			}
		}
	})
	report(b, cpu0)
}

// BenchmarkWebhookDeliverSerial is one delivery at a time over one kept-alive
// connection: the cost of building, signing and sending a delivery and
// reading its answer, without the scheduling noise of many at once.
func BenchmarkWebhookDeliverSerial(b *testing.B) {
	srv := benchReceiver(b)
	w := newWebhook(b, WebhookOptions{Guard: NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})})
	req := &Request{Task: benchTask(), Target: task.Target{Webhook: srv.URL + "/hook"}, Key: katKey}
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := testkit.CPUTime()
	for b.Loop() {
		if res := w.Deliver(ctx, req); res.Outcome.Status != task.AttemptSucceeded {
			b.Fatal(res.Outcome.Error)
		}
	}
	report(b, cpu0)
}

// BenchmarkRawLoopback is the ceiling: a plain http.Client posting the same
// body to the same kind of receiver, with no signing, guard or answer
// handling.
func BenchmarkRawLoopback(b *testing.B) {
	srv := benchReceiver(b)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	body := Body(benchTask())
	url := srv.URL + "/hook"
	b.SetParallelism(benchParallelism)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := testkit.CPUTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	report(b, cpu0)
}

// BenchmarkWebhookSign builds one delivery's body and header values (both
// signatures and the delivery token), without the network.
func BenchmarkWebhookSign(b *testing.B) {
	w := newWebhook(b, WebhookOptions{})
	r := &Request{Task: benchTask(), Target: task.Target{Webhook: "http://127.0.0.1:1/hook"}, Key: katKey, Now: testNow}
	b.ReportAllocs()
	for b.Loop() {
		s := w.sign(r, testNow)
		if len(s.token) == 0 {
			b.Fatal("no token")
		}
	}
}
