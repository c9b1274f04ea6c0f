// Package http serves the Notifications tag: the feed, marking a notification read, preferences and
// devices, every route behind the signed-request verifier and acting for the caller's wallet only.
package http

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/services/notify"
)

// maxBody is the largest request body a route reads.
const maxBody = 16 << 10

// Routes registers the group's routes on api, each authenticated by v.
func Routes(api *httpapi.API, store notify.Store, v *notify.Verifier) {
	h := handlers{api: api, store: store}
	opts := []httpapi.RouteOption{
		httpapi.Authenticate(notify.Challenge, v.Authenticate),
		httpapi.AllowHeaders(notify.HeaderWallet, notify.HeaderSignature, notify.HeaderMessage),
	}
	api.Handle(http.MethodGet, "/notifications", h.feed, opts...)
	api.Handle(http.MethodPut, "/notifications/{notificationId}/read", h.read, opts...)
	api.Handle(http.MethodGet, "/notifications/preferences", h.preferences, opts...)
	api.Handle(http.MethodPut, "/notifications/preferences", h.setPreferences, opts...)
	api.Handle(http.MethodGet, "/notifications/devices", h.devices, opts...)
	api.Handle(http.MethodPost, "/notifications/devices", h.register, opts...)
	api.Handle(http.MethodDelete, "/notifications/devices/{deviceId}", h.remove, opts...)
}

type handlers struct {
	api   *httpapi.API
	store notify.Store
}

// authority is the wallet the verified request acts for.
func authority(r *http.Request) (string, error) {
	c, ok := notify.CallerOf(r.Context())
	if !ok {
		return "", errors.New("notifications route reached without a verified caller")
	}
	return c.Authority, nil
}

func (h handlers) feed(r *http.Request) (any, error) {
	auth, err := authority(r)
	if err != nil {
		return nil, err
	}
	if vs, ok := r.URL.Query()["status"]; ok && (len(vs) == 0 || vs[0] == "") {
		return nil, fault.Errorf(fault.Invalid, "status must be one of %v", notify.Statuses())
	}
	status, err := httpapi.QueryEnum(r, "status", notify.StatusSent, notify.Statuses()...)
	if err != nil {
		return nil, err
	}
	// A token is bound to the wallet and the status it listed.
	scope := "notifications/" + auth + "/" + status
	after, err := httpapi.PageAfter[notify.FeedCursor](h.api, r, scope)
	if err != nil {
		return nil, err
	}
	if after != nil && !notify.ValidID(after.ID) {
		return nil, fault.Errorf(fault.Invalid, "Invalid page token")
	}
	// The page is written as its rows are read: the records as stored, byte for byte what
	// edge.notifications carried, concatenated.
	return httpapi.RollingFrom(h.api, scope, notify.PageSize, notify.PageSize*1024,
		func(ctx context.Context, each func(notify.FeedCursor, []byte) error) error {
			return h.store.Feed(ctx, auth, status, after, notify.PageSize+1, each)
		}), nil
}

// record is the answer of a route about one thing.
type record[T any] struct {
	Success bool `json:"success"`
	Record  T    `json:"record"`
}

func (h handlers) read(r *http.Request) (any, error) {
	auth, err := authority(r)
	if err != nil {
		return nil, err
	}
	id := httpapi.PathVar(r, "notificationId")
	if !notify.ValidID(id) {
		return nil, fault.Errorf(fault.Invalid, "notificationId must be a UUID in lower-case hex (8-4-4-4-12)")
	}
	n, err := h.store.MarkRead(r.Context(), auth, id, h.api.Now().Unix())
	if err != nil {
		return nil, err
	}
	return record[notify.Notification]{Success: true, Record: n}, nil
}

// preferencesAnswer is the answer of both preferences routes.
type preferencesAnswer struct {
	Success bool `json:"success"`
	notify.Preferences
}

func (h handlers) preferences(r *http.Request) (any, error) {
	auth, err := authority(r)
	if err != nil {
		return nil, err
	}
	p, err := h.store.Preferences(r.Context(), auth)
	if err != nil {
		return nil, err
	}
	return preferencesAnswer{Success: true, Preferences: p}, nil
}

func (h handlers) setPreferences(r *http.Request) (any, error) {
	auth, err := authority(r)
	if err != nil {
		return nil, err
	}
	var body struct {
		PushOptOutTypes *[]string `json:"pushOptOutTypes"`
	}
	if err := httpapi.DecodeJSON(r, maxBody, &body); err != nil {
		return nil, err
	}
	if body.PushOptOutTypes == nil {
		return nil, fault.Errorf(fault.Invalid, "pushOptOutTypes is required: an array of notification types ([] to opt out of none)")
	}
	types := []string{}
	for _, t := range *body.PushOptOutTypes {
		if !notify.ValidType(t) {
			return nil, fault.Errorf(fault.Invalid, "pushOptOutTypes: %q is not a notification type (one of %v)", t, notify.Types())
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	slices.Sort(types)
	p := notify.Preferences{PushOptOutTypes: types}
	if err := h.store.SetPreferences(r.Context(), auth, p, h.api.Now().Unix()); err != nil {
		return nil, err
	}
	return preferencesAnswer{Success: true, Preferences: p}, nil
}

// list is the answer of the device list.
type list[T any] struct {
	Success bool `json:"success"`
	Records []T  `json:"records"`
}

func (h handlers) devices(r *http.Request) (any, error) {
	auth, err := authority(r)
	if err != nil {
		return nil, err
	}
	ds, err := h.store.Devices(r.Context(), auth)
	if err != nil {
		return nil, err
	}
	return list[notify.Device]{Success: true, Records: ds}, nil
}

func (h handlers) register(r *http.Request) (any, error) {
	auth, err := authority(r)
	if err != nil {
		return nil, err
	}
	var reg notify.Registration
	if err := httpapi.DecodeJSON(r, maxBody, &reg); err != nil {
		return nil, err
	}
	if err := checkRegistration(reg); err != nil {
		return nil, err
	}
	d, err := h.store.RegisterDevice(r.Context(), auth, reg, h.api.Now().Unix())
	if err != nil {
		return nil, err
	}
	return record[notify.Device]{Success: true, Record: d}, nil
}

func checkRegistration(reg notify.Registration) error {
	switch {
	case !printable(reg.DeviceID, notify.MaxDeviceIDLen):
		return fault.Errorf(fault.Invalid, "deviceId is required: printable text of at most %d bytes", notify.MaxDeviceIDLen)
	case !printable(reg.Token, notify.MaxTokenLen):
		return fault.Errorf(fault.Invalid, "token is required: the device's push token, printable text of at most %d bytes", notify.MaxTokenLen)
	case reg.Platform != nil && !slices.Contains([]string{notify.PlatformIOS, notify.PlatformAndroid, notify.PlatformWeb}, *reg.Platform):
		return fault.Errorf(fault.Invalid, "platform must be one of ios, android, web")
	}
	return nil
}

func (h handlers) remove(r *http.Request) (any, error) {
	auth, err := authority(r)
	if err != nil {
		return nil, err
	}
	id := httpapi.PathVar(r, "deviceId")
	if !printable(id, notify.MaxDeviceIDLen) {
		return nil, fault.Errorf(fault.Invalid, "deviceId must be printable text of at most %d bytes", notify.MaxDeviceIDLen)
	}
	if err := h.store.RemoveDevice(r.Context(), auth, id); err != nil {
		return nil, err
	}
	return struct {
		Success bool `json:"success"`
	}{true}, nil
}

// printable reports whether s is 1..max bytes of valid UTF-8 without control characters.
func printable(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == 0xfffd {
			return false
		}
	}
	return true
}

// EdgeStore reads what the WebSocket edge asks of a wallet's channel.
type EdgeStore interface {
	// EdgeSeq returns the seq of the last edge.notifications message of authority's channel (0:
	// none yet).
	EdgeSeq(ctx context.Context, authority string) (int64, error)
}

// Internal registers the routes of the internal port (the WebSocket edge reads them when a client
// subscribes to a wallet it has seen no message of): GET mesh.EdgeNotifications?authority=
// answers {"success":true,"data":[],"seqs":{"notifications:<authority>":<seq>}}, the envelope of the
// other services' edge snapshots. A notifications channel has no init, so data is empty; seqs is
// what an edge replica that has not read the wallet's messages acknowledges with, so that the next
// message is one more (0 says the wallet has none). Unsigned: the internal port is reachable from
// the mesh only, and a count reveals nothing the channel's own messages do not.
func Internal(api *httpapi.API, store EdgeStore) {
	api.Handle(http.MethodGet, mesh.EdgeNotifications, func(r *http.Request) (any, error) {
		auth := r.URL.Query().Get("authority")
		switch {
		case auth == "":
			return nil, fault.Errorf(fault.Invalid, "authority is required: the wallet's address, base58")
		case !events.ValidPublicKey(auth):
			return nil, fault.Errorf(fault.Invalid, "authority %q is not a wallet address (32 bytes, base58)", auth)
		}
		seq, err := store.EdgeSeq(r.Context(), auth)
		if err != nil {
			return nil, err
		}
		return edgeSeqs{Success: true, Data: []struct{}{}, Seqs: map[string]int64{events.NotificationsChannel(auth): seq}}, nil
	}, httpapi.CacheControl("no-store"))
}

type edgeSeqs struct {
	Success bool             `json:"success"`
	Data    []struct{}       `json:"data"`
	Seqs    map[string]int64 `json:"seqs"`
}
