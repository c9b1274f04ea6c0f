// Package notify is the Notifications tag, the mesh's only authenticated group: a wallet's feed of
// notifications generated from the protocol's events (fills, liquidations, deposits and withdrawals,
// settled P&L, large funding payments), its push preferences and its registered devices.
//
// This package holds the domain: the notification object and its vocabulary, the rules of a signed
// request (auth.go), and how an event becomes a notification (occurrence.go, render.go). postgres/
// stores the schema and writes the ingest sinks, http/ serves the routes, service/ declares the
// service to the kit.
package notify

import (
	"context"
	"encoding/json"
	"slices"
)

// Notification types, as the protocol's existing API names them. The protocol's events give
// RECORD_UPDATE (a fill, a deposit, a settlement, a funding payment) and ACCOUNT_UPDATE (a
// liquidation); the others are accepted in preferences, for notifications other producers may add.
const (
	TypePriceAlert    = "PRICE_ALERT"
	TypeRecordUpdate  = "RECORD_UPDATE"
	TypeAccountUpdate = "ACCOUNT_UPDATE"
	TypeTest          = "TEST"
	TypeNewMarket     = "NEW_MARKET"
	TypeProductUpdate = "PRODUCT_UPDATE"
	TypeAnnouncement  = "ANNOUNCEMENT"
	TypeReduceOnly    = "REDUCE_ONLY"
	TypeCustom        = "CUSTOM"
)

// Types lists every notification type.
func Types() []string {
	return []string{TypePriceAlert, TypeRecordUpdate, TypeAccountUpdate, TypeTest, TypeNewMarket,
		TypeProductUpdate, TypeAnnouncement, TypeReduceOnly, TypeCustom}
}

// ValidType reports whether t is a notification type.
func ValidType(t string) bool { return slices.Contains(Types(), t) }

// Statuses of a notification. Notifications of the protocol's events are delivered on the app
// channel (the feed and the WebSocket edge) as they are stored, so they are SENT from the start and
// READ once the wallet marks them; PENDING and FAILED belong to delivery that can wait or fail.
const (
	StatusPending = "PENDING"
	StatusSent    = "SENT"
	StatusFailed  = "FAILED"
	StatusRead    = "READ"
)

// Statuses lists every status.
func Statuses() []string { return []string{StatusPending, StatusSent, StatusFailed, StatusRead} }

// Delivery channels.
const (
	ChannelApp  = "app"
	ChannelPush = "push"
)

// Push delivery states of a notification, kept beside it: queued for a push provider (none is
// reachable from here), or skipped because the wallet opted out of its type or has no device.
const (
	PushQueued  = "queued"
	PushSkipped = "skipped"
)

// Channels are the channels a notification goes out on: the app always, push unless skipped.
func Channels(push string) []string {
	if push == PushQueued {
		return []string{ChannelApp, ChannelPush}
	}
	return []string{ChannelApp}
}

// Action is a link a client shows with a notification.
type Action struct {
	Label string `json:"label"`
	Link  string `json:"link"`
}

// Notification is the notification object of the spec's Events part, as the feed serves it and as
// edge.notifications carries it. Times are unix seconds: CreatedAt is when the event happened,
// SentAt when the notification was delivered on the app channel.
type Notification struct {
	ID        string          `json:"notificationId"`
	Authority string          `json:"authorityId"`
	Title     string          `json:"title"`
	Body      string          `json:"body"`
	Type      string          `json:"type"`
	Status    string          `json:"status"`
	Channels  []string        `json:"channels"`
	Data      json.RawMessage `json:"data"`
	Actions   []Action        `json:"actions"`
	SentAt    int64           `json:"sentAt"`
	CreatedAt int64           `json:"createdAt"`
}

// Preferences are a wallet's delivery preferences: the types it gets no push for.
type Preferences struct {
	PushOptOutTypes []string `json:"pushOptOutTypes"`
}

// Device platforms.
const (
	PlatformIOS     = "ios"
	PlatformAndroid = "android"
	PlatformWeb     = "web"
)

// Device is a registered device as its wallet reads it back. The push token is kept for delivery
// and never answered: it is a credential of the device.
type Device struct {
	DeviceID  string  `json:"deviceId"`
	Platform  *string `json:"platform"`
	CreatedAt int64   `json:"createdAt"`
	UpdatedAt int64   `json:"updatedAt"`
}

// Registration is a device as a wallet registers it.
type Registration struct {
	DeviceID string  `json:"deviceId"`
	Token    string  `json:"token"`
	Platform *string `json:"platform,omitempty"`
}

// Limits of what a wallet keeps.
const (
	MaxDevices     = 20   // devices per wallet
	MaxDeviceIDLen = 128  // bytes of a device id
	MaxTokenLen    = 4096 // bytes of a push token (APNs and FCM tokens are far below)
	PageSize       = 20   // notifications per feed page
)

// FeedCursor is the place of the last notification of a feed page.
type FeedCursor struct {
	CreatedAt int64  `json:"c"`
	ID        string `json:"i"`
}

// Store is what the routes read and change, always for one authority: nothing in it reaches
// another wallet's rows. Errors are fault errors (NotFound for a notification or device the
// authority does not have, Conflict past MaxDevices).
type Store interface {
	// Feed calls each for up to limit notifications of authority with status, newest first
	// (createdAt, then notificationId), after the cursor when there is one. record is the object as
	// the feed serves it (notify.Encode of the Notification), lent for the call only: a page is
	// written from the rows as they are read. An error of each ends the feed with it.
	Feed(ctx context.Context, authority, status string, after *FeedCursor, limit int,
		each func(place FeedCursor, record []byte) error) error
	// MarkRead marks authority's notification id READ (at now, unix seconds) and returns it.
	MarkRead(ctx context.Context, authority, id string, now int64) (Notification, error)
	Preferences(ctx context.Context, authority string) (Preferences, error)
	SetPreferences(ctx context.Context, authority string, p Preferences, now int64) error
	// RegisterDevice adds the device or, when authority has its id already, updates its token and
	// platform.
	RegisterDevice(ctx context.Context, authority string, r Registration, now int64) (Device, error)
	Devices(ctx context.Context, authority string) ([]Device, error)
	RemoveDevice(ctx context.Context, authority, deviceID string) error
}
