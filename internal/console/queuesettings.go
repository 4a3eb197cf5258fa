package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/errandhq/errand/errandapi"
)

// updateQueue changes a queue's settings from the queue page's settings
// form (full grant): every field is sent, an empty optional one as null
// (no limit, no target, no dead-letter queue). The API validates them and
// names the field it refuses.
func (c *Console) updateQueue(w http.ResponseWriter, r *http.Request, s *session) {
	inst, name := r.PathValue("instance"), r.PathValue("queue")
	req, bad := queuePatchOf(r)
	if bad != nil {
		c.showQueue(w, r, s, bad, nil)
		return
	}
	if _, err := s.cl.UpdateQueue(r.Context(), inst, name, req); err != nil {
		c.showQueue(w, r, s, apiError(err), nil)
		return
	}
	http.Redirect(w, r, queueURL(inst, name), http.StatusSeeOther)
}

// queuePatchOf reads the settings form. Only a number that does not parse
// is refused here, naming its field as the API would.
func queuePatchOf(r *http.Request) (errandapi.QueueRequest, *errandapi.Error) {
	f := r.PostForm
	var req errandapi.QueueRequest
	var bad *errandapi.Error
	field := func(name string) string { return strings.TrimSpace(f.Get(name)) }
	num := func(name string) (float64, bool) {
		v, err := strconv.ParseFloat(field(name), 64)
		if err != nil && bad == nil {
			bad = &errandapi.Error{Code: errandapi.CodeInvalidArgument, Status: http.StatusBadRequest, Message: name + ": must be a number"}
		}
		return v, err == nil
	}
	integer := func(name string) *int {
		if v, ok := num(name); ok {
			n := int(v)
			if float64(n) != v {
				bad = &errandapi.Error{Code: errandapi.CodeInvalidArgument, Status: http.StatusBadRequest, Message: name + ": must be a whole number"}
			}
			return &n
		}
		return nil
	}
	if t := formTarget(f.Get("targetKind"), f.Get("target")); t != nil {
		req.Target = errandapi.Value(*t)
	} else {
		req.Target = errandapi.Null[errandapi.Target]()
	}
	if field("ratePerSecond") == "" {
		req.RatePerSecond = errandapi.Null[float64]()
	} else if v, ok := num("ratePerSecond"); ok {
		req.RatePerSecond = errandapi.Value(v)
	}
	if field("maxConcurrent") == "" {
		req.MaxConcurrent = errandapi.Null[int]()
	} else if n := integer("maxConcurrent"); n != nil {
		req.MaxConcurrent = errandapi.Value(*n)
	}
	if field("maxAgeSeconds") == "" {
		req.MaxAgeSeconds = errandapi.Null[int64]()
	} else if n := integer("maxAgeSeconds"); n != nil {
		req.MaxAgeSeconds = errandapi.Value(int64(*n))
	}
	if v := field("deadLetterQueue"); v == "" {
		req.DeadLetterQueue = errandapi.Null[string]()
	} else {
		req.DeadLetterQueue = errandapi.Value(v)
	}
	req.MaxAttempts = integer("maxAttempts")
	req.MaxDoublings = integer("maxDoublings")
	req.DeadlineSeconds = integer("deadlineSeconds")
	if v, ok := num("minBackoffSeconds"); ok {
		req.MinBackoffSeconds = &v
	}
	if v, ok := num("maxBackoffSeconds"); ok {
		req.MaxBackoffSeconds = &v
	}
	tc := f.Get("targetControl") == "true"
	req.TargetControl = &tc
	return req, bad
}
