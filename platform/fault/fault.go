// Package fault is the one error type of tidemark's services: an error with a Code that says whose
// fault it is (the client's input, a missing resource, an unavailable dependency) and a message meant
// for the client. Stores, sinks and handlers return them without knowing about HTTP; httpapi maps each
// Code to a status in one table.
package fault

import (
	"errors"
	"fmt"
)

// Code classifies an error for the client.
type Code string

// The codes of every tidemark API.
const (
	Invalid      Code = "invalid"      // bad input: a path or query value, a body
	NotFound     Code = "not_found"    // no such resource (an unknown market, an order the account lacks)
	Unauthorized Code = "unauthorized" // missing or bad credentials
	Forbidden    Code = "forbidden"    // credentials that do not allow the request
	Conflict     Code = "conflict"     // the request contradicts the resource's state
	Unavailable  Code = "unavailable"  // a dependency (Postgres) cannot be reached: retry later
	Internal     Code = "internal"     // a server fault; its text is logged, never shown
)

// Error is an error with a message meant for the client. Any error that is not (and does not wrap)
// an *Error is internal.
type Error struct {
	Code    Code
	Message string
	Err     error // the cause, for logs and errors.Is; never shown to the client
}

// Error returns the client message, so wrapping with %w keeps it readable in logs.
func (e *Error) Error() string {
	if e.Err != nil && e.Code == Unavailable {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted client message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap marks err with code and a client message, keeping err as the cause.
func Wrap(code Code, err error, message string) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// CodeOf returns the Code of the first *Error in err's chain, Internal when there is none and "" for
// nil.
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

// MessageOf returns the client message of the first *Error in err's chain, "" when there is none.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return ""
}
