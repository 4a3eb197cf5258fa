package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// sseWriter writes channel events as Server-Sent Events: a message with
// its id and the body as data (no event name, so EventSource's onmessage
// gets it); the other events named, with the ChannelEvent as data.
type sseWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	buf   bytes.Buffer
	start string // the event id the stream starts after (ready's id line)
}

// newSSEWriter answers 200 with the event-stream headers. A subscriber
// admitted by a subscribe token may read from any origin (the token is
// not a cookie a browser sends by itself).
//
// Every event carries an id line: a message's or gap's own; ready the id
// the stream starts after (start: a live subscriber's head), lagged and
// closing the id to resume from. A browser's EventSource reconnects with
// the last id it saw, so it resumes there even before its first message
// rather than as a new live subscriber that skips what it missed.
func newSSEWriter(w http.ResponseWriter, rc *http.ResponseController, anyOrigin bool, start string) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	if anyOrigin {
		h.Set("Access-Control-Allow-Origin", "*")
	}
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: rc, start: start}
}

func (s *sseWriter) context(ctx context.Context) context.Context { return ctx }

func (s *sseWriter) send(_ context.Context, e *errandapi.ChannelEvent) error {
	s.buf.Reset()
	id := e.ID
	switch e.Type {
	case errandapi.ChannelReady:
		id = s.start
	case errandapi.ChannelLagged, errandapi.ChannelClosing:
		id = e.LastEventID
	}
	if id != "" {
		s.buf.WriteString("id: " + id + "\n")
	}
	data := []byte(e.Data)
	if e.Type != errandapi.ChannelMessage {
		s.buf.WriteString("event: " + e.Type + "\n")
		data, _ = errandapi.Marshal(e)
	}
	// A stored payload keeps the line breaks it came with: each line is a
	// data field, which the client joins again with "\n" (JSON
	// whitespace either way).
	for _, line := range bytes.Split(bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n")), []byte("\n")) {
		s.buf.WriteString("data: ")
		s.buf.Write(line)
		s.buf.WriteByte('\n')
	}
	s.buf.WriteByte('\n')
	return s.write(s.buf.Bytes())
}

func (s *sseWriter) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(channelWriteTimeout))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sseWriter) ping(context.Context) error { return s.write([]byte(": ping\n\n")) }

func (s *sseWriter) close(last *errandapi.ChannelEvent) {
	if last != nil {
		_ = s.send(context.Background(), last)
	}
}
