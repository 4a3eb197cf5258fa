package httpapi

import (
	_ "embed"
	"net/http"
)

// OpenAPIPath is where the server serves its OpenAPI description.
const OpenAPIPath = "/v1/openapi.json"

// OpenAPI is the OpenAPI 3.1 description of the v1 and operations APIs,
// served at OpenAPIPath. Tests hold it to the router (every route is in it
// and every operation in it is routed) and to the server's real answers.
//
//go:embed openapi.json
var OpenAPI []byte

// serveOpenAPI answers the document. It needs no key: it describes the
// API, it holds nothing of anyone's.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(OpenAPI)
}
