package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/errandapi"
)

// eventWait bounds a wait for one event of a subscription: a safety net
// for a test that would otherwise hang, never a pause that passes.
const eventWait = 15 * time.Second

// sseEvent is one Server-Sent Event as a browser's EventSource parses it.
type sseEvent struct {
	id, event, data string
}

// sseStream is a real SSE client reading one subscription.
type sseStream struct {
	t      testing.TB
	resp   *http.Response
	events chan sseEvent
	done   chan struct{} // the stream ended
}

// subscribeSSE opens GET path with headers (Authorization and
// Last-Event-ID when set) on srvURL and returns the stream once its
// answer is 200 with the event-stream type; the body is closed when the
// test ends.
func subscribeSSE(t testing.TB, client *http.Client, url string, headers map[string]string) *sseStream {
	t.Helper()
	s := openSSE(t, client, url, headers)
	go s.read()
	return s
}

// openSSE is subscribeSSE without reading: the stream's reader starts
// with start (a subscriber that does not read meanwhile).
func openSSE(t testing.TB, client *http.Client, url string, headers map[string]string) *sseStream {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return &sseStream{t: t, resp: resp, events: make(chan sseEvent, 1024), done: make(chan struct{})}
}

// start starts reading an opened stream.
func (s *sseStream) start() { go s.read() }

// read parses the stream as EventSource does: fields until a blank line,
// data lines joined with "\n"; comments skipped.
func (s *sseStream) read() {
	defer close(s.done)
	sc := bufio.NewScanner(s.resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != nil || ev.event != "" {
				ev.data = strings.Join(data, "\n")
				s.events <- ev
			}
			ev, data = sseEvent{}, nil
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.id = value
			case "event":
				ev.event = value
			case "data":
				data = append(data, value)
			}
		}
	}
}

// next returns the next event.
func (s *sseStream) next() sseEvent {
	s.t.Helper()
	select {
	case ev := <-s.events:
		return ev
	case <-s.done:
		select {
		case ev := <-s.events:
			return ev
		default:
		}
		s.t.Fatal("the stream ended")
	case <-time.After(eventWait):
		s.t.Fatal("no event came")
	}
	return sseEvent{}
}

// ready reads the first event, ready, and returns its head.
func (s *sseStream) ready() string {
	s.t.Helper()
	ev := s.next()
	var e errandapi.ChannelEvent
	if ev.event != "ready" || json.Unmarshal([]byte(ev.data), &e) != nil {
		s.t.Fatalf("first event %+v, want ready", ev)
	}
	return e.Head
}

// messages reads n events that must be messages and returns "id:payload"
// of each, payload being the delivery body's payload as JSON.
func (s *sseStream) messages(n int) []string {
	s.t.Helper()
	var out []string
	for range n {
		ev := s.next()
		if ev.event != "" {
			s.t.Fatalf("event %+v, want a message", ev)
		}
		out = append(out, ev.id+":"+payloadOf(s.t, []byte(ev.data)))
	}
	return out
}

// ended reports whether the stream ended with no more events.
func (s *sseStream) ended() bool {
	select {
	case <-s.done:
		return len(s.events) == 0
	case <-time.After(eventWait):
		return false
	}
}

// payloadOf returns a delivery body's payload, checking the body's shape.
func payloadOf(t testing.TB, body []byte) string {
	t.Helper()
	var b struct {
		Task    map[string]any  `json:"task"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Task["id"] == nil || b.Task["queue"] == nil {
		t.Fatalf("message body %q is not a delivery body {task, payload}", body)
	}
	return string(b.Payload)
}

// wsStream is a real WebSocket client reading one subscription.
type wsStream struct {
	t    testing.TB
	conn *websocket.Conn
}

func subscribeWS(t testing.TB, url string, headers http.Header) *wsStream {
	t.Helper()
	conn, resp, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPHeader: headers})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %d %v", url, status, err)
	}
	conn.SetReadLimit(1 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &wsStream{t: t, conn: conn}
}

// next reads one frame as a ChannelEvent; err is the close, if any.
func (w *wsStream) next() (*errandapi.ChannelEvent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	typ, b, err := w.conn.Read(ctx)
	if err != nil {
		return nil, err
	}
	var e errandapi.ChannelEvent
	if typ != websocket.MessageText || json.Unmarshal(b, &e) != nil {
		return nil, fmt.Errorf("frame %q is not a channel event", b)
	}
	return &e, nil
}

func (w *wsStream) must() *errandapi.ChannelEvent {
	w.t.Helper()
	e, err := w.next()
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}
