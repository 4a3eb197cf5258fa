package worker_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/worker"
)

// lineWriter hands each log line to a channel.
type lineWriter chan string

func (l lineWriter) Write(p []byte) (int, error) {
	select {
	case l <- string(p):
	default:
	}
	return len(p), nil
}

// TestNeverConnectedSaysSo: a worker whose node is not there says it could
// not connect, naming the URL, not that a connection it never had was
// lost; it keeps trying until its context ends, and Run returns nil.
func TestNeverConnectedSaysSo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	lines := make(lineWriter, 16)
	w, err := worker.New("http://"+addr, "jobs", "app", worker.Options{Logger: slog.New(slog.NewTextHandler(lines, nil)),
		MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("x", nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for range 2 {
		select {
		case l := <-lines:
			if !strings.Contains(l, `msg="worker could not connect; trying again"`) || !strings.Contains(l, "url=ws://"+addr+"/") {
				t.Fatalf("line %q", l)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no line about the connection")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
