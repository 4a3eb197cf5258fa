package httpapi

import (
	"net/http"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

func (s *Server) addTasks(w http.ResponseWriter, r *http.Request, c *call) {
	source, err := addSource(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	raw, err := readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ins, err := parseAdd(raw, source)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var res []engine.AddResult
	if tok := r.Header.Get(errandapi.DeliveryHeader); tok != "" {
		res, err = s.eng.TaskAddFromDelivery(r.Context(), c.queue(r), ins, tok, errandapi.DeliveryHeader)
	} else {
		res, err = s.eng.TaskAdd(r.Context(), c.queue(r), ins)
	}
	if err != nil {
		// A refused token is the call's, not one task's: it is not named
		// as tasks[0]'s in a batch of one.
		if !task.IsField(err, errandapi.DeliveryHeader) {
			err = oneOfBatch(err, raw, len(ins))
		}
		s.writeError(w, r, err)
		return
	}
	out, added := addAnswer(ins, res)
	if added == 0 {
		writeBatchRefused(w, out)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	f := engine.ListFilter{Name: q.Get("name"), Cursor: q.Get("cursor")}
	if st := q.Get("state"); st != "" {
		state, pull, err := task.ParseV1StateArg(st, "state")
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		f.State, f.Pull = state, pull
	}
	limit, err := queryInt(r, "limit", engine.DefaultListLimit, 1, engine.MaxListLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f.Limit = limit
	page, err := s.eng.TaskList(r.Context(), c.queue(r), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := errandapi.TaskPage{Tasks: make([]errandapi.Task, len(page.Tasks))}
	for i, t := range page.Tasks {
		out.Tasks[i] = *toTaskJSON(t, false)
	}
	if page.Cursor != "" {
		out.Cursor = &page.Cursor
	}
	writeJSON(w, http.StatusOK, out)
}

// getTask answers a task; with waitSeconds it holds the call until the
// task has ended (TaskWait), asking before each read whether the key still
// stands, as a long-polling lease does.
func (s *Server) getTask(w http.ResponseWriter, r *http.Request, c *call) {
	wait, err := queryInt(r, "waitSeconds", 0, 0, engine.MaxWaitSeconds)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.eng.TaskWait(r.Context(), c.task(r), wait, s.waitAdmitted(r, c)) // 0: at once
	s.answerTask(w, r, t, err)
}

// deleteTask removes a task's record and answers the task as it was.
func (s *Server) deleteTask(w http.ResponseWriter, r *http.Request, c *call) {
	s.taskOp(w, r, c, s.eng.TaskDelete)
}

// patchTask changes the fields the body sends (a priority, a due time);
// with none it answers the task as it is.
func (s *Server) patchTask(w http.ResponseWriter, r *http.Request, c *call) {
	var body errandapi.TaskPatchRequest
	if err := decodePatch(r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Priority == nil && body.Delay == nil && body.RunAt == nil {
		t, err := s.eng.TaskGet(r.Context(), c.task(r))
		s.answerTask(w, r, t, err)
		return
	}
	t, err := s.eng.TaskChange(r.Context(), c.task(r), task.Change{Priority: body.Priority, Delay: body.Delay, RunAt: body.RunAt})
	s.answerTask(w, r, t, err)
}

func (s *Server) runTask(w http.ResponseWriter, r *http.Request, c *call) {
	s.taskOp(w, r, c, s.eng.TaskRun)
}

func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request, c *call) {
	s.taskOp(w, r, c, s.eng.TaskCancel)
}

func (s *Server) retryTask(w http.ResponseWriter, r *http.Request, c *call) {
	s.taskOp(w, r, c, s.eng.TaskRetry)
}

type taskOpFunc = func(ctx contextT, ref engine.TaskRef) (*task.Task, error)

func (s *Server) taskOp(w http.ResponseWriter, r *http.Request, c *call, op taskOpFunc) {
	if !s.bodyless(w, r) {
		return
	}
	t, err := op(r.Context(), c.task(r))
	s.answerTask(w, r, t, err)
}

func (s *Server) answerTask(w http.ResponseWriter, r *http.Request, t *task.Task, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, taskAnswer(t))
}
