package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/embedded"
	"github.com/errandhq/errand/errandapi"
)

// Example adds a task twice under one name, leases it from a pull queue
// and acknowledges it. It runs against an errand started by the test (an
// embedded engine in dev mode behind its HTTP handler, as `errand dev`).
func Example() {
	baseURL, stop := startErrand()
	defer stop()
	ctx := context.Background()

	c, err := client.New(baseURL, client.Options{APIKey: os.Getenv("ERRAND_API_KEY")})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.CreateQueue(ctx, "jobs", "emails", errandapi.QueueRequest{Mode: new(errandapi.ModePull)}); err != nil {
		log.Fatal(err)
	}

	// A name makes the add idempotent: the second is refused with the id
	// of the first (and the client may retry it safely).
	welcome := errandapi.NewTask{Name: "welcome-42", Payload: json.RawMessage(`{"user":42}`)}
	added, err := c.AddTask(ctx, "jobs", "emails", welcome)
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.AddTask(ctx, "jobs", "emails", welcome)
	var refused *client.Error
	if errors.Is(err, client.ErrTaskExists) && errors.As(err, &refused) {
		fmt.Println("already added:", refused.ID == added.ID)
	}

	// A worker leases what is due and acknowledges it with a result.
	leased, err := c.Lease(ctx, "jobs", "emails", errandapi.LeaseRequest{Count: new(10), LeaseSeconds: new(30)})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range leased {
		fmt.Println("leased", string(t.Payload), "attempt", t.Attempts)
		done, err := c.Ack(ctx, "jobs", t.ID, errandapi.AckRequest{LeaseID: t.LeaseID, Result: json.RawMessage(`{"sent":true}`)})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(done.State, string(done.Result))
	}
	// Output:
	// already added: true
	// leased {"user":42} attempt 1
	// succeeded {"sent":true}
}

// startErrand runs an errand for the example: the embedded engine in dev
// mode on a SQLite file in a temp dir, served on loopback.
func startErrand() (baseURL string, stop func()) {
	dir, err := os.MkdirTemp("", "errand-example-")
	if err != nil {
		log.Fatal(err)
	}
	e, err := embedded.Open(context.Background(), embedded.Options{
		Store: "sqlite://" + filepath.Join(dir, "errand.db"), Dev: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(e.HTTPHandler())
	return srv.URL, func() {
		srv.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		_ = e.Close()
		_ = os.RemoveAll(dir)
	}
}
