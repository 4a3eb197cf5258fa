package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/task"
)

// OpsRoute is one route of the operations API (/api/…). Its handler gets
// the authenticated caller and checks the caller's grant itself, since the
// instance a job touches is in its payload, not in the path.
type OpsRoute struct {
	Method  string
	Pattern string
	handle  func(s *Server, w http.ResponseWriter, r *http.Request, p *auth.Principal)
}

// OpsRoutes is THE route table of the operations API.
var OpsRoutes = []OpsRoute{
	{"POST", "/api/tasks", (*Server).opsSubmit},
	{"GET", "/api/tasks", (*Server).opsList},
	{"GET", "/api/tasks/{id}", (*Server).opsGet},
	{"POST", "/api/tasks/{id}/cancel", (*Server).opsCancel},
	{"POST", "/api/tasks/{id}/retry", (*Server).opsRetry},
	{"GET", "/api/tasks/{id}/bundle", (*Server).opsBundle},
	{"DELETE", "/api/dlq", (*Server).opsDLQPurge},
	{"POST", "/api/backup/export", (*Server).opsBackupExport},
	{"POST", "/api/instances/{id}/backup", (*Server).opsInstanceBackup},
}

// Limits of GET /api/tasks.
const (
	opsListDefault = 50
	opsListMax     = 200
	opsOffsetMax   = 1_000_000_000
)

// wrapOps authenticates the caller of an operations route.
func (s *Server) wrapOps(rt OpsRoute) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := s.authenticate(w, r, s.writeOpsError)
		if p == nil {
			return
		}
		if pathNotFound(r, "") != nil { // a job's 404 is the same for every cause
			s.writeOpsError(w, r, task.ErrNotFound)
			return
		}
		if err := checkQuery(r, rt.Method+" "+rt.Pattern); err != nil {
			s.writeOpsError(w, r, err)
			return
		}
		rt.handle(s, w, r, p)
	})
}

// writeOpsError answers err in the operations API's shape: the v1 status,
// the code in lowercase.
func (s *Server) writeOpsError(w http.ResponseWriter, r *http.Request, err error) {
	te := s.taskError(w, r, err)
	writeJSON(w, errandapi.OpsStatusOf(te.Code), errandapi.OpsErrorResponse{Error: errandapi.OpsErrorDetail{Code: errandapi.OpsCode(te.Code), Message: te.Message}})
}

// opsAllowed reports whether p may see and steer a job of kind with
// payload: `full` on the instance it touches, or on every instance ("*")
// for a kind of the whole installation.
func opsAllowed(p *auth.Principal, kind string, payload json.RawMessage) bool {
	scope := engine.OpsScope(kind, payload)
	if scope == "*" {
		return p.Grants["*"] >= auth.RoleFull
	}
	return p.Allows(scope, auth.RoleFull)
}

func (s *Server) opsSubmit(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	var b errandapi.OpsSubmit
	if err := decodeBody(r, &b); err != nil {
		s.writeOpsError(w, r, err)
		return
	}
	s.submitJob(w, r, p, b)
}

// submitJob checks and stores a job: 201 with a new one, 200 with the
// existing one of the same (owner, kind, idempotency_key).
func (s *Server) submitJob(w http.ResponseWriter, r *http.Request, p *auth.Principal, b errandapi.OpsSubmit) {
	kinds := strings.Join(task.OpsKinds, ", ")
	if b.Kind == "" {
		s.writeOpsError(w, r, task.FieldErrorf(task.CodeInvalidArgument, "kind", "is required: one of %s", kinds))
		return
	}
	if !task.IsOpsKind(b.Kind) {
		s.writeOpsError(w, r, task.Errorf(task.CodeUnknownTaskKind, "kind %s is not one of %s", task.Quote(b.Kind), kinds))
		return
	}
	if task.IsJSONNull(b.Payload) {
		b.Payload = json.RawMessage("{}")
	}
	if err := task.ValidateJSONBytes(b.Payload, "payload"); err != nil {
		s.writeOpsError(w, r, err)
		return
	}
	if err := engine.CheckOpsPayload(b.Kind, b.Payload); err != nil {
		s.writeOpsError(w, r, err)
		return
	}
	scope := engine.OpsScope(b.Kind, b.Payload)
	if !opsAllowed(p, b.Kind, b.Payload) {
		s.writeOpsError(w, r, task.Errorf(task.CodePermissionDenied, "a %s job on %s needs the full grant there", b.Kind, task.Quote(scope)))
		return
	}
	// A job that names an instance is a call on that instance: it counts
	// against the instance's rateLimit, as a v1 call on it would.
	if scope != "*" && !s.takeCall(w, r, p.Org, scope, s.writeOpsError) {
		return
	}
	job, existed, err := s.eng.OpsSubmit(r.Context(), p.Org, b.Kind, b.Payload, b.IdempotencyKey, b.MaxAttempts)
	if err != nil {
		s.writeOpsError(w, r, err)
		return
	}
	status := http.StatusCreated
	if existed {
		status = http.StatusOK
	}
	writeJSON(w, status, opsAnswer(job, existed))
}

func (s *Server) opsList(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	limit, err := clampedQuery(r, "limit", opsListDefault, 1, opsListMax)
	if err != nil {
		s.writeOpsError(w, r, err)
		return
	}
	offset, err := clampedQuery(r, "offset", 0, 0, opsOffsetMax)
	if err != nil {
		s.writeOpsError(w, r, err)
		return
	}
	jobs, err := s.eng.OpsList(r.Context(), p.Org, limit, offset, func(j *engine.OpsJob) bool { return opsAllowed(p, j.Kind, j.Payload) })
	if err != nil {
		s.writeOpsError(w, r, err)
		return
	}
	out := errandapi.OpsTaskList{Tasks: []errandapi.OpsTask{}, Limit: limit, Offset: offset}
	for _, j := range jobs {
		out.Tasks = append(out.Tasks, opsWire(j))
	}
	writeJSON(w, http.StatusOK, out)
}

// opsJob finds the caller's job of the path: a job of another owner, or one
// the caller's grants do not reach, is NOT_FOUND like a missing one.
func (s *Server) opsJob(w http.ResponseWriter, r *http.Request, p *auth.Principal) *engine.OpsJob {
	job, err := s.eng.OpsGet(r.Context(), p.Org, r.PathValue("id"))
	if err == nil && !opsAllowed(p, job.Kind, job.Payload) {
		err = task.ErrNotFound
	}
	if err != nil {
		s.writeOpsError(w, r, err)
		return nil
	}
	return job
}

func (s *Server) opsGet(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	if job := s.opsJob(w, r, p); job != nil {
		writeJSON(w, http.StatusOK, opsAnswer(job, false))
	}
}

func (s *Server) opsCancel(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	s.opsSteer(w, r, p, s.eng.OpsCancel)
}

func (s *Server) opsRetry(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	s.opsSteer(w, r, p, s.eng.OpsRetry)
}

// opsSteer cancels or retries the path's job. The call takes no body: one
// that is malformed or has a field is refused, as the v1 cancel and retry
// refuse it.
func (s *Server) opsSteer(w http.ResponseWriter, r *http.Request, p *auth.Principal, fn func(ctx context.Context, org, id string) (*engine.OpsJob, error)) {
	if !s.bodyless(w, r) {
		return
	}
	if s.opsJob(w, r, p) == nil {
		return
	}
	job, err := fn(r.Context(), p.Org, r.PathValue("id"))
	if err != nil {
		s.writeOpsError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, opsAnswer(job, false))
}

// clampedQuery reads an optional integer query parameter and clamps it to
// lo–hi before narrowing it to an int: a huge or negative value is brought
// into range, not refused; only a value that is not an integer is.
func clampedQuery(r *http.Request, name string, def, lo, hi int) (int, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	var ne *strconv.NumError
	if err != nil && !(errors.As(err, &ne) && ne.Err == strconv.ErrRange) {
		return 0, task.FieldErrorf(task.CodeInvalidArgument, name, "must be an integer")
	}
	// On ErrRange, n is math.MaxInt64 or math.MinInt64: clamped below.
	return int(min(max(n, int64(lo)), int64(hi))), nil
}

// opsAnswer is the document's response shape: the task, and its id and
// status again.
func opsAnswer(j *engine.OpsJob, existed bool) errandapi.OpsTaskResponse {
	t := opsWire(j)
	return errandapi.OpsTaskResponse{Task: t, AlreadyExisted: existed, ID: t.ID, Status: t.Status}
}

// opsWire renders a job; times in epoch seconds, as the document shows.
func opsWire(j *engine.OpsJob) errandapi.OpsTask {
	t := errandapi.OpsTask{
		ID: j.ID, Owner: j.Owner, Kind: j.Kind, Status: string(j.State), IdempotencyKey: j.IdempotencyKey,
		Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, CreatedAt: j.CreatedAt / 1000, RunAt: j.RunAt / 1000,
		FinishedAt: j.FinishedAt / 1000, LastError: j.LastError, Payload: j.Payload, Result: j.Result,
	}
	var pr struct {
		Progress *errandapi.OpsProgress `json:"progress"`
	}
	if len(j.Result) > 0 && json.Unmarshal(j.Result, &pr) == nil {
		t.Progress = pr.Progress
	}
	return t
}

func (s *Server) shortcut(w http.ResponseWriter, r *http.Request, p *auth.Principal, kind string, payload func(json.RawMessage) json.RawMessage) {
	var b errandapi.OpsShortcut
	if err := decodeBody(r, &b); err != nil {
		s.writeOpsError(w, r, err)
		return
	}
	if b.IdempotencyKey == "" {
		b.IdempotencyKey = "call-" + id.Secret(16)
	}
	s.submitJob(w, r, p, errandapi.OpsSubmit{Kind: kind, Payload: payload(b.Payload), IdempotencyKey: b.IdempotencyKey, MaxAttempts: b.MaxAttempts})
}

func same(raw json.RawMessage) json.RawMessage { return raw }

func (s *Server) opsDLQPurge(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	s.shortcut(w, r, p, task.KindDLQPurge, same)
}

func (s *Server) opsBackupExport(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	s.shortcut(w, r, p, task.KindBackupExport, same)
}

func (s *Server) opsInstanceBackup(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	if name := r.PathValue("id"); task.ValidateQueueName(name, "instance") != nil {
		// A name no instance can have: NOT_FOUND, as the v1 routes answer it.
		s.writeOpsError(w, r, task.InstanceNotFound(name))
		return
	}
	s.shortcut(w, r, p, task.KindInstanceBackup, func(json.RawMessage) json.RawMessage {
		raw, _ := json.Marshal(map[string]string{"instance": r.PathValue("id")})
		return raw
	})
}
