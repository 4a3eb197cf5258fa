package console

import "net/http"

// csp is the console's Content-Security-Policy: scripts, styles and
// images only from the console's own files (no inline script or style,
// no eval), forms and live streams only to itself, never framed.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secure sets the headers every console answer carries. Pages show
// payloads, results and keys, so none is stored by the browser or a proxy.
func secure(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}
