package main

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestLoggedPath: a hook call's token is cut in the request log to what
// recognises it (hk_ and four characters); other paths are logged whole.
func TestLoggedPath(t *testing.T) {
	for in, want := range map[string]string{
		"/v1/hooks/jobs/hk_3f9a0c1d2e3f4a5b6c7d8e9f00112233": "/v1/hooks/jobs/hk_3f9a…",
		"/v1/hooks/jobs/hk_3":                                "/v1/hooks/jobs/hk_3",
		"/v1/hooks/jobs":                                     "/v1/hooks/jobs",
		"/v1/tasks/jobs/queues/q/tasks":                      "/v1/tasks/jobs/queues/q/tasks",
	} {
		if got := loggedPath(in); got != want {
			t.Errorf("loggedPath(%q) = %q, want %q", in, got, want)
		}
	}
}

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
