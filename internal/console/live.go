package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// liveMinGap is the least time between two sends of the live counts: a
// busy instance changes all the time, and the page need not follow every
// change.
const liveMinGap = 500 * time.Millisecond

// liveQueue is one queue of a live update: enough for the page to add a
// queue's row, update its counts and its paused badge.
type liveQueue struct {
	Name   string                  `json:"name"`
	Mode   errandapi.Mode          `json:"mode"`
	Counts map[errandapi.State]int `json:"counts"`
	Capped []errandapi.State       `json:"capped"`
	Paused bool                    `json:"paused"`
}

// live streams an instance's counts by state as server-sent events: an
// event "counts" at once, then after each change the engine sees (at most
// every liveMinGap) and every LiveEvery. Each send is a call of the API
// with the session's key: a key revoked meanwhile ends the stream with an
// event "logout", and the page goes to the login.
func (c *Console) live(w http.ResponseWriter, r *http.Request, s *session) {
	inst := r.PathValue("instance")
	ctx := r.Context()
	qs, err := s.cl.ListQueues(ctx, inst)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	clk := c.cfg.Clock
	for {
		var changed <-chan struct{}
		if c.cfg.Changes != nil {
			changed = c.cfg.Changes()
		}
		if err := sendCounts(w, qs); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		tick := clk.After(c.cfg.LiveEvery)
		select {
		case <-ctx.Done():
			return
		case <-c.done:
			return
		case <-changed:
			select {
			case <-clk.After(liveMinGap):
			case <-ctx.Done():
				return
			case <-c.done:
				return
			}
		case <-tick:
		}
		qs, err = s.cl.ListQueues(ctx, inst)
		if errors.Is(err, client.ErrUnauthenticated) || errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrPermissionDenied) {
			fmt.Fprint(w, "event: logout\ndata: {}\n\n")
			_ = rc.Flush()
			return
		}
		if err != nil {
			c.cfg.Logger.Warn("console: live counts failed", "instance", inst, "err", err)
			return
		}
	}
}

func sendCounts(w http.ResponseWriter, qs []errandapi.Queue) error {
	out := make([]liveQueue, len(qs))
	for i, q := range qs {
		out[i] = liveQueue{Name: q.Name, Mode: q.Mode, Counts: q.Counts, Capped: q.Capped, Paused: q.Paused}
	}
	raw, err := json.Marshal(map[string]any{"queues": out})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: counts\ndata: %s\n\n", raw)
	return err
}
