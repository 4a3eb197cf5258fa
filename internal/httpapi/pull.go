package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

type contextT = context.Context

// checkResult checks an ack's result (absent and null are none) before the
// engine does, so the error names the ack it belongs to.
func checkResult(raw json.RawMessage, field string) error {
	if task.IsJSONNull(raw) {
		return nil
	}
	return task.ValidateJSONBytes(raw, field)
}

// checkIDField checks a task id or lease id sent in a body: required, and
// made of the characters errand's ids are made of, so that a NUL byte or
// invalid UTF-8 is refused before a store sees it.
func checkIDField(v, field string) error {
	if v == "" {
		return task.FieldErrorf(task.CodeInvalidArgument, field, "is required")
	}
	if !task.ValidID(v) {
		return task.FieldErrorf(task.CodeInvalidArgument, field, "is not an id errand made (1–%d letters, digits, '-', '_' or '.')", task.MaxIDLen)
	}
	return nil
}

// waitAdmitted is the check a call that waits (a long-polling lease, a
// task's wait) makes again before each look after a pause: whether the
// caller's key still stands, UNAUTHENTICATED once it was revoked.
func (s *Server) waitAdmitted(r *http.Request, c *call) func() error {
	return func() error {
		if s.stillAdmitted(r.Context(), c.p) != nil {
			return task.Errorf(task.CodeUnauthenticated, "the API key of this call was revoked while it waited")
		}
		return nil
	}
}

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
	// A long poll asks again whether the key still stands before each
	// claim after its wait, as an open subscription or worker does.
	p.Admitted = s.waitAdmitted(r, c)
	var ts []*task.Task
	var tokens []string
	var err error
	if body.DeliveryTokens {
		ts, tokens, err = s.eng.LeaseWithTokens(r.Context(), c.queue(r), p)
	} else {
		ts, err = s.eng.Lease(r.Context(), c.queue(r), p)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := errandapi.LeaseResponse{Tasks: make([]errandapi.LeasedTask, len(ts))}
	for i, t := range ts {
		out.Tasks[i] = toLeasedJSON(t)
		if tokens != nil {
			out.Tasks[i].DeliveryToken = tokens[i]
		}
	}
	writeLeased(w, out)
}

func (s *Server) ack(w http.ResponseWriter, r *http.Request, c *call) {
	var body errandapi.AckRequest
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := checkIDField(body.LeaseID, "leaseId"); err != nil {
		s.writeError(w, r, err)
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
	if err := checkIDField(body.LeaseID, "leaseId"); err != nil {
		s.writeError(w, r, err)
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
	if err := checkIDField(body.LeaseID, "leaseId"); err != nil {
		s.writeError(w, r, err)
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
	if err := decodeAcks(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	in := make([]engine.AckInput, len(body.Acks))
	for i, a := range body.Acks {
		at := "acks[" + strconv.Itoa(i) + "]"
		if err := cmp.Or(checkIDField(a.ID, at+".id"), checkIDField(a.LeaseID, at+".leaseId"), checkResult(a.Result, at+".result")); err != nil {
			s.writeError(w, r, err)
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
