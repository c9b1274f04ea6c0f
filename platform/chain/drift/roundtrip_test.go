package drift_test

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/anchor"
	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/drifttest"
)

// fill sets every field of v to a value of its own (counting up from *n), options to Some, Vecs
// and Strings to two items, enums to their second variant: a value where a field read from the
// wrong offset or skipped shows.
func fill(v reflect.Value, n *uint64) {
	*n++
	switch v.Kind() {
	case reflect.Struct:
		if strings.HasPrefix(v.Type().Name(), "Option[") {
			v.FieldByName("Some").SetBool(true)
			fill(v.FieldByName("Value"), n)
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).Tag.Get("idl") != "-" && v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), n)
		}
	case reflect.Uint8:
		if _, enum := v.Interface().(fmt.Stringer); enum {
			v.SetUint(1)
			return
		}
		v.SetUint(*n % 256)
	case reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(*n)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-int64(*n % 100))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	}
	switch x := v.Addr().Interface().(type) {
	case *borsh.Uint128:
		*x = borsh.Uint128{Lo: *n, Hi: *n}
	case *borsh.Int128:
		*x = borsh.I128(-int64(*n))
	}
}

func TestEventsRoundTrip(t *testing.T) {
	events := drifttest.AllEvents()
	if len(events) != 26 {
		t.Fatalf("%d events, the IDL has 26", len(events))
	}
	seen := map[anchor.Discriminator]string{}
	for _, e := range events {
		t.Run(e.EventName(), func(t *testing.T) {
			if d := anchor.EventDiscriminator(e.EventName()); d != e.Discriminator() {
				t.Errorf("discriminator %x, want %x", e.Discriminator(), d)
			}
			if other, dup := seen[e.Discriminator()]; dup {
				t.Errorf("same discriminator as %s", other)
			}
			seen[e.Discriminator()] = e.EventName()

			var n uint64
			fill(reflect.ValueOf(e).Elem(), &n)
			data, err := e.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			back, err := drift.DecodeEvent(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, e) {
				t.Errorf("decoded\n%+v\nwant\n%+v", back, e)
			}
			again, err := back.MarshalBinary()
			if err != nil || !bytes.Equal(again, data) {
				t.Errorf("encoded again to other bytes (%v)", err)
			}
		})
	}
}

func TestAccountsRoundTrip(t *testing.T) {
	cases := []struct {
		name    string
		account interface {
			AccountName() string
			Discriminator() anchor.Discriminator
			UnmarshalBinary([]byte) error
			MarshalBinary() ([]byte, error)
		}
		size int
	}{
		{"State", new(drift.State), drift.StateSize},
		{"PerpMarket", new(drift.PerpMarket), drift.PerpMarketSize},
		{"SpotMarket", new(drift.SpotMarket), drift.SpotMarketSize},
		{"User", new(drift.User), drift.UserSize},
		{"UserStats", new(drift.UserStats), drift.UserStatsSize},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.account.AccountName() != c.name || c.account.Discriminator() != anchor.AccountDiscriminator(c.name) {
				t.Errorf("name %s, discriminator %x", c.account.AccountName(), c.account.Discriminator())
			}
			var n uint64
			fill(reflect.ValueOf(c.account).Elem(), &n)
			data, err := c.account.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if len(data) != c.size {
				t.Fatalf("%d bytes, want %d", len(data), c.size)
			}
			back := reflect.New(reflect.TypeOf(c.account).Elem()).Interface().(interface {
				UnmarshalBinary([]byte) error
			})
			if err := back.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, c.account) {
				t.Error("decoded another value")
			}
		})
	}
}
