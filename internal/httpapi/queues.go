package httpapi

import (
	"net/http"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

func (s *Server) listQueues(w http.ResponseWriter, r *http.Request, c *call) {
	views, err := s.eng.QueueList(r.Context(), c.p.Org, c.instance)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := errandapi.QueueList{Queues: make([]errandapi.Queue, 0, len(views))}
	for _, v := range views {
		out.Queues = append(out.Queues, *engine.QueueJSON(v.Queue, v.Counts))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createQueue(w http.ResponseWriter, r *http.Request, c *call) {
	var body errandapi.QueueRequest
	if err := decodeBody(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Name == nil {
		s.writeError(w, r, task.FieldErrorf(task.CodeInvalidArgument, "name", "is required"))
		return
	}
	q, err := s.eng.QueueCreate(r.Context(), engine.QueueRef{Org: c.p.Org, Instance: c.instance, Queue: *body.Name}, engine.QueuePatchOf(&body))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, errandapi.QueueResponse{Queue: engine.QueueJSON(q, nil)})
}

func (s *Server) getQueue(w http.ResponseWriter, r *http.Request, c *call) {
	v, err := s.eng.QueueGet(r.Context(), c.queue(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, errandapi.QueueResponse{Queue: engine.QueueJSON(v.Queue, v.Counts)})
}

func (s *Server) patchQueue(w http.ResponseWriter, r *http.Request, c *call) {
	var body errandapi.QueueRequest
	if err := decodePatch(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := engine.QueuePatchFor(&body, r.PathValue("queue"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, err := s.eng.QueuePatch(r.Context(), c.queue(r), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, errandapi.QueueResponse{Queue: engine.QueueJSON(q, nil)})
}

func (s *Server) deleteQueue(w http.ResponseWriter, r *http.Request, c *call) {
	if !s.bodyless(w, r) {
		return
	}
	if r.URL.Query().Get("confirm") != "true" {
		s.writeError(w, r, task.Errorf(task.CodeConfirmRequired, "deleting a queue removes all its tasks: add ?confirm=true"))
		return
	}
	n, err := s.eng.QueueDelete(r.Context(), c.queue(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, errandapi.DeleteResponse{Deleted: n})
}

func (s *Server) purgeQueue(w http.ResponseWriter, r *http.Request, c *call) {
	if !s.bodyless(w, r) {
		return
	}
	if r.URL.Query().Get("confirm") != "true" {
		s.writeError(w, r, task.Errorf(task.CodeConfirmRequired, "purging removes every task of the queue: add ?confirm=true"))
		return
	}
	n, err := s.eng.QueuePurge(r.Context(), c.queue(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, errandapi.DeleteResponse{Deleted: n})
}

func (s *Server) queueActivity(w http.ResponseWriter, r *http.Request, c *call) {
	a, err := s.eng.QueueActivity(r.Context(), c.queue(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := errandapi.QueueActivity{Minutes: make([]errandapi.ActivityMinute, len(a.Minutes)), Capped: a.Capped}
	if out.Capped == nil {
		out.Capped = []string{}
	}
	for i, m := range a.Minutes {
		out.Minutes[i] = errandapi.ActivityMinute{At: m.At, Added: m.Added, Succeeded: m.Succeeded, Failed: m.Failed}
	}
	writeJSON(w, http.StatusOK, out)
}
