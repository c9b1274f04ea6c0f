package events

import (
	"reflect"
	"sync"
	"time"
)

// Hooks for the external tests of the two JSON decoders.

// DecodeStdlib is Decode on the encoding/json path alone: Decode as it was before the fast path.
func DecodeStdlib(topic string, value []byte) (Record, error) {
	return decodeTopic(topic, value, func(b []byte, r Record) error { return decodeStd(b, r) }, time.Now())
}

// DecodeStd decodes value into v, a pointer to a struct, with the reference decoder.
func DecodeStd(value []byte, v any) error { return decodeStd(value, v) }

// DecodeFlat decodes value into v, a pointer to a struct, with the fast decoder alone. flat is false,
// and nothing is decoded, when v's type is not flat.
func DecodeFlat(value []byte, v any) (flat bool, err error) {
	rv := reflect.ValueOf(v).Elem()
	cached, ok := testDecoders.Load(rv.Type())
	if !ok {
		cached, _ = testDecoders.LoadOrStore(rv.Type(), newFlatDecoder(rv.Type()))
	}
	d := cached.(*flatDecoder) // nil for a type that is not flat
	if d == nil {
		return false, nil
	}
	return true, d.decode(string(value), rv)
}

// testDecoders caches DecodeFlat's decoders, which the fuzzer would otherwise rebuild per input.
var testDecoders sync.Map // reflect.Type -> *flatDecoder

// UsesFastPath reports whether Decode takes the fast path for records like r.
func UsesFastPath(r Record) bool { return flatDecoders()[reflect.TypeOf(r).Elem()] != nil }
