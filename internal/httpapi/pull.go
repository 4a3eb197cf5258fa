package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

type contextT = context.Context

func (s *Server) lease(w http.ResponseWriter, r *http.Request, c *call) {
	var body errandapi.LeaseRequest
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
	out := errandapi.LeaseResponse{Tasks: make([]errandapi.LeasedTask, len(ts))}
	for i, t := range ts {
		out.Tasks[i] = toLeasedJSON(t)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) ack(w http.ResponseWriter, r *http.Request, c *call) {
	var body errandapi.AckRequest
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
	var body errandapi.ExtendRequest
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
	var body errandapi.ReleaseRequest
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
	var body errandapi.BatchAckRequest
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
	out := errandapi.BatchAckResponse{Results: make([]errandapi.BatchAckResult, len(errs))}
	acked := 0
	var first *task.Error
	for i, e := range errs {
		out.Results[i] = errandapi.BatchAckResult{OK: e == nil, ID: in[i].ID}
		if e == nil {
			acked++
			continue
		}
		te, ok := e.(*task.Error)
		if !ok {
			s.writeError(w, r, e)
			return
		}
		out.Results[i].Code, out.Results[i].Message = te.Code, te.Message
		if first == nil {
			first = te
		}
	}
	if acked == 0 {
		out.Error = &errandapi.ErrorDetail{Code: first.Code, Message: first.Message}
		writeBatchRefused(w, out)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
