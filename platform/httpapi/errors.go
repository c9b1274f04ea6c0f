package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/tidemark/tidemark/platform/fault"
)

// MethodNotAllowed is what the router answers for a known path with another method; handlers have no
// use for it, it exists so that 405 too goes through the one table.
const MethodNotAllowed fault.Code = "method_not_allowed"

// statusClientClosedRequest is nginx's convention, also used by Prometheus, for a client that went away
// before the answer: it keeps those requests out of the 5xx rate without pretending they succeeded.
const statusClientClosedRequest = 499

// RetryAfterSeconds is the Retry-After of a 503: about how long Postgres takes to come back from a
// restart or a failover, and what the ingest's own retries wait.
const RetryAfterSeconds = 5

// StatusOf maps a fault.Code to its HTTP status. It is the one table of the codebase; an unknown code is
// a programming error and answers 500.
func StatusOf(code fault.Code) int {
	switch code {
	case fault.Invalid:
		return http.StatusBadRequest
	case fault.Unauthorized:
		return http.StatusUnauthorized
	case fault.Forbidden:
		return http.StatusForbidden
	case fault.NotFound:
		return http.StatusNotFound
	case fault.Conflict:
		return http.StatusConflict
	case fault.Unavailable:
		return http.StatusServiceUnavailable
	case MethodNotAllowed:
		return http.StatusMethodNotAllowed
	default:
		return http.StatusInternalServerError
	}
}

// errorBody is the envelope of every error answer. Error is set on 401s only ("Unauthorized"), as the
// protocol's existing API answers them, so that clients of it recognise a refused signature.
type errorBody struct {
	Success bool   `json:"success"`
	Error   string `json:"error,omitempty"`
	Message string `json:"message"`
}

// ErrorMessage reads the message of an error answer written by WriteError (one service calling
// another's internal endpoint); ok is false when body is no such envelope.
func ErrorMessage(body []byte) (msg string, ok bool) {
	var e errorBody
	if json.Unmarshal(body, &e) != nil || e.Success || e.Message == "" {
		return "", false
	}
	return e.Message, true
}

// WriteError answers err as `{"success":false,"message":...}` with the status of its fault.Code and
// Cache-Control no-store, outside an API (an API's routes answer through the same rules, and also
// recognise an unreachable database, see Options.Unavailable). Client errors are answered, never logged
// as errors; internal errors are logged here, once, and answered "internal error" so no internal detail
// leaks. A request whose client went away is logged at Info and gets status 499. logger may be nil.
func WriteError(w http.ResponseWriter, r *http.Request, err error, logger *slog.Logger) {
	if logger == nil {
		logger = discardLogger()
	}
	writeError(w, r, err, fault.CodeOf(err), logger)
}

// writeError answers err as code.
func writeError(w http.ResponseWriter, r *http.Request, err error, code fault.Code, logger *slog.Logger) {
	status := StatusOf(code)
	msg := "internal error"
	switch {
	case code == fault.Internal && errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		status = statusClientClosedRequest
		msg = "request canceled"
		logger.LogAttrs(r.Context(), slog.LevelInfo, "request canceled by client",
			slog.String("route", routeOf(r)), slog.String("path", r.URL.Path))
	case code == fault.Internal:
		logger.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("method", r.Method), slog.String("route", routeOf(r)),
			slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	case code == fault.Unavailable:
		msg = cmp.Or(fault.MessageOf(err), "service unavailable, retry later")
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
	default:
		msg = fault.MessageOf(err)
	}
	body := errorBody{Success: false, Message: msg}
	if status == http.StatusUnauthorized {
		body.Error = "Unauthorized"
	}
	h := w.Header()
	h.Del("Content-Disposition")
	h.Set("Cache-Control", "no-store")
	var extra ErrorFields
	if code != fault.Internal && errors.As(err, &extra) {
		writeJSON(w, status, withFields(body, extra.ErrorFields()))
		return
	}
	writeJSON(w, status, body)
}

// ErrorFields is an error whose answer carries properties beside success and message: the /tx
// routes answer a program's error with its code, name and a hint, as the protocol's API does. They
// cannot replace success or message.
type ErrorFields interface {
	error
	ErrorFields() map[string]any
}

// withFields is body with fields added (JSON object keys then come in name order).
func withFields(body errorBody, fields map[string]any) any {
	out := make(map[string]any, len(fields)+3)
	for k, v := range fields {
		out[k] = v
	}
	out["success"], out["message"] = body.Success, body.Message
	if body.Error != "" {
		out["error"] = body.Error
	}
	return out
}

// bareFailureBody is the answer of a server failure on a route with BareServerFailures.
const bareFailureBody = `{"success":false}` + "\n"

// writeBareFailure answers a server failure (code maps to 5xx) as 500 {"success":false}, logging it
// as writeError would: internal errors once each, a client that went away at Info (status 499).
func writeBareFailure(w http.ResponseWriter, r *http.Request, err error, code fault.Code, logger *slog.Logger) {
	status := http.StatusInternalServerError
	switch {
	case code == fault.Internal && errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		status = statusClientClosedRequest
		logger.LogAttrs(r.Context(), slog.LevelInfo, "request canceled by client",
			slog.String("route", routeOf(r)), slog.String("path", r.URL.Path))
	case code != fault.Unavailable: // an outage is logged by the API, once
		logger.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("method", r.Method), slog.String("route", routeOf(r)),
			slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	}
	h := w.Header()
	h.Del("Content-Disposition")
	h.Set("Cache-Control", "no-store")
	_ = writeBody(w, status, []byte(bareFailureBody))
}
