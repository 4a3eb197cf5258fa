package console

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/errandhq/errand/errandapi"
)

// queueSettingsFields are the queue settings form's fields, shown again
// with a refusal.
var queueSettingsFields = []string{"targetKind", "target", "targetHeaders", "setHeaders", "ratePerSecond", "maxConcurrent", "maxAttempts", "minBackoffSeconds",
	"maxBackoffSeconds", "maxDoublings", "maxAgeSeconds", "deadlineSeconds", "deadLetterQueue", "targetControl", wasField}

// updateQueue changes a queue's settings from the queue page's settings
// form (full grant): the fields the user changed are sent (see wasField),
// an empty optional one as null (no limit, no target, no dead-letter
// queue). The API validates them and
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

// queueSettingsForm is a queue's settings as the settings form's fields,
// wasField included.
func queueSettingsForm(q *errandapi.Queue) map[string]string {
	f := map[string]string{"maxAttempts": strconv.Itoa(q.MaxAttempts), "minBackoffSeconds": fmtNumber(q.MinBackoffSeconds),
		"maxBackoffSeconds": fmtNumber(q.MaxBackoffSeconds), "maxDoublings": strconv.Itoa(q.MaxDoublings),
		"deadlineSeconds": strconv.Itoa(q.DeadlineSeconds)}
	if q.Mode == errandapi.ModePush { // a pull queue's form has no target
		f["targetKind"], f["target"] = targetForm(q.Target)
		if q.Target != nil && q.Target.Webhook != "" {
			// The headers' names, so that a changed URL keeps them.
			f["targetHeaders"] = strings.Join(slices.Sorted(maps.Keys(q.Target.Headers)), ",")
		}
	}
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
	return withWas(f)
}

// queuePatchOf reads the settings form's changed fields. Only a number
// that does not parse is refused here, naming its field as the API would.
func queuePatchOf(r *http.Request) (errandapi.QueueRequest, *errandapi.Error) {
	f := r.PostForm
	var req errandapi.QueueRequest
	var bad *errandapi.Error
	field := func(name string) string { return strings.TrimSpace(f.Get(name)) }
	changedFromShown := changedFrom(f.Get(wasField))
	changed := func(name string) bool { return changedFromShown(name, f.Get(name)) }
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
	setHeaders := field("setHeaders")
	switch t := formTarget(f.Get("targetKind"), f.Get("target")); {
	case !changed("targetKind") && !changed("target") && setHeaders == "":
	case t != nil && setHeaders != "":
		// New headers replace the target's ("(hidden)" keeps one).
		h, hbad := formHeaders(setHeaders)
		bad = firstErr(bad, hbad)
		t.Headers = h
		req.Target = errandapi.Value(*t)
	case setHeaders != "":
		bad = firstErr(bad, badField("target.headers", "give the webhook URL they are sent to"))
	case t != nil:
		if names := field("targetHeaders"); t.Webhook != "" && names != "" {
			// The form shows no header values: "(hidden)" keeps each one
			// toward the same host, and the API names one it cannot keep.
			t.Headers = map[string]string{}
			for _, n := range strings.Split(names, ",") {
				t.Headers[n] = errandapi.HiddenHeaderValue
			}
		}
		req.Target = errandapi.Value(*t)
	default:
		req.Target = errandapi.Null[errandapi.Target]()
	}
	switch {
	case !changed("ratePerSecond"):
	case field("ratePerSecond") == "":
		req.RatePerSecond = errandapi.Null[float64]()
	default:
		if v := num("ratePerSecond"); v != nil {
			req.RatePerSecond = errandapi.Value(*v)
		}
	}
	switch {
	case !changed("maxConcurrent"):
	case field("maxConcurrent") == "":
		req.MaxConcurrent = errandapi.Null[int]()
	default:
		if n := integer("maxConcurrent"); n != nil {
			req.MaxConcurrent = errandapi.Value(*n)
		}
	}
	switch {
	case !changed("maxAgeSeconds"):
	case field("maxAgeSeconds") == "":
		req.MaxAgeSeconds = errandapi.Null[int64]()
	default:
		if n := integer("maxAgeSeconds"); n != nil {
			req.MaxAgeSeconds = errandapi.Value(int64(*n))
		}
	}
	switch v := field("deadLetterQueue"); {
	case !changed("deadLetterQueue"):
	case v == "":
		req.DeadLetterQueue = errandapi.Null[string]()
	default:
		req.DeadLetterQueue = errandapi.Value(v)
	}
	// In a fixed order, so that a refusal names the same field each time.
	for _, w := range []struct {
		name string
		dst  **int
	}{{"maxAttempts", &req.MaxAttempts}, {"maxDoublings", &req.MaxDoublings}, {"deadlineSeconds", &req.DeadlineSeconds}} {
		if changed(w.name) {
			*w.dst = integer(w.name)
		}
	}
	for _, w := range []struct {
		name string
		dst  **float64
	}{{"minBackoffSeconds", &req.MinBackoffSeconds}, {"maxBackoffSeconds", &req.MaxBackoffSeconds}} {
		if changed(w.name) {
			*w.dst = num(w.name)
		}
	}
	if changed("targetControl") {
		tc := f.Get("targetControl") == "true"
		req.TargetControl = &tc
	}
	return req, bad
}

// firstErr keeps the first refusal of a form.
func firstErr(first, next *errandapi.Error) *errandapi.Error {
	if first != nil {
		return first
	}
	return next
}
