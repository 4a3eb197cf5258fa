package console

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/errandhq/errand/errandapi"
)

// formValues is what a form sent in fields, kept to show the form again
// with a refusal.
func formValues(f url.Values, fields ...string) map[string]string {
	out := make(map[string]string, len(fields))
	for _, k := range fields {
		out[k] = f.Get(k)
	}
	return out
}

// wasField is the hidden field of a settings form that holds the values
// the page showed, so that a save sends only the fields the user changed:
// a setting changed meanwhile elsewhere (another tab, the API) is kept
// rather than put back to what this page showed.
const wasField = "was"

// withWas adds to f, a settings form's values as stored, wasField: f
// itself, URL-encoded.
func withWas(f map[string]string) map[string]string {
	v := url.Values{}
	for k, x := range f {
		v.Set(k, x)
	}
	f[wasField] = v.Encode()
	return f
}

// changedFrom returns whether a field of a posted settings form differs
// from what the page showed (was, wasField's value). A form without was
// (or with one that does not parse) counts every field as changed.
func changedFrom(was string) func(field, value string) bool {
	shown, err := url.ParseQuery(was)
	if was == "" || err != nil {
		return func(string, string) bool { return true }
	}
	return func(field, value string) bool { return strings.TrimSpace(value) != strings.TrimSpace(shown.Get(field)) }
}

// badField is the refusal of a form field's text, worded as the API names
// a field it refuses.
func badField(field, msg string) *errandapi.Error {
	return &errandapi.Error{Code: errandapi.CodeInvalidArgument, Status: http.StatusBadRequest, Message: field + ": " + msg}
}

// parseNumber reads a form's number field. Only text that is not a finite
// number is refused here (NaN and Inf cannot travel as JSON); every bound
// is the API's.
func parseNumber(field, text string) (float64, *errandapi.Error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	switch {
	case errors.Is(err, strconv.ErrRange) || math.IsInf(v, 0):
		return 0, badField(field, "is out of range")
	case err != nil || math.IsNaN(v):
		return 0, badField(field, "must be a number")
	}
	return v, nil
}

// parseWhole reads a form's whole-number field: digits, or a number
// written otherwise ("1e3") that is whole and fits an int. A fraction, a
// number too large for an int, or text that is no number is refused here,
// naming the field; every bound is the API's.
func parseWhole(field, text string) (int, *errandapi.Error) {
	text = strings.TrimSpace(text)
	n, err := strconv.Atoi(text)
	if err == nil {
		return n, nil
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, badField(field, "is out of range")
	}
	v, bad := parseNumber(field, text)
	switch {
	case bad != nil:
		return 0, bad
	case v != math.Trunc(v):
		return 0, badField(field, "must be a whole number")
	case v < math.MinInt || v >= -math.MinInt:
		return 0, badField(field, "is out of range")
	}
	return int(v), nil
}

// parseOptionalWhole is parseWhole of a field that may be left empty: nil
// for empty text (the API's default then holds).
func parseOptionalWhole(field, text string) (*int, *errandapi.Error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	n, err := parseWhole(field, text)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// fmtNumber writes a number into a form field as it reads back
// ("1.5", "1000000").
func fmtNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// formTarget is the target the forms name: a kind and a value ("" none).
func formTarget(kind, value string) *errandapi.Target {
	value = strings.TrimSpace(value)
	if value == "" {
		return nil
	}
	switch kind {
	case "function":
		return &errandapi.Target{Function: value}
	case "channel":
		return &errandapi.Target{Channel: value}
	}
	return &errandapi.Target{Webhook: value}
}

// formHeaders reads a form's webhook headers, one "Name: value" a line
// (blank lines skipped); a line without a colon is refused naming
// target.headers, as the API names the field. The API checks the rest.
func formHeaders(text string) (map[string]string, *errandapi.Error) {
	var h map[string]string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, badField("target.headers", "each line must be Name: value")
		}
		if h == nil {
			h = map[string]string{}
		}
		h[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return h, nil
}

// targetForm is a target as the forms' two fields, kind and value.
func targetForm(t *errandapi.Target) (kind, value string) {
	switch {
	case t == nil:
		return "webhook", ""
	case t.Function != "":
		return "function", t.Function
	case t.Channel != "":
		return "channel", t.Channel
	}
	return "webhook", t.Webhook
}
