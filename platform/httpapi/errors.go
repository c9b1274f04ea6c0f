package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
)

// Code classifies an error for the client. It is the only thing that decides the HTTP status.
type Code string

// The error codes of every tidemark API.
const (
	Invalid      Code = "invalid"
	NotFound     Code = "not_found"
	Internal     Code = "internal"
	Unauthorized Code = "unauthorized"
	Forbidden    Code = "forbidden"
	Conflict     Code = "conflict"
	// MethodNotAllowed is what the router answers for a known path with another method; handlers have
	// no use for it, it exists so that 405 too goes through the one table.
	MethodNotAllowed Code = "method_not_allowed"
)

// statusClientClosedRequest is nginx's convention, also used by Prometheus, for a client that went away
// before the answer: it keeps those requests out of the 5xx rate without pretending they succeeded.
const statusClientClosedRequest = 499

// StatusOf maps a Code to its HTTP status. It is the one table of the codebase; an unknown code is a
// programming error and answers 500.
func StatusOf(code Code) int {
	switch code {
	case Invalid:
		return http.StatusBadRequest
	case Unauthorized:
		return http.StatusUnauthorized
	case Forbidden:
		return http.StatusForbidden
	case NotFound:
		return http.StatusNotFound
	case Conflict:
		return http.StatusConflict
	case MethodNotAllowed:
		return http.StatusMethodNotAllowed
	default:
		return http.StatusInternalServerError
	}
}

// Error is an error with a message meant for the client. Any error that is not (and does not wrap) an
// *Error is internal: its text is logged, never shown.
type Error struct {
	Code    Code
	Message string
}

// Error returns the client message, so wrapping with %w keeps it readable in logs.
func (e *Error) Error() string {
	return e.Message
}

// Errorf builds an *Error with a formatted client message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the Code of the first *Error in err's chain, Internal when there is none and "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// errorBody is the envelope of every error answer.
type errorBody struct {
	Success bool   `json:"success"`
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

// WriteError answers err as `{"success":false,"message":...}` with the status of its Code and
// Cache-Control no-store. Client errors are answered, never logged as errors; internal errors are logged
// here, once, with the route, and answered "internal error" so no internal detail leaks. A request whose
// client went away is logged at Info and gets status 499. logger may be nil (nothing is logged).
func WriteError(w http.ResponseWriter, r *http.Request, err error, logger *slog.Logger) {
	if logger == nil {
		logger = discardLogger()
	}
	code := CodeOf(err)
	status := StatusOf(code)
	msg := "internal error"
	var e *Error
	switch {
	case code == Internal && errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		status = statusClientClosedRequest
		msg = "request canceled"
		logger.LogAttrs(r.Context(), slog.LevelInfo, "request canceled by client",
			slog.String("route", routeOf(r)), slog.String("path", r.URL.Path))
	case code == Internal:
		logger.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("method", r.Method), slog.String("route", routeOf(r)),
			slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	case errors.As(err, &e):
		msg = e.Message
	}
	h := w.Header()
	h.Del("Content-Disposition")
	h.Set("Cache-Control", "no-store")
	writeJSON(w, status, errorBody{Success: false, Message: msg})
}
