package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/testkit/stores"
)

// BenchmarkChannelFanOut measures channel throughput end to end: tasks
// added over the API in batches of 100, delivered by the dispatcher
// (each an append to the log), fanned out to 1, 10 and 100 real SSE
// subscribers on loopback; the clock stops when every subscriber has every
// message. msgs/s is messages appended and fanned out per second;
// deliveries/s counts each subscriber's copy.
//
//	go test -run '^$' -bench ChannelFanOut -benchtime 2000x ./internal/httpapi/
func BenchmarkChannelFanOut(b *testing.B) {
	for _, kind := range stores.Kinds {
		for _, n := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("%s/subscribers=%d", kind, n), func(b *testing.B) {
				bb := setupChannels(b, kind, nil)
				bb.start()
				var subs []*sseStream
				for range n {
					s := subscribeSSE(b, bb.client, bb.srv.URL+"/v1/channels/jobs/room-1", nil)
					s.ready()
					subs = append(subs, s)
				}
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for _, s := range subs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for got := 0; got < b.N; {
							select {
							case <-s.events:
								got++
							case <-time.After(eventWait):
								b.Errorf("a subscriber got %d of %d", got, b.N)
								return
							}
						}
					}()
				}
				for done := 0; done < b.N; {
					k := min(100, b.N-done)
					items := make([]string, k)
					for i := range items {
						items[i] = fmt.Sprintf(`{"payload":{"n":%d},"target":{"channel":"room-1"}}`, done+i)
					}
					bb.do("POST", "/v1/tasks/jobs/queues/default/tasks", "["+strings.Join(items, ",")+"]").want(b, 201, "")
					done += k
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
				b.ReportMetric(float64(b.N*n)/elapsed.Seconds(), "deliveries/s")
			})
		}
	}
}

// BenchmarkChannelLatency measures, at idle, the time from a task's add
// (the API's answer) to its message at one SSE subscriber: one task at
// a time, each waited for. p50 and p99 are reported.
//
//	go test -run '^$' -bench ChannelLatency -benchtime 500x ./internal/httpapi/
func BenchmarkChannelLatency(b *testing.B) {
	for _, kind := range stores.Kinds {
		b.Run(kind, func(b *testing.B) {
			bb := setupChannels(b, kind, nil)
			bb.start()
			s := subscribeSSE(b, bb.client, bb.srv.URL+"/v1/channels/jobs/room-1", nil)
			s.ready()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				bb.do("POST", "/v1/tasks/jobs/queues/default/tasks", fmt.Sprintf(`{"payload":{"n":%d},"target":{"channel":"room-1"}}`, i)).want(b, 201, "")
				s.next()
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
