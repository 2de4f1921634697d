package rest

import "net/http"

// configResponse is the spec's CatalogConfig.
type configResponse struct {
	Defaults  map[string]string `json:"defaults"`
	Overrides map[string]string `json:"overrides"`
	Endpoints []string          `json:"endpoints"`
}

// endpoints are those the handler serves, as the spec names them: a
// client calls no other (Iceberg's Java client checks this list).
var endpoints = []string{
	"GET /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}",
	"HEAD /v1/{prefix}/namespaces/{namespace}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"GET /v1/{prefix}/namespaces/{namespace}/views",
}

// config answers GET /v1/config. The warehouse query parameter is
// accepted and ignored: the catalog serves one warehouse.
func (h *Handler) config(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, configResponse{Defaults: map[string]string{}, Overrides: map[string]string{}, Endpoints: endpoints})
}
