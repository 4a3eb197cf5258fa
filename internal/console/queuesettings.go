package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/errandhq/errand/errandapi"
)

// queueSettingsFields are the queue settings form's fields, shown again
// with a refusal.
var queueSettingsFields = []string{"targetKind", "target", "ratePerSecond", "maxConcurrent", "maxAttempts", "minBackoffSeconds",
	"maxBackoffSeconds", "maxDoublings", "maxAgeSeconds", "deadlineSeconds", "deadLetterQueue", "targetControl"}

// updateQueue changes a queue's settings from the queue page's settings
// form (full grant): every field is sent, an empty optional one as null
// (no limit, no target, no dead-letter queue). The API validates them and
// names the field it refuses; a refusal shows the form as sent.
func (c *Console) updateQueue(w http.ResponseWriter, r *http.Request, s *session) {
	inst, name := r.PathValue("instance"), r.PathValue("queue")
	sent := formValues(r.PostForm, queueSettingsFields...)
	req, bad := queuePatchOf(r)
	if bad != nil {
		c.showQueue(w, r, s, bad, nil, sent)
		return
	}
	if _, err := s.cl.UpdateQueue(r.Context(), inst, name, req); err != nil {
		c.showQueue(w, r, s, apiError(err), nil, sent)
		return
	}
	http.Redirect(w, r, doneURL(queueURL(inst, name), "saved", -1), http.StatusSeeOther)
}

// queueSettingsForm is a queue's settings as the settings form's fields.
func queueSettingsForm(q *errandapi.Queue) map[string]string {
	kind, target := targetForm(q.Target)
	f := map[string]string{"targetKind": kind, "target": target,
		"maxAttempts": strconv.Itoa(q.MaxAttempts), "minBackoffSeconds": fmtNumber(q.MinBackoffSeconds),
		"maxBackoffSeconds": fmtNumber(q.MaxBackoffSeconds), "maxDoublings": strconv.Itoa(q.MaxDoublings),
		"deadlineSeconds": strconv.Itoa(q.DeadlineSeconds)}
	if q.RatePerSecond != nil {
		f["ratePerSecond"] = fmtNumber(*q.RatePerSecond)
	}
	if q.MaxConcurrent != nil {
		f["maxConcurrent"] = strconv.Itoa(*q.MaxConcurrent)
	}
	if q.MaxAgeSeconds != nil {
		f["maxAgeSeconds"] = strconv.FormatInt(*q.MaxAgeSeconds, 10)
	}
	if q.DeadLetterQueue != nil {
		f["deadLetterQueue"] = *q.DeadLetterQueue
	}
	if q.TargetControl {
		f["targetControl"] = "true"
	}
	return f
}

// queuePatchOf reads the settings form. Only a number that does not parse
// is refused here, naming its field as the API would.
func queuePatchOf(r *http.Request) (errandapi.QueueRequest, *errandapi.Error) {
	f := r.PostForm
	var req errandapi.QueueRequest
	var bad *errandapi.Error
	field := func(name string) string { return strings.TrimSpace(f.Get(name)) }
	num := func(name string) *float64 {
		v, err := parseNumber(name, field(name))
		if err != nil {
			bad = firstErr(bad, err)
			return nil
		}
		return &v
	}
	integer := func(name string) *int {
		n, err := parseWhole(name, field(name))
		if err != nil {
			bad = firstErr(bad, err)
			return nil
		}
		return &n
	}
	if t := formTarget(f.Get("targetKind"), f.Get("target")); t != nil {
		req.Target = errandapi.Value(*t)
	} else {
		req.Target = errandapi.Null[errandapi.Target]()
	}
	if field("ratePerSecond") == "" {
		req.RatePerSecond = errandapi.Null[float64]()
	} else if v := num("ratePerSecond"); v != nil {
		req.RatePerSecond = errandapi.Value(*v)
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
	req.MinBackoffSeconds = num("minBackoffSeconds")
	req.MaxBackoffSeconds = num("maxBackoffSeconds")
	tc := f.Get("targetControl") == "true"
	req.TargetControl = &tc
	return req, bad
}

// firstErr keeps the first refusal of a form.
func firstErr(first, next *errandapi.Error) *errandapi.Error {
	if first != nil {
		return first
	}
	return next
}
