package task

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// TestTargetHeaders: a webhook target's headers are checked, named in
// canonical form, masked in answers, and a hidden value keeps the one the
// target had only toward the same scheme, host and port.
func TestTargetHeaders(t *testing.T) {
	rules := URLRules{}
	hook := func(url string, h map[string]string) *Target { return &Target{Webhook: url, Headers: h} }
	ok := hook("https://example.com/in", map[string]string{"authorization": "Bearer x", "x-api-key": "k 1\t2"})
	if err := ValidateTarget(ok, nil, "target", rules); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"Authorization": "Bearer x", "X-Api-Key": "k 1\t2"}; !reflect.DeepEqual(ok.Headers, want) {
		t.Errorf("headers %v, want %v", ok.Headers, want)
	}
	if m := ok.Masked(); m.Headers["Authorization"] != errandapi.HiddenHeaderValue || ok.Headers["Authorization"] != "Bearer x" {
		t.Errorf("Masked: %v (the target itself: %v)", m.Headers, ok.Headers)
	}
	many := map[string]string{}
	for i := range MaxTargetHeaders + 1 {
		many["X-H"+strings.Repeat("a", i)] = "v"
	}
	for _, c := range []struct {
		target *Target
		cur    *Target
		field  string
		says   string
	}{
		{&Target{Function: "app/f", Headers: map[string]string{"A": "b"}}, nil, "target.headers", "only a webhook target"},
		{hook("https://example.com", map[string]string{"Host": "x"}), nil, "target.headers.Host", "errand sets Host"},
		{hook("https://example.com", map[string]string{"user-agent": "x"}), nil, "target.headers.User-Agent", "errand sets"},
		{hook("https://example.com", map[string]string{"X-Errand-Signature": "x"}), nil, "target.headers.X-Errand-Signature", "errand sets"},
		{hook("https://example.com", map[string]string{"webhook-id": "x"}), nil, "target.headers.Webhook-Id", "errand sets"},
		{hook("https://example.com", map[string]string{"Proxy-Authorization": "x"}), nil, "target.headers.Proxy-Authorization", "for a proxy"},
		{hook("https://example.com", map[string]string{"x-a": "1", "X-A": "2"}), nil, "target.headers.X-A", "named twice"},
		{hook("https://example.com", map[string]string{"X A": "1"}), nil, "target.headers", "not a header name"},
		{hook("https://example.com", map[string]string{"X-A": "1\r\nX-B: 2"}), nil, "target.headers.X-A", "printable ASCII"},
		{hook("https://example.com", map[string]string{"X-A": ""}), nil, "target.headers.X-A", "printable ASCII"},
		{hook("https://example.com", map[string]string{"X-A": " 1"}), nil, "target.headers.X-A", "printable ASCII"},
		{hook("https://example.com", map[string]string{"X-A": "é"}), nil, "target.headers.X-A", "printable ASCII"},
		{hook("https://example.com", many), nil, "target.headers", "at most 20"},
		{hook("https://example.com", map[string]string{"X-A": strings.Repeat("v", MaxTargetHeaderBytes)}), nil, "target.headers", "8192 bytes"},
		{hook("https://example.com", map[string]string{"Authorization": errandapi.HiddenHeaderValue}), nil, "target.headers.Authorization", "it had no Authorization header"},
		{hook("https://evil.example/in", map[string]string{"Authorization": errandapi.HiddenHeaderValue}), ok, "target.headers.Authorization", "only toward the same scheme, host and port (https://example.com)"},
		{hook("http://example.com/in", map[string]string{"Authorization": errandapi.HiddenHeaderValue}), ok, "target.headers.Authorization", "same scheme, host and port"},
		{hook("https://example.com/in", map[string]string{"X-Other": errandapi.HiddenHeaderValue}), ok, "target.headers.X-Other", "it had no X-Other header"},
	} {
		err := ValidateTarget(c.target, c.cur, "target", URLRules{AllowHTTP: true})
		var fe *Error
		if !IsCode(err, CodeInvalidArgument) || !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v over %v: %v, want INVALID_ARGUMENT naming %s and saying %q", c.target, c.cur, err, c.field, c.says)
		}
	}
	// A hidden value toward the same origin keeps the value the target had.
	moved := hook("https://EXAMPLE.com/other?x=1", map[string]string{"authorization": errandapi.HiddenHeaderValue, "X-New": "n"})
	if err := ValidateTarget(moved, ok, "target", rules); err != nil || moved.Headers["Authorization"] != "Bearer x" || moved.Headers["X-New"] != "n" {
		t.Errorf("kept: %v %v", moved.Headers, err)
	}
	// DropHidden leaves out what cannot be kept, and names it.
	bundle := hook("https://example.com/in", map[string]string{"Authorization": errandapi.HiddenHeaderValue, "X-Api-Key": errandapi.HiddenHeaderValue, "X-Plain": "p"})
	if d, dropped := bundle.DropHidden(nil); !reflect.DeepEqual(dropped, []string{"Authorization", "X-Api-Key"}) || !reflect.DeepEqual(d.Headers, map[string]string{"X-Plain": "p"}) || len(bundle.Headers) != 3 {
		t.Errorf("DropHidden(nil): %v, %v", d.Headers, dropped)
	}
	if d, dropped := bundle.DropHidden(ok); dropped != nil || d != bundle {
		t.Errorf("DropHidden(cur): %v, %v; want all kept", d.Headers, dropped)
	}
	if d, dropped := hook("https://example.com/in", map[string]string{"X-Api-Key": errandapi.HiddenHeaderValue}).DropHidden(ok); dropped != nil || d.Headers == nil {
		t.Errorf("DropHidden of one kept header: %v, %v", d, dropped)
	}
}
