package httpapi_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/httpapi"
)

// smallBuffers is a listener whose connections have small kernel send
// buffers, so a subscriber that does not read blocks the server's writes
// after a few KiB instead of megabytes.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// TestChannelSlowSubscriber: a subscriber that stops reading is cut with a
// lagged event naming its last event id, while a fast one on the same
// channel gets every message; the slow one resumes from that id and gets
// exactly the rest; memory is bounded by the buffer (the slow one's
// messages come from the log when it resumes).
func TestChannelSlowSubscriber(t *testing.T) {
	b := setupChannels(t, "sqlite", func(c *engine.Config) {
		c.Channels = engine.ChannelsConfig{Buffer: 4, MaxLag: 1000, LagTimeout: 10 * time.Second}
	})
	b.start()
	// The slow subscriber reaches the same engine through a server whose
	// sockets have small buffers, with a client that reads little.
	slowSrv := httptest.NewUnstartedServer(httpapi.New(httpapi.Config{Engine: b.eng, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	slowSrv.Listener = smallBuffers{slowSrv.Listener}
	slowSrv.Start()
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
	}}
	slowClient := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	t.Cleanup(func() {
		slowClient.CloseIdleConnections()
		slowSrv.Close()
	})

	// Its reader starts once the others are done: until then it reads
	// nothing.
	slow := openSSE(t, slowClient, slowSrv.URL+"/v1/channels/jobs/room-1", nil)
	fast := subscribeSSE(t, b.client, b.srv.URL+"/v1/channels/jobs/room-1", nil)
	fast.ready()

	const n = 100
	big := strings.Repeat("x", 8<<10)
	var payloads []string
	for i := range n {
		payloads = append(payloads, fmt.Sprintf(`{"n":%d,"pad":%q}`, i, big))
	}
	b.toChannel("room-1", payloads...)
	// The fast subscriber gets all of them while the slow one reads none.
	for i, m := range fast.messages(n) {
		if id, _, _ := strings.Cut(m, ":"); id != strconv.Itoa(i+1) {
			t.Fatalf("fast subscriber's message %d has id %s", i+1, id)
		}
	}
	// The slow one has taken nothing for the lag timeout when the room
	// next reads the log (for message n+1): it is cut.
	b.clock.Advance(10*time.Second + time.Millisecond)
	b.toChannel("room-1", `{"n":"last"}`)
	if got := fast.messages(1); got[0] != strconv.Itoa(n+1)+`:{"n":"last"}` {
		t.Fatalf("fast subscriber's last message: %v", got)
	}
	slow.start()
	slow.ready()
	// Now it reads: what got through before it was cut, then lagged.
	seen := map[string]int{}
	var lagged sseEvent
	for lagged.event == "" {
		ev := slow.next()
		switch ev.event {
		case "":
			seen[ev.id]++
		case "lagged":
			lagged = ev
		default:
			t.Fatalf("slow subscriber got %+v", ev)
		}
	}
	if !slow.ended() {
		t.Fatal("the lagged subscriber's stream did not end")
	}
	var last string
	if _, after, ok := strings.Cut(lagged.data, `"lastEventId":"`); ok {
		last, _, _ = strings.Cut(after, `"`)
	}
	lastN, err := strconv.Atoi(last)
	if err != nil || lastN != len(seen) || lastN >= n {
		t.Fatalf("lagged %q after %d messages", lagged.data, len(seen))
	}
	if got := b.metric("errand_channel_subscribers_dropped_total"); got != 1 {
		t.Fatalf("dropped for lag: %v, want 1", got)
	}
	resumed := subscribeSSE(t, b.client, b.srv.URL+"/v1/channels/jobs/room-1", map[string]string{"Last-Event-ID": last})
	resumed.ready()
	for _, m := range resumed.messages(n + 1 - lastN) {
		id, _, _ := strings.Cut(m, ":")
		seen[id]++
	}
	for i := 1; i <= n+1; i++ {
		if seen[strconv.Itoa(i)] != 1 {
			t.Fatalf("message %d seen %d times by the slow subscriber", i, seen[strconv.Itoa(i)])
		}
	}
	if got := b.metric("errand_channel_messages_sent_total"); got < 2*n {
		t.Fatalf("messages sent %v, want at least %d", got, 2*n)
	}
	if got := b.metric("errand_channel_messages_appended_total"); got != n+1 {
		t.Fatalf("messages appended %v, want %d", got, n+1)
	}
}

// metric reads one unlabelled metric from the engine's /metrics text.
func (b *bundle) metric(name string) float64 {
	b.t.Helper()
	rec := httptest.NewRecorder()
	b.eng.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.t.Fatal(err)
			}
			return f
		}
	}
	b.t.Fatalf("no metric %s", name)
	return 0
}
