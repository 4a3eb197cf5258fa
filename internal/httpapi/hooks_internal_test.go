package httpapi

import (
	"net/http/httptest"
	"slices"
	"testing"
)

// TestHookURLs: the URLs a hook call may have been made to — https and
// http, the Host and the first X-Forwarded-Host, with and without the
// scheme's default port, the path and query as received — each once.
func TestHookURLs(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/hooks/jobs/hk_1?bodySHA256=ab", nil)
	r.Host = "hooks.example.com:443"
	r.Header.Set("X-Forwarded-Host", "public.example, inner.example")
	got := hookURLs(r)()
	want := []string{
		"https://hooks.example.com:443/v1/hooks/jobs/hk_1?bodySHA256=ab",
		"https://hooks.example.com/v1/hooks/jobs/hk_1?bodySHA256=ab",
		"https://public.example/v1/hooks/jobs/hk_1?bodySHA256=ab",
		"https://public.example:443/v1/hooks/jobs/hk_1?bodySHA256=ab",
		"http://hooks.example.com:443/v1/hooks/jobs/hk_1?bodySHA256=ab",
		"http://public.example/v1/hooks/jobs/hk_1?bodySHA256=ab",
		"http://public.example:80/v1/hooks/jobs/hk_1?bodySHA256=ab",
	}
	if !slices.Equal(got, want) {
		t.Errorf("hookURLs =\n%q\nwant\n%q", got, want)
	}
	r = httptest.NewRequest("POST", "/v1/hooks/jobs/hk_1", nil)
	r.Host = "[::1]:80"
	if got := hookURLs(r)(); !slices.Contains(got, "http://[::1]/v1/hooks/jobs/hk_1") || !slices.Contains(got, "https://[::1]:80/v1/hooks/jobs/hk_1") {
		t.Errorf("an IPv6 Host: %q", got)
	}
	r.Host = "[::1]"
	if got := hookURLs(r)(); !slices.Contains(got, "https://[::1]:443/v1/hooks/jobs/hk_1") {
		t.Errorf("an IPv6 Host without a port: %q", got)
	}
}
