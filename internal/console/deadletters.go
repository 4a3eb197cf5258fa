package console

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/id"
)

// deadData is the dead-letter page: one page of a queue's failed tasks.
type deadData struct {
	Tasks  []errandapi.Task
	Cursor string
	Paged  bool
	Count  int
	Capped bool
}

// deadPage lists a queue's dead letters (its failed tasks), a page at a
// time, for replay in bulk.
func (c *Console) deadPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showDead(w, r, s, nil)
}

func (c *Console) showDead(w http.ResponseWriter, r *http.Request, s *session, refusal *errandapi.Error) {
	inst, name := r.PathValue("instance"), r.PathValue("queue")
	ctx := r.Context()
	q, err := s.cl.GetQueue(ctx, inst, name)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	cursor := r.URL.Query().Get("cursor")
	page, err := s.cl.ListTasks(ctx, inst, name, client.ListOptions{State: errandapi.StateFailed, Limit: listLimit, Cursor: cursor})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	d := &deadData{Tasks: page.Tasks, Paged: cursor != "", Count: q.Counts[errandapi.StateFailed], Capped: capped(q.Capped, errandapi.StateFailed)}
	if page.Cursor != nil {
		d.Cursor = *page.Cursor
	}
	v := s.view(inst+" / "+name+" dead letters", inst)
	v.Queue, v.Data, v.Err = name, d, refusal
	c.render(w, r, statusOf(refusal), "dead", v)
}

func capped(cs []errandapi.State, s errandapi.State) bool {
	for _, c := range cs {
		if c == s {
			return true
		}
	}
	return false
}

// replay starts a dlq.replay job of the operations API: the ticked tasks,
// or (all=true) every failed task of the queue, replayed against their
// targets in the background. The page of the job follows its progress.
func (c *Console) replay(w http.ResponseWriter, r *http.Request, s *session) {
	inst, name := r.PathValue("instance"), r.PathValue("queue")
	sel := errandapi.DLQSelector{Instance: inst}
	if r.PostForm.Get("all") == "true" {
		if err := confirmed(r, "replaying every failed task of the queue"); err != nil {
			c.showDead(w, r, s, apiError(err))
			return
		}
		sel.Queue = name
	} else {
		sel.IDs = r.PostForm["id"]
		if len(sel.IDs) == 0 {
			c.showDead(w, r, s, &errandapi.Error{Code: errandapi.CodeInvalidArgument, Status: http.StatusBadRequest,
				Message: "ids: tick the dead letters to replay, or replay them all"})
			return
		}
	}
	payload, err := json.Marshal(sel)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	job, err := s.cl.SubmitOpsTask(r.Context(), errandapi.OpsSubmit{Kind: "dlq.replay", Payload: payload, IdempotencyKey: "console-" + id.Secret(12)})
	if err != nil {
		c.showDead(w, r, s, apiError(err))
		return
	}
	// The job's page links back to the queue; a replay of ticked ids does
	// not name it in its payload, so the redirect carries it.
	http.Redirect(w, r, Prefix+"i/"+url.PathEscape(inst)+"/jobs/"+url.PathEscape(job.ID)+"?queue="+url.QueryEscape(name), http.StatusSeeOther)
}

// jobData is an operations job's page.
type jobData struct {
	Job      *errandapi.OpsTask
	Finished bool
}

// jobPage shows an operations job (a replay) with its progress; it
// reloads itself every second until the job ends. It links back to the
// queue of the replay (the payload's, or for ticked ids "?queue=").
func (c *Console) jobPage(w http.ResponseWriter, r *http.Request, s *session) {
	inst, jobID := r.PathValue("instance"), r.PathValue("id")
	res, err := s.cl.GetOpsTask(r.Context(), jobID)
	if err != nil {
		if ae := apiError(err); ae.Code == errandapi.CodeNotFound {
			ae.Message = "job " + jobID + ": " + ae.Message
			err = ae
		}
		c.fail(w, r, s, err)
		return
	}
	var sel errandapi.DLQSelector
	if json.Unmarshal(res.Task.Payload, &sel) != nil || sel.Instance != inst {
		// The job is the caller's, but of another instance: it is shown
		// under its own.
		c.fail(w, r, s, &errandapi.Error{Code: errandapi.CodeNotFound, Status: http.StatusNotFound, Message: "no job " + jobID + " on instance " + inst})
		return
	}
	st := res.Task.Status
	d := &jobData{Job: &res.Task, Finished: st == "SUCCEEDED" || st == "FAILED" || st == "CANCELLED"}
	v := s.view("Replay "+res.ID, inst)
	v.Queue, v.Data = cmp.Or(sel.Queue, r.URL.Query().Get("queue")), d
	c.render(w, r, http.StatusOK, "job", v)
}
