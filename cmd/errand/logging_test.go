package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// TestWarnIfReachable: dev warns when it listens beyond loopback, where
// anyone who reaches it needs no key, and says nothing on loopback.
func TestWarnIfReachable(t *testing.T) {
	for addr, warns := range map[string]bool{"127.0.0.1:0": false, "[::1]:0": false, "0.0.0.0:0": true} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v (skipped)", addr, err)
			continue
		}
		var out bytes.Buffer
		warnIfReachable(slog.New(slog.NewTextHandler(&out, nil)), ln)
		ln.Close()
		if got := strings.Contains(out.String(), "needs no API key"); got != warns {
			t.Errorf("%s: warned %v, want %v (%q)", addr, got, warns, out.String())
		}
	}
}

// TestLogShowsTheCause: the node's log shows what lies under an
// unavailable store's error (the driver's words no answer carries), as
// text and as JSON, wrapped or not.
func TestLogShowsTheCause(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var out bytes.Buffer
		log, err := (&logFlags{level: "info", format: format}).logger(&out)
		if err != nil {
			t.Fatal(err)
		}
		down := task.Unavailable("the store is unreachable; try again", errors.New("dial tcp 10.0.0.7:5432: connection refused"))
		log.Warn("pass failed", "err", fmt.Errorf("claim: %w", down))
		log.Warn("plain", "err", errors.New("no cause"))
		if s := out.String(); !strings.Contains(s, "try again (dial tcp 10.0.0.7:5432: connection refused)") || !strings.Contains(s, "no cause") {
			t.Fatalf("%s log: %s", format, s)
		}
	}
}
