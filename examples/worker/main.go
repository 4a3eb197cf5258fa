// Command worker is an example errand function worker: it serves
// app/send-receipt for the instance jobs, logging each call and answering
// {"sent": true}. It connects to ERRAND_URL (default the dev address,
// http://127.0.0.1:9191) with ERRAND_API_KEY when set.
//
//	errand dev &
//	go run ./examples/worker &
//	curl -X POST localhost:9191/v1/tasks/jobs/queues -d '{"name":"receipts","target":{"function":"app/send-receipt"}}'
//	curl -X POST localhost:9191/v1/tasks/jobs/queues/receipts/tasks -d '{"payload":{"order":42}}'
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/errandhq/errand/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	url := cmp.Or(os.Getenv("ERRAND_URL"), "http://127.0.0.1:9191")
	w, err := worker.New(url, cmp.Or(os.Getenv("ERRAND_INSTANCE"), "jobs"), "app", worker.Options{
		APIKey: os.Getenv("ERRAND_API_KEY"), Slots: 8, Logger: log,
	})
	if err != nil {
		log.Error("worker", "err", err)
		os.Exit(2)
	}
	w.Handle("send-receipt", func(ctx context.Context, t *worker.Task) (json.RawMessage, error) {
		log.Info("send-receipt", "task", t.ID, "attempt", t.Attempt, "payload", string(t.Payload))
		return json.RawMessage(`{"sent": true}`), nil
	})
	if err := w.Run(ctx); err != nil {
		log.Error("worker stopped", "err", err)
		os.Exit(1)
	}
}
