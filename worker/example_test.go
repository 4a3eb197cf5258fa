package worker_test

import (
	"cmp"
	"context"
	"encoding/json"
	"log"
	"net/http"
	"os"
	"os/signal"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/worker"
)

// Example serves app/send-receipt for the instance jobs, as
// examples/worker does; docs/sdk.md shows it. (Compiled by go test, not
// run: it serves until interrupted.)
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	url := cmp.Or(os.Getenv("ERRAND_URL"), "http://127.0.0.1:9191")
	key := os.Getenv("ERRAND_API_KEY")
	c, err := client.New(url, client.Options{APIKey: key})
	if err != nil {
		log.Fatal(err)
	}
	w, err := worker.New(url, "jobs", "app", worker.Options{APIKey: key, Slots: 8})
	if err != nil {
		log.Fatal(err)
	}
	w.Handle("send-receipt", func(ctx context.Context, t *worker.Task) (json.RawMessage, error) {
		log.Printf("send-receipt %s attempt %d: %s", t.ID, t.Attempt, t.Payload)
		// An add made with ctx carries the delivery: depth+1, source function.
		if _, err := c.AddTask(ctx, "jobs", "audit", errandapi.NewTask{Payload: t.Payload}); err != nil {
			return nil, err // a failed attempt: retried with the queue's backoff
		}
		return json.RawMessage(`{"sent": true}`), nil // the task's result
	})
	if err := w.Run(ctx); err != nil { // until ctx ends; reconnects by itself
		log.Fatal(err)
	}
}

// ExampleWebhookHandler serves a handler as a webhook target on :8080: a
// queue whose target is {"webhook": "https://this-host/errand/receipts"}
// delivers to it. (Compiled by go test, not run: it serves until killed.)
func ExampleWebhookHandler() {
	h, err := worker.WebhookHandler(func(ctx context.Context, t *worker.Task) (json.RawMessage, error) {
		log.Printf("receipt %s attempt %d: %s", t.ID, t.Attempt, t.Payload)
		return json.RawMessage(`{"sent": true}`), nil // 200: the task's result
	}, worker.WebhookOptions{Keys: []string{os.Getenv("ERRAND_WEBHOOK_KEY")}}) // the instance's whsec_… key
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("POST /errand/receipts", h)
	log.Fatal(http.ListenAndServe(":8080", nil))
}
