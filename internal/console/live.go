package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/inproc"
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
// with the session's key: a key revoked meanwhile, or the session's end
// (a logout, anywhere; its expiry), ends the stream with an event
// "logout", and the page goes to the login. A read the API refuses
// otherwise (the instance's rateLimit, a store that does not answer) is an
// event "stale" with its words, and the read is tried again after the
// answer's Retry-After (else LiveEvery): the page says its counts are not
// live meanwhile, rather than freezing silently.
func (c *Console) live(w http.ResponseWriter, r *http.Request, s *session) {
	inst := r.PathValue("instance")
	// The page was loaded, so the instance existed: its reads make none
	// again in dev when it is deleted meanwhile (they find it gone).
	ctx := inproc.NoCreate(r.Context())
	qs, err := s.cl.ListQueues(ctx, inst)
	if loggedOut(err) {
		c.fail(w, r, s, err)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	clk := c.cfg.Clock
	stale := false // the last read was refused (logged once a spell)
	for {
		var changed <-chan struct{}
		if c.cfg.Changes != nil {
			changed = c.cfg.Changes()
		}
		wait := c.cfg.LiveEvery
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return // the page left while the read was under way
			case stale:
			case errors.Is(err, client.ErrRateLimited):
				// The tenant's own rateLimit: the page says so; no operator's matter.
				c.cfg.Logger.Debug("console: live counts refused; trying again", "instance", inst, "err", err)
			default:
				c.cfg.Logger.Warn("console: live counts refused; trying again", "instance", inst, "err", err)
			}
			if d := retryAfter(err); d > 0 {
				wait, changed = d, nil
			}
			if sendStale(w, err) != nil {
				return
			}
		} else if sendCounts(w, qs) != nil {
			return
		}
		stale = err != nil
		if err := rc.Flush(); err != nil {
			return
		}
		tick := clk.After(wait)
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
		if !c.sessionLives(ctx, s) {
			err = client.ErrUnauthenticated
		} else {
			qs, err = s.cl.ListQueues(ctx, inst)
		}
		if loggedOut(err) {
			fmt.Fprint(w, "event: logout\ndata: {}\n\n")
			_ = rc.Flush()
			return
		}
	}
}

// loggedOut reports whether err says the session's key no longer reaches
// the instance.
func loggedOut(err error) bool {
	return errors.Is(err, client.ErrUnauthenticated) || errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrPermissionDenied)
}

// retryAfter is the wait a refusal asks for (RATE_LIMITED's Retry-After),
// or 0.
func retryAfter(err error) time.Duration {
	var e *client.Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// sendStale tells the page its counts are not live: the API refused the
// read with err.
func sendStale(w http.ResponseWriter, err error) error {
	raw, jerr := json.Marshal(map[string]string{"message": apiError(err).Message})
	if jerr != nil {
		return jerr
	}
	_, werr := fmt.Fprintf(w, "event: stale\ndata: %s\n\n", raw)
	return werr
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
