package rest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

type tableIdentifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

type listTablesResponse struct {
	Identifiers []tableIdentifier `json:"identifiers"`
}

// loadTableResponse is the spec's LoadTableResult.
type loadTableResponse struct {
	MetadataLocation string            `json:"metadata-location"`
	Metadata         json.RawMessage   `json:"metadata"`
	Config           map[string]string `json:"config"`
}

// listTables answers GET /v1/namespaces/NS/tables, in one page.
func (h *Handler) listTables(ctx context.Context, w http.ResponseWriter, ns []string) {
	if !h.namespaceExists(ctx, w, ns) {
		return
	}
	out := listTablesResponse{Identifiers: []tableIdentifier{}}
	for id, err := range h.cat.ListTables(ctx, ns) {
		if err != nil {
			h.internalError(w, "list tables", err)
			return
		}
		if len(id) < 2 {
			continue
		}
		out.Identifiers = append(out.Identifiers, tableIdentifier{Namespace: id[:len(id)-1], Name: id[len(id)-1]})
	}
	writeJSON(w, http.StatusOK, out)
}

// listViews answers GET /v1/namespaces/NS/views: floe makes no views.
func (h *Handler) listViews(ctx context.Context, w http.ResponseWriter, ns []string) {
	if h.namespaceExists(ctx, w, ns) {
		writeJSON(w, http.StatusOK, listTablesResponse{Identifiers: []tableIdentifier{}})
	}
}

// namespaceExists answers 404 (or 500) and returns false unless ns
// exists.
func (h *Handler) namespaceExists(ctx context.Context, w http.ResponseWriter, ns []string) bool {
	ok, err := h.cat.CheckNamespaceExists(ctx, ns)
	switch {
	case err != nil:
		h.internalError(w, "namespace exists", err)
		return false
	case !ok:
		noSuchNamespace(w, ns)
		return false
	}
	return true
}

// table answers GET (load: metadata location and metadata) and HEAD
// (204: it exists) of /v1/namespaces/NS/tables/TABLE. The snapshots
// query parameter is accepted; every snapshot is sent.
func (h *Handler) table(ctx context.Context, w http.ResponseWriter, r *http.Request, ns []string, name string) {
	ident := append(table.Identifier{}, ns...)
	ident = append(ident, name)
	tbl, err := h.cat.LoadTable(ctx, ident)
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable), errors.Is(err, catalog.ErrNoSuchNamespace):
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		writeError(w, http.StatusNotFound, "NoSuchTableException", "table does not exist: "+strings.Join(ident, "."))
		return
	case err != nil:
		h.internalError(w, "load table", err)
		return
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	md, err := json.Marshal(tbl.Metadata())
	if err != nil {
		h.internalError(w, "encode table metadata", err)
		return
	}
	cfg := map[string]string{}
	for k, v := range h.cfg.TableConfig {
		cfg[k] = v
	}
	writeJSON(w, http.StatusOK, loadTableResponse{MetadataLocation: tbl.MetadataLocation(), Metadata: md, Config: cfg})
}
