package main

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
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
