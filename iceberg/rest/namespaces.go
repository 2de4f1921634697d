package rest

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

type listNamespacesResponse struct {
	Namespaces [][]string `json:"namespaces"`
}

type namespaceResponse struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

// listNamespaces answers GET /v1/namespaces[?parent=A%1FB]: the
// namespaces below parent (the top level without one), in one page.
func (h *Handler) listNamespaces(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var parent table.Identifier
	if p := r.URL.Query().Get("parent"); p != "" {
		var err error
		if parent, err = parseNamespace(p); err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestException", "parent: "+err.Error())
			return
		}
		ok, err := h.cat.CheckNamespaceExists(ctx, parent)
		if err != nil {
			h.internalError(w, "list namespaces", err)
			return
		}
		if !ok {
			noSuchNamespace(w, parent)
			return
		}
	}
	nss, err := h.cat.ListNamespaces(ctx, parent)
	if err != nil && !errors.Is(err, catalog.ErrNoSuchNamespace) {
		h.internalError(w, "list namespaces", err)
		return
	}
	out := listNamespacesResponse{Namespaces: [][]string{}}
	for _, ns := range nss {
		// The catalog lists parent itself and deeper levels too: the
		// spec's answer is parent's children.
		if len(ns) == len(parent)+1 && slices.Equal(ns[:len(parent)], parent) {
			out.Namespaces = append(out.Namespaces, ns)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// namespace answers GET (its properties) and HEAD (204: it exists) of
// /v1/namespaces/NS.
func (h *Handler) namespace(ctx context.Context, w http.ResponseWriter, r *http.Request, ns []string) {
	if r.Method == http.MethodHead {
		ok, err := h.cat.CheckNamespaceExists(ctx, ns)
		switch {
		case err != nil:
			h.internalError(w, "namespace exists", err)
		case !ok:
			w.WriteHeader(http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
		return
	}
	props, err := h.cat.LoadNamespaceProperties(ctx, ns)
	switch {
	case errors.Is(err, catalog.ErrNoSuchNamespace):
		noSuchNamespace(w, ns)
		return
	case err != nil:
		h.internalError(w, "load namespace", err)
		return
	}
	out := namespaceResponse{Namespace: ns, Properties: map[string]string{}}
	for k, v := range props {
		out.Properties[k] = v
	}
	writeJSON(w, http.StatusOK, out)
}

func noSuchNamespace(w http.ResponseWriter, ns []string) {
	writeError(w, http.StatusNotFound, "NoSuchNamespaceException", "namespace does not exist: "+strings.Join(ns, "."))
}
