package httpapi

import (
	"net/http"

	"github.com/errandhq/errand/internal/auth"
)

// opsBundle streams the bundle of a SUCCEEDED backup.export job (GET
// /api/tasks/{id}/bundle), part by part: the node holds one part at a time.
// A refusal found before the first byte is an error answer; a failure after
// it aborts the connection, so a client never takes a cut bundle for a
// whole one (and the job's sha256 says so too).
func (s *Server) opsBundle(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	job := s.opsJob(w, r, p)
	if job == nil {
		return
	}
	lw := &lazyJSON{w: w}
	if err := s.eng.ReadBundle(r.Context(), p.Org, job.ID, lw); err != nil {
		if !lw.started {
			s.writeOpsError(w, r, err)
			return
		}
		panic(http.ErrAbortHandler)
	}
	if !lw.started {
		lw.start()
	}
}

// lazyJSON answers 200 application/json on its first write.
type lazyJSON struct {
	w       http.ResponseWriter
	started bool
}

func (l *lazyJSON) start() {
	l.started = true
	l.w.Header().Set("Content-Type", "application/json")
	l.w.WriteHeader(http.StatusOK)
}

func (l *lazyJSON) Write(p []byte) (int, error) {
	if !l.started {
		l.start()
	}
	return l.w.Write(p)
}
