package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

type contextT = context.Context

func (s *Server) lease(w http.ResponseWriter, r *http.Request, c *call) {
	body := struct {
		Count        *int `json:"count"`
		LeaseSeconds *int `json:"leaseSeconds"`
		WaitSeconds  int  `json:"waitSeconds"`
	}{}
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	p := engine.LeaseParams{Count: 1, LeaseSeconds: 60, WaitSeconds: body.WaitSeconds}
	if body.Count != nil {
		p.Count = *body.Count
	}
	if body.LeaseSeconds != nil {
		p.LeaseSeconds = *body.LeaseSeconds
	}
	ts, err := s.eng.Lease(r.Context(), c.queue(r), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]leasedJSON, len(ts))
	for i, t := range ts {
		out[i] = toLeasedJSON(t)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": out})
}

func (s *Server) ack(w http.ResponseWriter, r *http.Request, c *call) {
	body := struct {
		LeaseID string          `json:"leaseId"`
		Result  json.RawMessage `json:"result"`
	}{}
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.LeaseID == "" {
		s.writeError(w, r, task.FieldErrorf(task.CodeInvalidArgument, "leaseId", "is required"))
		return
	}
	t, err := s.eng.Ack(r.Context(), c.task(r), engine.AckParams{LeaseID: body.LeaseID, Result: body.Result})
	s.answerTask(w, r, t, err)
}

func (s *Server) extend(w http.ResponseWriter, r *http.Request, c *call) {
	body := struct {
		LeaseID      string `json:"leaseId"`
		LeaseSeconds *int   `json:"leaseSeconds"`
	}{}
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.LeaseID == "" {
		s.writeError(w, r, task.FieldErrorf(task.CodeInvalidArgument, "leaseId", "is required"))
		return
	}
	if body.LeaseSeconds == nil {
		s.writeError(w, r, task.FieldErrorf(task.CodeInvalidArgument, "leaseSeconds", "is required"))
		return
	}
	t, err := s.eng.Extend(r.Context(), c.task(r), engine.ExtendParams{LeaseID: body.LeaseID, LeaseSeconds: *body.LeaseSeconds})
	s.answerTask(w, r, t, err)
}

func (s *Server) release(w http.ResponseWriter, r *http.Request, c *call) {
	body := struct {
		LeaseID      string  `json:"leaseId"`
		Error        string  `json:"error"`
		DelaySeconds float64 `json:"delaySeconds"`
	}{}
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.LeaseID == "" {
		s.writeError(w, r, task.FieldErrorf(task.CodeInvalidArgument, "leaseId", "is required"))
		return
	}
	t, err := s.eng.Release(r.Context(), c.task(r), engine.ReleaseParams{LeaseID: body.LeaseID, Error: body.Error, DelaySeconds: body.DelaySeconds})
	s.answerTask(w, r, t, err)
}

// ackMany is errand's batch ack: {"acks": [{id, leaseId, result?}, …]} (1–1,000)
// → {"results": [{ok, id, code?, message?}, …]} in request order, 200 when
// at least one was acked, 409 when none was (with error naming the first).
func (s *Server) ackMany(w http.ResponseWriter, r *http.Request, c *call) {
	var body struct {
		Acks []struct {
			ID      string          `json:"id"`
			LeaseID string          `json:"leaseId"`
			Result  json.RawMessage `json:"result"`
		} `json:"acks"`
	}
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	in := make([]engine.AckInput, len(body.Acks))
	for i, a := range body.Acks {
		if a.ID == "" || a.LeaseID == "" {
			s.writeError(w, r, task.FieldErrorf(task.CodeInvalidArgument, "acks["+strconv.Itoa(i)+"]", "needs id and leaseId"))
			return
		}
		in[i] = engine.AckInput{ID: a.ID, LeaseID: a.LeaseID, Result: a.Result}
	}
	errs, err := s.eng.AckMany(r.Context(), c.queue(r), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	type result struct {
		OK      bool      `json:"ok"`
		ID      string    `json:"id"`
		Code    task.Code `json:"code,omitempty"`
		Message string    `json:"message,omitempty"`
	}
	out := make([]result, len(errs))
	acked := 0
	var first *task.Error
	for i, e := range errs {
		out[i] = result{OK: e == nil, ID: in[i].ID}
		if e == nil {
			acked++
			continue
		}
		te, ok := e.(*task.Error)
		if !ok {
			s.writeError(w, r, e)
			return
		}
		out[i].Code, out[i].Message = te.Code, te.Message
		if first == nil {
			first = te
		}
	}
	if acked == 0 {
		writeBatchRefused(w, "results", out, first)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": out})
}
