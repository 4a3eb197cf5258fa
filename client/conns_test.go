package client_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// TestDefaultClientKeepsConnections: a Client made without an HTTPClient
// keeps a connection per caller: 16 goroutines making 20 calls each at
// once open about 16 connections, not one for most calls (as
// http.DefaultTransport's 2 idle connections a host would have them).
func TestDefaultClientKeepsConnections(t *testing.T) {
	e := start(t, options{})
	if _, err := e.c.CreateQueue(context.Background(), "dev", "conns", errandapi.QueueRequest{Mode: new(errandapi.ModePull)}); err != nil {
		t.Fatal(err)
	}
	// The same API behind a server of this test's, which counts the
	// connections it accepts.
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(e.srv.Config.Handler)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := client.New(srv.URL, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	const callers, calls = 16, 20
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range calls {
				if _, err := c.GetQueue(context.Background(), "dev", "conns"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	n := opened.Load()
	if n > 2*callers {
		t.Fatalf("%d connections opened for %d calls of %d callers", n, callers*calls, callers)
	}
	t.Logf("%d connections opened for %d calls of %d callers", n, callers*calls, callers)
}
