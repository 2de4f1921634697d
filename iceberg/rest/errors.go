package rest

import (
	"encoding/json"
	"net/http"
)

// errorModel is the spec's IcebergErrorResponse: {"error": ErrorModel}.
type errorModel struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// writeError answers code with the spec's error body; a HEAD gets the
// status alone.
func writeError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, errorModel{Error: errorBody{Message: msg, Type: typ, Code: code}})
}

// internalError answers a failure of the catalog with 500; the cause is
// logged, not sent.
func (h *Handler) internalError(w http.ResponseWriter, what string, err error) {
	h.log.Warn("iceberg rest: catalog failure", "what", what, "err", err)
	writeError(w, http.StatusInternalServerError, "InternalServerError", what+": the catalog failed")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encode answer","type":"InternalServerError","code":500}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
